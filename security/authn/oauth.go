package authn

// OAUTHBEARER (RFC 7628) with two validators, as Kafka has:
//
//   - Without sasl.oauthbearer.jwks.endpoint.url, Kafka's unsecured
//     validator, for development: the token must be an unsecured JWS
//     ({"alg":"none"}, empty signature) whose claims hold the principal
//     (sasl.oauthbearer.sub.claim.name, "sub") and an expiry ("exp") that
//     has not passed; an "iat" must not be in the future. Clock skew is 0
//     unless sasl.oauthbearer.clock.skew.seconds is set.
//   - With it, signed JWTs (RS256/384/512, PS256/384/512, ES256/384/512)
//     checked against the keys of the JWKS (file:// or http(s)://, refreshed
//     every sasl.oauthbearer.jwks.endpoint.refresh.ms and when a token names
//     an unknown key id), with sasl.oauthbearer.expected.audience and
//     sasl.oauthbearer.expected.issuer when set, and a clock skew of
//     sasl.oauthbearer.clock.skew.seconds (30).
//
// A token that fails is answered, as Kafka does, with the error challenge
// {"status":"invalid_token"}; the client acknowledges it with a single
// 0x01 and the exchange then fails with that JSON as the message.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/config"
)

const oauthInvalidToken = `{"status":"invalid_token"}`

// OAuthValidator validates bearer tokens for one listener.
type OAuthValidator struct {
	now      func() time.Time
	log      *slog.Logger
	subClaim string
	skew     time.Duration
	audience []string
	issuer   string
	jwks     *jwksCache // nil: the unsecured validator
}

func NewOAuthValidator(props map[string]string, now func() time.Time, log *slog.Logger) (*OAuthValidator, error) {
	v := &OAuthValidator{now: now, log: log, subClaim: "sub"}
	if s := props["sasl.oauthbearer.sub.claim.name"]; s != "" {
		v.subClaim = s
	}
	v.audience = config.SplitList(props["sasl.oauthbearer.expected.audience"])
	v.issuer = props["sasl.oauthbearer.expected.issuer"]
	url := props["sasl.oauthbearer.jwks.endpoint.url"]
	skewDefault := "0"
	if url != "" {
		skewDefault = "30"
	}
	skew := props["sasl.oauthbearer.clock.skew.seconds"]
	if skew == "" {
		skew = skewDefault
	}
	n, err := strconv.ParseInt(skew, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("sasl.oauthbearer.clock.skew.seconds %q: want a whole number of seconds", skew)
	}
	v.skew = time.Duration(n) * time.Second
	if url != "" {
		refresh := time.Duration(config.IntOr(props["sasl.oauthbearer.jwks.endpoint.refresh.ms"], 3_600_000)) * time.Millisecond
		v.jwks = &jwksCache{url: url, refresh: refresh, now: now}
		if err := v.jwks.load(); err != nil {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
	}
	return v, nil
}

// validate checks a token and returns its principal and expiry.
func (v *OAuthValidator) validate(token string) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", time.Time{}, errors.New("not a JWS compact serialization")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeJWTPart(parts[0], &hdr); err != nil {
		return "", time.Time{}, fmt.Errorf("header: %w", err)
	}
	if v.jwks == nil {
		if hdr.Alg != "none" || parts[2] != "" {
			return "", time.Time{}, errors.New("the unsecured validator accepts only unsecured tokens (alg none)")
		}
	} else {
		if err := v.jwks.verify(hdr.Alg, hdr.Kid, parts[0]+"."+parts[1], parts[2]); err != nil {
			return "", time.Time{}, err
		}
	}
	var claims map[string]any
	if err := decodeJWTPart(parts[1], &claims); err != nil {
		return "", time.Time{}, fmt.Errorf("claims: %w", err)
	}
	now := v.now()
	sub, _ := claims[v.subClaim].(string)
	if sub == "" {
		return "", time.Time{}, fmt.Errorf("no %q claim", v.subClaim)
	}
	expF, ok := claims["exp"].(float64)
	if !ok {
		return "", time.Time{}, errors.New("no exp claim")
	}
	exp := time.UnixMilli(int64(expF * 1000))
	if !now.Before(exp.Add(v.skew)) {
		return "", time.Time{}, fmt.Errorf("the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if iat, ok := claims["iat"].(float64); ok && time.UnixMilli(int64(iat*1000)).After(now.Add(v.skew)) {
		return "", time.Time{}, errors.New("the token was issued in the future")
	}
	if nbf, ok := claims["nbf"].(float64); ok && v.jwks != nil && time.UnixMilli(int64(nbf*1000)).After(now.Add(v.skew)) {
		return "", time.Time{}, errors.New("the token is not valid yet")
	}
	if v.issuer != "" {
		if iss, _ := claims["iss"].(string); iss != v.issuer {
			return "", time.Time{}, fmt.Errorf("issuer %q is not the expected one", iss)
		}
	}
	if len(v.audience) > 0 {
		var auds []string
		switch a := claims["aud"].(type) {
		case string:
			auds = []string{a}
		case []any:
			for _, e := range a {
				if s, ok := e.(string); ok {
					auds = append(auds, s)
				}
			}
		}
		if !slices.ContainsFunc(auds, func(a string) bool { return slices.Contains(v.audience, a) }) {
			return "", time.Time{}, errors.New("the token's audience is not expected")
		}
	}
	return sub, exp, nil
}

