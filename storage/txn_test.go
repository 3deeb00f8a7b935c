package storage

import (
	"errors"
	"os"
	"slices"
	"testing"
)

func txnBatch(producer int64, epoch int16, seq int32, values ...string) []byte {
	recs := make([]rec, len(values))
	for i, v := range values {
		recs[i] = rec{value: []byte(v), ts: 1000}
	}
	return makeBatch(batchOpts{producerID: pid(producer), epoch: epoch, seq: seq, txn: true}, recs...)
}

func TestLog_TransactionsMoveLastStableOffset(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Now = (&clock{ms: 2000}).now // markers stamped near the batches' 1000: one segment
	l := openLog(t, dir, cfg)
	a, c := pid(1), pid(3)
	mustAppend(t, l, txnBatch(1, 0, 0, "a0", "a1"))                                 // 0-1, txn A open
	mustAppend(t, l, makeBatch(batchOpts{}, rec{value: []byte("plain"), ts: 1000})) // 2
	if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != 0 || hw != 3 {
		t.Fatalf("open txn: LSO %d HW %d, want 0 3", lso, hw)
	}
	res, aborted, err := l.ReadCommitted(0, 1<<20, true)
	if err != nil || res.Slice.Size != 0 || res.LastStableOffset != 0 || aborted != nil {
		t.Fatalf("read_committed below an open txn: %+v %v %v", res, aborted, err)
	}
	res.Slice.Release()
	if got := len(readLog(t, l)); got != 2 {
		t.Fatalf("read_uncommitted sees %d batches, want 2", got)
	}
	off, err := l.AppendMarker(a, 0, true, 0, 0) // 3: COMMIT A
	if err != nil || off != 3 {
		t.Fatalf("commit marker at %d: %v", off, err)
	}
	if lso := l.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO after commit %d, want 4", lso)
	}
	mustAppend(t, l, txnBatch(3, 0, 0, "c0")) // 4: txn C
	if lso := l.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO with C open %d, want 4", lso)
	}
	res, _, err = l.ReadCommitted(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := res.Slice.ReadAll()
	res.Slice.Release()
	if parseHeader(b).BaseOffset != 0 || int64(len(b)) != l.end.Load().pos-int64(len(txnBatch(3, 0, 0, "c0"))) {
		t.Fatalf("read_committed returned %d bytes, want everything before offset 4", len(b))
	}
	if _, err := l.AppendMarker(c, 0, false, 0, 0); err != nil { // 5: ABORT C
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: c, FirstOffset: 4, LastOffset: 5, LastStableOffset: 6}}
	if got := l.AbortedTransactions(0, 100); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := l.AbortedTransactions(6, 100); len(got) != 0 {
		t.Fatalf("aborted after the marker: %+v", got)
	}
	if fi, err := os.Stat(segFile(dir, 0, txnIndexSuffix)); err != nil || fi.Size() != txnEntrySize {
		t.Fatalf(".txnindex: %v %v", fi, err)
	}
	if _, err := l.AppendMarker(c, -1, false, 0, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an older epoch: %v", err)
	}
	// A transaction left open across a crash keeps the LSO after recovery,
	// and aborted transactions survive a clean restart.
	mustAppend(t, l, txnBatch(1, 0, 2, "a2")) // 6: txn A again
	crashed := crashCopy(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, crashed} {
		l2 := openLog(t, d, testConfig())
		if lso, hw := l2.LastStableOffset(), l2.HighWatermark(); lso != 6 || hw != 7 {
			t.Fatalf("%s: reopened LSO %d HW %d, want 6 7", d, lso, hw)
		}
		if got := l2.AbortedTransactions(0, 100); !slices.Equal(got, want) {
			t.Fatalf("%s: reopened aborted %+v", d, got)
		}
		if _, err := l2.AppendMarker(a, 0, true, 0, 0); err != nil {
			t.Fatal(err)
		}
		if lso := l2.LastStableOffset(); lso != 8 {
			t.Fatalf("%s: LSO after the late commit %d", d, lso)
		}
		l2.Close()
	}
}

func TestMarker_RoundTrip(t *testing.T) {
	b := buildMarker(7, 2, true, 5, 1234)
	h, err := ValidateBatch(b)
	if err != nil || !h.Control() || !h.Transactional() || h.ProducerID != 7 || h.ProducerEpoch != 2 {
		t.Fatalf("%+v %v", h, err)
	}
	if typ, ok := markerType(b[BatchHeaderSize:]); !ok || typ != markerCommit {
		t.Fatalf("type %d %v", typ, ok)
	}
	if typ, ok := markerType(buildMarker(7, 2, false, 5, 1234)[BatchHeaderSize:]); !ok || typ != markerAbort {
		t.Fatalf("abort type %d %v", typ, ok)
	}
	if typ, ce, ok := parseMarker(buildMarker(7, 2, true, 41, 1234)[BatchHeaderSize:]); !ok || typ != markerCommit || ce != 41 {
		t.Fatalf("parseMarker: type %d coordinator epoch %d %v", typ, ce, ok)
	}
	// A marker whose value is cut short has no coordinator epoch.
	short := buildMarker(7, 2, true, 41, 1234)[BatchHeaderSize:]
	short = short[:len(short)-4]
	if _, ce, ok := parseMarker(short); !ok || ce != -1 {
		t.Fatalf("short value: coordinator epoch %d %v", ce, ok)
	}
}

