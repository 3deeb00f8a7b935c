package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A log opened through a LogDir where its directory does not exist has
// nothing on disk until it needs a file: reading it, asking for its
// offsets, a leader epoch, a flush, retention and closing it (also after
// AddFile) leave no directory, and the next open finds it unborn again.
// CreateLog, which makes it without looking for its directory, makes the
// same log.
func TestLogDir_NewLogIsUnbornUntilItsFirstWrite(t *testing.T) {
	t.Run("OpenLog", func(t *testing.T) { testNewLogIsUnborn(t, (*LogDir).OpenLog) })
	t.Run("CreateLog", func(t *testing.T) { testNewLogIsUnborn(t, (*LogDir).CreateLog) })
}

func testNewLogIsUnborn(t *testing.T, open func(*LogDir, string, Config) (*Log, error)) {
	root := t.TempDir()
	cfg := testConfig()
	cfg.ReplicatedHighWatermark = true
	dir := filepath.Join(root, "new-0")
	noDir := func(when string) {
		t.Helper()
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: the log's directory exists (err %v)", when, err)
		}
	}
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := open(d, "new-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	noDir("OpenLog")
	if !l.Unborn() {
		t.Fatal("a new log is not unborn")
	}
	if err := l.AddFile("partition.metadata", []byte("version: 0\n")); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if b := readBytes(t, l, 0, math.MaxInt32, true); len(b) != 0 {
		t.Fatalf("read %d bytes of an empty log", len(b))
	}
	res, err := l.ReadForFollower(0, math.MaxInt32, true)
	if err != nil {
		t.Fatal(err)
	}
	res.Slice.Release()
	rc, _, err := l.ReadCommitted(0, math.MaxInt32, true)
	if err != nil {
		t.Fatal(err)
	}
	rc.Slice.Release()
	if _, _, ok := l.OffsetForTimestamp(0); ok {
		t.Fatal("an empty log has an offset for a timestamp")
	}
	if _, _, ok := l.MaxTimestamp(); ok {
		t.Fatal("an empty log has a largest timestamp")
	}
	if err := l.AssignLeaderEpoch(3, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(0); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	noDir("reads, offsets, a leader epoch, retention and a flush")
	if errs, err := d.CloseLogs([]*Log{l}); err != nil || errs[0] != nil {
		t.Fatalf("CloseLogs: %v %v", errs, err)
	}
	noDir("CloseLogs")

	d, logs := openLogDirLogs(t, root, cfg, "new-0")
	l = logs[0]
	if !l.Unborn() || l.LogEndOffset() != 0 || l.HighWatermark() != 0 || l.LogStartOffset() != 0 {
		t.Fatalf("reopened: unborn %v, lso %d leo %d hw %d", l.Unborn(), l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	if err := l.AddFile("partition.metadata", []byte("version: 0\ntopic_id: x\n")); err != nil {
		t.Fatal(err)
	}
	batch := simpleBatch(3, 10, 1000)
	want := bytes.Clone(batch)
	if _, err := l.Append(batch, AppendOptions{LeaderEpoch: 5, LogAppendTime: -1}); err != nil {
		t.Fatal(err)
	}
	if l.Unborn() {
		t.Fatal("still unborn after an append")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "partition.metadata")); err != nil || string(b) != "version: 0\ntopic_id: x\n" {
		t.Fatalf("partition.metadata: %q %v", b, err)
	}
	if err := l.SetHighWatermark(3); err != nil {
		t.Fatal(err)
	}
	if errs, err := d.CloseLogs([]*Log{l}); err != nil || errs[0] != nil {
		t.Fatalf("CloseLogs: %v %v", errs, err)
	}

	// Born as createSegment makes a segment: its reopen after a clean
	// stop rebuilds nothing.
	var logged syncBuffer
	cfg.Logger = capturingConfig(&logged).Logger
	_, logs = openLogDirLogs(t, root, cfg, "new-0")
	l = logs[0]
	defer l.Close()
	if strings.Contains(logged.String(), "rebuilding") {
		t.Fatalf("the reopen after a clean stop rebuilt something:\n%s", logged.String())
	}
	if l.Unborn() || l.LogEndOffset() != 3 || l.HighWatermark() != 3 {
		t.Fatalf("reopened after a write: unborn %v, leo %d hw %d", l.Unborn(), l.LogEndOffset(), l.HighWatermark())
	}
	if got := readLog(t, l); len(got) != 1 || !bytes.Equal(got[0][61:], want[61:]) {
		t.Fatalf("read back %d batches", len(got))
	}
	if e := l.LeaderEpochs(); len(e) != 1 || e[0] != (EpochEntry{Epoch: 5, StartOffset: 0}) {
		t.Fatalf("leader epochs %v", e)
	}
}

// An unborn log's first write, a follower's truncation and readers at the
// same time: the log is born once and nothing written is lost (run with
// -race).
func TestLogDir_UnbornLogBornOnceUnderConcurrentUse(t *testing.T) {
	root := t.TempDir()
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	for round := range 20 {
		name := filepath.Base(t.TempDir()) + "-" + string(rune('a'+round))
		l, err := d.OpenLog(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				res, err := l.Read(0, math.MaxInt32, true)
				if err == nil {
					res.Slice.Release()
				}
			})
		}
		wg.Go(func() {
			if err := l.AddFile("meta", []byte("m")); err != nil {
				t.Error(err)
			}
		})
		for range 3 {
			wg.Go(func() {
				if _, err := l.Append(simpleBatch(1, 10, 1000), AppendOptions{LogAppendTime: -1}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if l.LogEndOffset() != 3 || len(readLog(t, l)) != 3 {
			t.Fatalf("round %d: leo %d", round, l.LogEndOffset())
		}
		if b, err := os.ReadFile(filepath.Join(root, name, "meta")); err != nil || string(b) != "m" {
			t.Fatalf("round %d: meta %q %v", round, b, err)
		}
		if errs, err := d.CloseLogs([]*Log{l}); err != nil || errs[0] != nil {
			t.Fatalf("CloseLogs: %v %v", errs, err)
		}
	}
}

// A directory that appears at an unborn log's path before its first write
// is not the log's: nothing in it is written over. Without an in-the-way
// function the birth refuses it (the append fails, its files stay as they
// were) unless it is empty; with one that sets it aside, the birth makes
// a fresh directory and the set-aside files are intact.
func TestLogDir_DirectoryInAnUnbornLogsWay(t *testing.T) {
	root := t.TempDir()
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	theirs := []byte("not the log's\n")
	intrude := func(name string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), theirs, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	unborn := func(name string) *Log {
		t.Helper()
		l, err := d.CreateLog(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.AddFile("partition.metadata", []byte("mine\n")); err != nil {
			t.Fatal(err)
		}
		return l
	}
	untouched := func(dir string) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 {
			t.Fatalf("%s holds %d entries, want only its own file", dir, len(ents))
		}
		if b, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.log")); err != nil || !bytes.Equal(b, theirs) {
			t.Fatalf("their file: %q, %v", b, err)
		}
	}

	// Refused without an in-the-way function.
	l := unborn("a-0")
	dir := intrude("a-0")
	if _, err := l.Append(simpleBatch(1, 8, 1), AppendOptions{LogAppendTime: -1}); err == nil {
		t.Fatal("an append wrote into a directory the log did not make")
	}
	untouched(dir)
	l.Close()

	// An empty directory is used.
	l = unborn("b-0")
	if err := os.Mkdir(filepath.Join(root, "b-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simpleBatch(1, 8, 1))
	if b, err := os.ReadFile(filepath.Join(root, "b-0", "partition.metadata")); err != nil || string(b) != "mine\n" {
		t.Fatalf("partition.metadata: %q, %v", b, err)
	}
	l.Close()

	// Set aside by the owner's function.
	var asked []string
	d.SetInTheWay(func(dir string) error {
		asked = append(asked, dir)
		return os.Rename(dir, dir+".aside")
	})
	l = unborn("c-0")
	dir = intrude("c-0")
	if res := mustAppend(t, l, simpleBatch(2, 8, 1)); res.BaseOffset != 0 {
		t.Fatalf("appended at %d", res.BaseOffset)
	}
	if len(asked) != 1 || asked[0] != dir {
		t.Fatalf("in-the-way function asked about %v", asked)
	}
	untouched(dir + ".aside")
	if b, err := os.ReadFile(filepath.Join(dir, "partition.metadata")); err != nil || string(b) != "mine\n" {
		t.Fatalf("partition.metadata: %q, %v", b, err)
	}
	if leo := l.LogEndOffset(); leo != 2 {
		t.Fatalf("log end %d", leo)
	}
	l.Close()
}
