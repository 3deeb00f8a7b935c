package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
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
