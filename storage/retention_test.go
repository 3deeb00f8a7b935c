package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// segmentBases lists the log's segment base offsets.
func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.segments() {
		out = append(out, s.base)
	}
	return out
}

// timedLog has four segments of 3 one-record batches, timestamps 1000*offset.
func timedLog(t *testing.T, clk *clock) (*Log, string) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.Now = clk.now
	b := simpleBatch(1, 100, 0)
	cfg.SegmentBytes = int64(len(b)) * 3
	l := openLog(t, dir, cfg)
	for i := int64(0); i < 12; i++ {
		mustAppend(t, l, simpleBatch(1, 100, i*1000))
	}
	if got := segmentBases(l); !equal(got, []int64{0, 3, 6, 9}) {
		t.Fatalf("segments %v", got)
	}
	return l, dir
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRetention_ByTime(t *testing.T) {
	clk := &clock{ms: 100_000}
	l, dir := timedLog(t, clk)
	defer l.Close()
	cfg := testConfig()
	cfg.Now = clk.now
	cfg.SegmentBytes = l.cfg.SegmentBytes
	cfg.RetentionMs = 100_000 - 5500 // segment 0 (max ts 2000) and 1 (5000) are older
	l.UpdateConfig(cfg)
	n, err := l.ApplyRetention()
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if got := segmentBases(l); !equal(got, []int64{6, 9}) || l.LogStartOffset() != 6 {
		t.Fatalf("segments %v, lso %d", got, l.LogStartOffset())
	}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if _, err := os.Stat(segFile(dir, 3, suffix)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s of segment 3 not deleted", suffix)
		}
	}
	if _, err := l.Read(5, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below lso: %v", err)
	}
	if lso, _, ok, _ := readCheckpoint(dir); !ok || lso != 6 {
		t.Fatalf("persisted lso %d", lso)
	}
	// Everything expires: the active segment goes too, replaced by an empty one.
	clk.ms += 1_000_000
	if n, err := l.ApplyRetention(); err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if got := segmentBases(l); !equal(got, []int64{12}) || l.LogStartOffset() != 12 || l.LogEndOffset() != 12 || l.Size() != 0 {
		t.Fatalf("segments %v lso %d leo %d", got, l.LogStartOffset(), l.LogEndOffset())
	}
	if n, _ := l.ApplyRetention(); n != 0 {
		t.Fatalf("deleted the empty active segment")
	}
	if res := mustAppend(t, l, simpleBatch(1, 1, clk.ms)); res.BaseOffset != 12 || res.LogStartOffset != 12 {
		t.Fatalf("%+v", res)
	}
}

func TestRetention_ByTimeSurvivesReopen(t *testing.T) {
	clk := &clock{ms: 100_000}
	l, dir := timedLog(t, clk)
	cfg := l.cfg
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.RetentionMs = 100_000 - 5500
	l = openLog(t, dir, cfg) // closed segments' largest timestamps come from their time indexes
	defer l.Close()
	if n, err := l.ApplyRetention(); err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
}

func TestRetention_BySize(t *testing.T) {
	clk := &clock{ms: 100_000}
	l, dir := timedLog(t, clk)
	defer l.Close()
	seg := l.segments()[0].size.Load()
	cfg := l.cfg
	// As in Kafka, a segment goes only if the rest is still >= retention.bytes.
	cfg.RetentionBytes = l.Size() - 2*seg + 1
	l.UpdateConfig(cfg)
	if n, err := l.ApplyRetention(); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	cfg.RetentionBytes = l.Size() - seg
	l.UpdateConfig(cfg)
	if n, err := l.ApplyRetention(); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if got := segmentBases(l); !equal(got, []int64{6, 9}) || l.LogStartOffset() != 6 {
		t.Fatalf("segments %v lso %d", got, l.LogStartOffset())
	}
	cfg.RetentionBytes = l.Size()
	l.UpdateConfig(cfg)
	if n, _ := l.ApplyRetention(); n != 0 {
		t.Fatalf("deleted %d at exactly retention.bytes", n)
	}
	l.Close()
	l2 := openLog(t, dir, cfg)
	defer l2.Close()
	if l2.LogStartOffset() != 6 {
		t.Fatalf("lso after reopen %d", l2.LogStartOffset())
	}
}

func TestRetention_ForgetsExpiredProducers(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 300
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	mustAppend(t, l, pbatch(1, 0, 0, 1))
	mustAppend(t, l, pbatch(2, 0, 0, 1))
	for i := 0; i < 5; i++ {
		mustAppend(t, l, simpleBatch(1, 100, 1))
	}
	if _, err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	st := l.ProducerStates()
	if len(st) != 1 || st[0].ProducerID != pid(2) {
		t.Fatalf("%+v", st)
	}
	// Producer 1 is unknown again: any sequence is accepted.
	mustAppend(t, l, pbatch(1, 0, 50, 1))
}

func TestDeleteRecordsBefore(t *testing.T) {
	clk := &clock{ms: 100_000}
	l, dir := timedLog(t, clk)
	defer l.Close()
	if lso, err := l.DeleteRecordsBefore(4); err != nil || lso != 4 {
		t.Fatalf("%d %v", lso, err)
	}
	// Segment 0 (offsets 0-2) is gone; segment 3 stays for offsets 4-5.
	if got := segmentBases(l); !equal(got, []int64{3, 6, 9}) {
		t.Fatalf("segments %v", got)
	}
	if _, err := l.Read(3, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read 3: %v", err)
	}
	if b := readBytes(t, l, 4, 1000, true); len(b) == 0 {
		t.Fatal("read 4 empty")
	}
	if lso, _ := l.DeleteRecordsBefore(2); lso != 4 {
		t.Fatalf("moving back: lso %d", lso)
	}
	if _, err := l.DeleteRecordsBefore(13); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond hw: %v", err)
	}
	if _, err := l.DeleteRecordsBefore(-2); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("-2: %v", err)
	}
	if lso, _, ok, _ := readCheckpoint(dir); !ok || lso != 4 {
		t.Fatalf("persisted lso %d", lso)
	}
	// -1 means the high watermark: everything goes, an empty segment remains.
	if lso, err := l.DeleteRecordsBefore(-1); err != nil || lso != 12 {
		t.Fatalf("%d %v", lso, err)
	}
	if got := segmentBases(l); !equal(got, []int64{12}) {
		t.Fatalf("segments %v", got)
	}
	res, err := l.Read(12, 1000, true)
	if err != nil || res.Slice.Size != 0 || res.LogStartOffset != 12 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestDeleteRecordsBefore_PersistsInsideSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, testConfig())
	fillLog(t, l, 5)
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, dir)
	l.Close()
	l2 := openLog(t, crashed, testConfig())
	defer l2.Close()
	if l2.LogStartOffset() != 3 {
		t.Fatalf("lso %d after crash", l2.LogStartOffset())
	}
}
