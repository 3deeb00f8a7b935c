package broker

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDataDir_OneBrokerAtATime: a second broker on a data directory in use
// fails to start, even on a new directory where groups.db and txns.db are
// not created yet; once the first is closed the directory can be reused.
// A new data directory gets no groups.db or txns.db at start.
func TestDataDir_OneBrokerAtATime(t *testing.T) {
	defer func(d time.Duration) { dataDirLockTimeout = d }(dataDirLockTimeout)
	dataDirLockTimeout = 100 * time.Millisecond
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"groups.db", "txns.db"} {
		if _, err := os.Stat(filepath.Join(dir, metaDirName, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after New on an empty data dir: %v", name, err)
		}
	}
	if _, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: log}); err == nil || !strings.Contains(err.Error(), "in use by another broker") {
		t.Fatalf("second broker on %s: %v", dir, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: log})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeFiles creates each path under dir (directories as needed) holding
// its own name.
func writeFiles(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkFiles fails unless each path under dir still holds its own name.
func checkFiles(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(got) != p {
			t.Errorf("%s: %q, %v; want it kept as written", p, got, err)
		}
	}
}

// newTestBroker opens a broker on dir with props, logging into logs.
func newTestBroker(t *testing.T, dir string, props map[string]string, logs *lockedBuffer) (*Broker, error) {
	t.Helper()
	b, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Props: props, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err == nil {
		t.Cleanup(func() { b.Close() })
	}
	return b, err
}

// TestDataDir_LeavesWhatGregorDidNotWrite: directories in the data dir that
// hold no partition files are never deleted, whatever their names: another
// broker's data dir (make cluster's node-1, which looks like partition 1
// of a topic "node"), a user's backup-2024, a lost+found, a directory named
// like a deleted partition; a topic whose partition needs one of those
// names is refused with KAFKA_STORAGE_ERROR and nothing is written into it;
// so are the writes of a partition whose name one takes after the start.
func TestDataDir_LeavesWhatGregorDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	foreign := []string{
		"node-1/meta.properties", "node-1/__meta/topics/x.json", "node-1/demo-0/00000000000000000000.log",
		"backup-2024/dump.tar", "lost+found/x", "old-delete/notes.txt", "a.b-delete/x", "mine-7/readme.md",
	}
	writeFiles(t, dir, foreign...)
	var logs lockedBuffer
	b, err := newTestBroker(t, dir, nil, &logs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.createTopic("node", 3, nil); err == nil || !errors.Is(err, errNotPartitionDir) {
		t.Fatalf("creating topic node over the directory node-1: %v", err)
	}
	if b.lookupTopic("node") != nil {
		t.Fatal("topic node exists after a refused create")
	}
	if _, err := b.createTopic("mine", 8, nil); err == nil {
		t.Fatal("topic mine created over mine-7")
	}
	if _, err := os.Stat(filepath.Join(dir, "node-1", partitionMetaName)); err == nil {
		t.Error("partition.metadata written into node-1")
	}
	// One that appears while the broker runs, where a new topic's
	// partition is made: the topic is created, its first write refused.
	writeFiles(t, dir, "late-0/notes.txt")
	foreign = append(foreign, "late-0/notes.txt")
	late, err := b.createTopic("late", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.partitions[0].log.Append(makeBatch([]string{"x"}, -1, -1, -1), storageOpts()); err == nil {
		t.Error("a record written into late-0")
	}
	if _, err := os.Stat(filepath.Join(dir, "late-0", partitionMetaName)); err == nil {
		t.Error("partition.metadata written into late-0")
	}
	if err := b.deleteTopic(late); err != nil { // late-0 is not its partition's: left alone
		t.Fatal(err)
	}
	b.Close()
	if _, err := newTestBroker(t, dir, nil, &logs); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, foreign...)
	if strings.Contains(logs.String(), "removing") {
		t.Errorf("broker log:\n%s", logs.String())
	}
}

