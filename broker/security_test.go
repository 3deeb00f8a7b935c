package broker

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// testPKI is a CA and certificates made for one test; nothing is committed.
type testPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	caPath string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	p.ca, p.caKey, p.caPEM = makeCert(t, "Test CA", nil, nil, true)
	p.caPath = filepath.Join(p.dir, "ca.pem")
	if err := os.WriteFile(p.caPath, p.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var serial int64 = 1

// makeCert returns a certificate for subject signed by parent (self-signed
// when nil), its key and the certificate's PEM.
func makeCert(t testing.TB, subject string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: subject, OrganizationalUnit: []string{"eng"}, Organization: []string{"Gregor Test"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(t testing.TB, key *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
}

// keystore writes a PEM with a key and its certificate signed by the CA,
// returning its path and the tls.Certificate.
func (p *testPKI) keystore(t testing.TB, name, subject string) (string, tls.Certificate) {
	t.Helper()
	_, key, certPEM := makeCert(t, subject, p.ca, p.caKey, false)
	kp := keyPEM(t, key)
	path := filepath.Join(p.dir, name+".pem")
	if err := os.WriteFile(path, append(append([]byte{}, kp...), certPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, kp)
	if err != nil {
		t.Fatal(err)
	}
	return path, cert
}

func (p *testPKI) clientTLS(certs ...tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	return &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12}
}

// secureBroker starts a broker with the four kinds of listener.
func secureBroker(t testing.TB, pki *testPKI, dir string, props map[string]string) (*Broker, map[string]string) {
	t.Helper()
	ks, _ := pki.keystore(t, "server", "localhost")
	all := map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"ssl.keystore.location":   ks,
		"ssl.truststore.location": pki.caPath,
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
	}
	for k, v := range props {
		all[k] = v
	}
	b, _ := startBroker(t, dir, all)
	addrs := map[string]string{}
	for _, n := range []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"} {
		addrs[n] = b.ListenerAddr(n).String()
	}
	return b, addrs
}

func pingErr(t testing.TB, addr string, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

func metadataBrokerAddr(t testing.TB, addr string, opts ...kgo.Opt) string {
	t.Helper()
	cl := newClient(t, addr, opts...)
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
	return net.JoinHostPort(resp.Brokers[0].Host, fmt.Sprint(resp.Brokers[0].Port))
}

func TestListeners_MetadataAnswersTheListenerAddress(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA256, "alice-secret", 0); err != nil {
		t.Fatal(err)
	}
	_, addrs := secureBroker(t, pki, dir, nil)
	auth := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	tlsOpt := kgo.DialTLSConfig(pki.clientTLS())
	for name, opts := range map[string][]kgo.Opt{
		"PLAINTEXT":      nil,
		"SSL":            {tlsOpt},
		"SASL_PLAINTEXT": {auth},
		"SASL_SSL":       {auth, tlsOpt},
	} {
		if got := metadataBrokerAddr(t, addrs[name], opts...); got != addrs[name] {
			t.Errorf("%s: Metadata lists %s, want the listener's %s", name, got, addrs[name])
		}
	}
}

func TestListeners_ConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"listeners": "FOO://127.0.0.1:0"}, "no security protocol"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"}, "twice"},
		{map[string]string{"listeners": "SSL://127.0.0.1:0"}, "ssl.keystore"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "X"}, "not among"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI is not supported"},
	} {
		b, err := New(Config{DataDir: t.TempDir(), Props: tc.props, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Listen()
		b.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.props, err, tc.want)
		}
	}
}

func TestListeners_CustomNamesAndAdvertised(t *testing.T) {
	b, _ := startBroker(t, "", map[string]string{
		"listeners":                      "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"advertised.listeners":           "EXTERNAL://kafka.example.com:19092",
		"inter.broker.listener.name":     "INTERNAL",
	})
	internal, external := b.ListenerAddr("INTERNAL").String(), b.ListenerAddr("EXTERNAL").String()
	if got := metadataBrokerAddr(t, internal); got != internal {
		t.Errorf("INTERNAL: Metadata lists %s, want %s", got, internal)
	}
	c := dialRaw(t, external)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	c.send(1, req)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	c.recv(1, resp)
	mb := resp.Brokers[0]
	if mb.Host != "kafka.example.com" || mb.Port != 19092 {
		t.Errorf("EXTERNAL: Metadata lists %s:%d, want kafka.example.com:19092", mb.Host, mb.Port)
	}
}

