package cluster

import (
	"testing"

	"github.com/gregor-broker/gregor/metastore"
)

// A collection's records reach every node; its revision moves with its own
// changes (deletes included) and with nothing else, so a broker's view of
// the ACLs is not decoded again for a topic's creation.
func TestCollection_RevisionMovesWithItsOwnChanges(t *testing.T) {
	c := newTestCluster(t, 2)
	n1, n2 := c.node(1), c.node(2)
	acls1, acls2, quotas2 := n1.Collection("acls"), n2.Collection("acls"), n2.Collection("quotas")

	rev, err := acls1.Update(ctx(t), metastore.Records{"a": []byte(`{"x":1}`), "b": []byte(`{"x":2}`)}, nil)
	if err != nil || rev == 0 {
		t.Fatalf("Update: %d, %v", rev, err)
	}
	if recs, r := acls1.Snapshot(); len(recs) != 2 || r != rev {
		t.Fatalf("the writer's snapshot after Update: %v at %d, want 2 records at %d", recs, r, rev)
	}
	waitMeta(t, n2, "the ACLs on node 2", func(m *Metadata) bool { return m.Collections["acls"].Revision == rev })
	if recs, _ := acls2.Snapshot(); string(recs["a"]) != `{"x":1}` || string(recs["b"]) != `{"x":2}` {
		t.Fatalf("node 2's ACLs: %q", recs)
	}
	_, quotasRev := quotas2.Snapshot()

	// Another collection's change and a topic's creation leave it alone.
	qrev, err := n1.Collection("quotas").Update(ctx(t), metastore.Records{"users/u": []byte(`{}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n1.CreateTopic(ctx(t), "t", 1, 1, nil, nil); err != nil {
		t.Fatal(err)
	}
	m := waitMeta(t, n2, "the topic and the quota on node 2", func(m *Metadata) bool { return m.Topics["t"] != nil && m.Collections["quotas"].Revision == qrev })
	if r := m.Collections["acls"].Revision; r != rev {
		t.Errorf("the ACLs' revision moved from %d to %d with other changes", rev, r)
	}
	if qrev <= quotasRev {
		t.Errorf("the quotas' revision %d did not move from %d", qrev, quotasRev)
	}

	// A delete moves it.
	drev, err := acls2.Update(ctx(t), nil, []string{"a"})
	if err != nil || drev <= rev {
		t.Fatalf("delete: %d (from %d), %v", drev, rev, err)
	}
	waitMeta(t, n1, "the delete on node 1", func(m *Metadata) bool { return m.Collections["acls"].Revision == drev })
	if recs, _ := acls1.Snapshot(); len(recs) != 1 || recs["b"] == nil {
		t.Fatalf("node 1's ACLs after the delete: %q", recs)
	}
	if r, err := acls1.Update(ctx(t), nil, nil); r != 0 || err != nil {
		t.Fatalf("an empty update: %d, %v", r, err)
	}
}
