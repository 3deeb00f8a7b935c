package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offsets in __consumer_offsets, Kafka's way (KIP-98):
// TxnOffsetCommit appends the offsets as a transactional batch of the
// producer, the transaction's end appends a COMMIT or ABORT marker, and a
// coordinator loading the partition replays both, so a transaction whose
// group coordinator moves between TxnOffsetCommit and its end keeps its
// offsets.

// txnCommitOffset sends a TxnOffsetCommit of one partition for producer
// pid/epoch and returns its error code.
func txnCommitOffset(c *Coordinator, group string, pid int64, epoch int16, topic string, partition int32, offset int64) int16 {
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.Version = 3
	oc.TransactionalID, oc.ProducerID, oc.ProducerEpoch, oc.Group, oc.Generation = "tx", pid, epoch, group, -1
	oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}
	return c.TxnOffsetCommit(oc).Topics[0].Partitions[0].ErrorCode
}

// stableFetchCode answers an OffsetFetch with require_stable for one
// partition: its error code and offset.
func stableFetchCode(t *testing.T, c *Coordinator, group, topic string, partition int32) (int16, int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, group, true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	r := c.OffsetFetch(req)
	if r.ErrorCode != 0 {
		t.Fatalf("OffsetFetch %s: %v", group, kerr.ErrorForCode(r.ErrorCode))
	}
	rp := r.Topics[0].Partitions[0]
	return rp.ErrorCode, rp.Offset
}

// records returns the records of partition p.
func (l *memLog) records(p int32) []LogRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LogRecord(nil), l.parts[p]...)
}

// failover plays the group coordinator moving: a coordinator of another
// broker (fresh groups.db) loads the partition from the same log.
func failover(t *testing.T, old *Coordinator, log GroupLog, p int32) *Coordinator {
	t.Helper()
	old.UnloadPartition(p)
	return openLoadedPartition(t, log, p)
}

// openLoaded opens a replicated coordinator on log (a fresh groups.db)
// and loads group g's __consumer_offsets partition, which it returns.
func openLoaded(t *testing.T, log GroupLog, g string) (*Coordinator, int32) {
	t.Helper()
	p := PartitionFor(g, 50)
	return openLoadedPartition(t, log, p), p
}

