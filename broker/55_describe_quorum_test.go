package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeQuorum(t *testing.T, addr, topic string, version int16) *kmsg.DescribeQuorumResponse {
	t.Helper()
	c := dialRaw(t, addr)
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = version
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	c.send(1, req)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	c.recv(1, resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum to %s answered %+v", addr, resp)
	}
	return resp
}

// TestDescribeQuorum_SingleNode: a single node is the leader and only
// voter of its quorum in epoch 1, its high watermark the records a KRaft
// log would need for its topics, and it lists its listeners as the
// voter's endpoints.
func TestDescribeQuorum_SingleNode(t *testing.T) {
	b, addr := startBroker(t, t.TempDir(), nil)
	if err := b.CreateTopic("q", 3, nil); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	resp := describeQuorum(t, addr, "__cluster_metadata", 2)
	p := resp.Topics[0].Partitions[0]
	if resp.ErrorCode != 0 || p.ErrorCode != 0 || p.LeaderID != b.nodeID || p.LeaderEpoch != 1 || p.HighWatermark != 5 {
		t.Fatalf("answered %+v", p)
	}
	if len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
		t.Fatalf("voters %+v observers %+v", p.CurrentVoters, p.Observers)
	}
	if v := p.CurrentVoters[0]; v.ReplicaID != b.nodeID || v.LogEndOffset != 5 || v.LastFetchTimestamp < before || v.LastCaughtUpTimestamp < before || v.ReplicaDirectoryID != [16]byte{} {
		t.Fatalf("voter %+v", v)
	}
	if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != b.nodeID || len(resp.Nodes[0].Listeners) == 0 {
		t.Fatalf("nodes %+v", resp.Nodes)
	}
	p = describeQuorum(t, addr, "other", 2).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("another topic: %+v", p)
	}
	if p := describeQuorum(t, addr, "__cluster_metadata", 0).Topics[0].Partitions[0]; p.HighWatermark != 5 || len(p.CurrentVoters) != 1 {
		t.Fatalf("v0: %+v", p)
	}
}

// TestDescribeQuorum_Cluster: every broker of a three-node cluster names
// the same raft leader, epoch and voters with their CONTROLLER endpoints;
// one that is not the leader forwards to the leader's broker, so its
// answer has the leader's view: the leader's own log end offset and
// timestamps known.
func TestDescribeQuorum_Cluster(t *testing.T) {
	brokers, addrs, _ := startRackCluster(t, [3]map[string]string{})
	var leader int32 = -1
	for i, addr := range addrs {
		var resp *kmsg.DescribeQuorumResponse
		waitFor(t, 15*time.Second, "a raft leader", func() bool {
			resp = describeQuorum(t, addr, "__cluster_metadata", 2)
			return resp.Topics[0].Partitions[0].LeaderID >= 0
		})
		p := resp.Topics[0].Partitions[0]
		if leader != -1 && p.LeaderID != leader {
			t.Fatalf("broker %d: leader %d, another said %d", brokers[i].nodeID, p.LeaderID, leader)
		}
		leader = p.LeaderID
		if p.ErrorCode != 0 || p.LeaderEpoch < 1 || p.HighWatermark < 1 {
			t.Fatalf("broker %d: %+v", brokers[i].nodeID, p)
		}
		var ids []int32
		for _, v := range p.CurrentVoters {
			ids = append(ids, v.ReplicaID)
			if v.ReplicaID == p.LeaderID && (v.LogEndOffset < 1 || v.LastFetchTimestamp < 0 || v.LastCaughtUpTimestamp < 0) {
				t.Errorf("broker %d: leader's state %+v", brokers[i].nodeID, v)
			}
		}
		if !slices.Equal(ids, []int32{1, 2, 3}) || len(p.Observers) != 0 {
			t.Fatalf("broker %d: voters %v observers %+v", brokers[i].nodeID, ids, p.Observers)
		}
		if len(resp.Nodes) != 3 {
			t.Fatalf("broker %d: nodes %+v", brokers[i].nodeID, resp.Nodes)
		}
		for _, n := range resp.Nodes {
			if len(n.Listeners) != 1 || n.Listeners[0].Name != "CONTROLLER" || n.Listeners[0].Port == 0 {
				t.Fatalf("broker %d: node %+v", brokers[i].nodeID, n)
			}
		}
	}
}
