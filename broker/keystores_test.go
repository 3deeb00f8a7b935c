package broker

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// storeFixture is a server certificate (signed by the test CA) and a client
// one, with the files of every key and trust store format.
type storeFixture struct {
	pki                *testPKI
	server, client     tls.Certificate
	serverDER          []byte
	certPEM, keyPEM    []byte // the server's
	encKeyPEM          []byte // the server's key, PKCS#8 encrypted with "keypass"
	p12, jks           string // the server's key stores
	trustP12, trustJKS string // the CA as trust stores
	otherCA            *testPKI
	otherClient        tls.Certificate
}

func newStoreFixture(t *testing.T) *storeFixture {
	t.Helper()
	f := &storeFixture{pki: newTestPKI(t), otherCA: newTestPKI(t)}
	dir := f.pki.dir
	cert, key, certPEM := makeCert(t, "localhost", f.pki.ca, f.pki.caKey, false)
	f.certPEM, f.keyPEM, f.serverDER = certPEM, keyPEM(t, key), cert.Raw
	var err error
	if f.server, err = tls.X509KeyPair(f.certPEM, f.keyPEM); err != nil {
		t.Fatal(err)
	}
	enc, err := pkcs8.MarshalPrivateKey(key, []byte("keypass"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.encKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc})
	_, f.client = f.pki.keystore(t, "client", "client")
	_, f.otherClient = f.otherCA.keystore(t, "other", "client")

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p12, err := pkcs12.Modern2023.Encode(key, cert, []*x509.Certificate{f.pki.ca}, "storepass")
	if err != nil {
		t.Fatal(err)
	}
	f.p12 = write("server.p12", p12)
	tp12, err := pkcs12.Modern2023.EncodeTrustStore([]*x509.Certificate{f.pki.ca}, "trustpass")
	if err != nil {
		t.Fatal(err)
	}
	f.trustP12 = write("trust.p12", tp12)

	der, _ := x509.MarshalPKCS8PrivateKey(key)
	ks := keystore.New()
	now := time.Now()
	if err := ks.SetPrivateKeyEntry("server", keystore.PrivateKeyEntry{CreationTime: now, PrivateKey: der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: cert.Raw}, {Type: "X509", Content: f.pki.ca.Raw}}},
		[]byte("keypass")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte("storepass")); err != nil {
		t.Fatal(err)
	}
	f.jks = write("server.jks", buf.Bytes())
	ts := keystore.New()
	if err := ts.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: now,
		Certificate: keystore.Certificate{Type: "X509", Content: f.pki.ca.Raw}}); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := ts.Store(&buf, []byte("trustpass")); err != nil {
		t.Fatal(err)
	}
	f.trustJKS = write("trust.jks", buf.Bytes())
	return f
}

// clientTLS presents cert and checks that the broker served the fixture's
// server certificate.
func (f *storeFixture) clientTLS(cert tls.Certificate) *tls.Config {
	c := f.pki.clientTLS(cert)
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if !bytes.Equal(cs.PeerCertificates[0].Raw, f.serverDER) {
			return errors.New("the broker served another certificate")
		}
		return nil
	}
	return c
}