func TestTLS_ProduceConsumeThroughTLS(t *testing.T) {
	pki := newTestPKI(t)
	_, addrs := secureBroker(t, pki, "", nil)
	opt := kgo.DialTLSConfig(pki.clientTLS())
	cl := newClient(t, addrs["SSL"], opt, kgo.DefaultProduceTopic("tls"), kgo.AllowAutoTopicCreation())
	ctx := testCtx(t)
	const n = 500
	big := bytes.Repeat([]byte("x"), 10_000)
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: big}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, addrs["SSL"], opt, kgo.ConsumeTopics("tls"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || string(r.Key) != fmt.Sprint(got) || !bytes.Equal(r.Value, big) {
				t.Fatalf("record %d: offset %d key %q", got, r.Offset, r.Key)
			}
			got++
		})
	}
}

func TestTLS_MutualPrincipalAndUntrusted(t *testing.T) {
	pki := newTestPKI(t)
	b, addrs := secureBroker(t, pki, "", map[string]string{
		"ssl.client.auth":             "required",
		"ssl.principal.mapping.rules": `RULE:^CN=([^,]*),OU=eng.*$/$1/U,DEFAULT`,
	})
	_, alice := pki.keystore(t, "alice", "alice")
	// Keep the client (and so its connection) open while looking for it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs["SSL"]), kgo.RequestRetries(0), kgo.DialTimeout(5*time.Second), kgo.DialTLSConfig(pki.clientTLS(alice)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("mTLS client: %v", err)
	}
	waitFor(t, 5*time.Second, "the principal of the mTLS connection", func() bool {
		b.srv.mu.Lock()
		defer b.srv.mu.Unlock()
		for c := range b.srv.conns {
			if c.ls.name == "SSL" && c.principalName() == "User:ALICE" {
				return true
			}
		}
		return false
	})
	if err := pingErr(t, addrs["SSL"], kgo.DialTLSConfig(pki.clientTLS())); err == nil {
		t.Fatal("a client without a certificate was let in with ssl.client.auth=required")
	}
	other := newTestPKI(t)
	_, mallory := other.keystore(t, "mallory", "mallory")
	if err := pingErr(t, addrs["SSL"], kgo.DialTLSConfig(pki.clientTLS(mallory))); err == nil {
		t.Fatal("a certificate of an untrusted CA was accepted")
	}
	// A client that does not trust the broker's CA fails too.
	if err := pingErr(t, addrs["SSL"], kgo.DialTLSConfig(other.clientTLS(alice))); err == nil {
		t.Fatal("a client accepted a broker certificate of a CA it does not trust")
	}
	// The broker counts a failure when its side of the handshake returns,
	// which may be after the client has given up.
	waitFor(t, 5*time.Second, "at least 2 TLS handshake failures counted", func() bool {
		return b.SecurityStats().TLSHandshakeFailures >= 2
	})
}

