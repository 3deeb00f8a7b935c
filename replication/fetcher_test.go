package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchLog is a FollowerLog that accepts only batches starting at its log
// end offset, as storage.Log.AppendAsFollower does.
type batchLog struct {
	start, leo, hw int64
	restarts       []int64
}

func (l *batchLog) LogStartOffset() int64                        { return l.start }
func (l *batchLog) LogEndOffset() int64                          { return l.leo }
func (l *batchLog) HighWatermark() int64                         { return l.hw }
func (l *batchLog) LatestLeaderEpoch() int32                     { return 0 }
func (l *batchLog) EndOffsetForLeaderEpoch(int32) (int32, int64) { return -1, -1 }
func (l *batchLog) TruncateTo(o int64) error                     { l.leo = min(l.leo, o); return nil }
func (l *batchLog) SetHighWatermark(hw int64) error              { l.hw = hw; return nil }
func (l *batchLog) MaybeIncrementLogStartOffset(int64) error     { return nil }
func (l *batchLog) TruncateFullyAndStartAt(o int64) error {
	l.start, l.leo, l.hw = o, o, o
	l.restarts = append(l.restarts, o)
	return nil
}

func (l *batchLog) AppendAsFollower(b []byte) error {
	first, last, ok := firstBatchOffsets(b)
	if !ok {
		return errors.New("short batch")
	}
	if first != l.leo {
		return fmt.Errorf("%w: first batch at offset %d, log end offset is %d", ErrOffsetMismatch, first, l.leo)
	}
	l.leo = last + 1
	return nil
}

// batch is a record batch header (and nothing more) for offsets first..last.
func batch(first, last int64) []byte {
	b := make([]byte, 61)
	binary.BigEndian.PutUint64(b[0:8], uint64(first))
	binary.BigEndian.PutUint32(b[23:27], uint32(last-first))
	return b
}

// A follower restarted at the leader's log start offset 944, which
// DeleteRecords put inside the batch 939-946 (Kafka Streams deletes its
// repartition topics' records after each commit), restarts its log at 939
// and takes the batch, as Kafka's follower does; found by
// StreamsClusterTest, where such a follower truncated and refetched the
// same batch forever, so never rejoined the ISR, and the next broker kill
// left the partition below min.insync.replicas. A batch out of place in a
// log that is not empty, or one wholly before the log end offset, is still
// refused.
func TestAppendAsFollower_RestartsAtBatchHoldingLogStart(t *testing.T) {
	l := &batchLog{start: 944, leo: 944, hw: 944}
	at, err := appendAsFollower(l, batch(939, 946))
	if err != nil || at != 939 || l.start != 939 || l.leo != 947 {
		t.Fatalf("appendAsFollower = %d, %v; log start %d, end %d", at, err, l.start, l.leo)
	}
	if at, err := appendAsFollower(l, batch(947, 950)); err != nil || at != -1 || l.leo != 951 {
		t.Fatalf("next batch: %d, %v; log end %d", at, err, l.leo)
	}
	for _, c := range []struct {
		name        string
		log         *batchLog
		first, last int64
	}{
		{"log not empty", &batchLog{start: 900, leo: 944}, 939, 946},
		{"batch before the log end", &batchLog{start: 944, leo: 944}, 930, 943},
		{"batch after the log end", &batchLog{start: 944, leo: 944}, 950, 960},
	} {
		at, err := appendAsFollower(c.log, batch(c.first, c.last))
		if !errors.Is(err, ErrOffsetMismatch) || at != -1 || len(c.log.restarts) != 0 {
			t.Errorf("%s: appendAsFollower = %d, %v; restarts %v", c.name, at, err, c.log.restarts)
		}
	}
}

// tps lists the partitions of a snapshot's list.
func tps(parts []fpart) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, p.tp.Partition)
	}
	slices.Sort(out)
	return out
}

// A Fetcher in a fetch session looks only at the partitions that changed:
// a full request lists every fetchable partition; then a pass lists only
// those appended to, added, removed, fenced or backing off, the last
// three to forget, and a partition whose backoff ends comes back.
func TestFetcher_SnapshotListsOnlyWhatChanged(t *testing.T) {
	f := &Fetcher{cfg: FetcherConfig{Backoff: time.Second}, parts: map[TP]*fpart{}, changed: map[TP]struct{}{}, retrying: map[TP]struct{}{}}
	f.cfg.defaults()
	for i := range int32(1000) {
		tp := TP{"t", i}
		f.parts[tp] = &fpart{tp: tp, log: &batchLog{}, leaderEpoch: 1}
		f.changed[tp] = struct{}{}
	}
	now := time.Now() // partitionErrorLocked's backoff starts at time.Now()
	trunc, fetch, forget, _ := f.snapshot(now, true)
	if len(trunc) != 0 || len(fetch) != 1000 || len(forget) != 0 {
		t.Fatalf("full: %d to truncate, %d to fetch, %d to forget; want 0, 1000, 0", len(trunc), len(fetch), len(forget))
	}
	if trunc, fetch, forget, _ = f.snapshot(now, false); len(trunc)+len(fetch)+len(forget) != 0 {
		t.Fatalf("idle pass lists %v %v %v", tps(trunc), tps(fetch), forget)
	}
	f.mu.Lock()
	f.applyLocked(f.parts[TP{"t", 7}], &kmsg.FetchResponseTopicPartition{RecordBatches: batch(0, 4), HighWatermark: 5})
	f.applyLocked(f.parts[TP{"t", 8}], &kmsg.FetchResponseTopicPartition{HighWatermark: 0}) // nothing new
	f.partitionErrorLocked(f.parts[TP{"t", 9}], kerr.NotLeaderForPartition.Code)
	f.partitionErrorLocked(f.parts[TP{"t", 10}], kerr.FencedLeaderEpoch.Code)
	f.mu.Unlock()
	f.Remove(TP{"t", 11})
	f.Add(TP{"t", 12}, [16]byte{}, &batchLog{}, 2)
	trunc, fetch, forget, next := f.snapshot(now, false)
	slices.SortFunc(forget, func(a, b TP) int { return int(a.Partition - b.Partition) })
	if !slices.Equal(tps(fetch), []int32{7}) || !slices.Equal(tps(trunc), []int32{12}) ||
		!slices.Equal(forget, []TP{{"t", 9}, {"t", 10}, {"t", 11}, {"t", 12}}) || next <= 0 || next > time.Second {
		t.Fatalf("after changes: fetch %v, truncate %v, forget %v, next %v", tps(fetch), tps(trunc), forget, next)
	}
	// 12 stays listed until truncated; 9 comes back after its backoff.
	f.mu.Lock()
	f.parts[TP{"t", 12}].truncate = false
	f.mu.Unlock()
	trunc, fetch, _, _ = f.snapshot(now.Add(time.Second), false)
	if len(trunc) != 0 || !slices.Equal(tps(fetch), []int32{9, 12}) {
		t.Fatalf("after the backoff and the truncation: fetch %v, truncate %v", tps(fetch), tps(trunc))
	}
}