// TestKeyStores_EveryFormatServesAndVerifies starts an SSL listener
// (ssl.client.auth=required) with each key store and trust store format and
// connects with franz-go: the fixture's server certificate is served, a
// client certificate of the trusted CA is accepted and one of another CA
// refused.
func TestKeyStores_EveryFormatServesAndVerifies(t *testing.T) {
	f := newStoreFixture(t)
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"PEM file, encrypted key", map[string]string{
			"ssl.keystore.location":   writeTemp(t, append(append([]byte{}, f.encKeyPEM...), f.certPEM...)),
			"ssl.key.password":        "keypass",
			"ssl.truststore.location": f.pki.caPath}},
		{"PEM inline, encrypted key", map[string]string{
			"ssl.keystore.certificate.chain": string(f.certPEM), "ssl.keystore.key": string(f.encKeyPEM),
			"ssl.key.password":            "keypass",
			"ssl.truststore.certificates": string(f.pki.caPEM)}},
		{"PKCS12 key and trust stores", map[string]string{
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.p12, "ssl.keystore.password": "storepass",
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": f.trustP12, "ssl.truststore.password": "trustpass"}},
		{"JKS key and trust stores, own key password", map[string]string{
			"ssl.keystore.type": "JKS", "ssl.keystore.location": f.jks, "ssl.keystore.password": "storepass", "ssl.key.password": "keypass",
			"ssl.truststore.type": "jks", "ssl.truststore.location": f.trustJKS, "ssl.truststore.password": "trustpass"}},
		{"JKS trust store without its password", map[string]string{
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.p12, "ssl.keystore.password": "storepass",
			"ssl.truststore.type": "JKS", "ssl.truststore.location": f.trustJKS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.client.auth": "required"}
			for k, v := range tc.props {
				props[k] = v
			}
			b, _ := startBroker(t, "", props)
			addr := b.ListenerAddr("SSL").String()
			if err := pingErr(t, addr, kgo.DialTLSConfig(f.clientTLS(f.client))); err != nil {
				t.Fatalf("trusted client: %v", err)
			}
			if err := pingErr(t, addr, kgo.DialTLSConfig(f.clientTLS(f.otherClient))); err == nil {
				t.Fatal("a client certificate of an untrusted CA was accepted")
			}
		})
	}
}

func writeTemp(t *testing.T, b []byte) string {
	p := filepath.Join(t.TempDir(), "store")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKeyStores_ConfigErrors checks Kafka's rules on the store properties:
// each refused configuration fails Listen with a message naming the fault.
func TestKeyStores_ConfigErrors(t *testing.T) {
	f := newStoreFixture(t)
	plainPEM := writeTemp(t, append(append([]byte{}, f.keyPEM...), f.certPEM...))
	encPEM := writeTemp(t, append(append([]byte{}, f.encKeyPEM...), f.certPEM...))
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"ssl.keystore.type": "BKS", "ssl.keystore.location": f.p12}, "want PEM, PKCS12 or JKS"},
		{map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.p12}, "needs ssl.keystore.password"},
		{map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.p12, "ssl.keystore.password": "wrong"}, "ssl.keystore.location"},
		{map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": f.jks, "ssl.keystore.password": "wrong"}, "invalid digest"},
		{map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": f.jks, "ssl.keystore.password": "storepass"}, "ssl.key.password"},
		{map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": f.p12, "ssl.keystore.password": "storepass"}, "invalid magic"},
		{map[string]string{"ssl.keystore.location": plainPEM, "ssl.keystore.password": "x"}, "cannot be set with a PEM key store"},
		{map[string]string{"ssl.keystore.location": plainPEM, "ssl.key.password": "keypass"}, "not encrypted"},
		{map[string]string{"ssl.keystore.location": encPEM}, "set ssl.key.password"},
		{map[string]string{"ssl.keystore.location": encPEM, "ssl.key.password": "wrong"}, "decrypting the private key"},
		{map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.key": string(f.keyPEM), "ssl.keystore.certificate.chain": string(f.certPEM)}, "only with ssl.keystore.type=PEM"},
		{map[string]string{"ssl.keystore.location": plainPEM, "ssl.truststore.location": f.pki.caPath, "ssl.truststore.password": "x"}, "cannot be set with a PEM trust store"},
		{map[string]string{"ssl.keystore.location": plainPEM, "ssl.truststore.password": "x"}, "ssl.truststore.location is not"},
		{map[string]string{"ssl.keystore.location": plainPEM, "ssl.truststore.type": "PKCS12", "ssl.truststore.location": f.trustP12, "ssl.truststore.password": "wrong"}, "ssl.truststore.location"},
		{map[string]string{"ssl.keystore.location": plainPEM, "ssl.truststore.type": "JKS", "ssl.truststore.location": f.trustJKS, "ssl.truststore.password": "wrong"}, "invalid digest"},
	} {
		props := map[string]string{"listeners": "SSL://127.0.0.1:0"}
		for k, v := range tc.props {
			props[k] = v
		}
		b, err := New(Config{DataDir: t.TempDir(), Props: props, Logger: testLogger()})
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: New: %v, want %q", tc.props, err, tc.want)
			}
			continue
		}
		_, err = b.Listen()
		b.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.props, err, tc.want)
		}
	}
}
