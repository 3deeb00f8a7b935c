package broker

import (
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclBroker starts a broker with an authorizer and a SASL_PLAINTEXT
// listener, with users admin (a super user), alice and bob.
func aclBroker(t *testing.T, dir string) (*Broker, string) {
	t.Helper()
	for _, u := range []string{"admin", "alice", "bob"} {
		if err := AddUser(dir, u, config.ScramSHA256, u+"-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := startBroker(t, dir, map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"authorizer.class.name":   "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":             "User:admin",
	})
	return b, b.ListenerAddr("SASL_PLAINTEXT").String()
}

func userClient(t *testing.T, addr, user string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism())}, opts...)...)
}

func createACL(t *testing.T, cl *kgo.Client, rt acl.ResourceType, name string, pat acl.PatternType, principal string, op acl.Operation, perm acl.Permission) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(rt), name, kmsg.ACLResourcePatternType(pat)
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(resp.Results[0].ErrorCode))
	}
}

func TestACL_ProduceFetchMetadataThroughClients(t *testing.T) {
	dir := t.TempDir()
	b, addr := aclBroker(t, dir)
	admin := userClient(t, addr, "admin")
	for _, topic := range []string{"orders", "secret"} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
		req.Topics = append(req.Topics, rt)
		if resp, err := req.RequestWith(testCtx(t), admin); err != nil || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s: %v %+v", topic, err, resp)
		}
	}
	createACL(t, admin, acl.Topic, "orders", acl.Literal, "User:alice", acl.Write, acl.Allow)
	createACL(t, admin, acl.Topic, "orders", acl.Literal, "User:alice", acl.Read, acl.Allow)

	// alice produces and fetches orders; bob is refused.
	alice := userClient(t, addr, "alice", kgo.DefaultProduceTopic("orders"), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := alice.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("alice produce: %v", err)
	}
	fs := alice.PollFetches(testCtx(t))
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("alice fetch: %v, %d records", err, fs.NumRecords())
	}
	// bob may describe orders (so that the produce itself is refused, not
	// the metadata lookup before it) but not write it.
	createACL(t, admin, acl.Topic, "orders", acl.Literal, "User:bob", acl.Describe, acl.Allow)
	bob := userClient(t, addr, "bob", kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err := bob.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// An idempotent producer without IDEMPOTENT_WRITE or any WRITE.
	bobIdem := userClient(t, addr, "bob", kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0))
	if err := bobIdem.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob idempotent produce: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	// Raw requests, to see the exact codes.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "orders", b.lookupTopic("orders").id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(testCtx(t), bob)
	if err != nil {
		t.Fatal(err)
	}
	if c := fr.Topics[0].Partitions[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob fetch: %v", kerr.ErrorForCode(c))
	}

	// Metadata: bob sees only orders in "all", and a named one fails whether
	// it exists or not; alice sees orders with her operations.
	md := kmsg.NewPtrMetadataRequest()
	mr, err := md.RequestWith(testCtx(t), bob)
	if err != nil {
		t.Fatal(err)
	}
	if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "orders" {
		t.Fatalf("bob sees topics %+v", mr.Topics)
	}
	for _, name := range []string{"secret", "missing"} {
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, mt)
		mr, err := md.RequestWith(testCtx(t), bob)
		if err != nil {
			t.Fatal(err)
		}
		if c := mr.Topics[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code || len(mr.Topics[0].Partitions) != 0 {
			t.Fatalf("bob metadata %s: %v", name, kerr.ErrorForCode(c))
		}
	}
	md = kmsg.NewPtrMetadataRequest()
	md.IncludeTopicAuthorizedOperations = true
	mr, err = md.RequestWith(testCtx(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "orders" {
		t.Fatalf("alice sees %+v", mr.Topics)
	}
	if got, want := mr.Topics[0].AuthorizedOperations, acl.Bits(acl.Read, acl.Write, acl.Describe); got != want {
		t.Fatalf("authorized operations %b, want %b", got, want)
	}

	// ListOffsets, CreateTopics, DeleteTopics for bob.
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "secret"
	lt.Partitions = append(lt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
	lo.Topics = append(lo.Topics, lt)
	lresp, err := bob.Broker(int(b.nodeID)).Request(testCtx(t), lo)
	if lr, _ := lresp.(*kmsg.ListOffsetsResponse); err != nil || lr.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob list offsets: %v %+v", err, lr)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "bobs", 1, 1
	ct.Topics = append(ct.Topics, ctt)
	if cr, err := ct.RequestWith(testCtx(t), bob); err != nil || cr.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob create topic: %v %+v", err, cr)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("secret")
	dt.TopicNames, dt.Topics = []string{"secret"}, append(dt.Topics, dtt)
	if dr, err := dt.RequestWith(testCtx(t), bob); err != nil || dr.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob delete topic: %v %+v", err, dr)
	}
	if b.lookupTopic("secret") == nil {
		t.Fatal("secret was deleted")
	}

	// bob may not manage ACLs.
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = append(cr.Creations, kmsg.NewCreateACLsRequestCreation())
	if resp, err := cr.RequestWith(testCtx(t), bob); err != nil || resp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob CreateAcls: %v %+v", err, resp)
	}
	if resp, err := kmsg.NewPtrDescribeACLsRequest().RequestWith(testCtx(t), bob); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob DescribeAcls: %v %+v", err, resp)
	}
}

