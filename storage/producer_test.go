package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// pbatch is an idempotent batch of n records from producer id/epoch at seq.
func pbatch(id int64, epoch int16, seq int32, n int) []byte {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{value: []byte{byte(seq), byte(i)}, ts: 100 + int64(seq)}
	}
	return makeBatch(batchOpts{producerID: pid(id), epoch: epoch, seq: seq}, recs...)
}

func appendP(t *testing.T, l *Log, b []byte) (AppendResult, error) {
	t.Helper()
	return l.Append(b, AppendOptions{LogAppendTime: -1})
}

func TestProducer_DuplicateReturnsOriginalOffsets(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	mustAppend(t, l, simpleBatch(2, 1, 1)) // offsets 0-1, not idempotent
	var firsts []AppendResult
	for seq := int32(0); seq < 15; seq += 3 {
		firsts = append(firsts, mustAppend(t, l, pbatch(1, 0, seq, 3)))
	}
	leo, size := l.LogEndOffset(), l.Size()
	for i, seq := 0, int32(0); seq < 15; i, seq = i+1, seq+3 {
		res, err := appendP(t, l, pbatch(1, 0, seq, 3))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Duplicate || res.BaseOffset != firsts[i].BaseOffset || res.LastOffset != firsts[i].LastOffset || res.LogAppendTime != 100+int64(seq) {
			t.Fatalf("retry of seq %d: %+v, want offsets of %+v and log append time %d (its max timestamp)", seq, res, firsts[i], 100+seq)
		}
	}
	if l.LogEndOffset() != leo || l.Size() != size {
		t.Fatal("a duplicate was appended")
	}
	// A batch stamped with LogAppendTime: its retry answers that stamp.
	if r, err := l.Append(pbatch(2, 0, 0, 1), AppendOptions{LogAppendTime: 5000}); err != nil || r.Duplicate || r.LogAppendTime != 5000 {
		t.Fatalf("first append: %+v %v", r, err)
	}
	if r, err := l.Append(pbatch(2, 0, 0, 1), AppendOptions{LogAppendTime: 6000}); err != nil || !r.Duplicate || r.LogAppendTime != 5000 {
		t.Fatalf("retry of a LogAppendTime batch: %+v %v, want log append time 5000", r, err)
	}
	// Only the last five batches are remembered: a sixth pushes out seq 0.
	mustAppend(t, l, pbatch(1, 0, 15, 3))
	if _, err := appendP(t, l, pbatch(1, 0, 0, 3)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry of a forgotten batch: %v", err)
	}
}

