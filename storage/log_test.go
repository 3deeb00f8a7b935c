package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

var discardLogger = slog.New(slog.DiscardHandler)

func TestLog_AppendReadRoundTrip(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	var batches [][]byte
	for i, n := range []int{3, 1, 5} {
		b := simpleBatch(n, 10, 1000+int64(i))
		res, err := l.Append(b, AppendOptions{LeaderEpoch: 7, LogAppendTime: -1})
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{0, 3, 4}[i]
		if res.BaseOffset != want || res.LastOffset != want+int64(n)-1 || res.LogAppendTime != -1 || res.Duplicate {
			t.Fatalf("append %d: %+v", i, res)
		}
		h, _ := ParseBatchHeader(b)
		if h.BaseOffset != want || h.PartitionLeaderEpoch != 7 {
			t.Fatalf("batch not rewritten: %+v", h)
		}
		batches = append(batches, b)
	}
	if l.LogEndOffset() != 9 || l.HighWatermark() != 9 || l.LogStartOffset() != 0 {
		t.Fatalf("leo %d hw %d lso %d", l.LogEndOffset(), l.HighWatermark(), l.LogStartOffset())
	}
	got := readBytes(t, l, 0, math.MaxInt32, false)
	if want := bytes.Join(batches, nil); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if l.Size() != int64(len(got)) {
		t.Fatalf("Size %d, want %d", l.Size(), len(got))
	}
}

// threeBatches appends batches of 3, 1 and 5 records and returns them.
func threeBatches(t *testing.T, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	for i, n := range []int{3, 1, 5} {
		b := simpleBatch(n, 10, 1000+int64(i))
		mustAppend(t, l, b)
		out = append(out, b)
	}
	return out
}

func TestLog_ReadMiddleOfBatch(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	bs := threeBatches(t, l)
	for _, tt := range []struct {
		offset int64
		want   []byte
	}{
		{0, bytes.Join(bs, nil)},
		{1, bytes.Join(bs, nil)},
		{2, bytes.Join(bs, nil)},
		{3, bytes.Join(bs[1:], nil)},
		{4, bs[2]},
		{6, bs[2]},
		{8, bs[2]},
		{9, nil},
	} {
		if got := readBytes(t, l, tt.offset, math.MaxInt32, false); !bytes.Equal(got, tt.want) {
			t.Errorf("Read(%d): %d bytes, want %d", tt.offset, len(got), len(tt.want))
		}
	}
	for _, off := range []int64{-1, 10} {
		if _, err := l.Read(off, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("Read(%d): %v, want ErrOffsetOutOfRange", off, err)
		}
	}
}

