// Package clientconfig turns a Kafka client's properties (what
// kafka-*.sh --command-config and a Java client's client.properties hold)
// into franz-go client options, so that Gregor's own clients (the CLI, a
// cluster link's source) connect wherever a Kafka client would:
//
//	security.protocol   PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
//	sasl.mechanism      PLAIN (default), SCRAM-SHA-256, SCRAM-SHA-512, with the
//	sasl.jaas.config    username and password of its LoginModule
//	ssl.truststore.*    the CAs to trust (PEM, PKCS12 or JKS; the system's roots when unset)
//	ssl.keystore.*      a client certificate (PEM, PKCS12 or JKS), for ssl.client.auth
//	ssl.key.password    a JKS key entry's, or an encrypted PEM key's, password
//	ssl.endpoint.identification.algorithm  "" turns host name checks off, as in Kafka
//
// The stores are read as a broker reads its own (package security/authn).
// Other properties are ignored, as a Java client ignores those it does not
// use.
//
// The package imports config and security/authn.
package clientconfig

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// dialTimeout bounds a TLS connection's dial and handshake.
const dialTimeout = 10 * time.Second

// Options returns the client options that props ask for: a TLS dialer
// and a SASL mechanism, or nothing for PLAINTEXT.
func Options(props map[string]string) ([]kgo.Opt, error) {
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if proto == "" {
		proto = config.Plaintext
	}
	var opts []kgo.Opt
	switch proto {
	case config.Plaintext, config.SASLPlaintext:
	case config.SSL, config.SASLSSL:
		tc, err := authn.ClientTLSConfig(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.Dialer((&tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: tc}).DialContext))
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if proto == config.SASLPlaintext || proto == config.SASLSSL {
		mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
		if mech == "" {
			mech = config.Plain // Kafka's default
		}
		jaas := config.ParseJAAS(props["sasl.jaas.config"])
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
