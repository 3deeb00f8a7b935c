package storage

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func replicatedConfig() Config {
	cfg := testConfig()
	cfg.ReplicatedHighWatermark = true
	return cfg
}

// readFollower reads from offset up to the log end offset.
func readFollower(t testing.TB, l *Log, offset int64) []byte {
	t.Helper()
	res, err := l.ReadForFollower(offset, math.MaxInt32, true)
	if err != nil {
		t.Fatalf("ReadForFollower(%d): %v", offset, err)
	}
	defer res.Slice.Release()
	b, err := res.Slice.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLog_SetHighWatermarkGatesReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, replicatedConfig())
	defer l.Close()
	ch := l.Notify()
	bs := threeBatches(t, l) // offsets 0-2, 3, 4-8
	if !closed(ch) {
		t.Fatal("Notify not woken by an append in replicated mode")
	}
	if l.HighWatermark() != 0 || l.LogEndOffset() != 9 {
		t.Fatalf("hw %d leo %d, want 0 9", l.HighWatermark(), l.LogEndOffset())
	}
	if got := readBytes(t, l, 0, math.MaxInt32, true); len(got) != 0 {
		t.Fatalf("Read below no high watermark returned %d bytes", len(got))
	}
	if got := readFollower(t, l, 0); !bytes.Equal(got, bytes.Join(bs, nil)) {
		t.Fatalf("ReadForFollower returned %d bytes, want %d", len(got), len(bytes.Join(bs, nil)))
	}
	ch = l.Notify()
	if err := l.SetHighWatermark(3); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) || l.HighWatermark() != 3 {
		t.Fatalf("hw %d after SetHighWatermark(3)", l.HighWatermark())
	}
	if got := readBytes(t, l, 0, math.MaxInt32, true); !bytes.Equal(got, bs[0]) {
		t.Fatalf("Read(0) with hw 3 returned %d bytes, want the first batch", len(got))
	}
	res, _, err := l.ReadCommitted(0, math.MaxInt32, true)
	if err != nil || res.Slice.Size != int64(len(bs[0])) || res.HighWatermark != 3 || res.LastStableOffset != 3 {
		t.Fatalf("ReadCommitted with hw 3: %+v %v", res, err)
	}
	res.Slice.Release()
	if got := readBytes(t, l, 3, math.MaxInt32, true); len(got) != 0 {
		t.Fatalf("Read(3) at the high watermark returned %d bytes", len(got))
	}
	if err := l.SetHighWatermark(2); err != nil || l.HighWatermark() != 3 {
		t.Fatalf("lower high watermark: hw %d, %v", l.HighWatermark(), err)
	}
	if err := l.SetHighWatermark(100); err != nil || l.HighWatermark() != 9 {
		t.Fatalf("high watermark beyond LEO: hw %d, %v", l.HighWatermark(), err)
	}
	if got := readBytes(t, l, 4, math.MaxInt32, true); !bytes.Equal(got, bs[2]) {
		t.Fatalf("Read(4) with hw 9 returned %d bytes", len(got))
	}
	if _, err := l.DeleteRecordsBefore(-1); err != nil || l.LogStartOffset() != 9 {
		t.Fatalf("DeleteRecordsBefore(hw): lso %d %v", l.LogStartOffset(), err)
	}
}

func TestLog_ReplicatedHighWatermarkGatesLastStableOffset(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), replicatedConfig())
	defer l.Close()
	mustAppend(t, l, simpleBatch(2, 5, 1000))       // 0-1
	mustAppend(t, l, txnBatch(1, 0, 0, "a0", "a1")) // 2-3, open
	mustAppend(t, l, simpleBatch(1, 5, 1000))       // 4
	if lso := l.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d with hw 0", lso)
	}
	if err := l.SetHighWatermark(2); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d with hw 2 and a transaction open at 2", lso)
	}
	if _, err := l.AppendMarker(pid(1), 0, true, 0, 0); err != nil { // 5
		t.Fatal(err)
	}
	if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != 2 || hw != 2 {
		t.Fatalf("after the marker: LSO %d HW %d, want 2 2 (marker not replicated yet)", lso, hw)
	}
	if err := l.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 6 {
		t.Fatalf("LSO %d after hw 6", lso)
	}
}