func describeAll(t *testing.T, cl *kgo.Client) []kmsg.DescribeACLsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("DescribeAcls: %v %+v", err, resp)
	}
	return resp.Resources
}

func TestACL_CreateDescribeDeletePersisted(t *testing.T) {
	dir := t.TempDir()
	b, addr := aclBroker(t, dir)
	admin := userClient(t, addr, "admin")
	createACL(t, admin, acl.Topic, "a-", acl.Prefixed, "User:alice", acl.Read, acl.Allow)
	createACL(t, admin, acl.Topic, "a-1", acl.Literal, "User:alice", acl.Write, acl.Deny)
	createACL(t, admin, acl.Group, "g", acl.Literal, "User:bob", acl.Read, acl.Allow)

	// Invalid creations are INVALID_REQUEST each on its own.
	req := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   acl.ResourceType
		name string
		pat  acl.PatternType
		pr   string
	}{
		{acl.Cluster, "other", acl.Literal, "User:a"},
		{acl.Topic, "t", acl.Match, "User:a"},
		{acl.Topic, "t", acl.Literal, "nocolon"},
		{acl.AnyResource, "t", acl.Literal, "User:a"},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal = kmsg.ACLResourceType(c.rt), c.name, kmsg.ACLResourcePatternType(c.pat), c.pr
		cr.Host, cr.Operation, cr.PermissionType = "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
	}
	resp, err := req.RequestWith(testCtx(t), admin)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("creation %d: %v, want INVALID_REQUEST", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if n := len(describeAll(t, admin)); n != 3 {
		t.Fatalf("%d resources, want 3", n)
	}

	// MATCH finds the bindings that apply to topic a-1.
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourceName, dreq.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("a-1"), kmsg.ACLResourcePatternTypeMatch
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dresp, err := dreq.RequestWith(testCtx(t), admin)
	if err != nil || dresp.ErrorCode != 0 || len(dresp.Resources) != 2 {
		t.Fatalf("describe MATCH: %v %+v", err, dresp)
	}

	// Restart: the bindings are still there.
	b.Close()
	_, addr = aclBroker(t, dir)
	admin = userClient(t, addr, "admin")
	if n := len(describeAll(t, admin)); n != 3 {
		t.Fatalf("after restart %d resources, want 3", n)
	}

	// Delete the topic bindings with one filter.
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	delResp, err := del.RequestWith(testCtx(t), admin)
	if err != nil || delResp.Results[0].ErrorCode != 0 || len(delResp.Results[0].MatchingACLs) != 2 {
		t.Fatalf("delete: %v %+v", err, delResp)
	}
	rs := describeAll(t, admin)
	if len(rs) != 1 || rs[0].ResourceType != kmsg.ACLResourceTypeGroup {
		t.Fatalf("left %+v", rs)
	}
}

func TestACL_SecurityDisabledWithoutAuthorizer(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	resp, err := kmsg.NewPtrDescribeACLsRequest().RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls: %v %+v", err, resp)
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = append(cr.Creations, kmsg.NewCreateACLsRequestCreation())
	if resp, err := cr.RequestWith(testCtx(t), cl); err != nil || resp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls: %v %+v", err, resp)
	}
}
