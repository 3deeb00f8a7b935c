package broker

// The PLAIN (RFC 4616) and SCRAM (RFC 5802, RFC 7677) server sides. SCRAM
// is github.com/xdg-go/scram's server conversation over the user store.

import (
	"bytes"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/xdg-go/scram"
)

// plainSession checks "authzid NUL authcid NUL password" against the user
// store (see users.go for how a PLAIN password is checked).
type plainSession struct {
	b    *Broker
	user string
}

func (s *plainSession) step(in []byte) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 {
		return nil, false, &saslError{"Invalid SASL/PLAIN response: expected 3 tokens, got " + strconv.Itoa(len(parts))}
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	switch {
	case user == "":
		return nil, false, &saslError{"Authentication failed: username not specified"}
	case pass == "":
		return nil, false, &saslError{"Authentication failed: password not specified"}
	case authz != "" && authz != user:
		return nil, false, &saslError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	rec, err := s.b.lookupUser(user)
	if err != nil {
		return nil, false, err
	}
	ok := false
	if rec != nil {
		for _, mech := range []string{mechScramSHA256, mechScramSHA512} {
			if c, has := rec.Scram[mech]; has {
				ok = c.checkPassword(mech, pass)
				break
			}
		}
	}
	if !ok {
		return nil, false, &saslError{"Authentication failed: Invalid username or password"}
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainSession) result() (string, time.Time) { return s.user, time.Time{} }

// scramSession is one SCRAM exchange: client-first, server-first,
// client-final, server-final.
type scramSession struct {
	mech string
	conv *scram.ServerConversation
}

func newScramSession(b *Broker, mech string) *scramSession {
	hg := scram.SHA256
	if mech == mechScramSHA512 {
		hg = scram.SHA512
	}
	lookup := func(user string) (scram.StoredCredentials, error) {
		rec, err := b.lookupUser(user)
		if err != nil {
			return scram.StoredCredentials{}, err
		}
		if rec == nil {
			return scram.StoredCredentials{}, invalidCredentials(mech)
		}
		c, ok := rec.Scram[mech]
		if !ok {
			return scram.StoredCredentials{}, invalidCredentials(mech)
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
			StoredKey:  c.StoredKey, ServerKey: c.ServerKey,
		}, nil
	}
	srv, _ := hg.NewServer(lookup) // fails only for a nil lookup
	return &scramSession{mech: mech, conv: srv.NewConversation()}
}

func (s *scramSession) step(in []byte) (out []byte, done bool, err error) {
	defer func() {
		// The library is third-party code parsing wire input (v1.1.2
		// panicked on a client-first ",,,", found by FuzzSASLExchanges):
		// whatever it does, a bad message fails the exchange, never the
		// broker.
		if v := recover(); v != nil {
			out, done, err = nil, false, invalidCredentials(s.mech)
		}
	}()
	resp, err := s.conv.Step(string(in))
	if err != nil {
		if se, ok := err.(*saslError); ok {
			return nil, false, se
		}
		return nil, false, invalidCredentials(s.mech)
	}
	return []byte(resp), s.conv.Done() && s.conv.Valid(), nil
}

func (s *scramSession) result() (string, time.Time) { return s.conv.Username(), time.Time{} }

// rawFrame is a bare SASL token as a response frame (after SaslHandshake
// v0): its size, then the token.
func rawFrame(tok []byte) *protocol.Out {
	o := protocol.NewOut(make([]byte, 4))
	o.AppendBytes(tok)
	return o
}