// A transaction's records stay behind the last stable offset until its
// marker is below the high watermark, not merely appended: a marker only
// the leader has may be lost with it, and then the records end with the
// producer's next transaction (committed records read by a read_committed
// consumer and then aborted, found by the Jepsen checker as txn-lost). As
// Kafka's unreplicated transactions; also after a crash, when the marker is
// replayed from the log.
func TestLog_LastStableOffsetWaitsForTheMarkerToBeCommitted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, replicatedConfig())
	defer l.Close()
	mustAppend(t, l, simpleBatch(2, 5, 1000))                        // 0-1
	mustAppend(t, l, txnBatch(1, 0, 0, "a0", "a1"))                  // 2-3
	mustAppend(t, l, txnBatch(2, 0, 0, "b0"))                        // 4
	if _, err := l.AppendMarker(pid(1), 0, true, 0, 0); err != nil { // 5
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(5); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d with hw 5 and the marker of the transaction at 2 at 5, want 2", lso)
	}
	res, _, err := l.ReadCommitted(0, math.MaxInt32, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.LastStableOffset != 2 {
		t.Fatalf("ReadCommitted: LSO %d, want 2", res.LastStableOffset)
	}
	res.Slice.Release()
	if err := l.Flush(); err != nil { // the checkpoint keeps hw 5
		t.Fatal(err)
	}
	crashed := openLog(t, crashCopy(t, dir), replicatedConfig())
	defer crashed.Close()
	if lso, hw := crashed.LastStableOffset(), crashed.HighWatermark(); lso != 2 || hw != 5 {
		t.Fatalf("after a crash: LSO %d hw %d, want 2 5", lso, hw)
	}

	if err := l.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO %d with the marker committed and a transaction open at 4, want 4", lso)
	}
	if _, err := l.AppendMarker(pid(2), 0, false, 0, 0); err != nil { // 6
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO %d with the abort marker at 6 above hw 6, want 4", lso)
	}
	if err := l.SetHighWatermark(7); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 7 {
		t.Fatalf("LSO %d with every marker committed, want 7", lso)
	}
	if n := len(l.producers.unreplicated); n != 0 {
		t.Fatalf("%d unreplicated transactions kept after their markers were committed", n)
	}
	if err := crashed.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	if lso := crashed.LastStableOffset(); lso != 4 {
		t.Fatalf("after a crash, LSO %d with hw 6, want 4", lso)
	}
}

func TestLog_HighWatermarkPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := replicatedConfig()
	cfg.SegmentBytes = 300
	l := openLog(t, dir, cfg)
	var bs [][]byte
	for i := 0; i < 10; i++ {
		b := simpleBatch(2, 40, 1000)
		mustAppend(t, l, b)
		bs = append(bs, b)
	}
	if len(l.segments()) < 3 {
		t.Fatalf("%d segments, want several", len(l.segments()))
	}
	if err := l.SetHighWatermark(8); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, dir)
	if err := l.SetHighWatermark(12); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, checkpointName))
	if !strings.HasPrefix(string(b), "v2 ") || !strings.HasSuffix(string(b), " highWatermark=12\n") {
		t.Fatalf("checkpoint %q", b)
	}
	for _, tt := range []struct {
		dir  string
		want int64
	}{{dir, 12}, {crashed, 8}} {
		l := openLog(t, tt.dir, cfg)
		if l.HighWatermark() != tt.want || l.LogEndOffset() != 20 {
			t.Fatalf("reopened %s: hw %d leo %d, want %d 20", tt.dir, l.HighWatermark(), l.LogEndOffset(), tt.want)
		}
		if got := readLog(t, l); !bytes.Equal(bytes.Join(got, nil), bytes.Join(bs[:tt.want/2], nil)) {
			t.Fatalf("reopened: read %d batches below hw %d", len(got), tt.want)
		}
		// Found by the index and batch headers (no queued batch ends).
		if err := l.SetHighWatermark(18); err != nil || l.HighWatermark() != 18 {
			t.Fatalf("SetHighWatermark(18): hw %d %v", l.HighWatermark(), err)
		}
		if got := readLog(t, l); len(got) != 9 || !bytes.Equal(got[8], bs[8]) {
			t.Fatalf("read %d batches below hw 18", len(got))
		}
		l.Close()
	}
}

func TestLog_ReplicatedOpensOldCheckpointAtLogStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, testConfig())
	threeBatches(t, l)
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(1); err != nil || l.HighWatermark() != 9 {
		t.Fatalf("default mode: SetHighWatermark changed hw to %d (%v)", l.HighWatermark(), err)
	}
	l.Close()
	b, _ := os.ReadFile(filepath.Join(dir, checkpointName))
	if string(b) != "v1 logStartOffset=3 recoveryPoint=9\n" {
		t.Fatalf("default mode checkpoint %q", b)
	}
	l = openLog(t, dir, replicatedConfig())
	defer l.Close()
	if l.HighWatermark() != 3 || l.LogStartOffset() != 3 || l.LogEndOffset() != 9 {
		t.Fatalf("hw %d lso %d leo %d, want 3 3 9", l.HighWatermark(), l.LogStartOffset(), l.LogEndOffset())
	}
}