// TestDataDir_StrayPartitionRenamedAside: a partition directory no topic
// claims (its topic deleted while the broker was down, here a topic id the
// broker does not know) is renamed <name>.<id>-stray with its files, and
// logged; it is kept across restarts while log.stray.retention.ms has not
// passed, and removed at a start after it has. A partition directory that
// appears while the broker runs (put there by another process) where a new
// topic's partition is made is set aside at that partition's first write.
func TestDataDir_StrayPartitionRenamedAside(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "ghost-0/00000000000000000000.log", "ghost-0/00000000000000000000.index")
	if err := writePartitionMetadata(filepath.Join(dir, "ghost-0"), newUUID()); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	b, err := newTestBroker(t, dir, nil, &logs)
	if err != nil {
		t.Fatal(err)
	}
	strays := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "ghost-0.*-stray"))
		return m
	}
	s := strays()
	if len(s) != 1 {
		t.Fatalf("stray directories %v; log:\n%s", s, logs.String())
	}
	for _, f := range []string{"00000000000000000000.log", "00000000000000000000.index"} {
		if got, err := os.ReadFile(filepath.Join(s[0], f)); err != nil || string(got) != "ghost-0/"+f {
			t.Errorf("%s in the stray directory: %q, %v", f, got, err)
		}
	}
	if !strings.Contains(logs.String(), "stray partition directory renamed aside") {
		t.Errorf("no log line for the stray directory:\n%s", logs.String())
	}
	// A directory for a partition of a new topic that appeared while the
	// broker ran: set aside at the partition's first write, and the new
	// topic starts empty.
	writeFiles(t, dir, "ghost-1/00000000000000000000.log")
	if _, err := b.createTopic("ghost", 2, nil); err != nil {
		t.Fatal(err)
	}
	if s := strays(); len(s) != 1 {
		t.Fatalf("stray directories %v", s)
	}
	p1 := b.lookupTopic("ghost").partitions[1]
	if leo := p1.log.LogEndOffset(); leo != 0 {
		t.Fatalf("new topic's partition 1 at log end %d", leo)
	}
	if _, err := p1.log.Append(makeBatch([]string{"x"}, -1, -1, -1), storageOpts()); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "ghost-1.*-stray"))
	if len(m) != 1 {
		t.Fatalf("ghost-1 not set aside: %v", m)
	}
	if got, err := os.ReadFile(filepath.Join(m[0], "00000000000000000000.log")); err != nil || string(got) != "ghost-1/00000000000000000000.log" {
		t.Fatalf("the set-aside segment: %q, %v", got, err)
	}
	if leo := p1.log.LogEndOffset(); leo != 1 {
		t.Fatalf("new topic's partition 1 at log end %d after one record", leo)
	}
	b.Close()

	if b, err = newTestBroker(t, dir, nil, &logs); err != nil { // within the retention: kept
		t.Fatal(err)
	}
	b.Close()
	if s := strays(); len(s) != 1 {
		t.Fatalf("stray directories after a restart: %v", s)
	}
	if b, err = newTestBroker(t, dir, map[string]string{"log.stray.retention.ms": "0"}, &logs); err != nil {
		t.Fatal(err)
	}
	b.Close() // waits for the background removal
	if s := strays(); len(s) != 0 {
		t.Fatalf("stray directories past the retention: %v", s)
	}
	if b.lookupTopic("ghost") == nil {
		t.Fatal("topic ghost lost")
	}
}