func TestTLS_CertificatesReloadedWhenFilesChange(t *testing.T) {
	pki := newTestPKI(t)
	_, addrs := secureBroker(t, pki, "", nil)
	subject := func() string {
		conn, err := tls.Dial("tcp", addrs["SSL"], pki.clientTLS())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := subject(); got != "localhost" {
		t.Fatalf("served %q", got)
	}
	// Renew: a new certificate in the same file.
	_, key, certPEM := makeCert(t, "renewed", pki.ca, pki.caKey, false)
	path := filepath.Join(pki.dir, "server.pem")
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append(keyPEM(t, key), certPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got := subject(); got != "renewed" {
		t.Fatalf("after renewal served %q, want the renewed certificate", got)
	}
}

func TestSASL_MechanismsAndBadCredentials(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	for _, m := range []string{config.ScramSHA256, config.ScramSHA512} {
		if err := AddUser(dir, "alice", m, "alice-secret", 0); err != nil {
			t.Fatal(err)
		}
	}
	b, addrs := secureBroker(t, pki, dir, nil)
	tlsOpt := kgo.DialTLSConfig(pki.clientTLS())
	good := map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
	}
	for name, m := range good {
		if err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(m)); err != nil {
			t.Errorf("%s over SASL_PLAINTEXT: %v", name, err)
		}
		if err := pingErr(t, addrs["SASL_SSL"], kgo.SASL(m), tlsOpt); err != nil {
			t.Errorf("%s over SASL_SSL: %v", name, err)
		}
	}
	bad := map[string]struct {
		m   sasl.Mechanism
		msg string
	}{
		"PLAIN wrong password":   {plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), "Authentication failed: Invalid username or password"},
		"PLAIN unknown user":     {plain.Auth{User: "bob", Pass: "alice-secret"}.AsMechanism(), "Authentication failed: Invalid username or password"},
		"SCRAM-256 wrong pass":   {scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), "invalid credentials with SASL mechanism SCRAM-SHA-256"},
		"SCRAM-512 unknown user": {scram.Auth{User: "nonexistent", Pass: "x"}.AsSha512Mechanism(), "invalid credentials with SASL mechanism SCRAM-SHA-512"},
	}
	for name, tc := range bad {
		err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(tc.m))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want SASL_AUTHENTICATION_FAILED with %q", name, err, tc.msg)
		}
	}
	if st := b.SecurityStats(); st.AuthFailures != int64(len(bad)) {
		t.Errorf("auth failures %d, want %d", st.AuthFailures, len(bad))
	}
}

func unsecuredJWT(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func TestSASL_OAuthBearerUnsecured(t *testing.T) {
	pki := newTestPKI(t)
	b, addrs := secureBroker(t, pki, "", nil)
	ping := func(tok string) error {
		return pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
	}
	if err := ping(unsecuredJWT(fmt.Sprintf(`{"sub":"admin","exp":%d}`, time.Now().Add(time.Hour).Unix()))); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	for name, tok := range map[string]string{
		"expired":    unsecuredJWT(fmt.Sprintf(`{"sub":"admin","exp":%d}`, time.Now().Add(-time.Minute).Unix())),
		"no sub":     unsecuredJWT(fmt.Sprintf(`{"exp":%d}`, time.Now().Add(time.Hour).Unix())),
		"no exp":     unsecuredJWT(`{"sub":"admin"}`),
		"signed":     strings.TrimSuffix(unsecuredJWT(fmt.Sprintf(`{"sub":"admin","exp":%d}`, time.Now().Add(time.Hour).Unix())), ".") + ".c2ln",
		"garbage":    "not-a-jwt",
		"future iat": unsecuredJWT(fmt.Sprintf(`{"sub":"admin","exp":%d,"iat":%d}`, time.Now().Add(2*time.Hour).Unix(), time.Now().Add(time.Hour).Unix())),
	} {
		err := ping(tok)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
			t.Errorf("%s token: got %v, want SASL_AUTHENTICATION_FAILED with invalid_token", name, err)
		}
	}
	_ = b
}

