package cluster

import (
	"strconv"
	"sync"
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

// Modify is a compare-and-set on one record: writers on two nodes that
// each add one to a counter many times at once lose none of their
// increments, and fn returning nil removes the record.
func TestCollection_ModifyLosesNoConcurrentChange(t *testing.T) {
	c := newTestCluster(t, 2)
	cols := []metastore.Collection{c.node(1).Collection("group-configs"), c.node(2).Collection("group-configs")}
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := cols[w%2].Modify(ctx(t), "g", func(cur []byte) ([]byte, error) {
					n := 0
					if cur != nil {
						var err error
						if n, err = strconv.Atoi(string(cur)); err != nil {
							return nil, err
						}
					}
					return []byte(strconv.Itoa(n + 1)), nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, col := range cols {
		waitMeta(t, c.node(int32(i+1)), "the last increment", func(m *Metadata) bool {
			return string(m.Collections["group-configs"].Records["g"]) == strconv.Itoa(writers*each)
		})
		if recs, _ := col.Snapshot(); string(recs["g"]) != strconv.Itoa(writers*each) {
			t.Fatalf("node %d: %q, want %d", i+1, recs["g"], writers*each)
		}
	}
	rev, err := cols[1].Modify(ctx(t), "g", func([]byte) ([]byte, error) { return nil, nil })
	if err != nil || rev == 0 {
		t.Fatalf("remove: %d, %v", rev, err)
	}
	if recs, _ := cols[1].Snapshot(); recs["g"] != nil {
		t.Fatalf("still there after remove: %q", recs["g"])
	}
	if r, err := cols[0].Modify(ctx(t), "g", func([]byte) ([]byte, error) { return nil, nil }); err != nil || r != 0 {
		t.Fatalf("remove what is gone: %d, %v", r, err)
	}
}
