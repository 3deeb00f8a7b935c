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
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// dialTimeout bounds a TLS connection's dial and handshake.
const dialTimeout = 10 * time.Second

// Options returns the client options that props ask for: a TLS dialer
// and a SASL mechanism, or nothing for PLAINTEXT.
func Options(props map[string]string) ([]kgo.Opt, error) {
	tc, mech, err := Security(props)
	if err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if tc != nil {
		opts = append(opts, kgo.Dialer((&tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: tc}).DialContext))
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

// Security returns what props ask for, for a client that is not a kgo
// client (one speaking Gregor's own requests): the TLS configuration
// (nil without TLS) and the SASL mechanism (nil without SASL).
func Security(props map[string]string) (*tls.Config, sasl.Mechanism, error) {
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if proto == "" {
		proto = config.Plaintext
	}
	var tc *tls.Config
	switch proto {
	case config.Plaintext, config.SASLPlaintext:
	case config.SSL, config.SASLSSL:
		var err error
		if tc, err = authn.ClientTLSConfig(props); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if proto != config.SASLPlaintext && proto != config.SASLSSL {
		return tc, nil, nil
	}
	mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	if mech == "" {
		mech = config.Plain // Kafka's default
	}
	jaas := config.ParseJAAS(props["sasl.jaas.config"])
	user, pass := jaas["username"], jaas["password"]
	if user == "" {
		return nil, nil, fmt.Errorf("sasl.jaas.config: no username and password")
	}
	switch mech {
	case config.Plain:
		return tc, plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case config.ScramSHA256:
		return tc, scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case config.ScramSHA512:
		return tc, scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
}
