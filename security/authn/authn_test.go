package authn

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/metastore"
)

func testLogger() *slog.Logger {
	if os.Getenv("GREGOR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func unsecuredJWT(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// usersWithAlice is a user store file holding alice's SCRAM-SHA-256 and
// SCRAM-SHA-512 credentials for "alice-secret".
func usersWithAlice(t testing.TB) (*Users, string) {
	path := filepath.Join(t.TempDir(), "users.json")
	for _, mech := range []string{config.ScramSHA256, config.ScramSHA512} {
		if err := AddUser(path, "alice", mech, "alice-secret", 0); err != nil {
			t.Fatal(err)
		}
	}
	f, err := metastore.OpenFile(UsersFile(path))
	if err != nil {
		t.Fatal(err)
	}
	u := NewUsers(testLogger())
	u.Use(f)
	return u, path
}

func TestPrincipalMappingRules(t *testing.T) {
	for _, tc := range []struct{ rules, dn, want string }{
		{"", "CN=alice,OU=eng,O=Example", "CN=alice,OU=eng,O=Example"},
		{"DEFAULT", "CN=alice,OU=eng", "CN=alice,OU=eng"},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=kafka-app,OU=ServiceUsers,O=Example", "kafka-app"},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=bob,OU=eng", "CN=bob,OU=eng"},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L`, "CN=Alice,OU=ENG,O=x", "alice@eng"},
		{`RULE:^CN=(.*)$/$1/U`, "CN=alice", "ALICE"},
		{`RULE:^CN=([^,]*)$/svc\/$1/`, "CN=a", "svc/a"},
	} {
		rules, err := parsePrincipalRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		if got := mapPrincipal(rules, tc.dn); got != tc.want {
			t.Errorf("%q on %q: %q, want %q", tc.rules, tc.dn, got, tc.want)
		}
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "NOPE", "RULE:(/x/"} {
		if _, err := parsePrincipalRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The user store: AddUser keeps credentials, not passwords; PLAIN's check
// uses them; Modify changes one user and removes one left without a
// credential; an error from the change writes nothing.
func TestUsers_AddCheckModify(t *testing.T) {
	users, path := usersWithAlice(t)
	if data, _ := os.ReadFile(path); bytes.Contains(data, []byte("alice-secret")) {
		t.Fatal("the password is in the store")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("users.json mode: %v %v", fi.Mode(), err)
	}
	alice, err := users.User("alice")
	if err != nil || alice == nil || len(alice.Scram) != 2 {
		t.Fatalf("alice: %+v %v", alice, err)
	}
	if !alice.CheckPassword("alice-secret") || alice.CheckPassword("alice-secreT") {
		t.Fatal("CheckPassword")
	}
	ctx := context.Background()
	boom := errors.New("no")
	if err := users.Modify(ctx, "alice", func(u *User) error { delete(u.Scram, config.ScramSHA256); return boom }); !errors.Is(err, boom) {
		t.Fatalf("refused change: %v", err)
	}
	if a, _ := users.User("alice"); len(a.Scram) != 2 {
		t.Fatalf("a refused change was written: %+v", a)
	}
	if err := users.Modify(ctx, "alice", func(u *User) error { delete(u.Scram, config.ScramSHA256); return nil }); err != nil {
		t.Fatal(err)
	}
	if a, _ := users.User("alice"); len(a.Scram) != 1 || !a.CheckPassword("alice-secret") {
		t.Fatalf("after deleting SCRAM-SHA-256: %+v", a)
	}
	if err := users.Modify(ctx, "alice", func(u *User) error { clear(u.Scram); return nil }); err != nil {
		t.Fatal(err)
	}
	if a, err := users.User("alice"); a != nil || err != nil {
		t.Fatalf("alice without credentials is still there: %+v %v", a, err)
	}
	if err := AddUser(path, "bob", "SCRAM-SHA-1", "x", 0); err == nil {
		t.Fatal("an unknown mechanism was accepted")
	}
	if err := AddUser(path, "bob", config.ScramSHA256, "x", 100); err == nil {
		t.Fatal("100 iterations were accepted")
	}
	if _, err := NewUsers(nil).User("alice"); !errors.Is(err, ErrNoUserStore) {
		t.Fatalf("a store without a collection: %v", err)
	}
}

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
	users, _ := usersWithAlice(f)
	oauth := &OAuthValidator{now: time.Now, log: testLogger(), subClaim: "sub"}
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
		s := NewSession(mech, users, oauth, nil)
		_, done, err := s.Step(first)
		if err == nil && !done {
			_, done, err = s.Step(second)
		}
		if err != nil || !done {
			return
		}
		user, _ := s.Result()
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

// A failed exchange still names the user the client gave, for the
// broker's log line; a successful one the authenticated user.
func TestSession_ResultNamesTheUserAfterAFailure(t *testing.T) {
	users, _ := usersWithAlice(t)
	for _, tc := range []struct {
		msg, user string
		done      bool
	}{
		{"\x00alice\x00wrong", "alice", false},
		{"\x00mallory\x00x", "mallory", false},
		{"\x00alice\x00alice-secret", "alice", true},
		{"garbage", "", false},
	} {
		s := NewSession(config.Plain, users, nil, nil)
		_, done, err := s.Step([]byte(tc.msg))
		if user, _ := s.Result(); user != tc.user || done != tc.done || (err == nil) != tc.done {
			t.Errorf("%q: user %q done %v err %v", tc.msg, user, done, err)
		}
	}
}
