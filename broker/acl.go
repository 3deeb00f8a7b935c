package broker

// The authorizer: Kafka's ACLs and their semantics (StandardAuthorizer).
//
// It is on when authorizer.class.name is set (to any value, e.g. Kafka's
// org.apache.kafka.metadata.authorizer.StandardAuthorizer); with it unset
// every request is allowed, as before. A binding allows or denies one
// principal ("User:alice", or "User:*" for every principal), from one host
// (an IP, or "*"), one operation on the resources of one pattern: a literal
// name, the literal "*" (every resource of the type), or a prefix.
//
// A request is allowed when the principal is a super user (super.users,
// "User:a;User:b"); else denied when a DENY binding matches it (the
// operation itself or ALL); else allowed when an ALLOW binding matches it,
// where ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE and ALLOW of
// ALTER_CONFIGS implies DESCRIBE_CONFIGS; else, when no binding at all
// names the resource, allow.everyone.if.no.acl.found decides (default
// false); else it is denied.
//
// The bindings are managed with CreateAcls, DescribeAcls and DeleteAcls
// (29_acls.go). They are a metastore collection: on a single node
// <data-dir>/__meta/acls.json, replaced whole (storage.WriteFileAtomic);
// in a cluster etcd's keys under /gregor/acls/ (Cluster.Collection), which
// every broker's metadata watch sees. A metastore.View decodes them again
// only when the collection changes, so a check costs an atomic load.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metastore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclsFileName is the single-node ACL store under __meta.
const aclsFileName = "acls.json"

// clusterResourceName is the name of the one CLUSTER resource.
const clusterResourceName = "kafka-cluster"

// Resource, pattern, operation and permission codes, as on the wire.
const (
	resAny             = int8(kmsg.ACLResourceTypeAny)
	resTopic           = int8(kmsg.ACLResourceTypeTopic)
	resGroup           = int8(kmsg.ACLResourceTypeGroup)
	resCluster         = int8(kmsg.ACLResourceTypeCluster)
	resTransactionalID = int8(kmsg.ACLResourceTypeTransactionalId)
	resDelegationToken = int8(kmsg.ACLResourceTypeDelegationToken)

	patAny      = int8(kmsg.ACLResourcePatternTypeAny)
	patMatch    = int8(kmsg.ACLResourcePatternTypeMatch)
	patLiteral  = int8(kmsg.ACLResourcePatternTypeLiteral)
	patPrefixed = int8(kmsg.ACLResourcePatternTypePrefixed)

	opAny = 1
	opAll = 2

	permAny   = int8(kmsg.ACLPermissionTypeAny)
	permDeny  = int8(kmsg.ACLPermissionTypeDeny)
	permAllow = int8(kmsg.ACLPermissionTypeAllow)
)

