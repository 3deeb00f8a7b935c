package link

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// sourceOptions are the client options for a link's source cluster, from
// its Kafka client properties: security.protocol (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL), sasl.mechanism (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512) with sasl.jaas.config's username and password, and for
// TLS ssl.truststore.location (PEM certificates; the system's roots when
// unset), ssl.keystore.location and ssl.key.location (a PEM client
// certificate and key), ssl.endpoint.identification.algorithm ("" turns
// host name checks off, as in Kafka).
func sourceOptions(l *Link) ([]kgo.Opt, error) {
	p := l.SourceConfig
	opts := []kgo.Opt{
		kgo.SeedBrokers(l.Source...),
		kgo.ClientID("gregor-link-" + l.Name),
		kgo.DialTimeout(10 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(time.Second),
	}
	proto := strings.ToUpper(strings.TrimSpace(p["security.protocol"]))
	if proto == "" {
		proto = config.Plaintext
	}
	switch proto {
	case config.Plaintext, config.SASLPlaintext:
	case config.SSL, config.SASLSSL:
		tc, err := sourceTLS(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.Dialer((&tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: tc}).DialContext))
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p["security.protocol"])
	}
	if proto == config.SASLPlaintext || proto == config.SASLSSL {
		mech := strings.ToUpper(strings.TrimSpace(p["sasl.mechanism"]))
		if mech == "" {
			mech = config.Plain // Kafka's default
		}
		jaas := config.ParseJAAS(p["sasl.jaas.config"])
		user, pass := jaas["username"], jaas["password"]
		if user == "" {
			return nil, fmt.Errorf("sasl.jaas.config: no username and password")
		}
		switch mech {
		case config.Plain:
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case config.ScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case config.ScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
		}
	}
	return opts, nil
}

func sourceTLS(p map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f := p["ssl.truststore.location"]; f != "" {
		if t := strings.ToUpper(p["ssl.truststore.type"]); t != "" && t != "PEM" {
			return nil, fmt.Errorf("ssl.truststore.type %s: a link reads PEM trust stores", t)
		}
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ssl.truststore.location %s: no PEM certificate", f)
		}
		tc.RootCAs = pool
	}
	if cert := p["ssl.keystore.location"]; cert != "" {
		if t := strings.ToUpper(p["ssl.keystore.type"]); t != "" && t != "PEM" {
			return nil, fmt.Errorf("ssl.keystore.type %s: a link reads PEM key stores", t)
		}
		key := p["ssl.key.location"]
		if key == "" {
			key = cert // one file holding both
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if alg, ok := p["ssl.endpoint.identification.algorithm"]; ok && strings.TrimSpace(alg) == "" {
		tc.InsecureSkipVerify = true // Kafka's way of turning host name checks off
	}
	return tc, nil
}
