package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signES256 makes a compact JWS of claims signed with key.
func signES256(t *testing.T, key *ecdsa.PrivateKey, kid, claims string) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	signed := enc([]byte(`{"alg":"ES256","typ":"JWT","kid":"`+kid+`"}`)) + "." + enc([]byte(claims))
	d := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + enc(sig)
}

func TestOAuth_SignedTokensAgainstJWKS(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	enc := base64.RawURLEncoding.EncodeToString
	jwks := fmt.Sprintf(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","use":"sig","x":%q,"y":%q}]}`,
		enc(key.X.FillBytes(make([]byte, 32))), enc(key.Y.FillBytes(make([]byte, 32))))
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, []byte(jwks), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	v, err := NewOAuthValidator(map[string]string{
		"sasl.oauthbearer.jwks.endpoint.url":  "file://" + path,
		"sasl.oauthbearer.expected.audience":  "kafka",
		"sasl.oauthbearer.expected.issuer":    "https://idp.example",
		"sasl.oauthbearer.clock.skew.seconds": "30",
	}, func() time.Time { return now }, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	claims := func(sub, aud, iss string, exp time.Time) string {
		return fmt.Sprintf(`{"sub":%q,"aud":[%q],"iss":%q,"exp":%d,"iat":%d}`, sub, aud, iss, exp.Unix(), now.Unix())
	}
	good := signES256(t, key, "k1", claims("svc", "kafka", "https://idp.example", now.Add(time.Hour)))
	if sub, exp, err := v.validate(good); err != nil || sub != "svc" || exp.Unix() != now.Add(time.Hour).Unix() {
		t.Fatalf("valid token: %q %v %v", sub, exp, err)
	}
	// Within the clock skew.
	if _, _, err := v.validate(signES256(t, key, "k1", claims("svc", "kafka", "https://idp.example", now.Add(-10*time.Second)))); err != nil {
		t.Errorf("token 10 s past expiry with 30 s skew: %v", err)
	}
	for name, tok := range map[string]string{
		"expired":      signES256(t, key, "k1", claims("svc", "kafka", "https://idp.example", now.Add(-time.Minute))),
		"wrong key":    signES256(t, other, "k1", claims("svc", "kafka", "https://idp.example", now.Add(time.Hour))),
		"unknown kid":  signES256(t, key, "k9", claims("svc", "kafka", "https://idp.example", now.Add(time.Hour))),
		"wrong aud":    signES256(t, key, "k1", claims("svc", "other", "https://idp.example", now.Add(time.Hour))),
		"wrong issuer": signES256(t, key, "k1", claims("svc", "kafka", "https://evil.example", now.Add(time.Hour))),
		"unsecured":    unsecuredJWT(claims("svc", "kafka", "https://idp.example", now.Add(time.Hour))),
		"tampered":     strings.Replace(good, ".", ".e30", 1),
	} {
		if _, _, err := v.validate(tok); err == nil {
			t.Errorf("%s token accepted", name)
		}
	}
}