// rawSASL speaks the protocol by hand on a SASL listener.
func TestSASL_NothingServedBeforeAuthentication(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA256, "alice-secret", 0); err != nil {
		t.Fatal(err)
	}
	_, addrs := secureBroker(t, pki, dir, map[string]string{"sasl.server.authentication.timeout.ms": "300"})
	addr := addrs["SASL_PLAINTEXT"]

	// ApiVersions is answered; Metadata then closes the connection.
	c := dialRaw(t, addr)
	c.send(1, apiVersionsReq())
	c.recv(1, kmsg.NewPtrApiVersionsResponse())
	c.send(2, kmsg.NewPtrMetadataRequest())
	c.expectClosed()

	// SaslAuthenticate before SaslHandshake: ILLEGAL_SASL_STATE, closed.
	c = dialRaw(t, addr)
	ar := kmsg.NewPtrSASLAuthenticateRequest()
	ar.Version = 1
	c.send(1, ar)
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	aresp.Version = 1
	c.recv(1, aresp)
	if aresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslAuthenticate first: error %d, want ILLEGAL_SASL_STATE", aresp.ErrorCode)
	}
	c.expectClosed()

	// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the list, closed.
	c = dialRaw(t, addr)
	hr := kmsg.NewPtrSASLHandshakeRequest()
	hr.Version, hr.Mechanism = 1, "GSSAPI"
	c.send(1, hr)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	c.recv(1, hresp)
	if hresp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hresp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
		t.Errorf("handshake GSSAPI: %d %v", hresp.ErrorCode, hresp.SupportedMechanisms)
	}
	c.expectClosed()

	// A client that never authenticates is closed after the timeout.
	c = dialRaw(t, addr)
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	c.expectClosed()
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("closed after %s", d)
	}

	// A frame larger than sasl.server.max.receive.size before
	// authentication closes the connection without reading it.
	c = dialRaw(t, addr)
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], 600_000)
	c.nc.Write(size[:])
	c.expectClosed()
}

func TestSASL_HandshakeV0BareTokens(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA256, "alice-secret", 0); err != nil {
		t.Fatal(err)
	}
	_, addrs := secureBroker(t, pki, dir, nil)
	for _, pass := range []string{"alice-secret", "wrong"} {
		c := dialRaw(t, addrs["SASL_PLAINTEXT"])
		hr := kmsg.NewPtrSASLHandshakeRequest()
		hr.Version, hr.Mechanism = 0, "PLAIN"
		c.send(1, hr)
		hresp := kmsg.NewPtrSASLHandshakeResponse()
		c.recv(1, hresp)
		if hresp.ErrorCode != 0 {
			t.Fatalf("handshake: %d", hresp.ErrorCode)
		}
		var frame []byte
		frame = binary.BigEndian.AppendUint32(frame, uint32(len("\x00alice\x00"+pass)))
		frame = append(frame, "\x00alice\x00"+pass...)
		c.nc.Write(frame)
		if pass != "alice-secret" {
			c.expectClosed()
			continue
		}
		var size [4]byte
		if _, err := io.ReadFull(c.nc, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("bare PLAIN answer: %v %v", err, size)
		}
		c.send(2, kmsg.NewPtrMetadataRequest())
		c.recv(2, kmsg.NewPtrMetadataResponse())
	}
}

