package authn

// Key and trust stores in Kafka's three formats, with Kafka's rules
// (DefaultSslEngineFactory):
//
//	ssl.keystore.type=PEM (Gregor's default; Kafka's is JKS)
//	    ssl.keystore.location or ssl.keystore.certificate.chain + ssl.keystore.key;
//	    ssl.keystore.password must not be set; ssl.key.password decrypts an
//	    encrypted PKCS#8 key ("ENCRYPTED PRIVATE KEY", PBES2 with AES or
//	    3DES), and when it is set the key must be encrypted.
//	ssl.keystore.type=PKCS12 or JKS
//	    ssl.keystore.location and ssl.keystore.password are both needed;
//	    ssl.key.password (default: the store password) opens the key entries
//	    of a JKS store. A PKCS12 store holds one key entry protected by the
//	    store password (as keytool writes it); a JKS store may hold several,
//	    all served (the TLS handshake picks the one the client accepts).
//	ssl.truststore.type=PEM
//	    ssl.truststore.location or ssl.truststore.certificates, no password.
//	ssl.truststore.type=PKCS12 or JKS
//	    ssl.truststore.location; ssl.truststore.password is optional: without
//	    it a JKS store is read without its integrity check, as Java does, and
//	    a PKCS12 store must have no password. Trusted certificate entries are
//	    trusted, and (JKS) the leaf certificate of each key entry, as Java's
//	    trust managers do.

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

const (
	storePEM    = "PEM"
	storePKCS12 = "PKCS12"
	storeJKS    = "JKS"
)

// storeType is the normalised ssl.keystore.type / ssl.truststore.type.
func storeType(props map[string]string, key string) (string, error) {
	switch t := strings.ToUpper(strings.TrimSpace(props[key])); t {
	case "", storePEM:
		return storePEM, nil
	case storePKCS12, storeJKS:
		return t, nil
	default:
		return "", fmt.Errorf("%s %s: want PEM, PKCS12 or JKS", key, props[key])
	}
}

// loadKeyStore reads the private keys and certificate chains to serve.
func loadKeyStore(props map[string]string) ([]tls.Certificate, error) {
	typ, err := storeType(props, "ssl.keystore.type")
	if err != nil {
		return nil, err
	}
	loc, pw, keyPw := props["ssl.keystore.location"], props["ssl.keystore.password"], props["ssl.key.password"]
	inKey, inChain := props["ssl.keystore.key"], props["ssl.keystore.certificate.chain"]
	switch {
	case inKey != "":
		switch {
		case typ != storePEM:
			return nil, fmt.Errorf("ssl.keystore.key can be given only with ssl.keystore.type=PEM, not %s", typ)
		case inChain == "":
			return nil, errors.New("ssl.keystore.key is set but ssl.keystore.certificate.chain is not")
		case loc != "":
			return nil, errors.New("both ssl.keystore.location and ssl.keystore.key are set")
		case pw != "":
			return nil, errors.New("ssl.keystore.password cannot be set with a PEM key store; only ssl.key.password")
		}
		c, err := pemKeyPair([]byte(inChain), []byte(inKey), keyPw)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{c}, nil
	case inChain != "":
		return nil, errors.New("ssl.keystore.certificate.chain is set but ssl.keystore.key is not")
	case loc == "":
		return nil, errors.New("a TLS listener needs ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key")
	case typ == storePEM && pw != "":
		return nil, errors.New("ssl.keystore.password cannot be set with a PEM key store; only ssl.key.password")
	case typ != storePEM && pw == "":
		return nil, fmt.Errorf("the %s key store ssl.keystore.location needs ssl.keystore.password", typ)
	}
	b, err := os.ReadFile(loc)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	var certs []tls.Certificate
	switch typ {
	case storePEM:
		var c tls.Certificate
		c, err = pemKeyPair(b, b, keyPw)
		certs = []tls.Certificate{c}
	case storePKCS12:
		var c tls.Certificate
		c, err = pkcs12KeyPair(b, pw)
		certs = []tls.Certificate{c}
	case storeJKS:
		if keyPw == "" {
			keyPw = pw
		}
		certs, err = jksKeyPairs(b, pw, keyPw)
	}
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location %s (%s): %w", loc, typ, err)
	}
	return certs, nil
}

