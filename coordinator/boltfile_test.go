package coordinator

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func fileExists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestGroupsDBCreatedOnFirstWrite: Open on an empty directory creates no
// groups.db; loading a __consumer_offsets partition does, and a groups.db
// lost afterwards is rebuilt from the log by the next load (the view's
// checkpoint starts at 0 without the file).
func TestGroupsDBCreatedOnFirstWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, dbFileName)
	log := newMemLog()
	c, err := Open(Config{Dir: dir, Log: log, LogPartitions: 50})
	if err != nil {
		t.Fatal(err)
	}
	if fileExists(t, path) {
		t.Fatalf("%s exists after Open", dbFileName)
	}
	p := PartitionFor("g", 50)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if !fileExists(t, path) {
		t.Fatalf("%s missing after LoadPartition", dbFileName)
	}
	if code := simpleCommit(t, c, "g", "t", map[int32]int64{0: 7, 1: 9}); code != 0 {
		t.Fatalf("commit: code %d", code)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c = openLogged(t, dir, log)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{"t": {0: 7, 1: 9}}
	if got := c.Committed("g"); !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("rebuilt from the log: %v, want %v", got, want)
	}
	if from := log.replays[len(log.replays)-1]; from != 0 {
		t.Fatalf("replayed from %d, want 0", from)
	}
}

// TestGroupsDBWithoutLogCreatedOnFirstCommit: without a log groups.db is
// the only store: absent it holds nothing, the first commit creates it and
// a reopen restores from it.
func TestGroupsDBWithoutLogCreatedOnFirstCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, dbFileName)
	c, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if fileExists(t, path) {
		t.Fatalf("%s exists after Open", dbFileName)
	}
	if got := c.Committed("g"); len(got) != 0 {
		t.Fatalf("committed before any commit: %v", got)
	}
	if code := simpleCommit(t, c, "g", "t", map[int32]int64{0: 3}); code != 0 {
		t.Fatalf("commit: code %d", code)
	}
	if !fileExists(t, path) {
		t.Fatalf("%s missing after a commit", dbFileName)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if code := simpleCommit(t, c, "g", "t", map[int32]int64{0: 4}); code == 0 {
		t.Fatal("commit after Close succeeded")
	}
	c, err = Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[string]map[int32]int64{"t": {0: 3}}
	if got := c.Committed("g"); !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
}

// TestTxnsDBCreatedOnFirstWrite: OpenTxn on an empty directory creates no
// txns.db; loading a __transaction_state partition does.
func TestTxnsDBCreatedOnFirstWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, txnDBFileName)
	c := openTxnLogged(t, testTxnConfig(dir), newMemLog())
	if fileExists(t, path) {
		t.Fatalf("%s exists after OpenTxn", txnDBFileName)
	}
	if c.HasUnloggedState() {
		t.Fatal("HasUnloggedState without txns.db")
	}
	if err := c.LoadPartition(PartitionFor("tx", 50)); err != nil {
		t.Fatal(err)
	}
	if !fileExists(t, path) {
		t.Fatalf("%s missing after LoadPartition", txnDBFileName)
	}
}
