package broker

// Inter-broker clients (replica fetchers, peer requests) reach the other
// brokers on inter.broker.listener.name, whose address is the Host and Port
// each broker registers. On an SSL or SASL_SSL listener they use the
// listener's trust store (and this broker's key store as client
// certificate, for ssl.client.auth=required); host names are verified
// unless ssl.endpoint.identification.algorithm is empty. On a SASL listener
// they authenticate with sasl.mechanism.inter.broker.protocol and the
// credentials of the JAAS configuration Kafka reads, the first set of
//
//	listener.name.<listener>.<mechanism>.sasl.jaas.config
//	listener.name.<listener>.sasl.jaas.config
//	sasl.jaas.config
//
// from which username="…" and password="…" are taken (PLAIN, SCRAM), or
// unsecuredLoginStringClaim_sub="…" for an unsecured OAUTHBEARER token.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// interBrokerOpts returns the kgo options for a client of another broker's
// inter-broker listener.
func (b *Broker) interBrokerOpts() ([]kgo.Opt, error) {
	var l *listener
	for _, x := range b.srv.listeners {
		if x.name == b.srv.interName {
			l = x
		}
	}
	if l == nil {
		return nil, nil
	}
	props, _ := b.listenerProps(l.name)
	var opts []kgo.Opt
	if l.usesTLS() {
		cfg, err := authn.ClientTLSConfig(props)
		if err != nil {
			return nil, fmt.Errorf("inter-broker TLS: %w", err)
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if l.usesSASL() {
		m, err := b.interBrokerMechanism(l.name)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func (b *Broker) interBrokerMechanism(listenerName string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(b.cfg.Props["sasl.mechanism.inter.broker.protocol"])
	if mech == "" {
		return nil, fmt.Errorf("inter.broker.listener.name %s uses SASL: set sasl.mechanism.inter.broker.protocol", listenerName)
	}
	ln := strings.ToLower(listenerName)
	var jaas string
	for _, k := range []string{
		"listener.name." + ln + "." + strings.ToLower(mech) + ".sasl.jaas.config",
		"listener.name." + ln + ".sasl.jaas.config",
		"sasl.jaas.config",
	} {
		if v := b.cfg.Props[k]; v != "" {
			jaas = v
			break
		}
	}
	opts := config.ParseJAAS(jaas)
	user, pass := opts["username"], opts["password"]
	switch mech {
	case config.Plain, config.ScramSHA256, config.ScramSHA512:
		if user == "" {
			return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s: no username and password in the listener's sasl.jaas.config", mech)
		}
	}
	switch mech {
	case config.Plain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case config.ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case config.ScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	case config.OAuthBearer:
		sub := opts["unsecuredLoginStringClaim_sub"]
		if sub == "" {
			return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol OAUTHBEARER: no unsecuredLoginStringClaim_sub in sasl.jaas.config")
		}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: unsecuredToken(sub, b.cfg.Now().Add(time.Hour))}, nil
		}), nil
	}
	return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s is not supported", mech)
}

// unsecuredToken is an unsecured JWS ({"alg":"none"}) for sub, valid
// until exp.
func unsecuredToken(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims := fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, time.Now().Unix(), exp.Unix())
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// peer is a client for requests to another broker of the cluster.
type peer struct {
	addr string
	cl   *kgo.Client
}

// peerVersions are the request versions of a peer client: the client's
// defaults (kversion.Stable) and Gregor's own APIs (protocol.LinksKey,
// v0), which a broker advertises to its peers only (fromPeer).
func peerVersions() *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(protocol.LinksKey, 0)
	return vs
}

// peerRequest sends req to broker id.
func (b *Broker) peerRequest(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if b.cluster == nil {
		return nil, errors.New("not in a cluster")
	}
	br, ok := b.cluster.node.Metadata().Brokers[id]
	if !ok {
		return nil, fmt.Errorf("broker %d is not live", id)
	}
	addr := br.Host + ":" + strconv.Itoa(int(br.Port))
	b.cluster.peersMu.Lock()
	pr := b.cluster.peers[id]
	if pr != nil && pr.addr != addr {
		pr.cl.Close()
		pr = nil
	}
	if pr == nil {
		opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("gregor-broker-" + strconv.Itoa(int(b.nodeID))),
			kgo.DialTimeout(2 * time.Second), kgo.RequestRetries(0), kgo.MaxVersions(peerVersions())}, b.srv.interOpts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.cluster.peersMu.Unlock()
			return nil, err
		}
		pr = &peer{addr: addr, cl: cl}
		if b.cluster.peers == nil {
			b.cluster.peers = map[int32]*peer{}
		}
		b.cluster.peers[id] = pr
	}
	b.cluster.peersMu.Unlock()
	return pr.cl.SeedBrokers()[0].Request(ctx, req)
}

// closePeers closes the inter-broker clients.
func (b *Broker) closePeers() {
	b.cluster.peersMu.Lock()
	defer b.cluster.peersMu.Unlock()
	for id, pr := range b.cluster.peers {
		pr.cl.Close()
		delete(b.cluster.peers, id)
	}
}