func TestLog_ReadMaxBytesAndMinOneBatch(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	bs := threeBatches(t, l)
	all := bytes.Join(bs, nil)
	n0 := int32(len(bs[0]))
	for _, tt := range []struct {
		name     string
		offset   int64
		maxBytes int32
		minOne   bool
		want     []byte
	}{
		{"exactly first", 0, n0, false, bs[0]},
		{"first plus part of second", 0, n0 + 10, false, all[:n0+10]},
		{"first too big", 0, n0 - 1, false, nil},
		{"first too big, minOne", 0, n0 - 1, true, bs[0]},
		{"zero maxBytes, minOne", 3, 0, true, bs[1]},
		{"zero maxBytes", 3, 0, false, nil},
		{"minOne does not shrink", 0, n0 + 10, true, all[:n0+10]},
		{"clipped to end", 4, math.MaxInt32, false, bs[2]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := l.Read(tt.offset, tt.maxBytes, tt.minOne)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Slice.Release()
			got, _ := res.Slice.ReadAll()
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, want %d", len(got), len(tt.want))
			}
			if res.HighWatermark != 9 || res.LastStableOffset != 9 || res.LogStartOffset != 0 {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestLog_ReadAtEndIsEmpty(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	res, err := l.Read(0, 100, true)
	if err != nil || res.Slice.Size != 0 || res.HighWatermark != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	res.Slice.Release()
}

func TestLog_LogAppendTime(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	b := simpleBatch(2, 5, 100)
	res, err := l.Append(b, AppendOptions{LogAppendTime: 5000})
	if err != nil || res.LogAppendTime != 5000 {
		t.Fatalf("%+v %v", res, err)
	}
	got := readBytes(t, l, 0, 1000, true)
	h, err := ValidateBatch(got) // CRC recomputed
	if err != nil || !h.LogAppendTime() || h.MaxTimestamp != 5000 || h.BaseTimestamp != 100 {
		t.Fatalf("%+v %v", h, err)
	}
	if off, ts, ok := l.OffsetForTimestamp(4000); !ok || off != 0 || ts != 5000 {
		t.Fatalf("OffsetForTimestamp: %d %d %v", off, ts, ok)
	}
}

func TestLog_RollBySize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	b0 := simpleBatch(2, 100, 1)
	cfg.SegmentBytes = int64(len(b0)) * 3 // three batches per segment
	l := openLog(t, dir, cfg)
	defer l.Close()
	var all [][]byte
	for i := 0; i < 7; i++ {
		b := simpleBatch(2, 100, int64(i))
		mustAppend(t, l, b)
		all = append(all, b)
	}
	var bases []int64
	for _, s := range l.segments() {
		bases = append(bases, s.base)
	}
	if want := []int64{0, 6, 12}; !slices.Equal(bases, want) {
		t.Fatalf("segments %v, want %v", bases, want)
	}
	for _, base := range []int64{0, 6, 12} {
		if _, err := os.Stat(segFile(dir, base, logSuffix)); err != nil {
			t.Fatal(err)
		}
	}
	// A read never spans segments.
	if got := readBytes(t, l, 0, math.MaxInt32, false); !bytes.Equal(got, bytes.Join(all[:3], nil)) {
		t.Fatalf("first segment read %d bytes", len(got))
	}
	if got := readLog(t, l); !slices.EqualFunc(got, all, bytes.Equal) {
		t.Fatalf("read back %d batches, want %d", len(got), len(all))
	}
	// A snapshot was written at each roll.
	if snaps, _ := listSnapshots(dir); !slices.Equal(snaps, []int64{6, 12}) {
		t.Fatalf("snapshots %v", snaps)
	}
}

// TestLog_RollByTime: segment.ms as Kafka applies it (KIP-33): a batch
// whose largest timestamp is more than segment.ms after that of the
// segment's first batch starts a new segment, whatever the clock says; the
// new segment measures from its own first batch.
func TestLog_RollByTime(t *testing.T) {
	clk := &clock{ms: 1_000_000}
	cfg := testConfig()
	cfg.Now = clk.now
	cfg.SegmentMs = 1000
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "t-0"), cfg)
	defer func() { l.Close() }()
	mustAppend(t, l, simpleBatch(1, 1, 5000))
	clk.ms += 10_000                          // the clock does not count while batches carry timestamps
	mustAppend(t, l, simpleBatch(1, 1, 6000)) // exactly segment.ms: no roll
	if n := len(l.segments()); n != 1 {
		t.Fatalf("%d segments", n)
	}
	mustAppend(t, l, simpleBatch(1, 1, 6001))
	if segs := l.segments(); len(segs) != 2 || segs[1].base != 2 {
		t.Fatalf("segments %d", len(segs))
	}
	mustAppend(t, l, simpleBatch(1, 1, 7001)) // 1000 after the new segment's first
	if n := len(l.segments()); n != 2 {
		t.Fatalf("%d segments", n)
	}
	mustAppend(t, l, simpleBatch(1, 1, 100)) // an older timestamp never rolls
	if n := len(l.segments()); n != 2 {
		t.Fatalf("%d segments", n)
	}
	// Reopened, the active segment's first batch is read from its file.
	l.Close()
	l = openLog(t, filepath.Join(dir, "t-0"), cfg)
	mustAppend(t, l, simpleBatch(1, 1, 7002))
	if segs := l.segments(); len(segs) != 3 || segs[2].base != 5 {
		t.Fatalf("after reopening: %d segments", len(segs))
	}
}

// TestLog_RollByTimeOldRecordsThenMarker: records with timestamps long past
// (replayed data, or a test's fixed 2020 timestamps) followed by a batch
// stamped now, here a transaction marker, roll the segment at once, as
// Kafka does; a read then stops at the end of the old segment.
func TestLog_RollByTimeOldRecordsThenMarker(t *testing.T) {
	clk := &clock{ms: 1_800_000_000_000}
	cfg := testConfig()
	cfg.Now = clk.now
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg) // segment.ms 7 days
	defer l.Close()
	mustAppend(t, l, txnBatch(1, 0, 0, "a0", "a1")) // timestamps 1000: 1970
	if _, err := l.AppendMarker(pid(1), 0, true, 0, 0); err != nil {
		t.Fatal(err)
	}
	if segs := l.segments(); len(segs) != 2 || segs[1].base != 2 {
		t.Fatalf("%d segments, want the marker to start one at 2", len(segs))
	}
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := res.Slice.ReadAll()
	res.Slice.Release()
	if h := parseHeader(b); h.BaseOffset != 0 || int64(len(b)) != h.Size() {
		t.Fatalf("read at 0: %d bytes, want the first batch only (%d)", len(b), h.Size())
	}
}

