package storage

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// batchesLog appends batches of 3, 1, 5 and 2 records (offsets 0-2, 3, 4-8,
// 9-10) in epochs 1, 1, 2, 3, in segments of about two batches.
func batchesLog(t *testing.T, dir string) (*Log, [][]byte, Config) {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 250
	cfg.IndexIntervalBytes = 0
	l := openLog(t, dir, cfg)
	var bs [][]byte
	for i, n := range []int{3, 1, 5, 2} {
		b := simpleBatch(n, 10, 1000+int64(i))
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: []int32{1, 1, 2, 3}[i], LogAppendTime: -1}); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	return l, bs, cfg
}

// checkContent checks that l holds exactly want, then appends one more
// batch and checks its offset.
func checkContent(t *testing.T, l *Log, want [][]byte, leo int64) {
	t.Helper()
	if l.LogEndOffset() != leo || l.HighWatermark() != leo {
		t.Fatalf("leo %d hw %d, want %d", l.LogEndOffset(), l.HighWatermark(), leo)
	}
	if got := readLog(t, l); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("log holds %d batches, want %d", len(got), len(want))
	}
	if got := readBytes(t, l, leo, math.MaxInt32, true); len(got) != 0 {
		t.Fatalf("read at the log end: %d bytes", len(got))
	}
}

func TestLog_TruncateTo(t *testing.T) {
	for _, tt := range []struct {
		offset, leo int64
		keep        int
		epochs      []EpochEntry
	}{
		{11, 11, 4, []EpochEntry{{1, 0}, {2, 4}, {3, 9}}}, // at the end: nothing
		{9, 9, 3, []EpochEntry{{1, 0}, {2, 4}}},           // batch boundary, segment boundary
		{4, 4, 2, []EpochEntry{{1, 0}}},                   // batch boundary
		{7, 4, 2, []EpochEntry{{1, 0}}},                   // inside a batch: the batch goes
		{3, 3, 1, []EpochEntry{{1, 0}}},
		{1, 0, 0, nil},
		{0, 0, 0, nil},
	} {
		dir := filepath.Join(t.TempDir(), "t-0")
		l, bs, cfg := batchesLog(t, dir)
		if err := l.TruncateTo(tt.offset); err != nil {
			t.Fatalf("TruncateTo(%d): %v", tt.offset, err)
		}
		checkContent(t, l, bs[:tt.keep], tt.leo)
		if got := l.LeaderEpochs(); !slices.Equal(got, tt.epochs) {
			t.Fatalf("TruncateTo(%d): epochs %v, want %v", tt.offset, got, tt.epochs)
		}
		// Appending continues at the new end, in segments that reopen.
		next := simpleBatch(2, 10, 5000)
		if res, err := l.Append(next, AppendOptions{LeaderEpoch: 4, LogAppendTime: -1}); err != nil || res.BaseOffset != tt.leo {
			t.Fatalf("append after TruncateTo(%d): %+v %v", tt.offset, res, err)
		}
		want := append(slices.Clone(bs[:tt.keep]), next)
		crashed := crashCopy(t, dir)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{dir, crashed} {
			l = openLog(t, d, cfg)
			checkContent(t, l, want, tt.leo+2)
			if got := l.LeaderEpochs(); !slices.Equal(got, append(slices.Clone(tt.epochs), EpochEntry{4, tt.leo})) {
				t.Fatalf("TruncateTo(%d), append, reopen: epochs %v", tt.offset, got)
			}
			l.Close()
		}
	}
}

func TestLog_TruncateToRebuildsProducerState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := leaderLog(t, dir) // replicated, small segments, producers 1 and 2
	defer l.Close()
	ends := map[int64]bool{}
	for _, b := range splitBatches(t, readFollower(t, l, 0)) {
		h, _ := ParseBatchHeader(b)
		ends[h.BaseOffset] = true
	}
	hwBefore := l.LogEndOffset() - 5
	if err := l.SetHighWatermark(hwBefore); err != nil {
		t.Fatal(err)
	}
	// Truncate to every batch boundary in turn, from the end, comparing the
	// state with a fresh log holding the same batches.
	for off := l.LogEndOffset() - 1; off > 0; off-- {
		if !ends[off] {
			continue
		}
		if err := l.TruncateTo(off); err != nil {
			t.Fatalf("TruncateTo(%d): %v", off, err)
		}
		if l.LogEndOffset() != off || l.HighWatermark() != min(hwBefore, off) {
			t.Fatalf("TruncateTo(%d): leo %d hw %d", off, l.LogEndOffset(), l.HighWatermark())
		}
		fresh := openLog(t, filepath.Join(t.TempDir(), "fresh"), replicatedConfig())
		if _, err := fresh.AppendAsFollower(readFollower(t, l, 0)); err != nil {
			t.Fatal(err)
		}
		if g, w := l.ProducerStates(), fresh.ProducerStates(); !slices.Equal(g, w) {
			t.Fatalf("TruncateTo(%d): producers\n got %+v\nwant %+v", off, g, w)
		}
		if g, w := l.AbortedTransactions(0, off), fresh.AbortedTransactions(0, off); !slices.Equal(g, w) {
			t.Fatalf("TruncateTo(%d): aborted %+v, want %+v", off, g, w)
		}
		if g, w := l.LeaderEpochs(), fresh.LeaderEpochs(); !slices.Equal(g, w) {
			t.Fatalf("TruncateTo(%d): epochs %v, want %v", off, g, w)
		}
		l.SetHighWatermark(off)
		fresh.SetHighWatermark(off)
		if g, w := l.LastStableOffset(), fresh.LastStableOffset(); g != w {
			t.Fatalf("TruncateTo(%d): LSO %d, want %d", off, g, w)
		}
		fresh.Close()
	}
}

