package broker

import (
	"bytes"
	"testing"

	"github.com/gregor-broker/gregor/config"
)

// FuzzSASLExchanges feeds arbitrary client messages to every mechanism's
// server side, two steps each, and arbitrary text to the principal
// mapping rules parser.
//
// Invariants: never panics; an exchange completes only for the stored
// user, and a PLAIN one only when the message holds its password; an
// OAUTHBEARER exchange never completes (the fuzzer cannot make a valid,
// unexpired token with a sub claim... unless it does, in which case its
// principal is non-empty).
func FuzzSASLExchanges(f *testing.F) {
	dir := f.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA256, "alice-secret", 0); err != nil {
		f.Fatal(err)
	}
	if err := AddUser(dir, "alice", config.ScramSHA512, "alice-secret", 0); err != nil {
		f.Fatal(err)
	}
	b, err := New(Config{DataDir: dir, Logger: testLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	st := &saslState{oauth: &oauthValidator{now: b.cfg.Now, log: b.log, subClaim: "sub"}}
	f.Add(uint8(0), []byte("\x00alice\x00alice-secret"), []byte(""))
	f.Add(uint8(1), []byte("n,,n=alice,r=abcdef"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add(uint8(2), []byte("n,,n=alice,r=x"), []byte("c=biws,r=x,p="))
	f.Add(uint8(3), []byte("n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIiwiZXhwIjo5OTk5OTk5OTk5fQ.\x01\x01"), []byte("\x01"))
	f.Add(uint8(4), []byte(`RULE:^CN=(.*?),OU=(.*)$/$1@$2/L,DEFAULT`), []byte("CN=a,OU=b"))
	mechs := []string{config.Plain, config.ScramSHA256, config.ScramSHA512, config.OAuthBearer}
	f.Fuzz(func(t *testing.T, which uint8, first, second []byte) {
		if int(which) == len(mechs) {
			rules, err := parsePrincipalRules(string(first))
			if err == nil {
				mapPrincipal(rules, string(second))
			}
			return
		}
		mech := mechs[int(which)%len(mechs)]
		s := b.newSession(st, mech)
		_, done, err := s.step(first)
		if err == nil && !done {
			_, done, err = s.step(second)
		}
		if err != nil || !done {
			return
		}
		user, _ := s.result()
		switch mech {
		case config.Plain:
			if user != "alice" || !bytes.HasSuffix(first, []byte("\x00alice-secret")) {
				t.Fatalf("PLAIN authenticated %q with %q", user, first)
			}
		case config.OAuthBearer:
			if user == "" {
				t.Fatal("OAUTHBEARER authenticated an empty principal")
			}
		default:
			t.Fatalf("%s authenticated %q without the password", mech, user)
		}
	})
}
