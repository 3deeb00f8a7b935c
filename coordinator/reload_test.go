package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A replicated __consumer_offsets or __transaction_state partition can lose
// its uncommitted tail when leadership moves: the old leader becomes a
// follower, truncates its log to the new leader's and then holds the new
// leader's records at the same offsets. These tests play that with a fake
// log and check that a coordinator loading the partition again serves the
// log's state, not what it had appended or applied before.

// truncate cuts partition p of l to n records, as a follower does.
func (l *memLog) truncate(p int32, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[p] = l.parts[p][:n]
}

func (l *memLog) length(p int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parts[p])
}

// openReplicated opens a group coordinator on log as a broker of a cluster
// does.
func openReplicated(t *testing.T, dir string, log GroupLog) *Coordinator {
	t.Helper()
	c, err := Open(Config{Dir: dir, Log: log, LogPartitions: 50, LogReplicated: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fetchOffset answers OffsetFetch for one partition: its offset, or -1.
func fetchOffset(t *testing.T, c *Coordinator, group, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 5, group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	r := c.OffsetFetch(req)
	if r.ErrorCode != 0 {
		t.Fatalf("OffsetFetch %s: %v", group, kerr.ErrorForCode(r.ErrorCode))
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetFetch %s: %+v", group, r.Topics)
	}
	rp := r.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("OffsetFetch %s %s-%d: %v", group, topic, partition, kerr.ErrorForCode(rp.ErrorCode))
	}
	return rp.Offset
}

// otherLeaderCommit appends, as another leader's coordinator, an offset
// commit of group's topic-partition.
func otherLeaderCommit(log *heldLog, group, topic string, partition int32, offset int64) {
	p := PartitionFor(group, 50)
	log.memLog.Append(p, []LogRecord{offsetCommitRecord(group, topic, partition, &offsetEntry{offset: offset, leaderEpoch: -1})})
}

// TestGroupLogReloadAfterFailedCommit: an offset commit whose append fails
// (NOT_LEADER: leadership moved) must not advance the partition's
// checkpoint past the records the new leader writes at the same offsets.
func TestGroupLogReloadAfterFailedCommit(t *testing.T) {
	log := newHeldLog()
	g := "g-failed-commit"
	c, p := openLoaded(t, log, g)
	if code := simpleCommit(t, c, g, "t", map[int32]int64{0: 3179}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	kept := log.length(p)

	// The next commit is appended, then leadership moves before the ISR
	// has it.
	log.holdNext(p)
	res := make(chan int16, 1)
	go func() { res <- simpleCommit(t, c, g, "t", map[int32]int64{0: 3180}) }()
	<-log.held
	log.release(p, kerr.NotLeaderForPartition)
	if code := <-res; code != kerr.NotCoordinator.Code {
		t.Fatalf("commit that lost leadership: %v", kerr.ErrorForCode(code))
	}
	c.UnloadPartition(p)

	// As a follower this broker's log is truncated to the new leader's,
	// which holds its own commits at those offsets.
	log.truncate(p, kept)
	otherLeaderCommit(log, g, "t", 0, 3186)

	// Leadership comes back.
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if got := fetchOffset(t, c, g, "t", 0); got != 3186 {
		t.Fatalf("OffsetFetch after reload = %d, want 3186 (the new leader's commit)", got)
	}
}

// TestGroupLogReloadAfterFailedTxnOffsets: the offsets a transaction
// commits are applied to groups.db before their records commit; if those
// records are truncated, the records the new leader wrote at the same
// offsets must still be applied on reload.
func TestGroupLogReloadAfterFailedTxnOffsets(t *testing.T) {
	log := newHeldLog()
	g := "g-failed-txn"
	c, p := openLoaded(t, log, g)
	if code := simpleCommit(t, c, g, "t", map[int32]int64{0: 10}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	kept := log.length(p)

	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.Version = 3
	oc.TransactionalID, oc.ProducerID, oc.ProducerEpoch, oc.Group, oc.Generation = "tx", 7, 0, g, -1
	oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 50, LeaderEpoch: -1}}}}
	if code := c.TxnOffsetCommit(oc).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	log.holdNext(p)
	res := make(chan error, 1)
	go func() { res <- c.CompleteTxnOffsets(g, 7, true) }()
	<-log.held
	log.release(p, kerr.NotLeaderForPartition)
	if err := <-res; err == nil {
		t.Fatal("CompleteTxnOffsets succeeded although its record was not committed")
	}
	c.UnloadPartition(p)

	log.truncate(p, kept)
	otherLeaderCommit(log, g, "t", 0, 30)

	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if got := fetchOffset(t, c, g, "t", 0); got != 30 {
		t.Fatalf("OffsetFetch after reload = %d, want 30 (the new leader's commit)", got)
	}
}

