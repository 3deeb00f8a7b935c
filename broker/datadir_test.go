package broker

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
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
