package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer for a logger written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// capturingConfig is smallSegments with a logger into buf.
func capturingConfig(buf *syncBuffer) Config {
	c := smallSegments()
	// Through a LogDir a recovery is logged at debug level.
	c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return c
}

// openLogDirLogs opens names under root through a LogDir and syncs it.
func openLogDirLogs(t *testing.T, root string, cfg Config, names ...string) (*LogDir, []*Log) {
	t.Helper()
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	logs := make([]*Log, len(names))
	for i, n := range names {
		if logs[i], err = d.OpenLog(n, cfg); err != nil {
			t.Fatalf("OpenLog(%s): %v", n, err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	return d, logs
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestLogDir_CloseLogsWritesOneListAndReopenTrustsIt(t *testing.T) {
	root := t.TempDir()
	var buf syncBuffer
	cfg := capturingConfig(&buf)
	names := []string{"a-0", "a-1", "b-0"}
	d, logs := openLogDirLogs(t, root, cfg, names...)
	var want [][][]byte
	for _, l := range logs {
		want = append(want, fillLog(t, l, 25))
	}
	errs, err := d.CloseLogs(logs)
	if err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("CloseLogs: %v %v", errs, err)
	}
	list, err := os.ReadFile(filepath.Join(root, logDirCleanName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(list), logDirCleanHeader) {
		t.Fatalf("clean-shutdown list without its header: %q", list)
	}
	got := strings.Fields(strings.TrimPrefix(string(list), logDirCleanHeader))
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Fatalf("clean-shutdown list %q, want %q", got, names)
	}
	for _, n := range names {
		dir := filepath.Join(root, n)
		if fileExists(filepath.Join(dir, cleanShutdownName)) {
			t.Fatalf("%s: a per-log marker beside the list", n)
		}
		if ents, _ := filepath.Glob(filepath.Join(dir, "*"+tmpSuffix)); len(ents) > 0 {
			t.Fatalf("%s: temporary files left after CloseLogs: %v", n, ents)
		}
	}

	buf = syncBuffer{}
	d, err = OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if !d.CleanShutdown() {
		t.Fatal("CleanShutdown false after CloseLogs")
	}
	for i, n := range names {
		l, err := d.OpenLog(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, l, want[i])
		logs[i] = l
	}
	if strings.Contains(buf.String(), "unclean") {
		t.Fatalf("a listed log was recovered as after a crash:\n%s", buf.String())
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if fileExists(filepath.Join(root, logDirCleanName)) || d.CleanShutdown() {
		t.Fatal("the clean-shutdown list outlived the first Sync")
	}
	for i, l := range logs {
		want[i] = append(want[i], fillLog(t, l, 3)...)
		checkLog(t, l, want[i])
		l.Close()
	}
}

// A log the list does not name (it was open when the broker died) is
// recovered, its torn tail cut, even though the others are trusted.
func TestLogDir_UnlistedLogRecovered(t *testing.T) {
	root := t.TempDir()
	var buf syncBuffer
	cfg := capturingConfig(&buf)
	d, logs := openLogDirLogs(t, root, cfg, "a-0", "a-1")
	want0 := fillLog(t, logs[0], 10)
	want1 := fillLog(t, logs[1], 10)
	if _, err := d.CloseLogs(logs[:1]); err != nil {
		t.Fatal(err)
	}
	// a-1 "crashes": its files stay as they are, with a torn batch at the end.
	act := logs[1].active()
	f, err := act.use()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("torn batch"), act.size.Load()); err != nil {
		t.Fatal(err)
	}
	act.unuse()

	d, err = OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	l0, err := d.OpenLog("a-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "unclean") {
		t.Fatalf("the listed log was recovered:\n%s", buf.String())
	}
	l1, err := d.OpenLog("a-1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "unclean") || !strings.Contains(buf.String(), "a-1") {
		t.Fatalf("the unlisted log was not recovered:\n%s", buf.String())
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	checkLog(t, l0, want0)
	checkLog(t, l1, want1)
	l0.Close()
	l1.Close()
}

// Without the list (the broker died before writing it), every log is
// recovered from its recovery point and nothing is lost.
func TestLogDir_NoListMeansRecovery(t *testing.T) {
	root := t.TempDir()
	var buf syncBuffer
	cfg := capturingConfig(&buf)
	d, logs := openLogDirLogs(t, root, cfg, "a-0")
	want := fillLog(t, logs[0], 30)
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, logDirCleanName)); err != nil {
		t.Fatal(err)
	}
	buf = syncBuffer{}
	_, logs = openLogDirLogs(t, root, cfg, "a-0")
	if !strings.Contains(buf.String(), "unclean") {
		t.Fatalf("not recovered without the list:\n%s", buf.String())
	}
	checkLog(t, logs[0], want)
	logs[0].Close()
}

// A list entry is used once: a log opened, closed alone and opened again in
// the same run follows its own marker, not the list.
func TestLogDir_ListEntryUsedOnce(t *testing.T) {
	root := t.TempDir()
	var buf syncBuffer
	cfg := capturingConfig(&buf)
	d, logs := openLogDirLogs(t, root, cfg, "a-0")
	fillLog(t, logs[0], 5)
	if _, err := d.CloseLogs(logs); err != nil {
		t.Fatal(err)
	}
	d, logs = openLogDirLogs(t, root, cfg, "a-0")
	// Appended to, then "lost" without a close: a reopen must recover it.
	fillLog(t, logs[0], 5)
	logs[0].mu.Lock()
	logs[0].closed.Store(true)
	logs[0].releaseAllLocked()
	logs[0].mu.Unlock()
	buf = syncBuffer{}
	l, err := d.OpenLog("a-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.Contains(buf.String(), "unclean") {
		t.Fatalf("the second open in one run trusted the list again:\n%s", buf.String())
	}
}

// A recovered log's new checkpoint is written beside the old one and
// renamed into place only by Sync.
func TestLogDir_CheckpointReplacedBySync(t *testing.T) {
	root := t.TempDir()
	cfg := smallSegments()
	cfg.Logger = discardLogger
	dir := filepath.Join(root, "a-0")
	l := openLog(t, dir, cfg)
	fillLog(t, l, 30)
	crashed := crashCopy(t, dir)
	l.Close()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(crashed, dir); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err = d.OpenLog("a-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now, _ := os.ReadFile(filepath.Join(dir, checkpointName))
	if !bytes.Equal(now, before) {
		t.Fatalf("checkpoint replaced before Sync: %q, was %q", now, before)
	}
	if !fileExists(filepath.Join(dir, checkpointName+deferredSuffix)) {
		t.Fatal("no deferred checkpoint waiting for Sync")
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	c, ok, err := readCheckpointFile(dir)
	if err != nil || !ok || c.recoveryPoint != l.LogEndOffset() {
		t.Fatalf("checkpoint after Sync %+v ok=%v err=%v, want recovery point %d", c, ok, err, l.LogEndOffset())
	}
	if fileExists(filepath.Join(dir, checkpointName+deferredSuffix)) {
		t.Fatal("deferred checkpoint left after Sync")
	}
}

// Creating a log writes no checkpoint or leader-epoch file (both read the
// same when missing), so it needs no fsync; nothing waits for Sync.
func TestLogDir_NewLogWritesNothingToSync(t *testing.T) {
	root := t.TempDir()
	cfg := smallSegments()
	cfg.Logger = discardLogger
	cfg.ReplicatedHighWatermark = true
	d, err := OpenLogDir(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.OpenLog("new-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.pending.Load() {
		t.Fatal("a new log left work for Sync")
	}
	for _, name := range []string{checkpointName, leaderEpochFileName} {
		if _, err := os.Stat(filepath.Join(root, "new-0", name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s written for a new log (err %v)", name, err)
		}
	}
	l.Close()
	l = openLog(t, filepath.Join(root, "new-0"), cfg)
	defer l.Close()
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 || l.HighWatermark() != 0 {
		t.Fatalf("reopened new log: lso %d leo %d hw %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
}

func TestLogDir_OpenLogRefusesPaths(t *testing.T) {
	d, err := OpenLogDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", ".", "..", "a/b", "../x"} {
		if l, err := d.OpenLog(name, testConfig()); err == nil {
			l.Close()
			t.Fatalf("OpenLog(%q) succeeded", name)
		}
	}
}

// A file named like the list but not Gregor's (no header) is neither
// trusted nor removed.
func TestLogDir_ForeignListIgnored(t *testing.T) {
	root := t.TempDir()
	var buf syncBuffer
	cfg := capturingConfig(&buf)
	_, logs := openLogDirLogs(t, root, cfg, "a-0")
	want := fillLog(t, logs[0], 5)
	// "crash": no close, and someone else's file of that name.
	foreign := []byte("a-0\n")
	if err := os.WriteFile(filepath.Join(root, logDirCleanName), foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	buf = syncBuffer{}
	d, logs2 := openLogDirLogs(t, root, cfg, "a-0")
	if d.CleanShutdown() || !strings.Contains(buf.String(), "unclean") {
		t.Fatalf("a foreign file was taken for the list:\n%s", buf.String())
	}
	if b, err := os.ReadFile(filepath.Join(root, logDirCleanName)); err != nil || !bytes.Equal(b, foreign) {
		t.Fatalf("the foreign file was changed or removed: %q %v", b, err)
	}
	checkLog(t, logs2[0], want)
	// Closing does not write over it either: each log keeps its own marker.
	if _, err := d.CloseLogs(logs2); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, logDirCleanName)); err != nil || !bytes.Equal(b, foreign) {
		t.Fatalf("CloseLogs wrote over the foreign file: %q %v", b, err)
	}
	if !fileExists(filepath.Join(root, "a-0", cleanShutdownName)) {
		t.Fatal("no per-log marker when the list cannot be written")
	}
	logs[0].mu.Lock()
	logs[0].closed.Store(true)
	logs[0].releaseAllLocked()
	logs[0].mu.Unlock()
}
