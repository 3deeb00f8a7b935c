package broker

// The broker's side of the authorizer (package security/acl): its
// settings, the store of its bindings, and the request's principal and
// host. It is on when authorizer.class.name is set (to any value, e.g.
// Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer); with
// it unset every request is allowed.
//
// The bindings are managed with CreateAcls, DescribeAcls and DeleteAcls
// (29_acls.go). They are a metastore collection: on a single node
// <data-dir>/__meta/acls.json, replaced whole (storage.WriteFileAtomic);
// in a cluster etcd's keys under /gregor/acls/ (Cluster.Collection), which
// every broker's metadata watch sees. Which operation each API needs is
// in acl_apis.go and acl_checks.go.

import (
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/security/acl"
)

// aclsFileName is the single-node ACL store under __meta.
const aclsFileName = "acls.json"

// aclTimeout bounds an ACL change in the store.
const aclTimeout = 10 * time.Second

// initACLs makes the authorizer from the broker's settings and, on a
// single node, opens the bindings' file.
func (b *Broker) initACLs() error {
	b.acl = acl.New(acl.Config{
		Enabled:     strings.TrimSpace(b.cfg.Props["authorizer.class.name"]) != "",
		AllowIfNone: b.cfg.boolProp("allow.everyone.if.no.acl.found"),
		SuperUsers:  acl.ParseSuperUsers(b.cfg.Props["super.users"]),
		Log:         b.log,
	})
	if b.cfg.clusterConfigured() {
		return nil // the cluster's collection, once joined (startCluster)
	}
	f, err := openListFile(filepath.Join(b.cfg.DataDir, metaDirName, aclsFileName), "acls", (*acl.Binding).ID)
	if err != nil {
		return err
	}
	b.acl.Use(f)
	return nil
}

// Request-side helpers: the connection's principal and host.

// internal reports a request the broker runs on its own behalf (a cluster
// link's, through Execute): the authorizer lets it do anything, as Kafka's
// brokers are super users of each other.
func (r *request) internal() bool { return r.caller != nil && r.caller.internal }

func (r *request) principal() string {
	if r.caller != nil {
		return r.caller.Principal
	}
	if r.conn == nil {
		return "User:ANONYMOUS"
	}
	return r.conn.principalName()
}

func (r *request) host() string {
	if r.caller != nil {
		return r.caller.Host
	}
	if r.conn == nil || r.conn.nc == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(r.conn.nc.RemoteAddr().String())
	if err != nil {
		return r.conn.nc.RemoteAddr().String()
	}
	return h
}

// allowed checks one operation on one resource for the request's client.
func (b *Broker) allowed(r *request, op acl.Operation, typ acl.ResourceType, name string) bool {
	if !b.acl.Enabled() || r.internal() {
		return true
	}
	return b.acl.Authorize(r.principal(), r.host(), op, typ, name)
}

// allowedAny is AuthorizeAny for the request's client.
func (b *Broker) allowedAny(r *request, op acl.Operation, typ acl.ResourceType) bool {
	if !b.acl.Enabled() || r.internal() {
		return true
	}
	return b.acl.AuthorizeAny(r.principal(), r.host(), op, typ)
}

// authorizedOps is the KIP-430 bit field of ops the request's client may do
// on a resource.
func (b *Broker) authorizedOps(r *request, typ acl.ResourceType, name string, ops ...acl.Operation) int32 {
	var v int32
	for _, op := range ops {
		if b.allowed(r, op, typ, name) {
			v |= 1 << op
		}
	}
	return v
}

var (
	topicOps   = []acl.Operation{acl.Read, acl.Write, acl.Create, acl.Delete, acl.Alter, acl.Describe, acl.DescribeConfigs, acl.AlterConfigs}
	clusterOps = []acl.Operation{acl.Create, acl.Alter, acl.Describe, acl.ClusterAction, acl.DescribeConfigs, acl.AlterConfigs, acl.IdempotentWrite}
)

var (
	topicAuthorizedOps   = acl.Bits(topicOps...)
	clusterAuthorizedOps = acl.Bits(clusterOps...)
)