// TestLog_RollByClockWithoutTimestamps: a segment whose first batch has no
// timestamp (-1) rolls by the clock, segment.ms after its first append.
func TestLog_RollByClockWithoutTimestamps(t *testing.T) {
	clk := &clock{ms: 1_000_000}
	cfg := testConfig()
	cfg.Now = clk.now
	cfg.SegmentMs = 1000
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	mustAppend(t, l, simpleBatch(1, 1, -1))
	clk.ms += 1000
	mustAppend(t, l, simpleBatch(1, 1, -1)) // exactly segment.ms: no roll
	if n := len(l.segments()); n != 1 {
		t.Fatalf("%d segments", n)
	}
	clk.ms++
	mustAppend(t, l, simpleBatch(1, 1, -1))
	if segs := l.segments(); len(segs) != 2 || segs[1].base != 2 {
		t.Fatalf("segments %d", len(segs))
	}
}

func TestLog_ReadAcrossSegments(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 100
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	var all [][]byte
	var firsts []int64
	for i := 0; i < 50; i++ {
		b := simpleBatch(1+i%4, 20, int64(i))
		firsts = append(firsts, mustAppend(t, l, b).BaseOffset)
		all = append(all, b)
	}
	if len(l.segments()) < 5 {
		t.Fatalf("only %d segments", len(l.segments()))
	}
	// Every offset finds its batch, whichever segment holds it.
	for i, b := range all {
		h, _ := ParseBatchHeader(b)
		for off := firsts[i]; off <= h.LastOffset(); off++ {
			if got := readBytes(t, l, off, int32(len(b)), false); !bytes.Equal(got, b) {
				t.Fatalf("Read(%d): got %d bytes, want batch %d", off, len(got), i)
			}
		}
	}
	if got := readLog(t, l); !slices.EqualFunc(got, all, bytes.Equal) {
		t.Fatalf("read back %d batches, want %d", len(got), len(all))
	}
}

func TestLog_Notify(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	ch := l.Notify()
	if ch != l.Notify() {
		t.Fatal("Notify should return the same channel until the next advance")
	}
	select {
	case <-ch:
		t.Fatal("closed before any append")
	default:
	}
	mustAppend(t, l, simpleBatch(1, 1, 1))
	select {
	case <-ch:
	default:
		t.Fatal("not closed by the append")
	}
	ch = l.Notify()
	l.Close()
	select {
	case <-ch:
	default:
		t.Fatal("not closed by Close")
	}
	select {
	case <-l.Notify():
	default:
		t.Fatal("Notify after Close should be closed")
	}
}

// One Waiter on many logs is woken by an append to any of them and by a
// close, is taken off a log when woken or by Unwait, and waiting again and
// again on idle logs leaves nothing behind on them.
func TestLog_Waiter(t *testing.T) {
	dir := t.TempDir()
	var logs []*Log
	for i := range 3 {
		logs = append(logs, openLog(t, filepath.Join(dir, fmt.Sprintf("t-%d", i)), testConfig()))
	}
	w := NewWaiter()
	woken := func() bool {
		select {
		case <-w.C():
			return true
		default:
			return false
		}
	}
	for _, l := range logs {
		l.Wait(w)
	}
	if woken() {
		t.Fatal("woken before any append")
	}
	mustAppend(t, logs[1], simpleBatch(1, 1, 1))
	if !woken() {
		t.Fatal("not woken by an append to the second log")
	}
	if n := len(logs[1].waiters); n != 0 {
		t.Fatalf("the woken log keeps %d waiters", n)
	}
	for _, l := range logs {
		l.Unwait(w)
	}
	for i, l := range logs {
		if len(l.waiters) != 0 || l.hasWaiters.Load() {
			t.Fatalf("log %d keeps %d waiters after Unwait", i, len(l.waiters))
		}
	}
	mustAppend(t, logs[0], simpleBatch(1, 1, 1))
	if woken() {
		t.Fatal("woken by a log it no longer waits on")
	}
	for range 1000 {
		for _, l := range logs {
			l.Wait(w)
		}
		for _, l := range logs {
			l.Unwait(w)
		}
	}
	for i, l := range logs {
		if len(l.waiters) != 0 {
			t.Fatalf("log %d holds %d waiters after 1000 waits", i, len(l.waiters))
		}
	}
	logs[2].Wait(w)
	logs[2].Close()
	if !woken() {
		t.Fatal("not woken by Close")
	}
	logs[2].Wait(w)
	if !woken() {
		t.Fatal("a Wait on a closed log should wake at once")
	}
}

