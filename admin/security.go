package admin

// The admin listener's security: TLS, authentication and authorization.
//
// # Configuration (broker properties, --config or --set)
//
//	admin.auth=none|basic|mtls|basic,mtls   default none
//	admin.metrics.auth=false|true           /metrics behind admin.auth too
//	admin.ssl.keystore.location             PEM key and chain: serve HTTPS
//	admin.ssl.keystore.certificate.chain    or inline, with
//	admin.ssl.keystore.key
//	admin.ssl.truststore.location           CAs of client certificates
//	admin.ssl.truststore.certificates       or inline
//	admin.ssl.client.auth=none|requested|required
//	admin.ssl.enabled.protocols, admin.ssl.principal.mapping.rules
//
// The admin.ssl.* properties mean what the Kafka listener's ssl.* ones do
// (broker/tls.go loads both; changed files are reloaded).
//
// # Authentication
//
// basic: HTTP Basic, checked against the broker's SCRAM users as SASL/PLAIN
// checks a password (principal User:<name>). mtls: a client certificate
// verified against admin.ssl.truststore.*, its subject mapped by
// admin.ssl.principal.mapping.rules (principal User:<mapped DN>). With both,
// a verified certificate is used when presented, else Basic. A request that
// authenticates by neither is answered 401 (with a Basic challenge when
// basic is on). /healthz and /readyz never need authentication; /metrics
// only with admin.metrics.auth=true. With admin.auth=none every request is
// User:ANONYMOUS.
//
// # Authorization
//
// When the broker's authorizer is on (authorizer.class.name), the caller's
// principal is checked with the broker's ACLs, as a Kafka client's would be:
// every page (and GET /admin/faults, and /metrics when it is authenticated)
// needs DESCRIBE on the CLUSTER (and browsing records READ on the TOPIC,
// browse.go); fault injection and forced rebalances
// ALTER on the CLUSTER; each console action the ACLs Kafka requires for the
// same operation (see actions.go). A denied request is answered 403.
//
// # Cross-site requests
//
// Every console action is a POST carrying a CSRF token: an HMAC, under a key
// drawn when the server starts, of the caller's principal. Any request other
// than GET or HEAD that a browser marks Sec-Fetch-Site: cross-site is
// refused (this covers the JSON fault endpoints, which carry no token).

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gregor-broker/gregor/broker"
)

// authConfig is the admin listener's security configuration.
type authConfig struct {
	basic, mtls bool
	metricsAuth bool
	tls         *broker.ServerTLS // nil: plain HTTP
}

func (a authConfig) on() bool { return a.basic || a.mtls }

// loadAuthConfig reads the admin.* properties of b.
func loadAuthConfig(b *broker.Broker, props map[string]string) (authConfig, error) {
	var a authConfig
	for _, m := range strings.Split(props["admin.auth"], ",") {
		switch strings.TrimSpace(m) {
		case "", "none":
		case "basic":
			a.basic = true
		case "mtls":
			a.mtls = true
		default:
			return a, fmt.Errorf("admin.auth %q: want none, basic, mtls or basic,mtls", props["admin.auth"])
		}
	}
	switch props["admin.metrics.auth"] {
	case "", "false":
	case "true":
		a.metricsAuth = true
	default:
		return a, fmt.Errorf("admin.metrics.auth %q: want true or false", props["admin.metrics.auth"])
	}
	if props["admin.ssl.keystore.location"] != "" || props["admin.ssl.keystore.certificate.chain"] != "" {
		st, err := broker.LoadServerTLS(props, "admin.", nil)
		if err != nil {
			return a, err
		}
		a.tls = st
	} else if a.mtls {
		return a, errors.New("admin.auth=mtls needs HTTPS: set admin.ssl.keystore.location")
	}
	return a, nil
}

// adminProps are the admin.* properties of b.
func adminProps(b *broker.Broker) map[string]string {
	props := map[string]string{}
	for _, k := range []string{"admin.auth", "admin.metrics.auth", "admin.ssl.keystore.type", "admin.ssl.keystore.location",
		"admin.ssl.keystore.certificate.chain", "admin.ssl.keystore.key", "admin.ssl.truststore.type", "admin.ssl.truststore.location",
		"admin.ssl.truststore.certificates", "admin.ssl.keystore.password", "admin.ssl.key.password", "admin.ssl.truststore.password",
		"admin.ssl.client.auth", "admin.ssl.enabled.protocols", "admin.ssl.principal.mapping.rules"} {
		if v, ok := b.Prop(k); ok {
			props[k] = v
		}
	}
	return props
}