// pemKeyPair is tls.X509KeyPair that also reads an encrypted PKCS#8 key.
func pemKeyPair(certPEM, keyPEM []byte, keyPw string) (tls.Certificate, error) {
	var block *pem.Block
	for rest := keyPEM; ; {
		var p *pem.Block
		if p, rest = pem.Decode(rest); p == nil {
			break
		}
		if strings.HasSuffix(p.Type, "PRIVATE KEY") {
			block = p
			break
		}
	}
	switch {
	case block == nil:
		return tls.Certificate{}, errors.New("ssl.keystore: no PEM private key found")
	case block.Type == "ENCRYPTED PRIVATE KEY":
		if keyPw == "" {
			return tls.Certificate{}, errors.New("ssl.keystore: the private key is encrypted: set ssl.key.password")
		}
		key, err := pkcs8.ParsePKCS8PrivateKey(block.Bytes, []byte(keyPw))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("ssl.keystore: decrypting the private key with ssl.key.password: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("ssl.keystore: %w", err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	case block.Headers["Proc-Type"] != "":
		return tls.Certificate{}, errors.New("ssl.keystore: legacy OpenSSL-encrypted keys (Proc-Type) are not supported; convert with openssl pkcs8 -topk8 -v2 aes-256-cbc")
	case keyPw != "":
		// Kafka reads the key as EncryptedPrivateKeyInfo once a password is given.
		return tls.Certificate{}, errors.New("ssl.key.password is set but the PEM private key is not encrypted")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore: %w", err)
	}
	return cert, nil
}

// keyChain builds a tls.Certificate from key and certificates, putting
// first the certificate whose public key is key's.
func keyChain(key crypto.PrivateKey, certs []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key %T", key)
	}
	leaf := -1
	for i, c := range certs {
		if pk, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); ok && pk.Equal(signer.Public()) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return tls.Certificate{}, errors.New("no certificate matches the private key")
	}
	out := tls.Certificate{PrivateKey: key, Leaf: certs[leaf]}
	out.Certificate = append(out.Certificate, certs[leaf].Raw)
	for i, c := range certs {
		if i != leaf {
			out.Certificate = append(out.Certificate, c.Raw)
		}
	}
	return out, nil
}

func pkcs12KeyPair(b []byte, pw string) (tls.Certificate, error) {
	key, cert, ca, err := pkcs12.DecodeChain(b, pw)
	if err != nil {
		return tls.Certificate{}, err
	}
	return keyChain(key, append([]*x509.Certificate{cert}, ca...))
}

// loadJKS reads a JKS store; without a password its integrity is not
// checked (Java's KeyStore.load with a null password).
func loadJKS(b []byte, pw string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCaseExactAliases())
	err := ks.Load(bytes.NewReader(b), []byte(pw))
	if err != nil && pw == "" && strings.Contains(err.Error(), "invalid digest") {
		// keystore-go reads every entry before it compares the digest.
		err = nil
	}
	return ks, err
}

func jksKeyPairs(b []byte, pw, keyPw string) ([]tls.Certificate, error) {
	ks, err := loadJKS(b, pw)
	if err != nil {
		return nil, err
	}
	var out []tls.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPw))
		if err != nil {
			return nil, fmt.Errorf("key entry %s (ssl.key.password): %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("key entry %s: %w", alias, err)
		}
		var certs []*x509.Certificate
		for _, c := range e.CertificateChain {
			x, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, fmt.Errorf("key entry %s: %w", alias, err)
			}
			certs = append(certs, x)
		}
		c, err := keyChain(key, certs)
		if err != nil {
			return nil, fmt.Errorf("key entry %s: %w", alias, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no private key entry")
	}
	return out, nil
}

// loadTrustStore reads the trusted certificates; nil when none are
// configured.
func loadTrustStore(props map[string]string) (*x509.CertPool, error) {
	typ, err := storeType(props, "ssl.truststore.type")
	if err != nil {
		return nil, err
	}
	loc, pw, inline := props["ssl.truststore.location"], props["ssl.truststore.password"], props["ssl.truststore.certificates"]
	switch {
	case inline != "":
		switch {
		case typ != storePEM:
			return nil, fmt.Errorf("ssl.truststore.certificates can be given only with ssl.truststore.type=PEM, not %s", typ)
		case loc != "":
			return nil, errors.New("both ssl.truststore.location and ssl.truststore.certificates are set")
		case pw != "":
			return nil, errors.New("ssl.truststore.password cannot be set with a PEM trust store")
		}
		return pemPool([]byte(inline))
	case loc == "" && pw != "":
		return nil, errors.New("ssl.truststore.password is set but ssl.truststore.location is not")
	case loc == "":
		return nil, nil
	case typ == storePEM && pw != "":
		return nil, errors.New("ssl.truststore.password cannot be set with a PEM trust store")
	}
	b, err := os.ReadFile(loc)
	if err != nil {
		return nil, fmt.Errorf("ssl.truststore.location: %w", err)
	}
	var certs []*x509.Certificate
	switch typ {
	case storePEM:
		return pemPool(b)
	case storePKCS12:
		certs, err = pkcs12.DecodeTrustStore(b, pw)
	case storeJKS:
		certs, err = jksTrusted(b, pw)
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("no trusted certificate")
	}
	if err != nil {
		return nil, fmt.Errorf("ssl.truststore.location %s (%s): %w", loc, typ, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func pemPool(b []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("ssl.truststore: no PEM certificate found")
	}
	return pool, nil
}

func jksTrusted(b []byte, pw string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(b, pw)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var der []byte
		switch {
		case ks.IsTrustedCertificateEntry(alias):
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			der = e.Certificate.Content
		case ks.IsPrivateKeyEntry(alias):
			chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
			if err != nil || len(chain) == 0 {
				continue
			}
			der = chain[0].Content
		default:
			continue
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", alias, err)
		}
		out = append(out, c)
	}
	return out, nil
}
