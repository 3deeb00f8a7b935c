package broker

// SASL on the SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator does it.
//
// # States of a connection
//
//	handshake      only ApiVersions and SaslHandshake are served
//	token          after SaslHandshake v1: only SaslAuthenticate (and ApiVersions)
//	raw            after SaslHandshake v0: the next frames are bare SASL
//	               tokens, answered with bare tokens (old clients)
//	authenticated  everything; a SaslHandshake v1 starts a re-authentication
//	               (KIP-368), during which requests are still served
//
// Any other request before authentication closes the connection, as Kafka
// does. A failed exchange is answered with SASL_AUTHENTICATION_FAILED and
// Kafka's message and the connection is closed after the answer (a failed
// bare-token exchange is just closed). Until it authenticates, a
// connection's frames are bounded by sasl.server.max.receive.size (512 KiB)
// and it is closed sasl.server.authentication.timeout.ms (Gregor's setting,
// 10 s) after it was accepted.
//
// # Sessions
//
// With connections.max.reauth.ms > 0, a session lasts at most that long (an
// OAUTHBEARER session no longer than its token): SaslAuthenticate v1+ tells
// the client the lifetime, and a connection that has not re-authenticated
// by then is closed at its next request other than SaslHandshake.
// Re-authentication must use the same mechanism and yield the same
// principal.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslState is one SASL listener's settings.
type saslState struct {
	mechanisms  []string
	maxReceive  int32
	authTimeout time.Duration
	reauth      time.Duration // 0: sessions do not expire
	oauth       *authn.OAuthValidator
}