func TestSASL_ReauthenticationKeepsTheConnection(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA512, "alice-secret", 0); err != nil {
		t.Fatal(err)
	}
	b, addrs := secureBroker(t, pki, dir, map[string]string{"connections.max.reauth.ms": "1500"})
	cl := newClient(t, addrs["SASL_SSL"], kgo.DialTLSConfig(pki.clientTLS()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	ctx := testCtx(t)
	for range 2 { // the seed connection, then broker 0's
		if err := cl.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := b.SecurityStats()
	initial := st.AuthSuccesses - st.Reauthentications
	waitFor(t, 15*time.Second, "two re-authentications", func() bool {
		if err := cl.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		return b.SecurityStats().Reauthentications >= 2
	})
	if st := b.SecurityStats(); st.AuthSuccesses-st.Reauthentications != initial {
		t.Errorf("%d new authentications: re-authentication should keep the connections", st.AuthSuccesses-st.Reauthentications-initial)
	}
	if st := b.SecurityStats(); st.AuthFailures != 0 {
		t.Errorf("auth failures %d", st.AuthFailures)
	}
}

func TestUserScramCredentials_AlterDescribeAuthenticate(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "admin", config.ScramSHA256, "admin-secret", 0); err != nil {
		t.Fatal(err)
	}
	_, addrs := secureBroker(t, pki, dir, nil)
	adminOpt := kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism())
	admCl := newClient(t, addrs["SASL_PLAINTEXT"], adminOpt)
	adm := kadm.NewClient(admCl)
	ctx := testCtx(t)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["bob"]; r.Err != nil {
		t.Fatalf("bob: %v", r.Err)
	}
	// What kadm would refuse to send: the broker's own checks.
	areq := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, u := range []struct {
		name string
		mech int8
		iter int32
	}{{"carol", 1, 1000}, {"dan", 1, 20000}, {"erin", 3, 4096}, {"", 1, 4096}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.name, u.mech, u.iter, []byte("salt"), []byte("salted")
		areq.Upsertions = append(areq.Upsertions, up)
	}
	aresp, err := areq.RequestWith(ctx, admCl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"carol": "Too few iterations", "dan": "Too many iterations", "erin": "Unknown SCRAM mechanism", "": "Username must not be empty"}
	for _, r := range aresp.Results {
		if r.ErrorCode == 0 || r.ErrorMessage == nil || *r.ErrorMessage != want[r.User] {
			t.Errorf("upsert %q: %d %v, want %q", r.User, r.ErrorCode, r.ErrorMessage, want[r.User])
		}
	}
	if err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("bob authenticates: %v", err)
	}
	// PLAIN checks against the SCRAM credential.
	if err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())); err != nil {
		t.Fatalf("bob with PLAIN: %v", err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := desc["bob"]; len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha512 || d.CredInfos[0].Iterations != 8192 {
		t.Errorf("describe bob: %+v", d)
	}
	if _, ok := desc["admin"]; !ok || len(desc) != 2 {
		t.Errorf("describe all: %+v", desc)
	}
	desc, err = adm.DescribeUserSCRAMs(ctx, "nobody")
	if err == nil && !errors.Is(desc["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describe nobody: %+v", desc["nobody"])
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}, {User: "dave", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res["bob"].Err != nil || !errors.Is(res["dave"].Err, kerr.ResourceNotFound) {
		t.Fatalf("deletions: %+v", res)
	}
	if err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("deleted bob: %v", err)
	}
	// The store never holds a password.
	raw, err := os.ReadFile(filepath.Join(dir, metaDirName, usersFileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("secret")) {
		t.Errorf("users file holds a password: %s", raw)
	}
}

func TestSASLPlaintextListenerRejectsSASLOnPlaintext(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	c := dialRaw(t, addr)
	hr := kmsg.NewPtrSASLHandshakeRequest()
	hr.Version, hr.Mechanism = 1, "PLAIN"
	c.send(1, hr)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	c.recv(1, hresp)
	if hresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslHandshake on PLAINTEXT: %d, want ILLEGAL_SASL_STATE", hresp.ErrorCode)
	}
}

func TestSASL_ExpiredSessionClosesAtNextRequest(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA256, "alice-secret", 0); err != nil {
		t.Fatal(err)
	}
	b, addrs := secureBroker(t, pki, dir, map[string]string{"connections.max.reauth.ms": "60000"})
	c := dialRaw(t, addrs["SASL_PLAINTEXT"])
	hr := kmsg.NewPtrSASLHandshakeRequest()
	hr.Version, hr.Mechanism = 1, "PLAIN"
	c.send(1, hr)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	c.recv(1, hresp)
	ar := kmsg.NewPtrSASLAuthenticateRequest()
	ar.Version, ar.SASLAuthBytes = 1, []byte("\x00alice\x00alice-secret")
	c.send(2, ar)
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	aresp.Version = 1
	c.recv(2, aresp)
	if aresp.ErrorCode != 0 || aresp.SessionLifetimeMillis != 60000 {
		t.Fatalf("authenticate: error %d, lifetime %d", aresp.ErrorCode, aresp.SessionLifetimeMillis)
	}
	// The gate of a connection whose session ended refuses everything but
	// a new handshake.
	l := b.srv.listeners[2]
	old := &conn{b: b, ls: l, auth: &connAuth{phase: authDone, principal: "User:alice", expiry: time.Now().Add(-time.Second)}}
	if err := old.gate(int16(kmsg.Metadata)); err == nil {
		t.Error("an expired session was served")
	}
	if err := old.gate(int16(kmsg.SASLHandshake)); err != nil {
		t.Errorf("re-authentication of an expired session refused: %v", err)
	}
}