// openLoadedPartition opens a replicated coordinator on log (a fresh
// groups.db) and loads partition p.
func openLoadedPartition(t *testing.T, log GroupLog, p int32) *Coordinator {
	t.Helper()
	c := openReplicated(t, t.TempDir(), log)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTxnOffsetsAreTransactionalRecords(t *testing.T) {
	log := newMemLog()
	g := "g-txn-records"
	c, p := openLoaded(t, log, g)
	if code := txnCommitOffset(c, g, 7, 3, "t", 0, 50); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	recs := log.records(p)
	if len(recs) != 1 {
		t.Fatalf("%d records after TxnOffsetCommit, want 1", len(recs))
	}
	r := recs[0]
	var k kmsg.OffsetCommitKey
	var v kmsg.OffsetCommitValue
	if !r.Transactional || r.Control || r.ProducerID != 7 || r.ProducerEpoch != 3 || k.ReadFrom(r.Key) != nil || v.ReadFrom(r.Value) != nil {
		t.Fatalf("record %+v", r)
	}
	if k.Group != g || k.Topic != "t" || k.Partition != 0 || v.Offset != 50 {
		t.Fatalf("record key %+v value %+v", k, v)
	}
	if err := c.CompleteTxnOffsetsIn(p, 7, true); err != nil {
		t.Fatal(err)
	}
	recs = log.records(p)
	if len(recs) != 2 || !recs[1].Control || !recs[1].Commit || recs[1].ProducerID != 7 || recs[1].ProducerEpoch != 3 {
		t.Fatalf("records after the commit %+v, want the txn record and a COMMIT marker", recs)
	}
	if got := fetchOffset(t, c, g, "t", 0); got != 50 {
		t.Fatalf("OffsetFetch = %d, want 50", got)
	}
}

func TestTxnOffsetsFailoverThenCommit(t *testing.T) {
	log := newMemLog()
	g := "g-txn-failover-commit"
	c, p := openLoaded(t, log, g)
	if code := simpleCommit(t, c, g, "t", map[int32]int64{0: 10}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := txnCommitOffset(c, g, 7, 0, "t", 0, 50); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	c2 := failover(t, c, log, p)
	if pend := c2.PendingTxnOffsets(g); pend[7]["t"][0] != 50 {
		t.Fatalf("pending after failover %v, want producer 7 t-0 at 50", pend)
	}
	if code, _ := stableFetchCode(t, c2, g, "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable fetch of an open transaction: %v", kerr.ErrorForCode(code))
	}
	if got := fetchOffset(t, c2, g, "t", 0); got != 10 {
		t.Fatalf("OffsetFetch before the commit = %d, want 10", got)
	}
	if err := c2.CompleteTxnOffsetsIn(p, 7, true); err != nil {
		t.Fatal(err)
	}
	if got := fetchOffset(t, c2, g, "t", 0); got != 50 {
		t.Fatalf("OffsetFetch after the commit = %d, want 50", got)
	}
	if code, off := stableFetchCode(t, c2, g, "t", 0); code != 0 || off != 50 {
		t.Fatalf("require_stable fetch after the commit: %v %d", kerr.ErrorForCode(code), off)
	}
	// A third coordinator replays the marker.
	c3 := failover(t, c2, log, p)
	if got := fetchOffset(t, c3, g, "t", 0); got != 50 {
		t.Fatalf("OffsetFetch after a reload = %d, want 50", got)
	}
	if pend := c3.PendingTxnOffsets(g); pend != nil {
		t.Fatalf("pending after the marker was replayed: %v", pend)
	}
}

func TestTxnOffsetsFailoverThenAbort(t *testing.T) {
	log := newMemLog()
	g := "g-txn-failover-abort"
	c, p := openLoaded(t, log, g)
	if code := simpleCommit(t, c, g, "t", map[int32]int64{0: 10}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := txnCommitOffset(c, g, 7, 0, "t", 0, 50); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	c2 := failover(t, c, log, p)
	if err := c2.CompleteTxnOffsetsIn(p, 7, false); err != nil {
		t.Fatal(err)
	}
	if code, off := stableFetchCode(t, c2, g, "t", 0); code != 0 || off != 10 {
		t.Fatalf("require_stable fetch after the abort: %v %d, want 10", kerr.ErrorForCode(code), off)
	}
	c3 := failover(t, c2, log, p)
	if code, off := stableFetchCode(t, c3, g, "t", 0); code != 0 || off != 10 {
		t.Fatalf("require_stable fetch after a reload: %v %d, want 10", kerr.ErrorForCode(code), off)
	}
}

// TestTxnOffsetsReplayedMarkerAndSupersede: a load that meets the marker
// in the log applies the transaction's offsets, except where a plain
// commit appended after them is newer.
func TestTxnOffsetsReplayedMarkerAndSupersede(t *testing.T) {
	log := newMemLog()
	g := "g-txn-replay"
	c, p := openLoaded(t, log, g)
	if code := txnCommitOffset(c, g, 7, 0, "t", 0, 50); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := txnCommitOffset(c, g, 7, 0, "t", 1, 51); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := simpleCommit(t, c, g, "t", map[int32]int64{1: 60}); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if err := c.CompleteTxnOffsetsIn(p, 7, true); err != nil {
		t.Fatal(err)
	}
	check := func(cc *Coordinator) {
		t.Helper()
		if got := fetchOffset(t, cc, g, "t", 0); got != 50 {
			t.Fatalf("t-0 = %d, want 50", got)
		}
		if got := fetchOffset(t, cc, g, "t", 1); got != 60 {
			t.Fatalf("t-1 = %d, want 60 (the later plain commit)", got)
		}
	}
	check(c)
	check(failover(t, c, log, p))
}

// TestTxnOffsetsSingleNodeRestart: a single node's coordinator restarted
// over the same groups.db and log keeps an open transaction's offsets
// pending and completes them with the marker.
func TestTxnOffsetsSingleNodeRestart(t *testing.T) {
	log := newMemLog()
	dir := t.TempDir()
	c, err := Open(Config{Dir: dir, Log: log, LogPartitions: 50})
	if err != nil {
		t.Fatal(err)
	}
	g := "g-txn-single"
	p := PartitionFor(g, 50)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if code := txnCommitOffset(c, g, 7, 0, "t", 0, 50); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := txnCommitOffset(c, g, 8, 0, "t", 1, 70); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if err := c.CompleteTxnOffsets(g, 8, false); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = openLogged(t, dir, log)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if pend := c.PendingTxnOffsets(g); len(pend) != 1 || pend[7]["t"][0] != 50 {
		t.Fatalf("pending after restart %v, want only producer 7", pend)
	}
	if err := c.CompleteTxnOffsets(g, 7, true); err != nil {
		t.Fatal(err)
	}
	if got := fetchOffset(t, c, g, "t", 0); got != 50 {
		t.Fatalf("t-0 = %d, want 50", got)
	}
	if got := fetchOffset(t, c, g, "t", 1); got != -1 {
		t.Fatalf("t-1 = %d, want -1 (aborted)", got)
	}
}