func (b *Broker) newSASLState(name string) (*saslState, error) {
	props, _ := b.listenerProps(name)
	get := func(k, def string) string {
		if v, ok := props[k]; ok {
			return v
		}
		return def
	}
	st := &saslState{}
	for _, m := range config.SplitList(get("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")) {
		m = strings.ToUpper(m)
		if !slices.Contains(config.Mechanisms, m) {
			return nil, fmt.Errorf("sasl.enabled.mechanisms: %s is not supported (%s)", m, strings.Join(config.Mechanisms, ", "))
		}
		st.mechanisms = append(st.mechanisms, m)
	}
	if len(st.mechanisms) == 0 {
		return nil, errors.New("sasl.enabled.mechanisms is empty")
	}
	st.maxReceive = int32(config.IntOr(get("sasl.server.max.receive.size", "524288"), 524288))
	st.authTimeout = time.Duration(config.IntOr(get("sasl.server.authentication.timeout.ms", "10000"), 10000)) * time.Millisecond
	st.reauth = time.Duration(config.IntOr(get("connections.max.reauth.ms", "0"), 0)) * time.Millisecond
	if slices.Contains(st.mechanisms, config.OAuthBearer) {
		var err error
		if st.oauth, err = authn.NewOAuthValidator(props, b.cfg.Now, b.log); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// authPhase is where a connection is in its authentication.
type authPhase int

const (
	authHandshake authPhase = iota
	authToken
	authRaw
	authDone
)

// connAuth is a SASL connection's state. It is used only by the
// connection's reader: the SASL handlers run on it, in order.
type connAuth struct {
	phase     authPhase
	mech      string
	session   authn.Session
	reauth    bool      // a re-authentication is under way
	principal string    // set once authenticated
	token     bool      // authenticated with a delegation token
	expiry    time.Time // zero: the session does not expire
	deadline  time.Time // authenticate by then
}

// authenticated tells whether requests beyond the SASL ones may be served.
func (a *connAuth) authenticated() bool { return a == nil || a.phase == authDone || a.reauth }

// gate decides whether a request may run on the connection now; an error
// closes it.
func (c *conn) gate(key int16) error {
	a := c.auth
	if a == nil {
		return nil
	}
	k := kmsg.Key(key)
	if k == kmsg.ApiVersions || k == kmsg.SASLHandshake || k == kmsg.SASLAuthenticate {
		return nil
	}
	if !a.authenticated() {
		return fmt.Errorf("unexpected %s request before SASL authentication", k.Name())
	}
	if !a.reauth && !a.expiry.IsZero() && c.b.cfg.Now().After(a.expiry) {
		return fmt.Errorf("SASL session of %s expired without re-authentication", a.principal)
	}
	return nil
}

// frameLimit is the largest frame the connection may send now.
func (c *conn) frameLimit() int32 {
	if !c.auth.authenticated() { // not during a re-authentication: requests go on
		return min(c.b.maxReq, c.ls.sasl.maxReceive)
	}
	return c.b.maxReq
}

// complete ends a successful exchange: the principal, and the session's
// lifetime in milliseconds (0: unlimited).
func (c *conn) completeAuth(sess authn.Session) (int64, error) {
	a := c.auth
	user, credExpiry := sess.Result()
	principal := "User:" + user
	if a.principal != "" && a.principal != principal {
		return 0, &authn.Error{Msg: fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", a.principal, principal)}
	}
	now := c.b.cfg.Now()
	var lifetime int64
	a.expiry = time.Time{}
	if r := c.ls.sasl.reauth; r > 0 {
		a.expiry = now.Add(r)
		if !credExpiry.IsZero() && credExpiry.Before(a.expiry) {
			a.expiry = credExpiry
		}
		lifetime = max(a.expiry.Sub(now).Milliseconds(), 1)
	}
	if a.principal == "" {
		c.logger().Info("authenticated", "principal", principal, "mechanism", a.mech)
	} else {
		c.logger().Debug("re-authenticated", "principal", principal, "mechanism", a.mech)
		c.b.sec.reauths.Add(1)
	}
	if ts, ok := sess.(interface{ Token() *authn.Token }); ok && ts.Token() != nil {
		a.token = true
	}
	a.principal, a.phase, a.reauth, a.session = principal, authDone, false, nil
	c.principal.Store(&principal)
	c.b.sec.noteAuth(true)
	return lifetime, nil
}

// failAuth logs and counts a failed exchange and returns the message for
// the client.
func (c *conn) failAuth(err error) string {
	c.b.sec.noteAuth(false)
	msg := "Authentication failed due to an unexpected error"
	var se *authn.Error
	if errors.As(err, &se) {
		msg = se.Msg
	}
	var user string
	if c.auth.session != nil {
		user, _ = c.auth.session.Result()
	}
	c.logger().Info("SASL authentication failed", "mechanism", c.auth.mech, "user", user, "err", err)
	return msg
}

// handleRawToken answers one bare token after a SaslHandshake v0; an error
// closes the connection without an answer, as Kafka does.
func (c *conn) handleRawToken(frame []byte) (*pending, error) {
	a := c.auth
	out, done, err := a.session.Step(frame)
	if err == nil && done {
		_, err = c.completeAuth(a.session)
	}
	if err != nil {
		c.failAuth(err)
		return nil, fmt.Errorf("SASL authentication failed: %w", err)
	}
	p := &pending{}
	p.out = rawFrame(out)
	return p, nil
}

func init() {
	register(kmsg.SASLHandshake, 0, 1, (*Broker).handleSaslHandshake)
	register(kmsg.SASLAuthenticate, 0, 2, (*Broker).handleSaslAuthenticate)
}

// SaslHandshake: v0-1. v0 is followed by bare tokens, v1 by
// SaslAuthenticate requests. On a listener without SASL it is answered with
// ILLEGAL_SASL_STATE.
func (b *Broker) handleSaslHandshake(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := r.conn
	if c == nil || c.auth == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	a := c.auth
	st := c.ls.sasl
	resp.SupportedMechanisms = slices.Clone(st.mechanisms)
	switch {
	case a.phase == authHandshake:
	case a.phase == authDone && !a.reauth && req.Version >= 1:
		a.reauth = true
	default:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		r.closeAfter = true
		return resp, nil
	}
	mech := req.Mechanism
	if !slices.Contains(st.mechanisms, mech) || (a.principal != "" && mech != a.mech) {
		c.logger().Info("SASL handshake with an unsupported mechanism", "mechanism", mech)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		r.closeAfter = true
		return resp, nil
	}
	a.mech = mech
	a.session = authn.NewSession(mech, b.users, st.oauth, b.tokens)
	a.phase = authToken
	if req.Version == 0 {
		a.phase = authRaw
	}
	return resp, nil
}

// SaslAuthenticate: v0-2 (v1 adds session_lifetime_ms, v2 is flexible).
func (b *Broker) handleSaslAuthenticate(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := r.conn
	if c == nil || c.auth == nil || c.auth.phase != authToken {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("Unexpected SaslAuthenticate request")
		r.closeAfter = true
		return resp, nil
	}
	a := c.auth
	out, done, err := a.session.Step(req.SASLAuthBytes)
	var lifetime int64
	if err == nil && done {
		lifetime, err = c.completeAuth(a.session)
	}
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(c.failAuth(err))
		r.closeAfter = true
		return resp, nil
	}
	resp.SASLAuthBytes = out
	if done {
		resp.SessionLifetimeMillis = lifetime
	}
	return resp, nil
}

// Principal returns the principal of an authenticated connection
// ("User:alice"), of a TLS client ("User:CN=…"), or "User:ANONYMOUS".
func (c *conn) principalName() string {
	if p := c.principal.Load(); p != nil {
		return *p
	}
	return "User:ANONYMOUS"
}

// userAlterTimeout bounds a change of the user store (etcd in a cluster).
const userAlterTimeout = 5 * time.Second

// securityStats counts handshakes and authentications.
type securityStats struct {
	tlsHandshakes, tlsFailures  atomic.Int64
	authSuccesses, authFailures atomic.Int64
	reauths                     atomic.Int64
}

func (s *securityStats) noteTLSHandshake(ok bool) {
	if ok {
		s.tlsHandshakes.Add(1)
	} else {
		s.tlsFailures.Add(1)
	}
}

func (s *securityStats) noteAuth(ok bool) {
	if ok {
		s.authSuccesses.Add(1)
	} else {
		s.authFailures.Add(1)
	}
}

// SecurityStats are counts of TLS handshakes and SASL authentications since
// the broker started.
type SecurityStats struct {
	TLSHandshakes, TLSHandshakeFailures int64
	AuthSuccesses, AuthFailures         int64
	// Reauthentications are the successful KIP-368 re-authentications
	// (also counted in AuthSuccesses).
	Reauthentications int64
}

// SecurityStats returns the broker's TLS and SASL counts.
func (b *Broker) SecurityStats() SecurityStats {
	return SecurityStats{
		TLSHandshakes: b.sec.tlsHandshakes.Load(), TLSHandshakeFailures: b.sec.tlsFailures.Load(),
		AuthSuccesses: b.sec.authSuccesses.Load(), AuthFailures: b.sec.authFailures.Load(),
		Reauthentications: b.sec.reauths.Load(),
	}
}

// rawFrame is a bare SASL token as a response frame (after SaslHandshake
// v0): its size, then the token.
func rawFrame(tok []byte) *protocol.Out {
	o := protocol.NewOut(make([]byte, 4))
	o.AppendBytes(tok)
	return o
}
