package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func init() {
	// STORAGE_TEST_MAX_OPEN_FILES=2 go test ./storage/ runs every test with
	// the logs opened alone sharing a cache of two open files.
	if n, err := strconv.Atoi(os.Getenv("STORAGE_TEST_MAX_OPEN_FILES")); err == nil && n > 0 {
		soloFiles = &fileCache{}
		soloFiles.limit.Store(int64(n))
	}
}

// openUnder counts the process's open files and memory mappings of files
// under root (Linux; -1, -1 elsewhere).
func openUnder(t *testing.T, root string) (fds, maps int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1, -1
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, root+"/") {
			fds++
		}
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, " "+root+"/") {
			maps++
		}
	}
	return fds, maps
}

// smallSegments is a config whose logs roll every few batches and index
// every batch, so that closed segments have mapped indexes.
func cacheTestConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 1
	return cfg
}

func openBounded(t *testing.T, root string, limit int, cfg Config, n int) (*LogDir, []*Log) {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p-%d", i)
	}
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	d.SetMaxOpenFiles(limit)
	logs := make([]*Log, n)
	for i, name := range names {
		if logs[i], err = d.OpenLog(name, cfg); err != nil {
			t.Fatalf("OpenLog(%s): %v", name, err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	return d, logs
}

// checkBound checks that d keeps at most limit segment files open and
// that the process has no more files open or mapped under root than that
// (two index mappings per open segment).
func checkBound(t *testing.T, d *LogDir, root string, limit int) {
	t.Helper()
	if st := d.FileStats(); st.Open > int64(limit) {
		t.Fatalf("%d segment files open, limit %d", st.Open, limit)
	}
	if fds, maps := openUnder(t, root); fds > limit || maps > 2*limit {
		t.Fatalf("%d files open and %d mapped under the log dir, limit %d", fds, maps, limit)
	}
}

func TestLogDir_OpenFilesBounded(t *testing.T) {
	root := t.TempDir()
	const limit, n = 8, 50
	d, logs := openBounded(t, root, limit, cacheTestConfig(), n)
	want := make([][][]byte, n)
	for round := range 12 {
		for i, l := range logs {
			b := simpleBatch(1+round%3, 60, 1000+int64(round))
			mustAppend(t, l, b)
			want[i] = append(want[i], b)
		}
		checkBound(t, d, root, limit)
	}
	for i, l := range logs {
		if got := readLog(t, l); !equalBatches(got, want[i]) {
			t.Fatalf("log %d: read back %d batches, want %d", i, len(got), len(want[i]))
		}
		if len(l.segments()) < 3 {
			t.Fatalf("log %d has %d segments, want several", i, len(l.segments()))
		}
	}
	checkBound(t, d, root, limit)
	if st := d.FileStats(); st.Closes == 0 || st.Opens <= int64(limit) {
		t.Fatalf("stats %+v: expected files closed and reopened", st)
	}
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
	if fds, _ := openUnder(t, root); fds > 0 {
		t.Fatalf("%d files still open after CloseLogs", fds)
	}
	d, logs = openBounded(t, root, limit, cacheTestConfig(), n)
	for i, l := range logs {
		if got := readLog(t, l); !equalBatches(got, want[i]) {
			t.Fatalf("log %d after reopening: read back %d batches, want %d", i, len(got), len(want[i]))
		}
	}
	checkBound(t, d, root, limit)
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
}

func equalBatches(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// Slices pin their files: held across the closing of every other file, and
// across their segment's deletion, they read what they held.
func TestLogDir_SliceHeldAcrossEviction(t *testing.T) {
	root := t.TempDir()
	const limit, n = 2, 20
	d, logs := openBounded(t, root, limit, cacheTestConfig(), n)
	first := make([][]byte, n)
	for round := range 8 {
		for i, l := range logs {
			b := simpleBatch(2, 60, 1000+int64(round))
			mustAppend(t, l, b)
			if round == 0 {
				first[i] = b
			}
		}
	}
	slices := make([]Slice, n)
	for i, l := range logs {
		res, err := l.Read(0, int32(len(first[i])), true)
		if err != nil {
			t.Fatal(err)
		}
		slices[i] = res.Slice
	}
	if st := d.FileStats(); st.Open < n {
		t.Fatalf("%d open with %d Slices held", st.Open, n)
	}
	// Release half; the others stay pinned while the released ones are
	// closed to make room for appends and reads of every log.
	for i := 0; i < n; i += 2 {
		slices[i].Release()
	}
	for i, l := range logs {
		mustAppend(t, l, simpleBatch(1, 60, 2000))
		if i%2 == 0 {
			readLog(t, l)
		}
	}
	// Delete the held segments: retention unlinks their files.
	for i := 1; i < n; i += 2 {
		if _, err := logs[i].DeleteRecordsBefore(logs[i].segments()[1].base); err != nil {
			t.Fatal(err)
		}
		if _, err := logs[i].ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if fileExists(segFile(logs[i].Dir(), 0, logSuffix)) {
			t.Fatalf("log %d: segment 0 not deleted", i)
		}
	}
	for i := 1; i < n; i += 2 {
		got, err := slices[i].ReadAll()
		if err != nil {
			t.Fatalf("Slice of log %d after eviction and deletion: %v", i, err)
		}
		if !bytes.Equal(got, first[i]) {
			t.Fatalf("Slice of log %d read other bytes", i)
		}
		slices[i].Release()
	}
	checkBound(t, d, root, limit)
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// Readers, Slices and writers of many logs at once, with two files allowed:
// every read returns exactly what was appended (run with -race).
func TestLogDir_ConcurrentUseUnderTinyBound(t *testing.T) {
	root := t.TempDir()
	const limit, n, rounds = 2, 12, 30
	d, logs := openBounded(t, root, limit, cacheTestConfig(), n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i, l := range logs {
		wg.Go(func() {
			for r := range rounds {
				b := simpleBatch(1+r%2, 50, 1000+int64(r))
				if _, err := l.Append(b, AppendOptions{LogAppendTime: -1}); err != nil {
					errs <- fmt.Errorf("log %d: append: %w", i, err)
					return
				}
				if r%7 == 0 {
					if err := l.Flush(); err != nil {
						errs <- fmt.Errorf("log %d: flush: %w", i, err)
						return
					}
				}
			}
		})
		wg.Go(func() {
			var held []Slice
			defer func() {
				for _, s := range held {
					s.Release()
				}
			}()
			for off := int64(0); off < rounds; {
				hw := l.HighWatermark()
				res, err := l.Read(off, math.MaxInt32, true)
				if err != nil {
					errs <- fmt.Errorf("log %d: read %d: %w", i, off, err)
					return
				}
				if res.Slice.Size == 0 {
					res.Slice.Release()
					runtime.Gosched()
					if off >= hw {
						continue
					}
					errs <- fmt.Errorf("log %d: empty read at %d below %d", i, off, hw)
					return
				}
				b, err := res.Slice.ReadAll()
				if err != nil {
					errs <- fmt.Errorf("log %d: ReadAll at %d: %w", i, off, err)
					return
				}
				h, err := ParseBatchHeader(b)
				if err != nil || h.BaseOffset > off || h.LastOffset() < off {
					errs <- fmt.Errorf("log %d: read at %d gave batch %d..%d (%v)", i, off, h.BaseOffset, h.LastOffset(), err)
					return
				}
				off = h.LastOffset() + 1
				held = append(held, res.Slice)
				if len(held) > 3 {
					held[0].Release()
					held = held[1:]
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkBound(t, d, root, limit)
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// A crash (no Close) after many files were closed to make room loses no
// appended record, whether or not flush.messages asked for fsyncs.
func TestLogDir_CrashAfterEvictionsRecovers(t *testing.T) {
	for _, flush := range []int64{math.MaxInt64, 1} {
		t.Run(fmt.Sprintf("flush.messages=%d", flush), func(t *testing.T) {
			root := t.TempDir()
			const limit, n = 4, 30
			cfg := cacheTestConfig()
			cfg.FlushMessages = flush
			d, logs := openBounded(t, root, limit, cfg, n)
			want := make([][][]byte, n)
			for round := range 10 {
				for i, l := range logs {
					b := simpleBatch(1+round%3, 60, 1000+int64(round))
					mustAppend(t, l, b)
					want[i] = append(want[i], b)
				}
			}
			if st := d.FileStats(); st.Closes == 0 {
				t.Fatalf("no file was closed: %+v", st)
			}
			// The process "dies": the logs are never closed, and a new
			// LogDir opens the directory as the next start would.
			d2, logs2 := openBounded(t, root, limit, cfg, n)
			for i, l := range logs2 {
				if !l.Recovered() {
					t.Fatalf("log %d was not recovered", i)
				}
				if got := readLog(t, l); !equalBatches(got, want[i]) {
					t.Fatalf("log %d: recovered %d batches, want %d", i, len(got), len(want[i]))
				}
			}
			checkBound(t, d2, root, 2*limit) // the dead LogDir's files are still open here
			if _, err := d2.CloseLogs(logs2); err != nil {
				t.Fatal(err)
			}
			_ = d
		})
	}
}

// A dirty file is fsynced before it is closed; if that fsync fails, the
// log refuses appends and flushes as after any failed fsync.
func TestLogDir_FailedFsyncBeforeCloseIsSticky(t *testing.T) {
	root := t.TempDir()
	d, logs := openBounded(t, root, 1, testConfig(), 2)
	a, b := logs[0], logs[1]
	mustAppend(t, a, simpleBatch(1, 10, 1000))
	fail := errors.New("injected fsync failure")
	var synced []string
	syncBeforeClose = func(f *os.File) error {
		synced = append(synced, filepath.Base(filepath.Dir(f.Name())))
		return fail
	}
	defer func() { syncBeforeClose = (*os.File).Sync }()
	mustAppend(t, b, simpleBatch(1, 10, 1000)) // closes a's file
	if len(synced) != 1 || synced[0] != "p-0" {
		t.Fatalf("fsyncs before closing: %v, want p-0's", synced)
	}
	syncBeforeClose = (*os.File).Sync
	var se *StorageError
	if _, err := a.Append(simpleBatch(1, 10, 1000), AppendOptions{LogAppendTime: -1}); !errors.As(err, &se) || !errors.Is(err, fail) {
		t.Fatalf("append after the failed fsync: %v", err)
	}
	if err := a.Flush(); !errors.Is(err, fail) {
		t.Fatalf("flush after the failed fsync: %v", err)
	}
	if got := readLog(t, a); len(got) != 1 {
		t.Fatalf("read %d batches", len(got))
	}
	mustAppend(t, b, simpleBatch(1, 10, 1000))
	_, _ = d.CloseLogs(logs)
}

// A file that cannot be reopened gives a *StorageError, as when it could
// not be opened the first time; reads work again once it is back.
func TestLogDir_ReopenErrorIsStorageError(t *testing.T) {
	root := t.TempDir()
	d, logs := openBounded(t, root, 1, testConfig(), 2)
	a, b := logs[0], logs[1]
	mustAppend(t, a, simpleBatch(1, 10, 1000))
	mustAppend(t, b, simpleBatch(1, 10, 1000)) // closes a's file
	p := segFile(a.Dir(), 0, logSuffix)
	if err := os.Rename(p, p+".away"); err != nil {
		t.Fatal(err)
	}
	_, err := a.Read(0, math.MaxInt32, true)
	var se *StorageError
	if !errors.As(err, &se) || se.Op != "open" || se.Path != p {
		t.Fatalf("read of a file that is gone: %v", err)
	}
	if err := os.Rename(p+".away", p); err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, a); len(got) != 1 {
		t.Fatalf("read %d batches", len(got))
	}
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
}