// TestLog_CoordinatorAppendSkipsSequence: a coordinator's transactional
// batches (AppendOptions.Coordinator, the offset commits of a transaction
// in __consumer_offsets) all carry sequence 0: none is taken for a retry
// or rejected as out of order, an older epoch is fenced, and they open the
// producer's transaction until its marker.
func TestLog_CoordinatorAppendSkipsSequence(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	coord := AppendOptions{LogAppendTime: -1, Coordinator: true}
	for i, v := range []string{"o1", "o2", "o3"} {
		res, err := l.Append(txnBatch(7, 2, 0, v), coord)
		if err != nil || res.Duplicate || res.BaseOffset != int64(i) {
			t.Fatalf("coordinator batch %d: %+v %v", i, res, err)
		}
	}
	if _, err := l.Append(txnBatch(7, 1, 0, "old"), coord); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("older epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if lso := l.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO with the transaction open: %d, want 0", lso)
	}
	if _, err := l.AppendMarker(pid(7), 2, true, 0, 0); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO after the marker: %d, want 4", lso)
	}
	// Without the option the sequence rules apply.
	if res, err := l.Append(txnBatch(7, 2, 0, "retry"), AppendOptions{LogAppendTime: -1}); err == nil && !res.Duplicate {
		t.Fatalf("client batch with a used sequence appended: %+v", res)
	}
}

// A marker from an older coordinator epoch than the producer's last marker
// is refused and changes nothing: a replaced coordinator's late COMMIT
// must not end (and so commit) a transaction its successor's producer has
// begun since, at the same producer epoch. The replica still applies what
// its leader wrote; the epoch survives a restart.
func TestAppendMarker_RefusesAnOlderCoordinatorEpoch(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Now = (&clock{ms: 2000}).now
	l := openLog(t, dir, cfg)
	a := pid(1)
	mustAppend(t, l, txnBatch(1, 0, 0, "t1"))                   // 0
	if _, err := l.AppendMarker(a, 0, true, 4, 0); err != nil { // 1: COMMIT by coordinator epoch 4
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(1, 0, 1, "t2")) // 2: the next transaction
	if _, err := l.AppendMarker(a, 0, true, 3, 0); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("COMMIT from coordinator epoch 3 after 4: %v, want ErrCoordinatorFenced", err)
	}
	if lso, leo := l.LastStableOffset(), l.LogEndOffset(); lso != 2 || leo != 3 {
		t.Fatalf("after the refused marker: LSO %d, log end %d; want 2 and 3", lso, leo)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if _, err := l.AppendMarker(a, 0, true, 3, 0); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("after a restart: %v, want ErrCoordinatorFenced", err)
	}
	if _, err := l.AppendMarker(a, 0, false, 4, 0); err != nil { // 3: ABORT by the current coordinator
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: a, FirstOffset: 2, LastOffset: 3, LastStableOffset: 4}}
	if got := l.AbortedTransactions(0, 100); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
}

// A bumped marker (transaction version 2: the coordinator bumps the epoch
// at every end) at the producer's current epoch while a transaction is
// open is the previous transaction's late marker: refused, the open
// transaction stays open. The same marker with none open is a retry; the
// next transaction's own marker, one epoch up, ends it.
func TestAppendBumpedMarker_RefusesTheLateMarkerOfThePreviousTransaction(t *testing.T) {
	cfg := testConfig()
	cfg.Now = (&clock{ms: 2000}).now
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	a := pid(1)
	mustAppend(t, l, txnBatch(1, 0, 0, "t1"))                         // 0: transaction 1 at epoch 0
	if _, err := l.AppendBumpedMarker(a, 1, true, 0, 0); err != nil { // 1: its COMMIT, bumped to 1
		t.Fatal(err)
	}
	if _, err := l.AppendBumpedMarker(a, 1, true, 0, 0); err != nil { // 2: a retry, nothing open
		t.Fatalf("retried marker with no transaction open: %v", err)
	}
	// Transaction 2 at epoch 1 from sequence 0: the same sequence numbers
	// as transaction 1's batch, not a retry of it.
	if res := mustAppend(t, l, txnBatch(1, 1, 0, "t2")); res.BaseOffset != 3 {
		t.Fatalf("transaction 2's first batch at %d, want 3 (taken for a retry of the epoch-0 batch)", res.BaseOffset)
	}
	if _, err := l.AppendBumpedMarker(a, 1, true, 0, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("transaction 1's late COMMIT with transaction 2 open: %v, want ErrInvalidProducerEpoch", err)
	}
	if lso, leo := l.LastStableOffset(), l.LogEndOffset(); lso != 3 || leo != 4 {
		t.Fatalf("after the refused marker: LSO %d, log end %d; want 3 and 4", lso, leo)
	}
	// Without the bump (transaction version 1) the marker shares the
	// batches' epoch, and ends the transaction.
	if _, err := l.AppendMarker(a, 1, false, 0, 0); err != nil { // 4
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: a, FirstOffset: 3, LastOffset: 4, LastStableOffset: 5}}
	if got := l.AbortedTransactions(0, 100); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
}
