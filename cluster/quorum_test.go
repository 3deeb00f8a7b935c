package cluster

import (
	"slices"
	"testing"
	"time"
)

// TestDescribeQuorum_ThreeVoters checks that every node of a three-node
// cluster names the same raft leader and term, lists the three voters and
// reports a high watermark that grows with writes; the node whose raft
// status the process publishes reports, when it leads, every follower's
// log end offset.
func TestDescribeQuorum_ThreeVoters(t *testing.T) {
	c := newTestCluster(t, 3)
	c.waitAll("three brokers", func(m *Metadata) bool { return len(m.Brokers) == 3 })
	var leader int32 = -1
	var term, hw int64
	deadline := time.Now().Add(15 * time.Second)
	for _, nd := range c.live() {
		for {
			q, err := nd.DescribeQuorum(ctx(t))
			if err != nil {
				t.Fatalf("node %d: %v", nd.NodeID(), err)
			}
			if q.LeaderID == -1 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if q.LeaderID < 1 || q.LeaderID > 3 {
				t.Fatalf("node %d: leader %d", nd.NodeID(), q.LeaderID)
			}
			if leader != -1 && (q.LeaderID != leader || q.LeaderEpoch != term) {
				t.Fatalf("node %d: leader %d term %d, another node said %d term %d", nd.NodeID(), q.LeaderID, q.LeaderEpoch, leader, term)
			}
			leader, term = q.LeaderID, q.LeaderEpoch
			if q.LeaderEpoch < 1 || q.HighWatermark < 1 {
				t.Fatalf("node %d: term %d high watermark %d", nd.NodeID(), q.LeaderEpoch, q.HighWatermark)
			}
			hw = max(hw, q.HighWatermark)
			var ids []int32
			for _, v := range q.Voters {
				ids = append(ids, v.NodeID)
				if v.Host != "127.0.0.1" || v.Port == 0 {
					t.Errorf("node %d: voter %d at %s:%d", nd.NodeID(), v.NodeID, v.Host, v.Port)
				}
				if v.NodeID == nd.NodeID() && v.LogEndOffset < 1 {
					t.Errorf("node %d: its own log end offset %d", nd.NodeID(), v.LogEndOffset)
				}
				if v.NodeID == q.LeaderID && (v.LastFetch.IsZero() || v.LastCaughtUp.IsZero()) {
					t.Errorf("node %d: the leader's timestamps unknown", nd.NodeID())
				}
			}
			if !slices.Equal(ids, []int32{1, 2, 3}) {
				t.Fatalf("node %d: voters %v", nd.NodeID(), ids)
			}
			if len(q.Observers) != 0 {
				t.Fatalf("node %d: observers %v", nd.NodeID(), q.Observers)
			}
			if _, ok := raftStatusOf(uint64(nd.etcd.Server.MemberID())); ok && q.LeaderID == nd.NodeID() {
				for _, v := range q.Voters {
					if v.LogEndOffset < 1 || v.LastFetch.IsZero() {
						t.Errorf("leader node %d: voter %d log end %d last fetch %v", nd.NodeID(), v.NodeID, v.LogEndOffset, v.LastFetch)
					}
				}
			}
			break
		}
	}
	// A write moves the commit index.
	n1 := c.node(1)
	if _, err := n1.CreateTopic(ctx(t), "quorum-hw", 1, 3, nil, nil); err != nil {
		t.Fatal(err)
	}
	q, err := n1.DescribeQuorum(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if q.HighWatermark <= hw {
		t.Fatalf("high watermark %d after a write, was %d", q.HighWatermark, hw)
	}
}
