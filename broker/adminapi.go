package broker

// The API the admin HTTP listener (package admin) acts through: the
// broker's authorizer, its user store, its TLS configuration loading, and
// Execute, which runs a Kafka request in-process with the same handler a
// client's request gets, as a given principal.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Caller is who asks for an action outside the Kafka protocol: a principal
// ("User:alice") and the host (IP) it connects from.
type Caller struct {
	Principal string
	Host      string
	internal  bool // the broker itself (linkCaller): every operation allowed
}

// ACLOperation is an ACL operation, numbered as on the wire.
type ACLOperation = acl.Operation

// The ACL operations the admin listener checks.
const (
	ACLRead            = acl.Read
	ACLWrite           = acl.Write
	ACLCreate          = acl.Create
	ACLDelete          = acl.Delete
	ACLAlter           = acl.Alter
	ACLDescribe        = acl.Describe
	ACLDescribeConfigs = acl.DescribeConfigs
	ACLAlterConfigs    = acl.AlterConfigs
)

// ACLResource is an ACL resource type, numbered as on the wire.
type ACLResource = acl.ResourceType

// The ACL resource types the admin listener checks.
const (
	ResourceTopic   = acl.Topic
	ResourceGroup   = acl.Group
	ResourceCluster = acl.Cluster
)

// ClusterResourceName is the name of the one CLUSTER resource.
const ClusterResourceName = acl.ClusterName

// AuthorizerEnabled reports whether an authorizer is configured
// (authorizer.class.name).
func (b *Broker) AuthorizerEnabled() bool { return b.acl.Enabled() }

// Authorize reports whether c may do op on the resource, by the broker's
// ACLs (package security/acl); always true when no authorizer is configured.
func (b *Broker) Authorize(c Caller, op ACLOperation, res ACLResource, name string) bool {
	return b.acl.Authorize(c.Principal, c.Host, op, res, name)
}

// ErrBadCredentials is returned by CheckPassword when the user is unknown
// or the password does not match.
var ErrBadCredentials = errors.New("invalid username or password")

// CheckPassword checks a user name and password against the user store as
// SASL/PLAIN does: against the user's SCRAM-SHA-256 credential, else the
// SCRAM-SHA-512 one. It returns ErrBadCredentials when they do not match,
// another error when the store could not be read.
func (b *Broker) CheckPassword(user, password string) error {
	if user == "" || password == "" {
		return ErrBadCredentials
	}
	rec, err := b.users.User(user)
	if err != nil {
		return err
	}
	if rec == nil || !rec.CheckPassword(password) {
		return ErrBadCredentials
	}
	return nil
}

// Prop returns a broker property as configured (--config, --set), and
// whether it was.
func (b *Broker) Prop(name string) (string, bool) {
	v, ok := b.cfg.Props[name]
	return v, ok
}

// ServerTLS is a TLS server configuration loaded from Kafka-named ssl.*
// properties (see tls.go), reloading its files when they change.
type ServerTLS struct{ ts *authn.TLS }

// LoadServerTLS reads the ssl.* properties found under prefix in props
// (prefix "admin." reads admin.ssl.keystore.location, …) as a TLS
// listener's: ssl.keystore.*, ssl.truststore.*, ssl.client.auth,
// ssl.enabled.protocols and ssl.principal.mapping.rules.
func LoadServerTLS(props map[string]string, prefix string, log *slog.Logger) (*ServerTLS, error) {
	if log == nil {
		log = slog.Default()
	}
	sub := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok && strings.HasPrefix(rest, "ssl.") {
			sub[rest] = v
		}
	}
	ts, err := authn.NewTLS(sub, func(string) bool { return true }, false, log)
	if err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	return &ServerTLS{ts}, nil
}

// Config returns the tls.Config to serve with.
func (s *ServerTLS) Config() *tls.Config { return s.ts.ServerConfig() }

// Principal is the principal of a TLS client: its verified certificate's
// subject mapped by ssl.principal.mapping.rules ("User:CN=alice,…"), and
// false when it presented no verified certificate.
func (s *ServerTLS) Principal(cs tls.ConnectionState) (string, bool) {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return "", false
	}
	return s.ts.Principal(cs), true
}

// Execute runs msg in-process as c, with the handler a Kafka client's
// request of that key gets (so the same validation, ACL checks and
// errors), at msg's version when the handler serves it and it is not 0,
// else at the highest version the handler serves. In a cluster a request this broker cannot
// serve is sent to the broker that can: a group's requests to its
// coordinator, a Produce, ListOffsets or DeleteRecords for one partition to
// its leader. Such a forwarded request runs with the inter-broker
// listener's identity, so the caller checks c's ACLs itself first
// (Authorize).
func (b *Broker) Execute(ctx context.Context, c Caller, msg kmsg.Request) (kmsg.Response, error) {
	h, ok := handlers[msg.Key()]
	if !ok {
		return nil, fmt.Errorf("no handler for %s", kmsg.NameForKey(msg.Key()))
	}
	if v := msg.GetVersion(); v < h.acceptMin || v > h.max || v == 0 {
		msg.SetVersion(h.max)
	}
	if b.cluster != nil {
		if id, forward := b.executeTarget(h, msg); forward {
			return b.peerRequest(ctx, id, msg)
		}
	}
	clientID := "gregor-admin"
	r := &request{hdr: protocol.RequestHeader{Key: msg.Key(), Version: msg.GetVersion(), ClientID: &clientID}, msg: msg, ctx: ctx, caller: &c}
	if resp := b.notCoordinator(h, msg); resp != nil {
		return resp, nil
	}
	resp, err := h.fn(b, r)
	if err != nil {
		return nil, err
	}
	if r.wait != nil {
		r.wait()
	}
	if r.release != nil {
		r.release()
	}
	if resp == nil {
		return nil, errors.New("the handler answered without a response")
	}
	resp.SetVersion(msg.GetVersion())
	return resp, nil
}

// executeTarget returns the broker that must serve msg when it is not this
// one.
func (b *Broker) executeTarget(h handler, msg kmsg.Request) (int32, bool) {
	if h.coordinated {
		if groups, ok := requestGroups(msg); ok && len(groups) == 1 && b.groupCoordinatorCode(groups[0]) == kerr.NotCoordinator.Code {
			if c, code := b.groupCoordinator(groups[0]); code == 0 && c.id != b.nodeID {
				return c.id, true
			}
		}
		return 0, false
	}
	var topic string
	var part int32 = -1
	switch m := msg.(type) {
	case *kmsg.ProduceRequest:
		if len(m.Topics) == 1 && len(m.Topics[0].Partitions) == 1 {
			topic, part = m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition
		}
	case *kmsg.ListOffsetsRequest:
		if len(m.Topics) == 1 && len(m.Topics[0].Partitions) == 1 {
			topic, part = m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition
		}
	case *kmsg.DeleteRecordsRequest:
		if len(m.Topics) == 1 && len(m.Topics[0].Partitions) == 1 {
			topic, part = m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition
		}
	}
	if part < 0 {
		return 0, false
	}
	for _, p := range b.ClusterInfo().Partitions {
		if p.Topic == topic && p.Partition == part && p.Leader >= 0 && p.Leader != b.nodeID {
			return p.Leader, true
		}
	}
	return 0, false
}
