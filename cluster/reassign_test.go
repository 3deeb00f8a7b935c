package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func liveSet(ids ...int32) map[int32]int64 {
	m := map[int32]int64{}
	for _, id := range ids {
		m[id] = int64(100 + id)
	}
	return m
}

// part builds a partition state: replicas, ISR, leader, adding, removing;
// epochs 5/9 and the leader's broker epoch as liveSet gives it.
func part(replicas, isr []int32, leader int32, adding, removing []int32) Partition {
	p := Partition{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 5, PartitionEpoch: 9,
		AddingReplicas: adding, RemovingReplicas: removing}
	if leader >= 0 {
		p.LeaderBrokerEpoch = int64(100 + leader)
	}
	return p
}

// epochs sets the leader and partition epochs of p.
func epochs(p Partition, le, pe int32) Partition {
	p.LeaderEpoch, p.PartitionEpoch = le, pe
	return p
}

func ids(x ...int32) []int32 { return x }

func TestStartReassignment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Partition
		target  []int32
		live    map[int32]int64
		want    Partition
		changed bool
	}{
		{"move one replica", part(ids(1, 2), ids(1, 2), 1, nil, nil), ids(2, 3), liveSet(1, 2, 3),
			epochs(part(ids(2, 3, 1), ids(1, 2), 1, ids(3), ids(1)), 5, 10), true},
		{"replace every replica", part(ids(1, 2), ids(1, 2), 1, nil, nil), ids(3, 4), liveSet(1, 2, 3, 4),
			epochs(part(ids(3, 4, 1, 2), ids(1, 2), 1, ids(3, 4), ids(1, 2)), 5, 10), true},
		{"shrink removing the leader completes at once", part(ids(1, 2, 3), ids(1, 2, 3), 1, nil, nil), ids(2, 3), liveSet(1, 2, 3),
			epochs(part(ids(2, 3), ids(2, 3), 2, nil, nil), 6, 10), true},
		{"shrink keeping the leader", part(ids(1, 2, 3), ids(3, 1), 1, nil, nil), ids(1, 2), liveSet(1, 2, 3),
			epochs(part(ids(1, 2), ids(1), 1, nil, nil), 5, 10), true},
		{"shrink that would empty the ISR waits", part(ids(1, 2, 3), ids(1), 1, nil, nil), ids(2, 3), liveSet(1, 2, 3),
			epochs(part(ids(2, 3, 1), ids(1), 1, nil, ids(1)), 5, 10), true},
		{"same replicas", part(ids(1, 2), ids(1, 2), 1, nil, nil), ids(1, 2), liveSet(1, 2),
			part(ids(1, 2), ids(1, 2), 1, nil, nil), false},
		{"reorder", part(ids(1, 2), ids(1, 2), 1, nil, nil), ids(2, 1), liveSet(1, 2),
			epochs(part(ids(2, 1), ids(1, 2), 1, nil, nil), 5, 10), true},
		{"replace a reassignment in progress", part(ids(2, 3, 1), ids(1, 2), 1, ids(3), ids(1)), ids(1, 2), liveSet(1, 2, 3),
			epochs(part(ids(1, 2), ids(1, 2), 1, nil, nil), 5, 10), true},
		{"retarget a reassignment in progress", part(ids(2, 3, 1), ids(1, 2), 1, ids(3), ids(1)), ids(2, 4), liveSet(1, 2, 3, 4),
			epochs(part(ids(2, 4, 3, 1), ids(1, 2), 1, ids(4), ids(3, 1)), 5, 10), true},
	} {
		if err := checkTarget(tc.target, tc.live); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, changed := startReassignment(tc.p, tc.target, tc.live)
		if changed != tc.changed || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %+v changed=%v\nwant %+v changed=%v", tc.name, got, changed, tc.want, tc.changed)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	live := liveSet(1, 2, 3)
	for _, bad := range [][]int32{{}, nil, {1, 1}, {1, 4}, {2, 3, 2}} {
		if err := checkTarget(bad, live); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if err := checkTarget(ids(3, 1), live); err != nil {
		t.Fatal(err)
	}
}

// TestDecide_Reassignment: the controller completes a reassignment once
// every adding replica is in the ISR, moving leadership off a removed
// leader.
func TestDecide_Reassignment(t *testing.T) {
	moving := func(isr []int32, leader int32) Partition { return part(ids(2, 3, 1), isr, leader, ids(3), ids(1)) }
	for _, tc := range []struct {
		name    string
		p       Partition
		live    map[int32]int64
		want    Partition
		changed bool
	}{
		{"adding replica not caught up", moving(ids(1, 2), 1), liveSet(1, 2, 3), moving(ids(1, 2), 1), false},
		{"caught up, leader removed", moving(ids(1, 2, 3), 1), liveSet(1, 2, 3),
			func() Partition { p := epochs(part(ids(2, 3), ids(2, 3), 2, nil, nil), 6, 10); return p }(), true},
		{"caught up, leader kept", moving(ids(2, 1, 3), 2), liveSet(1, 2, 3),
			epochs(part(ids(2, 3), ids(2, 3), 2, nil, nil), 5, 10), true},
		{"caught up, removed leader dies: one epoch bump", moving(ids(1, 2, 3), 1), liveSet(2, 3),
			epochs(part(ids(2, 3), ids(2, 3), 2, nil, nil), 6, 10), true},
		{"caught up, first target replica dead", moving(ids(1, 2, 3), 1), liveSet(1, 3),
			epochs(part(ids(2, 3), ids(3), 3, nil, nil), 6, 10), true},
		{"only removed replicas in the ISR", part(ids(3, 1), ids(1, 3), 1, ids(3), ids(1)), liveSet(1),
			epochs(part(ids(3, 1), ids(1), 1, ids(3), ids(1)), 5, 10), true},
		{"removal only, no live target replica in the ISR", part(ids(2, 1), ids(1, 2), 1, nil, ids(1)), liveSet(1),
			epochs(part(ids(2, 1), ids(1), 1, nil, ids(1)), 5, 10), true},
	} {
		got, changed := decide(tc.p, tc.live, false)
		if changed != tc.changed || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %+v changed=%v\nwant %+v changed=%v", tc.name, got, changed, tc.want, tc.changed)
		}
	}
}

