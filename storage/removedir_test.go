package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestIsLogFile(t *testing.T) {
	for name, want := range map[string]bool{
		"00000000000000000000.log":              true,
		"00000000000000001234.index":            true,
		"00000000000000001234.timeindex":        true,
		"00000000000000001234.snapshot":         true,
		"00000000000000001234.txnindex":         true,
		"00000000000000001234.log.cleaned":      true,
		"00000000000000001234.index.swap":       true,
		"00000000000000001234.snapshot.tmp":     true,
		"checkpoint":                            true,
		"checkpoint.deferred.tmp":               true,
		"checkpoint.spare":                      true,
		"clean-shutdown":                        true,
		"leader-epoch-checkpoint":               true,
		"leader-epoch-checkpoint.tmp":           true,
		"cleaner-offset-checkpoint":             true,
		"partition.metadata":                    false, // the owner's, unless named
		"0000.log":                              false,
		"notes.txt":                             false,
		"notes.tmp":                             false,
		"00000000000000000000.log.bak":          false,
		"abcdefghijklmnopqrst.log":              false,
		"00000000000000000000.log.cleaned.orig": false,
	} {
		if got := IsLogFile(name); got != want {
			t.Errorf("IsLogFile(%q) = %v, want %v", name, got, want)
		}
	}
	if !IsLogFile("partition.metadata", "partition.metadata") || !IsLogFile("partition.metadata.tmp", "partition.metadata") {
		t.Error("an owned name is not recognised")
	}
}

// TestLog_DeleteKeepsForeignFiles: Delete removes the log's files and the
// owner's, and keeps anything else with the directory; a directory with
// only the log's files goes.
func TestLog_DeleteKeepsForeignFiles(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig()
	cfg.OwnedFiles = []string{"partition.metadata"}
	for _, foreign := range [][]string{nil, {"notes.txt"}, {"notes.txt", "sub"}} {
		dir := filepath.Join(root, "p", "t-"+string(rune('0'+len(foreign))))
		l := openLog(t, dir, cfg)
		for range 3 {
			mustAppend(t, l, simpleBatch(2, 10, 1))
		}
		if err := l.AddFile("partition.metadata", []byte("version: 0\n")); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, f := range foreign {
			if f == "sub" {
				if err := os.MkdirAll(filepath.Join(dir, f, "deeper"), 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Delete(); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(dir)
		if len(foreign) == 0 {
			if !os.IsNotExist(err) {
				t.Errorf("a log's own directory left after Delete: %v %v", ents, err)
			}
			continue
		}
		var left []string
		for _, e := range ents {
			left = append(left, e.Name())
		}
		if !slices.Equal(left, foreign) {
			t.Errorf("left in %s: %v, want %v", dir, left, foreign)
		}
	}
}

func TestIsSegmentFile(t *testing.T) {
	for name, want := range map[string]bool{
		"00000000000000000000.log":       true,
		"99999999999999999999.index":     true,
		"00000000000000000007.timeindex": true,
		"00000000000000000007.txnindex":  true,
		"00000000000000000007.snapshot":  true,
		"+0000000000000000007.log":       false,
		"0000000000000000007.log":        false,
		"00000000000000000007.log.tmp":   false,
		"00000000000000000007.logs":      false,
		"checkpoint":                     false,
	} {
		if got := IsSegmentFile(name); got != want {
			t.Errorf("IsSegmentFile(%q) = %v, want %v", name, got, want)
		}
	}
}