// aclBinding is one ACL: a resource pattern and an access control entry.
type aclBinding struct {
	ResourceType int8   `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	PatternType  int8   `json:"patternType"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

// id is the binding's key in etcd: a hash of its fields.
func (a aclBinding) id() string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%s\x00%s\x00%d\x00%d", a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// matchesResource tells whether the binding's pattern covers the resource.
func (a *aclBinding) matchesResource(resType int8, name string) bool {
	if a.ResourceType != resType {
		return false
	}
	switch a.PatternType {
	case patLiteral:
		return a.ResourceName == name || a.ResourceName == "*"
	case patPrefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

func (a *aclBinding) matchesPrincipalHost(principal, host string) bool {
	return (a.Principal == principal || a.Principal == "User:*") && (a.Host == "*" || a.Host == host)
}

// allows tells whether an ALLOW of the binding's operation grants op.
func allowGrants(aclOp, op int8) bool {
	switch {
	case aclOp == opAll || aclOp == op:
		return true
	case op == opDescribe:
		return aclOp == opRead || aclOp == opWrite || aclOp == opDelete || aclOp == opAlter
	case op == opDescribeConfigs:
		return aclOp == opAlterConfigs
	}
	return false
}

// aclFilter is Kafka's AclBindingFilter: nil strings and ANY codes match
// everything.
type aclFilter struct {
	resourceType int8
	name         *string
	patternType  int8
	principal    *string
	host         *string
	operation    int8
	permission   int8
}

func (f *aclFilter) matches(a *aclBinding) bool {
	if f.resourceType != resAny && f.resourceType != a.ResourceType {
		return false
	}
	if f.patternType != patAny && f.patternType != patMatch && f.patternType != a.PatternType {
		return false
	}
	if f.name != nil {
		switch {
		case f.patternType == patAny || f.patternType == a.PatternType:
			if *f.name != a.ResourceName {
				return false
			}
		case a.PatternType == patLiteral:
			if *f.name != a.ResourceName && a.ResourceName != "*" {
				return false
			}
		case a.PatternType == patPrefixed:
			if !strings.HasPrefix(*f.name, a.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	return (f.principal == nil || *f.principal == a.Principal) &&
		(f.host == nil || *f.host == a.Host) &&
		(f.operation == opAny || f.operation == a.Operation) &&
		(f.permission == permAny || f.permission == a.Permission)
}

// validateFilter checks a DescribeAcls or DeleteAcls filter.
func (f *aclFilter) validate() string {
	switch {
	case f.resourceType < resAny || f.resourceType > resDelegationToken:
		return "invalid resource type"
	case f.patternType < patAny || f.patternType > patPrefixed:
		return "invalid pattern type"
	case f.operation < opAny || f.operation > 14:
		return "invalid operation"
	case f.permission < permAny || f.permission > permAllow:
		return "invalid permission type"
	}
	return ""
}

// validate checks a binding given to CreateAcls, as Kafka does.
func (a *aclBinding) validate() string {
	switch {
	case a.ResourceType < resTopic || a.ResourceType > resDelegationToken:
		return "Invalid resource type"
	case a.PatternType != patLiteral && a.PatternType != patPrefixed:
		return "Invalid pattern type"
	case a.Operation < opAll || a.Operation > 14:
		return "Invalid operation"
	case a.Permission != permDeny && a.Permission != permAllow:
		return "Invalid permission type"
	case a.ResourceName == "":
		return "Resource name should not be empty"
	case a.ResourceType == resCluster && (a.ResourceName != clusterResourceName || a.PatternType != patLiteral):
		return "The only valid name for the CLUSTER resource is " + clusterResourceName
	case a.Host == "":
		return "Invalid host"
	}
	typ, name, ok := strings.Cut(a.Principal, ":")
	if !ok || typ == "" || name == "" {
		return "Could not parse principal from `" + a.Principal + "` (no colon is present separating the principal type from the principal name)"
	}
	return ""
}

// aclState is the broker's authorizer.
type aclState struct {
	enabled     bool
	allowIfNone bool
	superUsers  map[string]bool

	alterMu sync.Mutex // serialises CreateAcls and DeleteAcls on this broker

	// view is the bindings of the store in use (the file on a single
	// node, etcd's collection in a cluster); nil until there is one.
	view atomic.Pointer[metastore.View[[]aclBinding]]
	log  *slog.Logger
}

// initACLs reads the authorizer's settings and, on a single node, opens
// the bindings' file.
func (b *Broker) initACLs() error {
	s := &b.acl
	s.enabled = strings.TrimSpace(b.cfg.Props["authorizer.class.name"]) != ""
	s.allowIfNone = b.cfg.boolProp("allow.everyone.if.no.acl.found")
	s.superUsers = map[string]bool{}
	for _, u := range strings.Split(b.cfg.Props["super.users"], ";") {
		if u = strings.TrimSpace(u); u != "" {
			s.superUsers[u] = true
		}
	}
	s.log = b.log
	if b.cfg.clusterConfigured() {
		return nil // the cluster's collection, once joined (startCluster)
	}
	f, err := openListFile(filepath.Join(b.cfg.DataDir, metaDirName, aclsFileName), "acls", (*aclBinding).id)
	if err != nil {
		return err
	}
	s.use(f)
	return nil
}

// use makes c the store of the bindings.
func (s *aclState) use(c metastore.Collection) {
	s.view.Store(metastore.NewView(c, s.decode))
}

// decode turns the stored records into bindings; one that does not decode
// is logged and ignored.
func (s *aclState) decode(recs metastore.Records) []aclBinding {
	out := make([]aclBinding, 0, len(recs))
	for id, v := range recs {
		var a aclBinding
		if err := json.Unmarshal(v, &a); err != nil {
			if s.log != nil {
				s.log.Warn("undecodable ACL binding in the metadata store, ignored", "id", id, "err", err)
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// aclRecords encodes bindings as the store keeps them.
func aclRecords(bs []aclBinding) metastore.Records {
	recs := metastore.Records{}
	for _, a := range bs {
		v, _ := json.Marshal(a) // strings and integers only: cannot fail
		recs[a.id()] = v
	}
	return recs
}

// aclBindings returns the bindings in force, which the caller must not
// modify.
func (b *Broker) aclBindings() []aclBinding {
	if v := b.acl.view.Load(); v != nil {
		return v.Get()
	}
	return nil
}

// updateACLs adds and removes bindings in the store in use.
func (b *Broker) updateACLs(ctx context.Context, add, del []aclBinding) error {
	v := b.acl.view.Load()
	if v == nil {
		return errors.New("no ACL store yet")
	}
	var ids []string
	for _, a := range del {
		ids = append(ids, a.id())
	}
	_, err := v.Collection().Update(ctx, aclRecords(add), ids)
	return err
}

// aclTimeout bounds an ACL change in etcd.
const aclTimeout = 10 * time.Second

// authorize decides whether principal, connected from host, may do op on
// a resource.
func (b *Broker) authorize(principal, host string, op int8, resType int8, name string) bool {
	s := &b.acl
	if !s.enabled || s.superUsers[principal] {
		return true
	}
	found, allowed := false, false
	for i, bs := 0, b.aclBindings(); i < len(bs); i++ {
		a := &bs[i]
		if !a.matchesResource(resType, name) {
			continue
		}
		found = true
		if !a.matchesPrincipalHost(principal, host) {
			continue
		}
		if a.Permission == permDeny {
			if a.Operation == opAll || a.Operation == op {
				return false
			}
			continue
		}
		if allowGrants(a.Operation, op) {
			allowed = true
		}
	}
	if !found {
		return s.allowIfNone
	}
	return allowed
}

// authorizeAny decides whether principal may do op on some resource of the
// type (Kafka's authorizeByResourceType): an ALLOW binding for it whose
// pattern no DENY binding covers.
func (b *Broker) authorizeAny(principal, host string, op int8, resType int8) bool {
	s := &b.acl
	if !s.enabled || s.superUsers[principal] {
		return true
	}
	bs := b.aclBindings()
	denied := func(a *aclBinding) bool {
		for i := range bs {
			d := &bs[i]
			if d.Permission != permDeny || d.ResourceType != resType || !d.matchesPrincipalHost(principal, host) || (d.Operation != opAll && d.Operation != op) {
				continue
			}
			switch {
			case d.PatternType == patLiteral && d.ResourceName == "*":
				return true
			case d.PatternType == patLiteral && a.PatternType == patLiteral && d.ResourceName == a.ResourceName:
				return true
			case d.PatternType == patPrefixed && strings.HasPrefix(a.ResourceName, d.ResourceName):
				return true
			}
		}
		return false
	}
	any := false
	for i := range bs {
		a := &bs[i]
		if a.ResourceType != resType {
			continue
		}
		any = true
		if a.Permission == permAllow && a.matchesPrincipalHost(principal, host) && allowGrants(a.Operation, op) && !denied(a) {
			return true
		}
	}
	return !any && s.allowIfNone
}

// aclEnabled reports whether an authorizer is configured.
func (b *Broker) aclEnabled() bool { return b.acl.enabled }

// Request-side helpers: the connection's principal and host.

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
func (b *Broker) allowed(r *request, op int8, resType int8, name string) bool {
	if !b.acl.enabled {
		return true
	}
	return b.authorize(r.principal(), r.host(), op, resType, name)
}

// allowedAny is authorizeAny for the request's client.
func (b *Broker) allowedAny(r *request, op int8, resType int8) bool {
	if !b.acl.enabled {
		return true
	}
	return b.authorizeAny(r.principal(), r.host(), op, resType)
}

// authorizedOps is the KIP-430 bit field of ops the request's client may do
// on a resource.
func (b *Broker) authorizedOps(r *request, resType int8, name string, ops ...int8) int32 {
	var v int32
	for _, op := range ops {
		if b.allowed(r, op, resType, name) {
			v |= 1 << op
		}
	}
	return v
}

var (
	topicOps   = []int8{opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs}
	clusterOps = []int8{opCreate, opAlter, opDescribe, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite}
)

// Kafka's ACL operation codes, for the authorized-operations bit fields.
// With no authorizer every operation is allowed.
const (
	opRead            = 3
	opWrite           = 4
	opCreate          = 5
	opDelete          = 6
	opAlter           = 7
	opDescribe        = 8
	opClusterAction   = 9
	opDescribeConfigs = 10
	opAlterConfigs    = 11
	opIdempotentWrite = 12
)

func opBits(ops ...int) int32 {
	var v int32
	for _, o := range ops {
		v |= 1 << o
	}
	return v
}

var (
	topicAuthorizedOps   = opBits(opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs)
	clusterAuthorizedOps = opBits(opCreate, opAlter, opDescribe, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite)
)