func TestProducer_OutOfOrderSequence(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	mustAppend(t, l, pbatch(1, 0, 0, 2))
	for _, seq := range []int32{3, 1, 5} {
		if _, err := appendP(t, l, pbatch(1, 0, seq, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("seq %d: %v", seq, err)
		}
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("leo %d", l.LogEndOffset())
	}
	mustAppend(t, l, pbatch(1, 0, 2, 1))
	// Another producer is independent.
	mustAppend(t, l, pbatch(2, 0, 77, 1))
}

func TestProducer_SequenceWraps(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	mustAppend(t, l, pbatch(1, 0, math.MaxInt32-1, 3)) // MaxInt32-1, MaxInt32, 0
	if _, err := appendP(t, l, pbatch(1, 0, 2, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after wrap: %v", err)
	}
	mustAppend(t, l, pbatch(1, 0, 1, 1))
	if st := l.ProducerStates(); len(st) != 1 || st[0].LastSequence != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestProducer_FencedEpoch(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	mustAppend(t, l, pbatch(1, 5, 0, 1))
	if _, err := appendP(t, l, pbatch(1, 4, 1, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
}

func TestProducer_EpochBumpRequiresSequenceZero(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	mustAppend(t, l, pbatch(1, 0, 0, 5))
	if _, err := appendP(t, l, pbatch(1, 1, 5, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("bump with seq 5: %v", err)
	}
	mustAppend(t, l, pbatch(1, 1, 0, 1))
	// The old epoch's batches are forgotten and the old epoch is fenced.
	if _, err := appendP(t, l, pbatch(1, 0, 0, 5)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch after bump: %v", err)
	}
	want := []ProducerState{{ProducerID: pid(1), Epoch: 1, LastSequence: 0, LastTimestamp: 100, LastOffset: 5, TxnStartOffset: -1, CoordinatorEpoch: -1}}
	if got := l.ProducerStates(); !slices.Equal(got, want) {
		t.Fatalf("%+v", got)
	}
}

func TestProducer_UnknownProducerStartsAnywhere(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	// A producer the log has never seen may start at any sequence and
	// epoch; from then on it is held to them.
	first := mustAppend(t, l, pbatch(1, 3, 42, 1))
	second := mustAppend(t, l, pbatch(1, 3, 43, 1))
	if first.BaseOffset != 0 || first.LastOffset != 0 || first.Duplicate ||
		second.BaseOffset != 1 || second.LastOffset != 1 || second.Duplicate {
		t.Fatalf("appends at seq 42 and 43: %+v %+v, want offsets 0 and 1", first, second)
	}
	want := []ProducerState{{ProducerID: pid(1), Epoch: 3, LastSequence: 43, LastTimestamp: 143, LastOffset: 1, TxnStartOffset: -1, CoordinatorEpoch: -1}}
	if got := l.ProducerStates(); !slices.Equal(got, want) {
		t.Fatalf("producer states %+v, want %+v", got, want)
	}
	if r, err := appendP(t, l, pbatch(1, 3, 42, 1)); err != nil || !r.Duplicate || r.BaseOffset != 0 {
		t.Fatalf("retry of seq 42: %+v %v, want the duplicate at offset 0", r, err)
	}
	if _, err := appendP(t, l, pbatch(1, 3, 45, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("seq 45 after 43: %v, want ErrOutOfOrderSequence", err)
	}
	if _, err := appendP(t, l, pbatch(1, 2, 44, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("epoch 2 after 3: %v, want ErrInvalidProducerEpoch", err)
	}
	if leo := l.LogEndOffset(); leo != 2 {
		t.Fatalf("log end offset %d after the refused appends, want 2", leo)
	}
}

func TestProducer_RejectsMissingSequence(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	if _, err := appendP(t, l, pbatch(1, 0, -1, 1)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("%v", err)
	}
}

// producerLog appends idempotent batches across several segments and
// returns the log and the results.
func producerLog(t *testing.T, dir string) (*Log, map[int64][]AppendResult) {
	l := openLog(t, dir, smallSegments())
	res := map[int64][]AppendResult{}
	for i := int32(0); i < 30; i++ {
		for id := int64(1); id <= 3; id++ {
			res[id] = append(res[id], mustAppend(t, l, pbatch(id, 2, i*2, 2)))
		}
	}
	if len(l.segments()) < 3 {
		t.Fatalf("only %d segments", len(l.segments()))
	}
	return l, res
}

func checkProducersAfterReopen(t *testing.T, l *Log, res map[int64][]AppendResult) {
	t.Helper()
	for id := int64(1); id <= 3; id++ {
		// The last five batches are still recognised as retries...
		for i := int32(25); i < 30; i++ {
			r, err := appendP(t, l, pbatch(id, 2, i*2, 2))
			if err != nil || !r.Duplicate || r.BaseOffset != res[id][i].BaseOffset {
				t.Fatalf("producer %d seq %d after reopen: %+v %v", id, i*2, r, err)
			}
		}
		// ...gaps are still caught, and the sequence continues.
		if _, err := appendP(t, l, pbatch(id, 2, 61, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("producer %d gap after reopen: %v", id, err)
		}
		mustAppend(t, l, pbatch(id, 2, 60, 1))
	}
}

func TestProducer_StateSurvivesCleanReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l, res := producerLog(t, dir)
	before := l.ProducerStates()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallSegments())
	defer l.Close()
	if got := l.ProducerStates(); !slices.Equal(got, before) {
		t.Fatalf("states %+v, want %+v", got, before)
	}
	checkProducersAfterReopen(t, l, res)
}

func TestProducer_StateSurvivesCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l, res := producerLog(t, dir)
	before := l.ProducerStates()
	crashed := crashCopy(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, crashed, smallSegments())
	defer l.Close()
	if got := l.ProducerStates(); !slices.Equal(got, before) {
		t.Fatalf("states %+v, want %+v", got, before)
	}
	checkProducersAfterReopen(t, l, res)
}

func TestProducer_StateRebuiltWithoutSnapshots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l, res := producerLog(t, dir)
	crashed := crashCopy(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, err := listSnapshots(crashed)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) == 0 {
		t.Fatal("no producer snapshots to remove")
	}
	for _, off := range snaps {
		if err := os.Remove(offsetFileName(crashed, off, snapshotSuffix)); err != nil {
			t.Fatal(err)
		}
	}
	// A damaged snapshot is ignored too.
	if err := os.WriteFile(offsetFileName(crashed, 3, snapshotSuffix), []byte("garbage snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, crashed, smallSegments())
	defer l.Close()
	checkProducersAfterReopen(t, l, res)
	if _, err := os.Stat(offsetFileName(crashed, 3, snapshotSuffix)); err == nil {
		t.Fatal("damaged snapshot not deleted")
	}
}

func TestProducer_SnapshotRoundTrip(t *testing.T) {
	m := newProducerStateManager()
	for i := int32(0); i < 7; i++ {
		m.update(BatchHeader{ProducerID: 9, ProducerEpoch: 1, BaseSequence: i * 3, LastOffsetDelta: 2, BaseOffset: int64(i) * 10, MaxTimestamp: int64(i)}, nil, 0)
	}
	m.update(BatchHeader{ProducerID: 4, ProducerEpoch: 0, BaseSequence: 0, BaseOffset: 100, MaxTimestamp: -1}, nil, 0)
	m.update(BatchHeader{ProducerID: 5, ProducerEpoch: 2, BaseSequence: 0, BaseOffset: 120, Attributes: attrTransactional}, nil, 0)
	got, err := decodeProducerSnapshot(m.encode())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || *got[9] != *m.producers[9] || *got[4] != *m.producers[4] || *got[5] != *m.producers[5] ||
		got[9].n != 5 || got[9].batches[0].firstSeq != 6 || got[5].txnFirst != 120 || got[4].txnFirst != -1 {
		t.Fatalf("round trip: %+v", got)
	}
	b := m.encode()
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if _, err := decodeProducerSnapshot(c); err == nil {
			t.Fatalf("flipped byte %d not detected", i)
		}
	}
}

// TestProducer_CoordinatorEpoch: a producer's coordinator epoch is -1 until
// a transaction marker for it is written, then the marker's (Kafka's
// ProducerStateEntry, shown by DescribeProducers); it survives an epoch bump
// and a reopen, from the snapshot and, without one, from the log.
func TestProducer_CoordinatorEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, testConfig())
	idem := makeBatch(batchOpts{producerID: pid(1), epoch: 0, seq: 0}, rec{value: []byte("i"), ts: 1000})
	mustAppend(t, l, idem)
	mustAppend(t, l, txnBatch(2, 0, 0, "t0"))
	coordEpochs := func(l *Log) map[int64]int32 {
		out := map[int64]int32{}
		for _, ps := range l.ProducerStates() {
			out[ps.ProducerID] = ps.CoordinatorEpoch
		}
		return out
	}
	if got := coordEpochs(l); got[pid(1)] != -1 || got[pid(2)] != -1 {
		t.Fatalf("before any marker: %v, want -1 for both", got)
	}
	if _, err := l.AppendMarker(pid(2), 0, true, 7, 0); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(2, 1, 0, "t1")) // epoch bump: the coordinator epoch stays
	want := map[int64]int32{pid(1): -1, pid(2): 7}
	if got := coordEpochs(l); !maps.Equal(got, want) {
		t.Fatalf("after the marker: %v, want %v", got, want)
	}
	crashed := crashCopy(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, testConfig())
	if got := coordEpochs(l); !maps.Equal(got, want) {
		t.Fatalf("reopened from the snapshot: %v, want %v", got, want)
	}
	l.Close()
	snaps, _ := listSnapshots(crashed)
	for _, off := range snaps {
		os.Remove(offsetFileName(crashed, off, snapshotSuffix))
	}
	l = openLog(t, crashed, testConfig())
	defer l.Close()
	if got := coordEpochs(l); !maps.Equal(got, want) {
		t.Fatalf("rebuilt from the log: %v, want %v", got, want)
	}
}

// TestProducer_SnapshotVersion2: a version 2 snapshot (no coordinator
// epoch) still loads, its producers with coordinator epoch -1.
func TestProducer_SnapshotVersion2(t *testing.T) {
	m := newProducerStateManager()
	m.update(BatchHeader{ProducerID: 9, ProducerEpoch: 1, BaseSequence: 0, LastOffsetDelta: 2, MaxTimestamp: 5}, nil, 0)
	m.producers[9].coordinatorEpoch = 3
	v3 := m.encode()
	// Version 2 is version 3 without the 4 bytes after txnFirstOffset.
	v2 := append(append([]byte(nil), v3[:snapshotHeaderSize+19]...), v3[snapshotHeaderSize+23:]...)
	binary.BigEndian.PutUint16(v2, 2)
	binary.BigEndian.PutUint32(v2[2:], crc32.Checksum(v2[6:], castagnoli))
	got, err := decodeProducerSnapshot(v2)
	if err != nil {
		t.Fatal(err)
	}
	if e := got[9]; e == nil || e.coordinatorEpoch != -1 || e.epoch != 1 || e.n != 1 || e.batches[0].lastSeq != 2 {
		t.Fatalf("decoded %+v", got[9])
	}
	if got, err := decodeProducerSnapshot(v3); err != nil || got[9].coordinatorEpoch != 3 {
		t.Fatalf("version 3: %+v %v", got, err)
	}
}
