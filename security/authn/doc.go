// Package authn is who a client is: TLS for the SSL and SASL_SSL listeners
// (TLS, with Kafka's ssl.* settings, PEM, PKCS12 and JKS key and trust
// stores reloaded when their files change, and the principal of a client
// certificate mapped by ssl.principal.mapping.rules), the server side of
// the SASL mechanisms (NewSession: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
// and OAUTHBEARER with Kafka's unsecured or JWKS validator), and the user
// store those check passwords against (Users: SCRAM credentials as Kafka
// keeps them, never a password, in a metastore collection).
//
// What a connection may do before and after it authenticates (the SASL
// handshake states, re-authentication, the authentication timeout) is
// the broker's (broker/sasl.go); what a principal may do is package
// security/acl's.
//
// The package imports config and metastore only.
package authn