func TestLog_ClosedErrors(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	mustAppend(t, l, simpleBatch(1, 1, 1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(simpleBatch(1, 1, 1), AppendOptions{LogAppendTime: -1}); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("Append: %v", err)
	}
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("Read: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("Flush: %v", err)
	}
}

func TestLog_FlushMessagesAdvancesRecoveryPoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.FlushMessages = 3
	l := openLog(t, dir, cfg)
	defer l.Close()
	mustAppend(t, l, simpleBatch(2, 1, 1))
	if rp := l.recoveryPoint.Load(); rp != 0 {
		t.Fatalf("recovery point %d after 2 messages", rp)
	}
	mustAppend(t, l, simpleBatch(1, 1, 1))
	if rp := l.recoveryPoint.Load(); rp != 3 {
		t.Fatalf("recovery point %d after 3 messages", rp)
	}
	mustAppend(t, l, simpleBatch(1, 1, 1))
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if lso, rp, ok, err := readCheckpoint(dir); !ok || err != nil || lso != 0 || rp != 4 {
		t.Fatalf("checkpoint %d %d %v %v", lso, rp, ok, err)
	}
}

func TestLog_FlushIfDue(t *testing.T) {
	clk := &clock{ms: 1000}
	cfg := testConfig()
	cfg.Now = clk.now
	cfg.FlushMs = 100
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	mustAppend(t, l, simpleBatch(1, 1, 1))
	clk.ms += 99
	l.FlushIfDue()
	if rp := l.recoveryPoint.Load(); rp != 0 {
		t.Fatalf("flushed early: %d", rp)
	}
	clk.ms++
	l.FlushIfDue()
	if rp := l.recoveryPoint.Load(); rp != 1 {
		t.Fatalf("not flushed: %d", rp)
	}
}

func TestLog_UpdateConfigLive(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	mustAppend(t, l, simpleBatch(1, 100, 1))
	cfg := testConfig()
	cfg.SegmentBytes = 100
	l.UpdateConfig(cfg)
	mustAppend(t, l, simpleBatch(1, 100, 1))
	if n := len(l.segments()); n != 2 {
		t.Fatalf("%d segments", n)
	}
}

func TestLog_SliceOutlivesDeletedSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.SegmentBytes = 200
	l := openLog(t, dir, cfg)
	defer l.Close()
	b := simpleBatch(1, 150, 1)
	mustAppend(t, l, b)
	mustAppend(t, l, simpleBatch(1, 150, 2))
	res, err := l.Read(0, 1000, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segFile(dir, 0, logSuffix)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("segment file still there: %v", err)
	}
	got, err := res.Slice.ReadAll()
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("read after delete: %d bytes, %v", len(got), err)
	}
	res.Slice.Release()
	res.Slice.Release() // a second release does nothing
	if _, err := res.Slice.File.Stat(); err == nil {
		t.Fatal("file still open after Release")
	}
}

func TestLog_ConcurrentAppendRead(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	cfg.RetentionBytes = 16384
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	const n = 500
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				hw := l.HighWatermark()
				off := l.LogStartOffset() + (hw-l.LogStartOffset())/2
				res, err := l.Read(off, 1000, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				b, err := res.Slice.ReadAll()
				res.Slice.Release()
				if err != nil {
					t.Error(err)
					return
				}
				if len(b) > 0 {
					h, err := ParseBatchHeader(b)
					if err != nil || h.LastOffset() < off || h.BaseOffset > off {
						t.Errorf("Read(%d) got batch %d..%d: %v", off, h.BaseOffset, h.LastOffset(), err)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		mustAppend(t, l, simpleBatch(1+i%3, 50, int64(i)))
		if i%50 == 0 {
			if _, err := l.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
}
