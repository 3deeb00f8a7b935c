package authn

// The server side of SASL's mechanisms: PLAIN (RFC 4616) and SCRAM
// (RFC 5802, RFC 7677) over a user store, OAUTHBEARER (RFC 7628, oauth.go)
// over a validator. The connection states around an exchange (handshake,
// tokens, re-authentication) are the broker's.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/config"
)

// A Session is one mechanism's server side of an exchange.
type Session interface {
	// Step takes the client's next message and returns the answer; done
	// once the client is authenticated. An error fails the exchange; an
	// *Error carries Kafka's message for the client.
	Step(in []byte) (out []byte, done bool, err error)
	// Result is the authenticated user and when its credential expires
	// (zero: never). After a failed exchange the user is the one the
	// client named, if it got that far (for the log), else "".
	Result() (user string, expiry time.Time)
}

// Error fails an exchange with a message for the client.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// InvalidCredentials is Kafka's failure of an exchange whose credentials
// do not match.
func InvalidCredentials(mech string) error {
	return &Error{"Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech}
}

// UserLookup finds a user of the user store: nil, nil for an unknown one.
// *Users is one.
type UserLookup interface {
	User(name string) (*User, error)
}

// NewSession starts mech's server side; nil for a mechanism it does not
// know (config.Mechanisms lists those it does). oauth validates
// OAUTHBEARER tokens; tokens (nil: none) serves SCRAM's delegation token
// authentication.
func NewSession(mech string, users UserLookup, oauth *OAuthValidator, tokens *Tokens) Session {
	switch mech {
	case config.Plain:
		return &plainSession{users: users}
	case config.ScramSHA256, config.ScramSHA512:
		return &scramSession{users: users, mech: mech, tokens: tokens}
	case config.OAuthBearer:
		return &oauthSession{v: oauth}
	}
	return nil
}

// plainSession checks "authzid NUL authcid NUL password" against the user
// store (see users.go for how a PLAIN password is checked).
type plainSession struct {
	users UserLookup
	user  string
}

func (s *plainSession) Step(in []byte) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 {
		return nil, false, &Error{"Invalid SASL/PLAIN response: expected 3 tokens, got " + strconv.Itoa(len(parts))}
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	switch {
	case user == "":
		return nil, false, &Error{"Authentication failed: username not specified"}
	case pass == "":
		return nil, false, &Error{"Authentication failed: password not specified"}
	case authz != "" && authz != user:
		return nil, false, &Error{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	s.user = user // Result names it after a failure too, for the log
	rec, err := s.users.User(user)
	if err != nil {
		return nil, false, err
	}
	if rec == nil || !rec.CheckPassword(pass) {
		return nil, false, &Error{"Authentication failed: Invalid username or password"}
	}
	return []byte{}, true, nil
}

func (s *plainSession) Result() (string, time.Time) { return s.user, time.Time{} }

// scramSession is the server side of one SCRAM exchange (RFC 5802):
// client-first, server-first, client-final, server-final. It is written
// with the standard library rather than github.com/xdg-go/scram because
// Kafka's server accepts a client-final nonce that merely ends with the
// server's nonce (librdkafka sends the client nonce twice), which that
// library refuses, and because its v1.1.2 panicked on a malformed
// client-first (found by FuzzSASLExchanges). Channel binding is not
// supported (a "p=" flag fails), as in Kafka.
type scramSession struct {
	users  UserLookup
	tokens *Tokens
	token  *Token // set when the client authenticates with a delegation token
	mech   string
	state  int // 0: expect client-first, 1: expect client-final, 2: done
	user   string
	gs2    string // the client's GS2 header, echoed in c=
	bare   string // client-first-message-bare
	first  string // server-first-message
	nonce  string // client nonce + server nonce
	cred   Credential
}

func (s *scramSession) Step(in []byte) ([]byte, bool, error) {
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
	return nil, false, &Error{"Unexpected SCRAM message after the exchange"}
}

func (s *scramSession) fail(why string) error {
	return fmt.Errorf("%w (%s)", InvalidCredentials(s.mech), why)
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
	tokenAuth := false
	for _, a := range attrs[2:] {
		if strings.HasPrefix(a, "m=") {
			return "", s.fail("unsupported mandatory extension")
		}
		if a == "tokenauth=true" {
			tokenAuth = true
		}
	}
	user, err := scramUnescape(attrs[0][2:])
	if err != nil || user == "" {
		return "", s.fail("malformed user name")
	}
	if authz != "" {
		if an, err := scramUnescape(authz); err != nil || an != user {
			return "", &Error{"Authentication failed: Client requested an authorization id that is different from username"}
		}
	}
	cred, ok := Credential{}, false
	if tokenAuth {
		// The user name is the token id; the principal, its owner.
		var tok *Token
		if s.tokens.Enabled() {
			tok = s.tokens.All()[user]
		}
		if tok == nil || tok.Expired(time.Now()) {
			return "", s.fail("unknown or expired delegation token " + user)
		}
		c, err := s.tokens.tokenCredential(s.mech, tok)
		if err != nil {
			return "", err
		}
		cred, ok, s.token = c, true, tok
	} else {
		rec, err := s.users.User(user)
		if err != nil {
			return "", err
		}
		if rec != nil {
			cred, ok = rec.Scram[s.mech]
		}
		if !ok {
			return "", s.fail("unknown user " + user)
		}
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

func (s *scramSession) Result() (string, time.Time) {
	if s.token != nil {
		return strings.TrimPrefix(s.token.Owner, "User:"), time.UnixMilli(s.token.ExpiryMs)
	}
	return s.user, time.Time{}
}

// Token is the delegation token the client authenticated with, nil for a
// user's credential (Kafka refuses token requests on such a connection).
func (s *scramSession) Token() *Token { return s.token }

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
