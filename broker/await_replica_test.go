package broker

import (
	"context"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAwaitReplicaLeadershipLostThenRefilled: a batch appended as leader
// whose offsets, after leadership moved, hold the next leader's records
// (this broker truncated its log as a follower and fetched them) is not
// committed, though the high watermark has passed its offsets: the wait
// answers NOT_LEADER_OR_FOLLOWER, not success. (The coordinators' appends
// to __consumer_offsets and __transaction_state wait this way too.)
func TestAwaitReplicaLeadershipLostThenRefilled(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &partition{log: l}
	ldr := replication.NewLeader(1, l, replication.State{LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, time.Now())
	p.leader.Store(ldr)
	batch := func(v string) []byte {
		return buildBatch([]coordinator.LogRecord{{Key: []byte("k"), Value: []byte(v)}}, 1)
	}
	res, err := l.Append(batch("mine"), storage.AppendOptions{LeaderEpoch: 1, LogAppendTime: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := replicaWait{p: p, ldr: ldr, target: res.LastOffset + 1, minISR: 1}

	// Leadership moves to broker 2 in epoch 2: this broker follows,
	// truncates and takes broker 2's record at the same offset, and the
	// high watermark passes it.
	p.leader.Store(nil)
	if err := l.TruncateTo(res.BaseOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch("theirs"), storage.AppendOptions{LeaderEpoch: 2, LogAppendTime: -1}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if l.HighWatermark() < w.target {
		t.Fatalf("high watermark %d below %d", l.HighWatermark(), w.target)
	}
	b := &Broker{}
	if code := b.awaitReplica(context.Background(), w, time.Now().Add(5*time.Second)); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("awaitReplica = %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}