func decodeJWTPart(s string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// oauthSession is one OAUTHBEARER exchange.
type oauthSession struct {
	v      *OAuthValidator
	failed bool
	user   string
	expiry time.Time
}

func (s *oauthSession) Step(in []byte) ([]byte, bool, error) {
	if s.failed {
		// The client's acknowledgement of the error challenge.
		return nil, false, &Error{oauthInvalidToken}
	}
	token, authz, err := parseOAuthInitial(in)
	if err != nil {
		return nil, false, &Error{"Invalid OAUTHBEARER client first message: " + err.Error()}
	}
	user, exp, err := s.v.validate(token)
	if err == nil && authz != "" && authz != user {
		err = fmt.Errorf("authorization id %q is not the token's principal", authz)
	}
	if err != nil {
		s.v.log.Info("OAUTHBEARER token rejected", "err", err)
		s.failed = true
		return []byte(oauthInvalidToken), false, nil
	}
	s.user, s.expiry = user, exp
	return []byte{}, true, nil
}

func (s *oauthSession) Result() (string, time.Time) { return s.user, s.expiry }

// parseOAuthInitial parses the client's initial response,
// gs2-header 0x01 *(key=value 0x01) 0x01, and returns the bearer token and
// the authorization id.
func parseOAuthInitial(in []byte) (token, authz string, err error) {
	s := string(in)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasSuffix(rest, "\x01") {
		return "", "", errors.New("malformed message")
	}
	h := strings.SplitN(gs2, ",", 3)
	if len(h) != 3 || (h[0] != "n" && h[0] != "y") || h[2] != "" {
		return "", "", errors.New("malformed GS2 header")
	}
	if h[1] != "" {
		if !strings.HasPrefix(h[1], "a=") {
			return "", "", errors.New("malformed authorization id")
		}
		authz = h[1][2:]
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "\x01"), "\x01") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", "", errors.New("malformed key=value")
		}
		if k == "auth" {
			scheme, tok, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
				return "", "", errors.New("auth is not a bearer token")
			}
			token = strings.TrimSpace(tok)
		}
	}
	if token == "" {
		return "", "", errors.New("no auth=Bearer token")
	}
	return token, authz, nil
}

// jwksCache holds the verification keys of a JWKS.
type jwksCache struct {
	url     string
	refresh time.Duration
	now     func() time.Time

	mu      sync.Mutex
	keys    map[string]crypto.PublicKey // by kid ("" for a key without one)
	fetched time.Time
}

func (c *jwksCache) fetch() ([]byte, error) {
	if p, ok := strings.CutPrefix(c.url, "file://"); ok {
		return os.ReadFile(p)
	}
	if !strings.HasPrefix(c.url, "http://") && !strings.HasPrefix(c.url, "https://") {
		return os.ReadFile(c.url)
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(c.url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", c.url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

func (c *jwksCache) load() error {
	b, err := c.fetch()
	if err != nil {
		return err
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.keys, c.fetched = keys, c.now()
	c.mu.Unlock()
	return nil
}

func (c *jwksCache) key(kid string) (crypto.PublicKey, error) {
	c.mu.Lock()
	k, ok := c.keys[kid]
	stale := c.now().Sub(c.fetched) > c.refresh
	recent := c.now().Sub(c.fetched) < 10*time.Second
	c.mu.Unlock()
	if ok && !stale {
		return k, nil
	}
	if !recent || stale {
		if err := c.load(); err != nil {
			if ok {
				return k, nil
			}
			return nil, err
		}
		c.mu.Lock()
		k, ok = c.keys[kid]
		c.mu.Unlock()
	}
	if !ok {
		return nil, fmt.Errorf("no key %q in the JWKS", kid)
	}
	return k, nil
}

func (c *jwksCache) verify(alg, kid, signed, sig64 string) error {
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil || len(sig) == 0 {
		return errors.New("bad signature encoding")
	}
	key, err := c.key(kid)
	if err != nil {
		return err
	}
	var h hash.Hash
	var ch crypto.Hash
	switch alg[len(alg)-3:] {
	case "256":
		h, ch = sha256.New(), crypto.SHA256
	case "384":
		h, ch = sha512.New384(), crypto.SHA384
	case "512":
		h, ch = sha512.New(), crypto.SHA512
	default:
		return fmt.Errorf("unsupported alg %q", alg)
	}
	h.Write([]byte(signed))
	digest := h.Sum(nil)
	switch {
	case strings.HasPrefix(alg, "RS"):
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return errors.New("the key is not an RSA key")
		}
		return rsa.VerifyPKCS1v15(k, ch, digest, sig)
	case strings.HasPrefix(alg, "PS"):
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return errors.New("the key is not an RSA key")
		}
		return rsa.VerifyPSS(k, ch, digest, sig, nil)
	case strings.HasPrefix(alg, "ES"):
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || len(sig)%2 != 0 {
			return errors.New("the key is not an EC key, or a bad signature")
		}
		r, s := new(big.Int).SetBytes(sig[:len(sig)/2]), new(big.Int).SetBytes(sig[len(sig)/2:])
		if !ecdsa.Verify(k, digest, r, s) {
			return errors.New("bad signature")
		}
		return nil
	}
	return fmt.Errorf("unsupported alg %q", alg)
}

func parseJWKS(b []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	dec := func(s string) *big.Int {
		b, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		return new(big.Int).SetBytes(b)
	}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			keys[k.Kid] = &rsa.PublicKey{N: dec(k.N), E: int(dec(k.E).Int64())}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			// The uncompressed point 0x04 || X || Y, each coordinate
			// left-padded to the field size.
			size := (curve.Params().BitSize + 7) / 8
			x, y := dec(k.X).Bytes(), dec(k.Y).Bytes()
			if len(x) > size || len(y) > size {
				continue
			}
			point := make([]byte, 1+2*size)
			point[0] = 4
			copy(point[1+size-len(x):1+size], x)
			copy(point[1+2*size-len(y):], y)
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
			if err != nil {
				continue // not a point of the curve
			}
			keys[k.Kid] = pub
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS: no usable signing key")
	}
	return keys, nil
}