// TestGroupLogReloadAfterFailedTombstone: an OffsetDelete's tombstone is
// applied to groups.db at once; if it is truncated, the offset it deleted
// is still committed and must come back on reload.
func TestGroupLogReloadAfterFailedTombstone(t *testing.T) {
	log := newHeldLog()
	g := "g-failed-tombstone"
	c, p := openLoaded(t, log, g)
	if code := simpleCommit(t, c, g, "t", map[int32]int64{0: 10, 1: 11}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	kept := log.length(p)

	log.holdNext(p)
	res := make(chan int16, 1)
	go func() {
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = g
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic = "t"
		ot.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		od.Topics = append(od.Topics, ot)
		res <- c.OffsetDelete(od).ErrorCode
	}()
	<-log.held
	log.release(p, kerr.NotLeaderForPartition)
	if code := <-res; code != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetDelete that lost leadership: %v", kerr.ErrorForCode(code))
	}
	c.UnloadPartition(p)

	log.truncate(p, kept)
	otherLeaderCommit(log, g, "t", 1, 12)

	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if got := fetchOffset(t, c, g, "t", 0); got != 10 {
		t.Fatalf("OffsetFetch t-0 after reload = %d, want 10 (the tombstone was truncated)", got)
	}
	if got := fetchOffset(t, c, g, "t", 1); got != 12 {
		t.Fatalf("OffsetFetch t-1 after reload = %d, want 12 (the new leader's commit)", got)
	}
}

// TestGroupLogReloadSingleNodeReplaysTail: without replication (a single
// node) a reload keeps replaying from the checkpoint.
func TestGroupLogReloadSingleNodeReplaysTail(t *testing.T) {
	log := newMemLog()
	c := openLogged(t, t.TempDir(), log)
	g := "g-single"
	p := PartitionFor(g, 50)
	c.LoadPartition(p)
	for i := int64(1); i <= 3; i++ {
		if code := simpleCommit(t, c, g, "t", map[int32]int64{0: i}); code != 0 {
			t.Fatal(code)
		}
	}
	c.UnloadPartition(p)
	log.replays = nil
	c.LoadPartition(p)
	if len(log.replays) != 1 || log.replays[0] != 3 {
		t.Fatalf("replays from %v, want [3]", log.replays)
	}
	if got := fetchOffset(t, c, g, "t", 0); got != 3 {
		t.Fatalf("OffsetFetch = %d, want 3", got)
	}
}

// TestTxnLogReloadAfterTruncation: a transition answered as committed can
// still be truncated (an unclean election); a coordinator of a replicated
// log that loads the partition again serves the log's state.
func TestTxnLogReloadAfterTruncation(t *testing.T) {
	log := newHeldLog()
	cfg := testTxnConfig(t.TempDir())
	cfg.LogReplicated = true
	c := openTxnLogged(t, cfg, log)
	id := "tx-truncated"
	p := PartitionFor(id, 50)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	pid, epoch := initTxn(t, c, id)
	kept := log.length(p)
	m, ok := c.stateOf(id)
	if !ok || m.state != txnEmpty {
		t.Fatalf("after InitProducerId: %v %v", m.state, ok)
	}
	if code := addTxnPartition(c, id, pid, epoch, "t", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	c.UnloadPartition(p)

	// The new leader's log lacks the Ongoing record; its coordinator
	// bumped the epoch instead (a new InitProducerId).
	log.truncate(p, kept)
	m.epoch = epoch + 1
	log.memLog.Append(p, []LogRecord{txnLogRecord(id, &m)})

	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	got, _ := c.stateOf(id)
	if got.state != txnEmpty || got.epoch != epoch+1 || len(got.partitions) != 0 {
		t.Fatalf("after reload: %v epoch %d partitions %v, want Empty epoch %d", got.state, got.epoch, got.partitions, epoch+1)
	}
	// The producer of the truncated epoch is fenced.
	if code := addTxnPartition(c, id, pid, epoch, "t", 1); code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch after reload: %v", kerr.ErrorForCode(code))
	}
}
