package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fillLog appends n batches of varying size and returns them.
func fillLog(t *testing.T, l *Log, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		b := simpleBatch(1+i%3, 40+i%7, 1000+int64(i))
		mustAppend(t, l, b)
		out = append(out, b)
	}
	return out
}

// header parses a batch the test built, failing the test if it cannot.
func header(t *testing.T, b []byte) BatchHeader {
	t.Helper()
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatalf("parse batch header: %v", err)
	}
	return h
}

// readFile, writeFile, appendFile and fileSize fail the test on any error.
func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, p string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// closeLog closes a log the test is done with, failing on an error.
func closeLog(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func smallSegments() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 200
	return cfg
}

func checkLog(t *testing.T, l *Log, want [][]byte) {
	t.Helper()
	got := readLog(t, l)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("read back %d batches, want %d", len(got), len(want))
	}
	wantLEO := int64(0)
	if len(want) > 0 {
		wantLEO = header(t, want[len(want)-1]).LastOffset() + 1
	}
	if l.LogEndOffset() != wantLEO || l.HighWatermark() != wantLEO {
		t.Fatalf("leo %d hw %d, want %d", l.LogEndOffset(), l.HighWatermark(), wantLEO)
	}
}

func TestLog_ReopenAfterClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, smallSegments())
	all := fillLog(t, l, 40)
	nsegs := len(l.segments())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); err != nil {
		t.Fatal("no clean-shutdown marker")
	}
	l = openLog(t, dir, smallSegments())
	defer l.Close()
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("marker not removed by Open")
	}
	if len(l.segments()) != nsegs {
		t.Fatalf("%d segments, want %d", len(l.segments()), nsegs)
	}
	// Only the active segment's indexes were loaded.
	for _, s := range l.segments()[:nsegs-1] {
		if s.loaded.Load() {
			t.Fatalf("segment %d loaded at open", s.base)
		}
	}
	checkLog(t, l, all)
	// And appending continues where it left off.
	more := fillLog(t, l, 5)
	checkLog(t, l, append(all, more...))
}

func TestLog_ReopenWithoutClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, smallSegments())
	all := fillLog(t, l, 40)
	crashed := crashCopy(t, dir)
	closeLog(t, l)
	l2 := openLog(t, crashed, smallSegments())
	defer l2.Close()
	checkLog(t, l2, all)
}

// crashLogWithTail builds a log, copies it as if crashed, and returns the
// copy's directory, the batches and the active segment's path.
func crashLogWithTail(t *testing.T) (string, [][]byte, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, smallSegments())
	all := fillLog(t, l, 30)
	act := l.active().base
	crashed := crashCopy(t, dir)
	closeLog(t, l)
	return crashed, all, segFile(crashed, act, logSuffix)
}

func TestLog_RecoverTruncatesTornWrite(t *testing.T) {
	dir, all, active := crashLogWithTail(t)
	size := fileSize(t, active)
	last := all[len(all)-1]
	if err := os.Truncate(active, size-int64(len(last))/2); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, dir, smallSegments())
	defer l.Close()
	checkLog(t, l, all[:len(all)-1])
	if got := fileSize(t, active); got != size-int64(len(last)) {
		t.Fatalf("active segment is %d bytes, want %d", got, size-int64(len(last)))
	}
	// The log continues at the truncation point.
	b := simpleBatch(1, 5, 1)
	h := header(t, all[len(all)-2])
	if res := mustAppend(t, l, b); res.BaseOffset != h.LastOffset()+1 {
		t.Fatalf("appended at %d, want %d", res.BaseOffset, h.LastOffset()+1)
	}
}

func TestLog_RecoverTruncatesTornHeader(t *testing.T) {
	dir, all, active := crashLogWithTail(t)
	appendFile(t, active, all[0][:30]) // a partial header
	l := openLog(t, dir, smallSegments())
	defer l.Close()
	checkLog(t, l, all)
}

func TestLog_RecoverTruncatesGarbage(t *testing.T) {
	dir, all, active := crashLogWithTail(t)
	appendFile(t, active, bytes.Repeat([]byte{0xa5}, 1000))
	l := openLog(t, dir, smallSegments())
	defer l.Close()
	checkLog(t, l, all)
}

func TestLog_RecoverTruncatesFlippedByte(t *testing.T) {
	dir, all, active := crashLogWithTail(t)
	b := readFile(t, active)
	b[len(b)-3] ^= 0x10 // in the last batch's records: CRC mismatch
	writeFile(t, active, b)
	l := openLog(t, dir, smallSegments())
	defer l.Close()
	checkLog(t, l, all[:len(all)-1])
}

func TestLog_RecoverTruncatesBadOffset(t *testing.T) {
	dir, all, active := crashLogWithTail(t)
	b := readFile(t, active)
	last := all[len(all)-1]
	// baseOffset is outside the CRC; offsets going backwards are caught
	// (a gap is not damage: the cleaner leaves them).
	binary.BigEndian.PutUint64(b[len(b)-len(last):], 0)
	writeFile(t, active, b)
	l := openLog(t, dir, smallSegments())
	defer l.Close()
	checkLog(t, l, all[:len(all)-1])
}

func TestLog_RecoverFromRecoveryPointOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, smallSegments())
	all := fillLog(t, l, 40)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, dir)
	closeLog(t, l)
	l2 := openLog(t, crashed, smallSegments())
	defer l2.Close()
	segs := l2.segments()
	for _, s := range segs[:len(segs)-1] {
		if s.loaded.Load() {
			t.Fatalf("segment %d before the recovery point was validated", s.base)
		}
	}
	checkLog(t, l2, all)
}

func TestLog_RecoverDamageInEarlierSegmentDropsLaterOnes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, smallSegments())
	all := fillLog(t, l, 40)
	crashed := crashCopy(t, dir)
	closeLog(t, l)
	// Recover everything.
	if err := os.Remove(filepath.Join(crashed, checkpointName)); err != nil {
		t.Fatal(err)
	}
	// Damage the first batch of the second segment.
	second := l.segments()[1].base
	p := segFile(crashed, second, logSuffix)
	b := readFile(t, p)
	b[BatchHeaderSize+2] ^= 1
	writeFile(t, p, b)
	l2 := openLog(t, crashed, smallSegments())
	defer l2.Close()
	if n := len(l2.segments()); n != 2 {
		t.Fatalf("%d segments, want 2 (the first and the truncated second)", n)
	}
	var want [][]byte
	for _, b := range all {
		if header(t, b).BaseOffset < second {
			want = append(want, b)
		}
	}
	checkLog(t, l2, want)
	if _, err := os.Stat(segFile(crashed, l.segments()[2].base, logSuffix)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("later segment not deleted")
	}
}

func TestLog_RebuildsMissingIndexes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		which func(segs []int64) int64
		harm  func(t *testing.T, path string)
	}{
		{"delete active .index", last, remove(indexSuffix)},
		{"delete active .timeindex", last, remove(timeIndexSuffix)},
		{"truncate active .index mid-entry", last, truncate(indexSuffix, 5)},
		{"truncate active .timeindex to zero", last, truncate(timeIndexSuffix, 0)},
		{"delete old .index", first, remove(indexSuffix)},
		{"delete old .timeindex", first, remove(timeIndexSuffix)},
		{"truncate old .index to zero", first, truncate(indexSuffix, 0)},
		{"truncate old .timeindex mid-entry", first, truncate(timeIndexSuffix, 13)},
		{"garbage old .index", first, garbage(indexSuffix)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			l := openLog(t, dir, smallSegments())
			all := fillLog(t, l, 40)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var bases []int64
			for _, s := range l.segments() {
				bases = append(bases, s.base)
			}
			base := tt.which(bases)
			origIdx := readFile(t, segFile(dir, base, indexSuffix))
			origTime := readFile(t, segFile(dir, base, timeIndexSuffix))
			if len(origIdx) == 0 || len(origTime) == 0 {
				t.Fatalf("segment %d has empty indexes", base)
			}
			tt.harm(t, offsetFileName(dir, base, ""))
			l = openLog(t, dir, smallSegments())
			checkLog(t, l, all)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, segFile(dir, base, indexSuffix)); !bytes.Equal(got, origIdx) {
				t.Errorf(".index rebuilt as %x, want %x", got, origIdx)
			}
			if got := readFile(t, segFile(dir, base, timeIndexSuffix)); !bytes.Equal(got, origTime) {
				t.Errorf(".timeindex rebuilt as %x, want %x", got, origTime)
			}
		})
	}
}

func first(b []int64) int64 { return b[0] }
func last(b []int64) int64  { return b[len(b)-1] }

func remove(suffix string) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		if err := os.Remove(p + suffix); err != nil {
			t.Fatal(err)
		}
	}
}

func truncate(suffix string, n int64) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		if err := os.Truncate(p+suffix, n); err != nil {
			t.Fatal(err)
		}
	}
}

func garbage(suffix string) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		b := readFile(t, p+suffix)
		for i := range b {
			b[i] = byte(i * 7)
		}
		writeFile(t, p+suffix, b)
	}
}

func TestLog_OpenEmptyDirAndLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "checkpoint.tmp"), []byte("x"))
	writeFile(t, segFile(dir, 500, indexSuffix), []byte("orphan"))
	l := openLog(t, dir, testConfig())
	defer l.Close()
	if l.LogEndOffset() != 0 || len(l.segments()) != 1 {
		t.Fatalf("leo %d, %d segments", l.LogEndOffset(), len(l.segments()))
	}
	for _, name := range []string{"checkpoint.tmp", filepath.Base(segFile(dir, 500, indexSuffix))} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s not removed", name)
		}
	}
}

func TestLog_Delete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, testConfig())
	mustAppend(t, l, simpleBatch(1, 1, 1))
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("directory still there")
	}
}
