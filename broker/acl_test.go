package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/metastore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func TestAuthorizeDecisions(t *testing.T) {
	allow := func(rt int8, name string, pat int8, principal, host string, op int8) aclBinding {
		return aclBinding{rt, name, pat, principal, host, op, permAllow}
	}
	deny := func(rt int8, name string, pat int8, principal, host string, op int8) aclBinding {
		a := allow(rt, name, pat, principal, host, op)
		a.Permission = permDeny
		return a
	}
	acls := []aclBinding{
		allow(resTopic, "orders", patLiteral, "User:alice", "*", opRead),
		allow(resTopic, "logs-", patPrefixed, "User:alice", "*", opWrite),
		deny(resTopic, "logs-secret", patLiteral, "User:alice", "*", opWrite),
		allow(resTopic, "*", patLiteral, "User:carol", "10.0.0.1", opAll),
		allow(resTopic, "public", patLiteral, "User:*", "*", opDescribe),
		allow(resTopic, "cfg", patLiteral, "User:alice", "*", opAlterConfigs),
		deny(resTopic, "cfg", patLiteral, "User:*", "*", opDescribe),
		allow(resGroup, "g", patLiteral, "User:alice", "*", opRead),
		allow(resTransactionalID, "tx", patPrefixed, "User:alice", "*", opWrite),
		allow(resCluster, clusterResourceName, patLiteral, "User:alice", "*", opIdempotentWrite),
	}
	tests := []struct {
		name      string
		principal string
		host      string
		op        int8
		rt        int8
		res       string
		noACL     bool // allow.everyone.if.no.acl.found
		want      bool
	}{
		{"literal read", "User:alice", "1.2.3.4", opRead, resTopic, "orders", false, true},
		{"read implies describe", "User:alice", "1.2.3.4", opDescribe, resTopic, "orders", false, true},
		{"read does not imply write", "User:alice", "1.2.3.4", opWrite, resTopic, "orders", false, false},
		{"other principal", "User:bob", "1.2.3.4", opRead, resTopic, "orders", false, false},
		{"prefixed write", "User:alice", "1.2.3.4", opWrite, resTopic, "logs-app", false, true},
		{"prefix not matching", "User:alice", "1.2.3.4", opWrite, resTopic, "log", false, false},
		{"deny beats allow", "User:alice", "1.2.3.4", opWrite, resTopic, "logs-secret", false, false},
		{"deny write leaves describe", "User:alice", "1.2.3.4", opDescribe, resTopic, "logs-secret", false, true},
		{"wildcard name, ALL, host match", "User:carol", "10.0.0.1", opDelete, resTopic, "anything", false, true},
		{"host mismatch", "User:carol", "10.0.0.2", opDelete, resTopic, "anything", false, false},
		{"User:* principal", "User:bob", "1.2.3.4", opDescribe, resTopic, "public", false, true},
		{"alter_configs implies describe_configs", "User:alice", "1.2.3.4", opDescribeConfigs, resTopic, "cfg", false, true},
		{"deny describe for everyone", "User:alice", "1.2.3.4", opDescribe, resTopic, "cfg", false, false},
		{"group read", "User:alice", "1.2.3.4", opRead, resGroup, "g", false, true},
		{"group of other name", "User:alice", "1.2.3.4", opRead, resGroup, "h", false, false},
		{"txn id prefixed", "User:alice", "1.2.3.4", opWrite, resTransactionalID, "tx-1", false, true},
		{"cluster idempotent write", "User:alice", "1.2.3.4", opIdempotentWrite, resCluster, clusterResourceName, false, true},
		{"no acl: denied by default", "User:bob", "1.2.3.4", opRead, resDelegationToken, "tok", false, false},
		{"no acl: allowed with allow.everyone", "User:bob", "1.2.3.4", opRead, resDelegationToken, "tok", true, true},
		{"acl exists: allow.everyone does not apply", "User:bob", "1.2.3.4", opRead, resTopic, "orders", true, false},
		{"super user", "User:admin", "1.2.3.4", opDelete, resTopic, "orders", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &Broker{acl: aclState{enabled: true, allowIfNone: tc.noACL, superUsers: map[string]bool{"User:admin": true}}}
			b.acl.use(metastore.Memory(aclRecords(acls)))
			if got := b.authorize(tc.principal, tc.host, tc.op, tc.rt, tc.res); got != tc.want {
				t.Errorf("authorize(%s, %s, op %d, %d %q) = %v, want %v", tc.principal, tc.host, tc.op, tc.rt, tc.res, got, tc.want)
			}
		})
	}
	b := &Broker{acl: aclState{enabled: true, superUsers: map[string]bool{}}}
	b.acl.use(metastore.Memory(aclRecords(acls)))
	if !b.authorizeAny("User:alice", "1.2.3.4", opWrite, resTopic) {
		t.Error("authorizeAny: alice may write some topic")
	}
	if b.authorizeAny("User:bob", "1.2.3.4", opWrite, resTopic) {
		t.Error("authorizeAny: bob may write no topic")
	}
	if err := b.updateACLs(context.Background(), []aclBinding{deny(resTopic, "logs-", patPrefixed, "User:alice", "*", opWrite), deny(resTopic, "*", patLiteral, "User:alice", "*", opAll)}, nil); err != nil {
		t.Fatal(err)
	}
	if b.authorizeAny("User:alice", "1.2.3.4", opWrite, resTopic) {
		t.Error("authorizeAny: alice is denied every topic")
	}
	if !(&Broker{}).authorize("User:x", "h", opWrite, resTopic, "t") {
		t.Error("no authorizer: everything is allowed")
	}
}

