package authn

// TLS for the SSL and SASL_SSL listeners, configured with Kafka's names:
//
//	ssl.keystore.type=PEM|PKCS12|JKS (default PEM; see keystores.go)
//	ssl.keystore.location            the key store file (PEM: the private key and the certificate chain)
//	ssl.keystore.certificate.chain   or, PEM only, the chain inline, and
//	ssl.keystore.key                 the private key inline
//	ssl.keystore.password            the PKCS12/JKS store's password
//	ssl.key.password                 a JKS key entry's password; decrypts an encrypted PEM key
//	ssl.truststore.type=PEM|PKCS12|JKS
//	ssl.truststore.location          the trusted CA certificates
//	ssl.truststore.certificates      or, PEM only, the certificates inline
//	ssl.truststore.password          the PKCS12/JKS trust store's password (optional)
//	ssl.client.auth=none|requested|required
//	ssl.enabled.protocols=TLSv1.2,TLSv1.3
//	ssl.principal.mapping.rules      (see principal.go)
//
// Each may be given per listener as listener.name.<name>.<property>. On a
// SASL_SSL listener ssl.client.auth counts only when listener-prefixed, as
// in Kafka (KIP-684). The files are checked on every new handshake with a
// stat (GetConfigForClient): a changed size or modification time reloads
// them, so renewed certificates are served without a restart; a reload
// that fails keeps the previous certificates and logs why.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/config"
)

// TLS is one listener's TLS configuration and the files it came from.
type TLS struct {
	props      map[string]string
	clientAuth tls.ClientAuthType
	minVersion uint16
	rules      []principalRule
	log        *slog.Logger

	mu    sync.Mutex
	cfg   *tls.Config
	stamp string // size and mtime of every file read
}

func NewTLS(props map[string]string, prefixed func(string) bool, saslSSL bool, log *slog.Logger) (*TLS, error) {
	ts := &TLS{props: props, log: log, clientAuth: tls.NoClientCert, minVersion: tls.VersionTLS12}
	if ca := props["ssl.client.auth"]; ca != "" && (!saslSSL || prefixed("ssl.client.auth")) {
		switch strings.ToLower(ca) {
		case "none":
		case "requested":
			ts.clientAuth = tls.VerifyClientCertIfGiven
		case "required":
			ts.clientAuth = tls.RequireAndVerifyClientCert
		default:
			return nil, fmt.Errorf("ssl.client.auth %q: want none, requested or required", ca)
		}
	}
	if v := props["ssl.enabled.protocols"]; v != "" {
		ts.minVersion = 0
		for _, p := range config.SplitList(v) {
			var ver uint16
			switch p {
			case "TLSv1.2":
				ver = tls.VersionTLS12
			case "TLSv1.3":
				ver = tls.VersionTLS13
			default:
				return nil, fmt.Errorf("ssl.enabled.protocols: %s is not supported (TLSv1.2, TLSv1.3)", p)
			}
			if ts.minVersion == 0 || ver < ts.minVersion {
				ts.minVersion = ver
			}
		}
	}
	var err error
	if ts.rules, err = parsePrincipalRules(props["ssl.principal.mapping.rules"]); err != nil {
		return nil, err
	}
	cfg, stamp, err := ts.load()
	if err != nil {
		return nil, err
	}
	ts.cfg, ts.stamp = cfg, stamp
	return ts, nil
}

// fileStamp identifies a file's version cheaply.
func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path + ":missing"
	}
	return fmt.Sprintf("%s:%d:%d", path, fi.Size(), fi.ModTime().UnixNano())
}

func (ts *TLS) stampNow() string {
	var s []string
	for _, k := range []string{"ssl.keystore.location", "ssl.truststore.location"} {
		if p := ts.props[k]; p != "" {
			s = append(s, fileStamp(p))
		}
	}
	return strings.Join(s, ";")
}

// load reads the key, chain and trust store.
func (ts *TLS) load() (*tls.Config, string, error) {
	stamp := ts.stampNow()
	cert, err := loadKeyStore(ts.props)
	if err != nil {
		return nil, "", err
	}
	cfg := &tls.Config{Certificates: cert, ClientAuth: ts.clientAuth, MinVersion: ts.minVersion}
	if pool, err := loadTrustStore(ts.props); err != nil {
		return nil, "", err
	} else if pool != nil {
		cfg.ClientCAs = pool
	} else if ts.clientAuth != tls.NoClientCert {
		return nil, "", errors.New("ssl.client.auth needs a trust store (ssl.truststore.location or ssl.truststore.certificates)")
	}
	return cfg, stamp, nil
}

// serverConfig is the listener's tls.Config: its GetConfigForClient serves
// the current certificates, reloading them when their files changed.
func (ts *TLS) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: ts.minVersion, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return ts.current(), nil
	}}
}

func (ts *TLS) current() *tls.Config {
	stamp := ts.stampNow()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if stamp != ts.stamp {
		cfg, st, err := ts.load()
		if err != nil {
			ts.log.Warn("reloading TLS certificates failed, keeping the previous ones", "err", err)
			ts.stamp = stamp // do not retry on every handshake until the files change again
		} else {
			ts.log.Info("TLS certificates reloaded")
			ts.cfg, ts.stamp = cfg, st
		}
	}
	return ts.cfg
}

// Principal is the principal of a TLS client: its certificate's subject
// mapped by ssl.principal.mapping.rules, ANONYMOUS without one.
func (ts *TLS) Principal(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return "User:ANONYMOUS"
	}
	dn := cs.PeerCertificates[0].Subject.String()
	return "User:" + mapPrincipal(ts.rules, dn)
}

// ClientTLSConfig is the configuration a client (an inter-broker one, the
// CLI, a cluster link's) uses to reach a TLS listener from Kafka's client
// ssl.* properties: the trust store to verify the peer (the system's roots
// when none is set), and its own certificate when it has one (for
// ssl.client.auth=required).
func ClientTLSConfig(props map[string]string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	pool, err := loadTrustStore(props)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if props["ssl.keystore.location"] != "" || props["ssl.keystore.key"] != "" {
		cert, err := loadKeyStore(props)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = cert
	}
	if alg, ok := props["ssl.endpoint.identification.algorithm"]; ok && alg == "" {
		// Kafka's empty algorithm: verify the chain, not the host name.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("no peer certificate")
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool(), CurrentTime: time.Now()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}
