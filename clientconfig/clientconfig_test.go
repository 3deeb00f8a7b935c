package clientconfig

import (
	"strings"
	"testing"
)

func TestOptions_Refusals(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`
	for _, tc := range []struct {
		props map[string]string
		n     int    // options on success
		err   string // else the error
	}{
		{map[string]string{}, 0, ""},
		{map[string]string{"security.protocol": "plaintext", "ssl.truststore.location": "/nonexistent"}, 0, ""},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": jaas}, 1, ""},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas}, 1, ""},
		{map[string]string{"security.protocol": "SSL"}, 1, ""},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "scram-sha-512", "sasl.jaas.config": jaas}, 2, ""},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT"}, 0, "no username and password"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI", "sasl.jaas.config": jaas}, 0, `sasl.mechanism "GSSAPI"`},
		{map[string]string{"security.protocol": "TLS"}, 0, `security.protocol "TLS"`},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent"}, 0, "ssl.truststore.location"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "BKS", "ssl.truststore.location": "/x"}, 0, "want PEM, PKCS12 or JKS"},
	} {
		opts, err := Options(tc.props)
		switch {
		case tc.err == "" && (err != nil || len(opts) != tc.n):
			t.Errorf("%v: %d options, %v; want %d", tc.props, len(opts), err, tc.n)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: %v, want an error with %q", tc.props, err, tc.err)
		}
	}
}
