package config

import (
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Security protocols, Kafka's names.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms, as named in SASL and in sasl.enabled.mechanisms.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// Mechanisms are the SASL mechanisms Gregor serves.
var Mechanisms = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// RackAwareReplicaSelector is the one replica.selector.class Gregor has,
// under Kafka's class name.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// InMemoryTopologyDescriptionPlugin is the one
// group.streams.topology.description.plugin.class Gregor has, under the
// class name of Kafka's reference plugin (coordinator/streams_description.go).
const InMemoryTopologyDescriptionPlugin = "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"

// securityDefs are the listener, TLS and SASL properties (listeners.go,
// tls.go, sasl.go, oauth.go, interbroker.go). Each may also be given for one
// listener as listener.name.<name>.<property>. Passwords and keys are of
// type PASSWORD, which DescribeConfigs never reveals.
var securityDefs = []Def{
	{"listener.security.protocol.map", kmsg.ConfigTypeString, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "", true, anyString, "Listener names and their security protocols, NAME:PROTOCOL,…"},
	{"inter.broker.listener.name", kmsg.ConfigTypeString, "", "", true, anyString, "The listener the brokers of a cluster use among themselves (default: PLAINTEXT, else the first listener)."},
	{"security.inter.broker.protocol", kmsg.ConfigTypeString, "PLAINTEXT", "", true, oneOf(Plaintext, SSL, SASLPlaintext, SASLSSL), "The security protocol of the inter-broker listener, when inter.broker.listener.name is not set."},
	{"ssl.keystore.type", kmsg.ConfigTypeString, "PEM", "", true, anyString, "The key store format: PEM (Gregor's default), PKCS12 or JKS."},
	{"ssl.keystore.location", kmsg.ConfigTypeString, "", "", true, anyString, "The key store file: PEM (the private key and the certificate chain), PKCS12 or JKS."},
	{"ssl.keystore.certificate.chain", kmsg.ConfigTypePassword, "", "", true, anyString, "The certificate chain, PEM, inline."},
	{"ssl.keystore.key", kmsg.ConfigTypePassword, "", "", true, anyString, "The private key, PEM, inline."},
	{"ssl.keystore.password", kmsg.ConfigTypePassword, "", "", true, anyString, "The PKCS12 or JKS key store's password (not set for PEM)."},
	{"ssl.key.password", kmsg.ConfigTypePassword, "", "", true, anyString, "The password of a JKS key entry (default: the store password), or the one that decrypts an encrypted PKCS#8 PEM key."},
	{"ssl.truststore.type", kmsg.ConfigTypeString, "PEM", "", true, anyString, "The trust store format: PEM (Gregor's default), PKCS12 or JKS."},
	{"ssl.truststore.location", kmsg.ConfigTypeString, "", "", true, anyString, "The trust store file of trusted CA certificates: PEM, PKCS12 or JKS."},
	{"ssl.truststore.certificates", kmsg.ConfigTypePassword, "", "", true, anyString, "Trusted CA certificates, PEM, inline."},
	{"ssl.truststore.password", kmsg.ConfigTypePassword, "", "", true, anyString, "The PKCS12 or JKS trust store's password (optional; not set for PEM)."},
	{"ssl.client.auth", kmsg.ConfigTypeString, "none", "", true, oneOf("none", "requested", "required"), "Whether TLS clients must present a certificate."},
	{"ssl.enabled.protocols", kmsg.ConfigTypeList, "TLSv1.2,TLSv1.3", "", true, listOf("TLSv1.2", "TLSv1.3"), "The TLS versions accepted."},
	{"ssl.principal.mapping.rules", kmsg.ConfigTypeString, "DEFAULT", "", true, anyString, "Rules mapping a client certificate's distinguished name to a principal."},
	{"ssl.endpoint.identification.algorithm", kmsg.ConfigTypeString, "https", "", true, anyString, "Inter-broker clients verify the host name unless this is empty."},
	{"sasl.enabled.mechanisms", kmsg.ConfigTypeList, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "", true, anyString, "The SASL mechanisms served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER). Kafka's default is GSSAPI, which Gregor does not serve."},
	{"sasl.mechanism.inter.broker.protocol", kmsg.ConfigTypeString, "", "", true, anyString, "The SASL mechanism inter-broker clients use."},
	{"sasl.jaas.config", kmsg.ConfigTypePassword, "", "", true, anyString, "JAAS configuration; Gregor reads username, password and unsecuredLoginStringClaim_sub from it for inter-broker clients."},
	{"sasl.server.max.receive.size", kmsg.ConfigTypeInt, "524288", "", true, intAtLeast(1), "The largest frame accepted before authentication."},
	{"sasl.server.authentication.timeout.ms", kmsg.ConfigTypeLong, "10000", "", true, atLeast(1), "A connection that has not authenticated this long after it was accepted is closed (Gregor's setting)."},
	{"connections.max.reauth.ms", kmsg.ConfigTypeLong, "0", "", true, atLeast(0), "The longest SASL session before the client must re-authenticate; 0 = no limit."},
	{"sasl.oauthbearer.jwks.endpoint.url", kmsg.ConfigTypeString, "", "", true, anyString, "JWKS (file:// or http(s)://) of the keys signed OAUTHBEARER tokens are checked against; unset = Kafka's unsecured validator."},
	{"sasl.oauthbearer.jwks.endpoint.refresh.ms", kmsg.ConfigTypeLong, "3600000", "", true, atLeast(1), "How often the JWKS is fetched again."},
	{"sasl.oauthbearer.expected.audience", kmsg.ConfigTypeList, "", "", true, anyString, "Audiences one of which a token must name."},
	{"sasl.oauthbearer.expected.issuer", kmsg.ConfigTypeString, "", "", true, anyString, "The issuer a token must name."},
	{"sasl.oauthbearer.clock.skew.seconds", kmsg.ConfigTypeInt, "30", "", true, intAtLeast(0), "Clock skew allowed when checking a token's times (0 for the unsecured validator unless set)."},
	{"authorizer.class.name", kmsg.ConfigTypeString, "", "", true, anyString, "Any value (Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer) turns on Gregor's ACL authorizer; empty allows everything."},
	{"super.users", kmsg.ConfigTypeString, "", "", true, anyString, "Principals the authorizer allows everything, User:a;User:b."},
	{"allow.everyone.if.no.acl.found", kmsg.ConfigTypeBoolean, "false", "", true, oneOf("true", "false"), "Whether a resource no ACL names is open to everyone."},
	{"sasl.oauthbearer.sub.claim.name", kmsg.ConfigTypeString, "sub", "", true, anyString, "The claim holding the principal."},

	// The admin HTTP listener (--http, package admin).
	{"admin.auth", kmsg.ConfigTypeList, "none", "", true, listOf("none", "basic", "mtls"), "How the admin HTTP listener authenticates: none, or basic (HTTP Basic against the SCRAM users) and/or mtls (a verified client certificate), e.g. basic,mtls."},
	{"admin.metrics.auth", kmsg.ConfigTypeBoolean, "false", "", true, oneOf("true", "false"), "Whether /metrics needs authentication when admin.auth is on (/healthz and /readyz never do)."},
	{"admin.ssl.keystore.type", kmsg.ConfigTypeString, "PEM", "", true, anyString, "The admin listener's key store format: PEM, PKCS12 or JKS."},
	{"admin.ssl.keystore.location", kmsg.ConfigTypeString, "", "", true, anyString, "The admin listener's key store file (PEM: private key and certificate chain); setting it (or admin.ssl.keystore.certificate.chain) serves HTTPS."},
	{"admin.ssl.keystore.certificate.chain", kmsg.ConfigTypePassword, "", "", true, anyString, "The admin listener's certificate chain, PEM, inline."},
	{"admin.ssl.keystore.key", kmsg.ConfigTypePassword, "", "", true, anyString, "The admin listener's private key, PEM, inline."},
	{"admin.ssl.truststore.type", kmsg.ConfigTypeString, "PEM", "", true, anyString, "The admin listener's trust store format: PEM, PKCS12 or JKS."},
	{"admin.ssl.truststore.location", kmsg.ConfigTypeString, "", "", true, anyString, "The trust store (PEM, PKCS12 or JKS) admin clients' certificates are verified against."},
	{"admin.ssl.truststore.certificates", kmsg.ConfigTypePassword, "", "", true, anyString, "The admin listener's trusted CA certificates, PEM, inline."},
	{"admin.ssl.keystore.password", kmsg.ConfigTypePassword, "", "", true, anyString, "The admin listener's PKCS12 or JKS key store password."},
	{"admin.ssl.key.password", kmsg.ConfigTypePassword, "", "", true, anyString, "The admin listener's JKS key entry password, or the one that decrypts its encrypted PEM key."},
	{"admin.ssl.truststore.password", kmsg.ConfigTypePassword, "", "", true, anyString, "The admin listener's PKCS12 or JKS trust store password."},
	{"admin.ssl.client.auth", kmsg.ConfigTypeString, "none", "", true, oneOf("none", "requested", "required"), "Whether admin clients must present a certificate."},
	{"admin.ssl.enabled.protocols", kmsg.ConfigTypeList, "TLSv1.2,TLSv1.3", "", true, listOf("TLSv1.2", "TLSv1.3"), "The TLS versions the admin listener accepts."},
	{"admin.ssl.principal.mapping.rules", kmsg.ConfigTypeString, "DEFAULT", "", true, anyString, "Rules mapping an admin client certificate's distinguished name to a principal."},
}

// ListenerConfigName strips listener.name.<listener>. (and a mechanism
// prefix, as in listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config) from
// a property name, for validation.
func ListenerConfigName(k string) string {
	rest, ok := strings.CutPrefix(k, "listener.name.")
	if !ok {
		return k
	}
	_, rest, _ = strings.Cut(rest, ".")
	for _, m := range Mechanisms {
		if r, ok := strings.CutPrefix(rest, strings.ToLower(m)+"."); ok {
			return r
		}
	}
	return rest
}

var jaasOption = regexp.MustCompile(`([A-Za-z_]+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// ParseJAAS returns the quoted options of a JAAS login module line
// (sasl.jaas.config), e.g. username and password.
func ParseJAAS(s string) map[string]string {
	out := map[string]string{}
	for _, m := range jaasOption.FindAllStringSubmatch(s, -1) {
		out[m[1]] = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
	}
	return out
}