func TestACLFilterMatching(t *testing.T) {
	lit := aclBinding{resTopic, "foo", patLiteral, "User:a", "*", opRead, permAllow}
	star := aclBinding{resTopic, "*", patLiteral, "User:a", "*", opRead, permAllow}
	pre := aclBinding{resTopic, "fo", patPrefixed, "User:a", "*", opRead, permAllow}
	s := kmsg.StringPtr
	tests := []struct {
		name string
		f    aclFilter
		want [3]bool // lit, star, pre
	}{
		{"any", aclFilter{resAny, nil, patAny, nil, nil, opAny, permAny}, [3]bool{true, true, true}},
		{"any pattern, name exact", aclFilter{resTopic, s("foo"), patAny, nil, nil, opAny, permAny}, [3]bool{true, false, false}},
		{"match", aclFilter{resTopic, s("foo"), patMatch, nil, nil, opAny, permAny}, [3]bool{true, true, true}},
		{"literal", aclFilter{resTopic, s("foo"), patLiteral, nil, nil, opAny, permAny}, [3]bool{true, false, false}},
		{"prefixed", aclFilter{resTopic, s("fo"), patPrefixed, nil, nil, opAny, permAny}, [3]bool{false, false, true}},
		{"other type", aclFilter{resGroup, nil, patAny, nil, nil, opAny, permAny}, [3]bool{false, false, false}},
		{"principal", aclFilter{resAny, nil, patAny, s("User:b"), nil, opAny, permAny}, [3]bool{false, false, false}},
		{"op", aclFilter{resAny, nil, patAny, nil, nil, opWrite, permAny}, [3]bool{false, false, false}},
		{"permission", aclFilter{resAny, nil, patAny, nil, s("*"), opRead, permAllow}, [3]bool{true, true, true}},
	}
	for _, tc := range tests {
		got := [3]bool{tc.f.matches(&lit), tc.f.matches(&star), tc.f.matches(&pre)}
		if got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// aclBroker starts a broker with an authorizer and a SASL_PLAINTEXT
// listener, with users admin (a super user), alice and bob.
func aclBroker(t *testing.T, dir string) (*Broker, string) {
	t.Helper()
	for _, u := range []string{"admin", "alice", "bob"} {
		if err := AddUser(dir, u, mechScramSHA256, u+"-pw", 0); err != nil {
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

func createACL(t *testing.T, cl *kgo.Client, rt int8, name string, pat int8, principal string, op int8, perm int8) {
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
	createACL(t, admin, resTopic, "orders", patLiteral, "User:alice", opWrite, permAllow)
	createACL(t, admin, resTopic, "orders", patLiteral, "User:alice", opRead, permAllow)

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
	createACL(t, admin, resTopic, "orders", patLiteral, "User:bob", opDescribe, permAllow)
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
	if got, want := mr.Topics[0].AuthorizedOperations, opBits(opRead, opWrite, opDescribe); got != want {
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
	createACL(t, admin, resTopic, "a-", patPrefixed, "User:alice", opRead, permAllow)
	createACL(t, admin, resTopic, "a-1", patLiteral, "User:alice", opWrite, permDeny)
	createACL(t, admin, resGroup, "g", patLiteral, "User:bob", opRead, permAllow)

	// Invalid creations are INVALID_REQUEST each on its own.
	req := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   int8
		name string
		pat  int8
		pr   string
	}{
		{resCluster, "other", patLiteral, "User:a"},
		{resTopic, "t", patMatch, "User:a"},
		{resTopic, "t", patLiteral, "nocolon"},
		{resAny, "t", patLiteral, "User:a"},
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