// splitBatches splits whole batches.
func splitBatches(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b[:h.Size()])
		b = b[h.Size():]
	}
	return out
}

func TestLog_TruncateToKeepsIndexesUsable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 150
	l := openLog(t, dir, cfg)
	var bs [][]byte
	for i := 0; i < 40; i++ {
		b := simpleBatch(1+i%4, 20, 1000+int64(i%7))
		mustAppend(t, l, b)
		bs = append(bs, b)
	}
	var keep int
	var off int64
	for off = 0; keep < 25; keep++ { // into the middle of a non-active segment
		h, _ := ParseBatchHeader(bs[keep])
		off += int64(h.RecordCount)
	}
	if err := l.TruncateTo(off + 1); err != nil { // inside batch 25
		t.Fatal(err)
	}
	checkContent(t, l, bs[:keep], off)
	for i := 0; i < 30; i++ {
		b := simpleBatch(2, 20, 3000)
		mustAppend(t, l, b)
		bs = append(bs[:keep], b)
		keep++
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	cfg.Logger = slogTo(&logged)
	l = openLog(t, dir, cfg)
	defer l.Close()
	checkContent(t, l, bs, l.LogEndOffset())
	if bytes.Contains(logged.Bytes(), []byte("rebuilding")) {
		t.Fatalf("indexes rebuilt after a truncation and a clean close:\n%s", logged.String())
	}
	for i, b := range bs { // every offset found through the indexes
		h, _ := ParseBatchHeader(b)
		if got := readBytes(t, l, h.BaseOffset, int32(len(b)), false); !bytes.Equal(got, b) {
			t.Fatalf("batch %d at %d not found", i, h.BaseOffset)
		}
	}
}

func TestLog_InterruptedTruncationDoesNotResurrect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l, bs, cfg := batchesLog(t, dir)
	if len(segmentBases(l)) < 2 {
		t.Fatalf("segments %v", segmentBases(l))
	}
	fail := errors.New("interrupted")
	cfg2 := cfg
	cfg2.BeforeIO = func(op, path string) error {
		if op == "truncate" {
			return fail
		}
		return nil
	}
	l.UpdateConfig(cfg2)
	if err := l.TruncateTo(1); !errors.Is(err, fail) {
		t.Fatalf("TruncateTo with the cut failing: %v", err)
	}
	if _, err := l.Append(simpleBatch(1, 1, 1), AppendOptions{LogAppendTime: -1}); !errors.Is(err, fail) {
		t.Fatalf("append after a failed truncation: %v", err)
	}
	crashed := crashCopy(t, dir)
	abandon(l)
	l = openLog(t, crashed, cfg)
	defer l.Close()
	// The first segment kept its tail; nothing after it came back.
	checkContent(t, l, bs[:2], 4)
	if got := l.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{1, 0}}) {
		t.Fatalf("epochs %v", got)
	}
}

func TestLog_TruncateFullyAndStartAt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _, cfg := batchesLog(t, dir)
	snaps, _ := listSnapshots(dir)
	if len(snaps) == 0 {
		t.Fatal("no snapshots to delete")
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.HighWatermark() != 100 || l.LatestLeaderEpoch() != -1 || l.Size() != 0 {
		t.Fatalf("lso %d leo %d hw %d epoch %d size %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.LatestLeaderEpoch(), l.Size())
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{100}) {
		t.Fatalf("segments %v", got)
	}
	if snaps, _ := listSnapshots(dir); len(snaps) != 0 {
		t.Fatalf("snapshots left: %v", snaps)
	}
	b := simpleBatch(2, 10, 1000)
	setBatchOffsetAndEpoch(b, 100, 7)
	if res, err := l.AppendAsFollower(b); err != nil || res.FirstOffset != 100 || res.LastOffset != 101 {
		t.Fatalf("AppendAsFollower at 100: %+v %v", res, err)
	}
	crashed := crashCopy(t, dir)
	l.Close()
	for _, d := range []string{dir, crashed} {
		l = openLog(t, d, cfg)
		checkContent(t, l, [][]byte{b}, 102)
		if l.LogStartOffset() != 100 || !slices.Equal(l.LeaderEpochs(), []EpochEntry{{7, 100}}) {
			t.Fatalf("reopened: lso %d epochs %v", l.LogStartOffset(), l.LeaderEpochs())
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if _, ok := parseOffsetFileName(e.Name(), logSuffix); ok && e.Name() != "00000000000000000100.log" {
				t.Fatalf("left over %s", e.Name())
			}
		}
		l.Close()
	}
	// TruncateTo below the first segment starts over too.
	l = openLog(t, dir, cfg)
	defer l.Close()
	if err := l.TruncateTo(50); err != nil || l.LogEndOffset() != 50 || l.LogStartOffset() != 50 {
		t.Fatalf("TruncateTo(50): leo %d lso %d %v", l.LogEndOffset(), l.LogStartOffset(), err)
	}
}

// slogTo is a logger writing text to w.
func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