// anonymous is the principal of every request when admin.auth=none.
const anonymous = "User:ANONYMOUS"

type callerKey struct{}

// callerOf returns the caller the security layer put in r's context.
func callerOf(r *http.Request) broker.Caller {
	if c, ok := r.Context().Value(callerKey{}).(broker.Caller); ok {
		return c
	}
	return broker.Caller{Principal: anonymous, Host: remoteHost(r)}
}

func remoteHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// authenticate returns the caller of r; false when auth is on and r
// authenticates by no enabled method (the 401 is written).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (broker.Caller, bool) {
	c := broker.Caller{Principal: anonymous, Host: remoteHost(r)}
	if !s.auth.on() {
		return c, true
	}
	if s.auth.mtls && r.TLS != nil {
		if p, ok := s.auth.tls.Principal(*r.TLS); ok {
			c.Principal = p
			return c, true
		}
	}
	if s.auth.basic {
		if user, pass, ok := r.BasicAuth(); ok {
			err := s.b.CheckPassword(user, pass)
			if err == nil {
				c.Principal = "User:" + user
				return c, true
			}
			if !errors.Is(err, broker.ErrBadCredentials) {
				s.log.Warn("admin listener: checking a password failed", "user", user, "err", err)
				http.Error(w, "the user store is unavailable", http.StatusServiceUnavailable)
				return c, false
			}
			s.log.Info("admin listener: authentication failed", "user", user, "host", c.Host)
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="gregor admin", charset="UTF-8"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return c, false
	}
	http.Error(w, "a verified client certificate is required", http.StatusUnauthorized)
	return c, false
}

// open tells whether a request needs no authentication.
func (s *Server) open(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz":
		return true
	case "/metrics":
		return !s.auth.metricsAuth
	}
	return false
}

// secure wraps the routes: authentication, the cross-site check, and
// DESCRIBE on the CLUSTER for reading.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.open(r) {
			next.ServeHTTP(w, r)
			return
		}
		c, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		reading := r.Method == http.MethodGet || r.Method == http.MethodHead
		if !reading && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			http.Error(w, "cross-site requests are refused", http.StatusForbidden)
			return
		}
		if reading && !s.allowed(c, broker.ACLDescribe, broker.ResourceCluster, broker.ClusterResourceName) {
			s.deny(w, c, "DESCRIBE on the cluster")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// allowed checks one ACL with the broker's authorizer.
func (s *Server) allowed(c broker.Caller, op broker.ACLOperation, res broker.ACLResource, name string) bool {
	return s.b.Authorize(c, op, res, name)
}

// deny answers 403 naming the missing permission.
func (s *Server) deny(w http.ResponseWriter, c broker.Caller, what string) {
	s.log.Info("admin listener: request denied", "principal", c.Principal, "host", c.Host, "needs", what)
	http.Error(w, c.Principal+" is not authorized: "+what+" is needed", http.StatusForbidden)
}

// newCSRFKey draws the key of the CSRF tokens.
func newCSRFKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// csrfToken is the CSRF token of a principal.
func (s *Server) csrfToken(principal string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(principal))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF tells whether a POST form carries the caller's token.
func (s *Server) checkCSRF(r *http.Request, c broker.Caller) bool {
	got := r.PostFormValue("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrfToken(c.Principal)))
}

// TLSConfig returns the configuration to serve HTTPS with, nil for plain
// HTTP (no admin.ssl.keystore.* property).
func (s *Server) TLSConfig() *tls.Config {
	if s.auth.tls == nil {
		return nil
	}
	return s.auth.tls.Config()
}

// Listen wraps ln in TLS when the server is configured for HTTPS.
func (s *Server) Listen(ln net.Listener) net.Listener {
	if cfg := s.TLSConfig(); cfg != nil {
		return tls.NewListener(ln, cfg)
	}
	return ln
}
