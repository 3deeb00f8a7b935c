package compat

// Key and trust stores made by the JDK's keytool (JKS and PKCS12) and by
// openssl (encrypted PKCS#8 PEM keys), served by the broker to franz-go and
// kcat over TLS with client certificates required.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// needTool returns the path of a tool the test needs: missing, it skips,
// except under CI (GREGOR_CI=1), where it fails.
func needTool(t *testing.T, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("GREGOR_CI") == "1" {
			t.Fatalf("%s not found on the PATH (%v): CI must run this test; %s", name, err, hint)
		}
		t.Skipf("%s not found on the PATH (%v); %s", name, err, hint)
	}
	return p
}

// run runs a tool, bounded by a minute, failing the test on an error.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestSecurity_KeytoolAndOpensslStores: for each of a keytool JKS key
// store (own key password) with a keytool JKS trust store, keytool PKCS12
// stores, and an openssl-encrypted PKCS#8 PEM key (AES-256 and 3DES), the
// broker serves the store's certificate on its SSL listener
// (ssl.client.auth=required, the client's CA in the trust store) and
// franz-go produces and consumes exact records; kcat (librdkafka) reads
// them over the same listener.
func TestSecurity_KeytoolAndOpensslStores(t *testing.T) {
	keytool := needTool(t, "keytool", "install a JDK 17+ (make deps)")
	openssl := needTool(t, "openssl", "install openssl")
	pki := newSecPKI(t)
	dir := pki.dir
	p := func(n string) string { return filepath.Join(dir, n) }
	san := "SAN=ip:127.0.0.1,dns:localhost"
	// JKS with a key password of its own, PKCS12 (one password, as keytool requires).
	run(t, keytool, "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=localhost,OU=jks",
		"-ext", san, "-validity", "2", "-storetype", "JKS", "-keystore", p("server.jks"), "-storepass", "storepass", "-keypass", "keypass")
	run(t, keytool, "-genkeypair", "-alias", "broker", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost,OU=p12",
		"-ext", san, "-validity", "2", "-storetype", "PKCS12", "-keystore", p("server.p12"), "-storepass", "storepass")
	for _, s := range []struct{ store, typ, crt string }{{"server.jks", "JKS", "jks.crt"}, {"server.p12", "PKCS12", "p12.crt"}} {
		run(t, keytool, "-exportcert", "-rfc", "-alias", "broker", "-keystore", p(s.store), "-storetype", s.typ,
			"-storepass", "storepass", "-file", p(s.crt))
	}
	for _, s := range []struct{ store, typ string }{{"trust.jks", "JKS"}, {"trust.p12", "PKCS12"}} {
		run(t, keytool, "-importcert", "-noprompt", "-alias", "compat-ca", "-file", pki.caPath, "-storetype", s.typ,
			"-keystore", p(s.store), "-storepass", "trustpass")
	}
	// openssl: the PEM key encrypted with PBES2 (AES-256-CBC, then 3DES).
	_, crt, key := pki.issue(t, "pemsrv", "localhost")
	for _, c := range []string{"aes-256-cbc", "des3"} {
		run(t, openssl, "pkcs8", "-topk8", "-v2", c, "-in", key, "-out", p("enc-"+c+".key"), "-passout", "pass:keypass")
		b, err := os.ReadFile(p("enc-" + c + ".key"))
		must(t, err)
		if !bytes.Contains(b, []byte("ENCRYPTED PRIVATE KEY")) {
			t.Fatalf("openssl wrote no encrypted key: %s", b)
		}
		cb, err := os.ReadFile(crt)
		must(t, err)
		must(t, os.WriteFile(p("enc-"+c+".pem"), append(b, cb...), 0o600))
	}
	_, clientCrt, clientKey := pki.issue(t, "client", "client")
	clientCert, err := tls.LoadX509KeyPair(clientCrt, clientKey)
	must(t, err)

	for _, tc := range []struct {
		name, serverCrt string
		sets            []string
	}{
		{"keytool JKS", p("jks.crt"), []string{"ssl.keystore.type=JKS", "ssl.keystore.location=" + p("server.jks"),
			"ssl.keystore.password=storepass", "ssl.key.password=keypass",
			"ssl.truststore.type=JKS", "ssl.truststore.location=" + p("trust.jks"), "ssl.truststore.password=trustpass"}},
		{"keytool PKCS12", p("p12.crt"), []string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + p("server.p12"),
			"ssl.keystore.password=storepass",
			"ssl.truststore.type=PKCS12", "ssl.truststore.location=" + p("trust.p12"), "ssl.truststore.password=trustpass"}},
		{"openssl PEM aes-256-cbc", pki.caPath, []string{"ssl.keystore.location=" + p("enc-aes-256-cbc.pem"), "ssl.key.password=keypass"}},
		{"openssl PEM des3", pki.caPath, []string{"ssl.keystore.location=" + p("enc-des3.pem"), "ssl.key.password=keypass"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addrs := secureBroker(t, pki, tc.sets...)
			pool := x509.NewCertPool()
			b, err := os.ReadFile(tc.serverCrt)
			must(t, err)
			pool.AppendCertsFromPEM(b)
			tlsCfg := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12}
			topic := topicName(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prod := kgoClient(t, addrs["SSL"], kgo.DialTLSConfig(tlsCfg), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
			for _, v := range []string{"one", "two", "three"} {
				must(t, prod.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr())
			}
			out := kcat(t, "", "-b", addrs["SSL"], "-X", "security.protocol=SSL", "-X", "ssl.ca.location="+tc.serverCrt,
				"-X", "ssl.certificate.location="+clientCrt, "-X", "ssl.key.location="+clientKey,
				"-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o:%s\n")
			if strings.TrimSpace(out) != "0:one\n1:two\n2:three" {
				t.Fatalf("kcat consumed %q", out)
			}
			// A client without a certificate is refused.
			if err := kgoPing(t, addrs["SSL"], kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})); err == nil {
				t.Fatal("a client without a certificate was accepted")
			}
		})
	}
}
