package broker

import (
	"testing"
	"time"

	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsets_AnswersTheEpochOfTheLeadershipChecked: a broker whose
// Leader serves epoch 3 while p.epoch already holds 4 (its successor's: a
// leader becoming a follower clears p.leader, then stores the new epoch,
// and a ListOffsets can check the one before and read the other after)
// answers with epoch 3, the epoch it leads in, never with its successor's;
// once p.leader is cleared it answers NOT_LEADER_OR_FOLLOWER. (Answering 4
// claimed leadership in an epoch another broker led: two leaders in one
// epoch, which TestClusterJepsenScale's checker flags.)
func TestListOffsets_AnswersTheEpochOfTheLeadershipChecked(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &partition{log: l}
	p.leader.Store(replication.NewLeader(1, l, replication.State{LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, time.Now()))
	p.epoch.Store(4)
	b := &Broker{cluster: &clusterState{}}

	epoch, code := b.servedEpoch(p)
	if code != 0 || epoch != 3 {
		t.Fatalf("servedEpoch = %d, %v; want 3, no error", epoch, kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	sp := kmsg.NewListOffsetsResponseTopicPartition()
	b.listOffset(req, p, epoch, -1, &sp)
	if sp.ErrorCode != 0 || sp.LeaderEpoch != 3 || sp.Offset != 0 {
		t.Fatalf("ListOffsets latest: error %v, leaderEpoch %d, offset %d; want leaderEpoch 3, offset 0", kerr.ErrorForCode(sp.ErrorCode), sp.LeaderEpoch, sp.Offset)
	}

	p.leader.Store(nil)
	if _, code := b.servedEpoch(p); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("servedEpoch of a follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	if _, code := (&Broker{}).servedEpoch(p); code != 0 {
		t.Fatalf("servedEpoch on a single node: %v, want no error", kerr.ErrorForCode(code))
	}
}
