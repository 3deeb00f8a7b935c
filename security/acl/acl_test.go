package acl

import (
	"context"
	"testing"

	"github.com/gregor-broker/gregor/metastore"
)

func TestAuthorizeDecisions(t *testing.T) {
	allow := func(rt ResourceType, name string, pat PatternType, principal, host string, op Operation) Binding {
		return Binding{rt, name, pat, principal, host, op, Allow}
	}
	deny := func(rt ResourceType, name string, pat PatternType, principal, host string, op Operation) Binding {
		a := allow(rt, name, pat, principal, host, op)
		a.Permission = Deny
		return a
	}
	acls := []Binding{
		allow(Topic, "orders", Literal, "User:alice", "*", Read),
		allow(Topic, "logs-", Prefixed, "User:alice", "*", Write),
		deny(Topic, "logs-secret", Literal, "User:alice", "*", Write),
		allow(Topic, "*", Literal, "User:carol", "10.0.0.1", All),
		allow(Topic, "public", Literal, "User:*", "*", Describe),
		allow(Topic, "cfg", Literal, "User:alice", "*", AlterConfigs),
		deny(Topic, "cfg", Literal, "User:*", "*", Describe),
		allow(Group, "g", Literal, "User:alice", "*", Read),
		allow(TransactionalID, "tx", Prefixed, "User:alice", "*", Write),
		allow(Cluster, ClusterName, Literal, "User:alice", "*", IdempotentWrite),
	}
	tests := []struct {
		name      string
		principal string
		host      string
		op        Operation
		rt        ResourceType
		res       string
		noACL     bool // allow.everyone.if.no.acl.found
		want      bool
	}{
		{"literal read", "User:alice", "1.2.3.4", Read, Topic, "orders", false, true},
		{"read implies describe", "User:alice", "1.2.3.4", Describe, Topic, "orders", false, true},
		{"read does not imply write", "User:alice", "1.2.3.4", Write, Topic, "orders", false, false},
		{"other principal", "User:bob", "1.2.3.4", Read, Topic, "orders", false, false},
		{"prefixed write", "User:alice", "1.2.3.4", Write, Topic, "logs-app", false, true},
		{"prefix not matching", "User:alice", "1.2.3.4", Write, Topic, "log", false, false},
		{"deny beats allow", "User:alice", "1.2.3.4", Write, Topic, "logs-secret", false, false},
		{"deny write leaves describe", "User:alice", "1.2.3.4", Describe, Topic, "logs-secret", false, true},
		{"wildcard name, ALL, host match", "User:carol", "10.0.0.1", Delete, Topic, "anything", false, true},
		{"host mismatch", "User:carol", "10.0.0.2", Delete, Topic, "anything", false, false},
		{"User:* principal", "User:bob", "1.2.3.4", Describe, Topic, "public", false, true},
		{"alter_configs implies describe_configs", "User:alice", "1.2.3.4", DescribeConfigs, Topic, "cfg", false, true},
		{"deny describe for everyone", "User:alice", "1.2.3.4", Describe, Topic, "cfg", false, false},
		{"group read", "User:alice", "1.2.3.4", Read, Group, "g", false, true},
		{"group of other name", "User:alice", "1.2.3.4", Read, Group, "h", false, false},
		{"txn id prefixed", "User:alice", "1.2.3.4", Write, TransactionalID, "tx-1", false, true},
		{"cluster idempotent write", "User:alice", "1.2.3.4", IdempotentWrite, Cluster, ClusterName, false, true},
		{"no acl: denied by default", "User:bob", "1.2.3.4", Read, DelegationToken, "tok", false, false},
		{"no acl: allowed with allow.everyone", "User:bob", "1.2.3.4", Read, DelegationToken, "tok", true, true},
		{"acl exists: allow.everyone does not apply", "User:bob", "1.2.3.4", Read, Topic, "orders", true, false},
		{"super user", "User:admin", "1.2.3.4", Delete, Topic, "orders", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Config{Enabled: true, AllowIfNone: tc.noACL, SuperUsers: []string{"User:admin"}})
			a.Use(metastore.Memory(Records(acls)))
			if got := a.Authorize(tc.principal, tc.host, tc.op, tc.rt, tc.res); got != tc.want {
				t.Errorf("authorize(%s, %s, op %d, %d %q) = %v, want %v", tc.principal, tc.host, tc.op, tc.rt, tc.res, got, tc.want)
			}
		})
	}
	a := New(Config{Enabled: true})
	if err := a.Alter(context.Background(), func([]Binding) (add, del []Binding) { return acls, nil }); err != ErrNoStore {
		t.Fatalf("Alter before Use: %v, want ErrNoStore", err)
	}
	a.Use(metastore.Memory(Records(acls)))
	if !a.AuthorizeAny("User:alice", "1.2.3.4", Write, Topic) {
		t.Error("authorizeAny: alice may write some topic")
	}
	if a.AuthorizeAny("User:bob", "1.2.3.4", Write, Topic) {
		t.Error("authorizeAny: bob may write no topic")
	}
	if err := a.Alter(context.Background(), func(cur []Binding) (add, del []Binding) {
		if len(cur) != len(acls) {
			t.Errorf("Alter saw %d bindings, want %d", len(cur), len(acls))
		}
		return []Binding{deny(Topic, "logs-", Prefixed, "User:alice", "*", Write), deny(Topic, "*", Literal, "User:alice", "*", All)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if a.AuthorizeAny("User:alice", "1.2.3.4", Write, Topic) {
		t.Error("authorizeAny: alice is denied every topic")
	}
	if got := len(a.Bindings()); got != len(acls)+2 {
		t.Errorf("%d bindings after Alter, want %d", got, len(acls)+2)
	}
	if !New(Config{}).Authorize("User:x", "h", Write, Topic, "t") {
		t.Error("no authorizer: everything is allowed")
	}
}

func TestACLFilterMatching(t *testing.T) {
	lit := Binding{Topic, "foo", Literal, "User:a", "*", Read, Allow}
	star := Binding{Topic, "*", Literal, "User:a", "*", Read, Allow}
	pre := Binding{Topic, "fo", Prefixed, "User:a", "*", Read, Allow}
	s := func(v string) *string { return &v }
	tests := []struct {
		name string
		f    Filter
		want [3]bool // lit, star, pre
	}{
		{"any", Filter{AnyResource, nil, AnyPattern, nil, nil, AnyOperation, AnyPermission}, [3]bool{true, true, true}},
		{"any pattern, name exact", Filter{Topic, s("foo"), AnyPattern, nil, nil, AnyOperation, AnyPermission}, [3]bool{true, false, false}},
		{"match", Filter{Topic, s("foo"), Match, nil, nil, AnyOperation, AnyPermission}, [3]bool{true, true, true}},
		{"literal", Filter{Topic, s("foo"), Literal, nil, nil, AnyOperation, AnyPermission}, [3]bool{true, false, false}},
		{"prefixed", Filter{Topic, s("fo"), Prefixed, nil, nil, AnyOperation, AnyPermission}, [3]bool{false, false, true}},
		{"other type", Filter{Group, nil, AnyPattern, nil, nil, AnyOperation, AnyPermission}, [3]bool{false, false, false}},
		{"principal", Filter{AnyResource, nil, AnyPattern, s("User:b"), nil, AnyOperation, AnyPermission}, [3]bool{false, false, false}},
		{"op", Filter{AnyResource, nil, AnyPattern, nil, nil, Write, AnyPermission}, [3]bool{false, false, false}},
		{"permission", Filter{AnyResource, nil, AnyPattern, nil, s("*"), Read, Allow}, [3]bool{true, true, true}},
	}
	for _, tc := range tests {
		got := [3]bool{tc.f.Matches(&lit), tc.f.Matches(&star), tc.f.Matches(&pre)}
		if got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
