package broker

import (
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExecute_RunsHandlersAsTheCaller: a request run by Execute is checked
// by the handler's own ACL checks against the Caller's principal, and
// CheckPassword accepts exactly the user's password.
func TestExecute_RunsHandlersAsTheCaller(t *testing.T) {
	dir := t.TempDir()
	b, addr := aclBroker(t, dir)
	admin := userClient(t, addr, "admin")
	createACL(t, admin, acl.Cluster, acl.ClusterName, acl.Literal, "User:alice", acl.Create, acl.Allow)

	create := func(c Caller, topic string) int16 {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
		req.Topics = append(req.Topics, rt)
		resp, err := b.Execute(testCtx(t), c, req)
		if err != nil {
			t.Fatal(err)
		}
		if v := resp.GetVersion(); v != req.GetVersion() || v == 0 {
			t.Fatalf("response version %d, request %d", v, req.GetVersion())
		}
		return resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}
	if code := create(Caller{Principal: "User:bob", Host: "127.0.0.1"}, "t1"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob creates: %v", kerr.ErrorForCode(code))
	}
	if code := create(Caller{Principal: "User:alice", Host: "127.0.0.1"}, "t1"); code != 0 {
		t.Fatalf("alice creates: %v", kerr.ErrorForCode(code))
	}
	if !b.Authorize(Caller{Principal: "User:alice"}, ACLCreate, ResourceCluster, ClusterResourceName) ||
		b.Authorize(Caller{Principal: "User:bob"}, ACLCreate, ResourceCluster, ClusterResourceName) {
		t.Fatal("Authorize disagrees with the ACLs")
	}

	if err := b.CheckPassword("alice", "alice-pw"); err != nil {
		t.Fatalf("right password: %v", err)
	}
	for _, up := range [][2]string{{"alice", "bob-pw"}, {"alice", ""}, {"nobody", "x"}, {"", "alice-pw"}} {
		if err := b.CheckPassword(up[0], up[1]); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("CheckPassword(%q, %q) = %v", up[0], up[1], err)
		}
	}
}