func TestCancelReassignment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Partition
		live    map[int32]int64
		unclean bool
		want    Partition
		err     error
	}{
		{"revert", part(ids(2, 3, 1), ids(1, 2, 3), 1, ids(3), ids(1)), liveSet(1, 2, 3), false,
			epochs(part(ids(2, 1), ids(1, 2), 1, nil, nil), 5, 10), nil},
		{"leader was being added", part(ids(3, 1), ids(1, 3), 3, ids(3), ids(1)), liveSet(1, 3), false,
			epochs(part(ids(1), ids(1), 1, nil, nil), 6, 10), nil},
		{"nothing to cancel", part(ids(1, 2), ids(1, 2), 1, nil, nil), liveSet(1, 2), false,
			Partition{}, ErrNoReassignmentInProgress},
		{"ISR all added, clean", part(ids(3, 1), ids(3), 3, ids(3), ids(1)), liveSet(1, 3), false,
			Partition{}, ErrReassignmentUnclean},
		{"ISR all added, unclean", part(ids(3, 1), ids(3), 3, ids(3), ids(1)), liveSet(1, 3), true,
			epochs(part(ids(1), ids(1), 1, nil, nil), 6, 10), nil},
	} {
		got, err := cancelReassignment(tc.p, tc.live, tc.unclean)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %+v %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestReassignment moves a partition of two replicas off its leader on
// three in-process nodes: the reassignment is written, the leader adds the
// new replica to the ISR (as its broker does once the follower caught up),
// and the controller completes it, electing a target replica.
func TestReassignment(t *testing.T) {
	c := newTestCluster(t, 3)
	n1, n3 := c.node(1), c.node(3)
	c.waitAll("3 brokers and a controller", func(m *Metadata) bool { return len(m.Brokers) == 3 && m.ControllerID > 0 })
	if _, err := n1.CreateTopic(ctx(t), "moves", 0, 0, map[int32][]int32{0: {1, 2}, 1: {2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitAll("moves", func(m *Metadata) bool { return m.Topics["moves"] != nil })
	tp0, tp1 := TopicPartition{Topic: "moves", Partition: 0}, TopicPartition{Topic: "moves", Partition: 1}

	res := n3.AlterPartitionReassignments(ctx(t), map[TopicPartition][]int32{
		tp0:                            {2, 3},
		tp1:                            nil,
		{Topic: "moves", Partition: 7}: {1},
		{Topic: "nope", Partition: 0}:  {1},
	})
	if res[tp0] != nil || !errors.Is(res[tp1], ErrNoReassignmentInProgress) ||
		!errors.Is(res[TopicPartition{Topic: "moves", Partition: 7}], ErrUnknownTopicOrPartition) ||
		!errors.Is(res[TopicPartition{Topic: "nope", Partition: 0}], ErrUnknownTopicOrPartition) {
		t.Fatalf("results %v", res)
	}
	bad := n3.AlterPartitionReassignments(ctx(t), map[TopicPartition][]int32{tp1: {2, 9}})
	if !errors.Is(bad[tp1], ErrInvalidReplicaAssignment) {
		t.Fatalf("broker 9: %v", bad)
	}
	// Written, but the new replica is not in the ISR yet.
	m := c.waitAll("reassignment written", func(m *Metadata) bool { p, _ := m.Partition("moves", 0); return p.Reassigning() })
	p, _ := m.Partition("moves", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) ||
		!slices.Equal(p.RemovingReplicas, []int32{1}) || p.Leader != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 1 {
		t.Fatalf("in progress: %+v", p)
	}
	for _, nd := range c.live() {
		rs, err := nd.ListPartitionReassignments(ctx(t), nil)
		if err != nil || len(rs) != 1 || rs[0].TopicPartition != tp0 || !slices.Equal(rs[0].Replicas, p.Replicas) {
			t.Fatalf("node %d lists %+v %v", nd.NodeID(), rs, err)
		}
	}
	if rs, err := n1.ListPartitionReassignments(ctx(t), []TopicPartition{tp1, {Topic: "nope", Partition: 3}}); err != nil || len(rs) != 0 {
		t.Fatalf("list of others: %+v %v", rs, err)
	}
	// Not caught up: the controller leaves it alone. The leader may not
	// add a broker outside the replicas.
	if _, err := n1.AlterPartition(ctx(t), "moves", 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3, 4}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("ISR beyond the replicas: %v", err)
	}
	start := time.Now()
	if _, err := n1.AlterPartition(ctx(t), "moves", 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	m = c.waitAll("reassignment completed", func(m *Metadata) bool { p, _ := m.Partition("moves", 0); return !p.Reassigning() })
	t.Logf("completed %v after the ISR expansion", time.Since(start))
	p, _ = m.Partition("moves", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3}) || !slices.Equal(p.ISR, []int32{2, 3}) || p.Leader != 2 ||
		p.LeaderEpoch != 1 || p.PartitionEpoch != 3 || p.LeaderBrokerEpoch != m.Brokers[2].Epoch {
		t.Fatalf("completed: %+v", p)
	}
	if rs, err := n1.ListPartitionReassignments(ctx(t), nil); err != nil || len(rs) != 0 {
		t.Fatalf("still listed: %+v %v", rs, err)
	}

	// Cancel: back to the original replicas, the one being added gone.
	res = n1.AlterPartitionReassignments(ctx(t), map[TopicPartition][]int32{tp1: {3, 1}})
	if res[tp1] != nil {
		t.Fatal(res)
	}
	m = c.waitAll("moves-1 reassigning", func(m *Metadata) bool { p, _ := m.Partition("moves", 1); return p.Reassigning() })
	p, _ = m.Partition("moves", 1)
	if !slices.Equal(p.Replicas, []int32{3, 1, 2}) || !slices.Equal(p.AddingReplicas, []int32{1}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("moves-1 in progress: %+v", p)
	}
	res = c.node(2).AlterPartitionReassignments(ctx(t), map[TopicPartition][]int32{tp1: nil})
	if res[tp1] != nil {
		t.Fatal(res)
	}
	m = c.waitAll("moves-1 reverted", func(m *Metadata) bool { p, _ := m.Partition("moves", 1); return !p.Reassigning() })
	q, _ := m.Partition("moves", 1)
	if !slices.Equal(q.Replicas, []int32{3, 2}) || !slices.Equal(q.ISR, []int32{2, 3}) || q.Leader != 2 ||
		q.LeaderEpoch != p.LeaderEpoch || q.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("moves-1 reverted: %+v", q)
	}
}
