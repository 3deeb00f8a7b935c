package cluster

import (
	"slices"
	"testing"
)

// TestController_FailoverInBatches: when a broker leading a third of 600
// partitions dies, the controller decides all of them in one pass and
// writes the decisions in one transaction per reconcileBatch() partitions,
// not one per partition: every partition gets a live leader and an ISR
// without the dead broker, and the partitions' keys were written at no
// more than a few etcd revisions (one per pass and batch).
func TestController_FailoverInBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	c := newTestCluster(t, 3)
	m := c.waitAll("3 brokers and a controller", func(m *Metadata) bool {
		return len(m.Brokers) == 3 && m.ControllerID > 0
	})
	const parts = 600
	if _, err := c.node(m.ControllerID).CreateTopic(ctx(t), "many", parts, 3, nil, nil); err != nil {
		t.Fatal(err)
	}
	m = c.waitAll("every partition led", func(m *Metadata) bool {
		tt := m.Topics["many"]
		if tt == nil || len(tt.Partitions) != parts {
			return false
		}
		for _, p := range tt.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	var victim int32
	for id := range m.Brokers {
		if id != m.ControllerID {
			victim = id
			break
		}
	}
	led := 0
	for _, p := range m.Topics["many"].Partitions {
		if p.Leader == victim {
			led++
		}
	}
	c.stop(victim, true)
	m = c.waitAll("every partition led by a live broker, the dead one out of every ISR", func(m *Metadata) bool {
		for _, p := range m.Topics["many"].Partitions {
			if p.Leader < 0 || p.Leader == victim || slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return true
	})
	revs := map[int64]int{}
	for _, p := range m.Topics["many"].Partitions {
		revs[p.modRev]++
	}
	if want := parts/c.node(m.ControllerID).reconcileBatch() + 2; len(revs) > want {
		t.Fatalf("the %d partitions were written at %d revisions, want at most %d: %v", parts, len(revs), want, revs)
	}
	t.Logf("broker %d led %d of %d partitions; after its death they were written at %d revisions", victim, led, parts, len(revs))
}