// TestDataDir_LogDirsProperty: log.dirs (or log.dir) of the properties is
// the data directory when Config.DataDir is not given; Config.DataDir wins
// over it with a warning; several directories are refused.
func TestDataDir_LogDirsProperty(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	var logs lockedBuffer
	for _, tc := range []struct {
		dataDir string
		props   map[string]string
		want    string
		warn    bool
	}{
		{"", map[string]string{"log.dirs": a}, a, false},
		{"", map[string]string{"log.dir": a}, a, false},
		{"", map[string]string{"log.dirs": a, "log.dir": b}, a, false},
		{b, map[string]string{"log.dirs": a}, b, true},
		{a, map[string]string{"log.dirs": a + "/"}, a, false},
	} {
		logs.mu.Lock()
		logs.buf.Reset()
		logs.mu.Unlock()
		br, err := newTestBroker(t, tc.dataDir, tc.props, &logs)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if got := br.DataDir(); got != tc.want {
			t.Errorf("%+v: data dir %s, want %s", tc, got, tc.want)
		}
		if _, err := os.Stat(filepath.Join(tc.want, metaPropertiesName)); err != nil {
			t.Errorf("%+v: %v", tc, err)
		}
		if warned := strings.Contains(logs.String(), "is ignored"); warned != tc.warn {
			t.Errorf("%+v: warned %v, want %v:\n%s", tc, warned, tc.warn, logs.String())
		}
		br.Close()
	}
	_, err := newTestBroker(t, "", map[string]string{"log.dirs": a + "," + b}, &logs)
	if err == nil || !strings.Contains(err.Error(), "one data directory") {
		t.Fatalf("two log.dirs: %v", err)
	}
}

// TestDataDir_UnknownMetaPropertiesVersion: a meta.properties of a version
// Gregor does not know is refused at start, as Kafka refuses it.
func TestDataDir_UnknownMetaPropertiesVersion(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "x")
	if err := os.WriteFile(filepath.Join(dir, metaPropertiesName), []byte("version=2\nnode.id=0\ncluster.id=abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	if _, err := newTestBroker(t, dir, nil, &logs); err == nil || !strings.Contains(err.Error(), "unknown meta.properties version 2") {
		t.Fatalf("version=2: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, metaPropertiesName), []byte("version=1\nnode.id=0\ncluster.id=abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newTestBroker(t, dir, nil, &logs); err != nil {
		t.Fatalf("version=1: %v", err)
	}
}

// TestDataDir_DeletionKeepsForeignFiles: a partition directory of
// Gregor's into which another program put a file (found there at a
// restart, or appearing while the broker runs): deleting the topic
// removes the partition's files and keeps that file, in the renamed
// directory, at once and at every later start.
func TestDataDir_DeletionKeepsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	var logs lockedBuffer
	b, err := newTestBroker(t, dir, nil, &logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kept", "live"} {
		tp, err := b.createTopic(name, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tp.partitions[0].log.Append(makeBatch([]string{"x"}, -1, -1, -1), storageOpts()); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	writeFiles(t, dir, "kept-0/notes.txt", "kept-0/sub/more.txt")
	if b, err = newTestBroker(t, dir, nil, &logs); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, "live-0/notes.txt")
	for _, name := range []string{"kept", "live"} {
		if err := b.deleteTopic(b.lookupTopic(name)); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	if _, err := newTestBroker(t, dir, nil, &logs); err != nil { // a start removes -delete directories again
		t.Fatal(err)
	}
	for _, name := range []string{"kept", "live"} {
		m, _ := filepath.Glob(filepath.Join(dir, name+"-0.*-delete"))
		if len(m) != 1 {
			t.Fatalf("%s-0: retired directories %v; log:\n%s", name, m, logs.String())
		}
		want := []string{"notes.txt"}
		if name == "kept" {
			want = append(want, "sub")
		}
		var got []string
		ents, _ := os.ReadDir(m[0])
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v left, want only what Gregor did not write, %v", m[0], got, want)
		}
		if data, err := os.ReadFile(filepath.Join(m[0], "notes.txt")); err != nil || string(data) != name+"-0/notes.txt" {
			t.Errorf("%s/notes.txt: %q, %v", m[0], data, err)
		}
	}
	if !strings.Contains(logs.String(), "it holds files Gregor did not write") {
		t.Errorf("no log line for the kept files:\n%s", logs.String())
	}
}
