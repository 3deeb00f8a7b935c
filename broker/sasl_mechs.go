package broker

// The PLAIN (RFC 4616) and SCRAM (RFC 5802, RFC 7677) server sides, over
// the user store.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/protocol"
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
	rec, err := s.b.user(user)
	if err != nil {
		return nil, false, err
	}
	if rec == nil || !rec.checkPassword(pass) {
		return nil, false, &saslError{"Authentication failed: Invalid username or password"}
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainSession) result() (string, time.Time) { return s.user, time.Time{} }

// scramSession is the server side of one SCRAM exchange (RFC 5802):
// client-first, server-first, client-final, server-final. It is written
// with the standard library rather than github.com/xdg-go/scram because
// Kafka's server accepts a client-final nonce that merely ends with the
// server's nonce (librdkafka sends the client nonce twice), which that
// library refuses, and because its v1.1.2 panicked on a malformed
// client-first (found by FuzzSASLExchanges). Channel binding is not
// supported (a "p=" flag fails), as in Kafka.
type scramSession struct {
	b     *Broker
	mech  string
	state int // 0: expect client-first, 1: expect client-final, 2: done
	user  string
	gs2   string // the client's GS2 header, echoed in c=
	bare  string // client-first-message-bare
	first string // server-first-message
	nonce string // client nonce + server nonce
	cred  scramCredential
}

func newScramSession(b *Broker, mech string) *scramSession {
	return &scramSession{b: b, mech: mech}
}

func (s *scramSession) step(in []byte) ([]byte, bool, error) {
	switch s.state {
	case 0:
		s.state = 2 // a failure ends the exchange
		out, err := s.clientFirst(string(in))
		if err != nil {
			return nil, false, err
		}
		s.state = 1
		return []byte(out), false, nil
	case 1:
		s.state = 2
		out, err := s.clientFinal(string(in))
		if err != nil {
			return nil, false, err
		}
		return []byte(out), true, nil
	}
	return nil, false, &saslError{"Unexpected SCRAM message after the exchange"}
}

func (s *scramSession) fail(why string) error {
	return fmt.Errorf("%w (%s)", invalidCredentials(s.mech), why)
}

func (s *scramSession) clientFirst(msg string) (string, error) {
	// gs2-header = gs2-cbind-flag "," [ authzid ] ","
	flag, rest, ok1 := strings.Cut(msg, ",")
	authz, bare, ok2 := strings.Cut(rest, ",")
	if !ok1 || !ok2 {
		return "", s.fail("malformed client-first message")
	}
	if flag != "n" && flag != "y" {
		return "", s.fail("channel binding is not supported")
	}
	if authz != "" {
		if !strings.HasPrefix(authz, "a=") {
			return "", s.fail("malformed authorization id")
		}
		authz = authz[2:]
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return "", s.fail("malformed client-first message")
	}
	for _, a := range attrs[2:] {
		if strings.HasPrefix(a, "m=") {
			return "", s.fail("unsupported mandatory extension")
		}
	}
	user, err := scramUnescape(attrs[0][2:])
	if err != nil || user == "" {
		return "", s.fail("malformed user name")
	}
	if authz != "" {
		if an, err := scramUnescape(authz); err != nil || an != user {
			return "", &saslError{"Authentication failed: Client requested an authorization id that is different from username"}
		}
	}
	rec, err := s.b.user(user)
	if err != nil {
		return "", err
	}
	cred, ok := scramCredential{}, false
	if rec != nil {
		cred, ok = rec.Scram[s.mech]
	}
	if !ok {
		return "", s.fail("unknown user " + user)
	}
	s.user, s.gs2, s.bare, s.cred = user, msg[:len(msg)-len(bare)], bare, cred
	s.nonce = attrs[1][2:] + alphanumericNonce()
	s.first = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return s.first, nil
}

func (s *scramSession) clientFinal(msg string) (string, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return "", s.fail("no proof in client-final message")
	}
	withoutProof := msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return "", s.fail("malformed proof")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", s.fail("malformed client-final message")
	}
	if cb, err := base64.StdEncoding.DecodeString(attrs[0][2:]); err != nil || string(cb) != s.gs2 {
		return "", s.fail("channel binding does not match")
	}
	// As Kafka: the nonce must end with the one the server sent.
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return "", s.fail("invalid client nonce in the final client message")
	}
	h := scramHash(s.mech)
	if len(proof) != h().Size() {
		return "", s.fail("malformed proof")
	}
	authMsg := []byte(s.bare + "," + s.first + "," + withoutProof)
	mac := hmac.New(h, s.cred.StoredKey)
	mac.Write(authMsg)
	clientKey := mac.Sum(nil)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	sh := h()
	sh.Write(clientKey)
	if !hmac.Equal(sh.Sum(nil), s.cred.StoredKey) {
		return "", s.fail("invalid proof")
	}
	mac = hmac.New(h, s.cred.ServerKey)
	mac.Write(authMsg)
	return "v=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

func (s *scramSession) result() (string, time.Time) { return s.user, time.Time{} }

// scramUnescape decodes a SCRAM saslname ("=2C" is ',', "=3D" is '=').
func scramUnescape(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("bad escape in %q", s)
		}
		i += 2
	}
	return b.String(), nil
}

func alphanumericNonce() string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// rawFrame is a bare SASL token as a response frame (after SaslHandshake
// v0): its size, then the token.
func rawFrame(tok []byte) *protocol.Out {
	o := protocol.NewOut(make([]byte, 4))
	o.AppendBytes(tok)
	return o
}
