package storage

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLogDir_StopsReuseInodes: stop after stop with appends in between,
// the checkpoint and the producer snapshot are replaced without freeing or
// allocating inodes once the spares exist and keptSnapshots snapshots are
// there (ext4 makes every inode allocated right after many were freed
// expensive), and the snapshots do not pile up. Linux only: the spares
// are swapped in with renameat2 (sys_linux.go).
func TestLogDir_StopsReuseInodes(t *testing.T) {
	root := t.TempDir()
	cfg := smallSegments()
	cfg.SegmentBytes = 1 << 20 // no roll: only the stops replace files
	cfg.SegmentMs = 1 << 62    // (the test batches' timestamps are old)
	cfg.Logger = discardLogger
	inodes := func() map[uint64]string {
		ents, err := os.ReadDir(filepath.Join(root, "a-0"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint64]string{}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[fi.Sys().(*syscall.Stat_t).Ino] = e.Name()
		}
		return out
	}
	var want [][]byte
	var before map[uint64]string
	for cycle := range 6 {
		d, logs := openLogDirLogs(t, root, cfg, "a-0")
		if cycle > 0 {
			checkLog(t, logs[0], want)
		}
		want = append(want, fillLog(t, logs[0], 2)...)
		if _, err := d.CloseLogs(logs); err != nil {
			t.Fatal(err)
		}
		after := inodes()
		snaps := 0
		for _, name := range after {
			if strings.HasSuffix(name, snapshotSuffix) {
				snaps++
			}
		}
		if snaps > keptSnapshots {
			t.Fatalf("cycle %d: %d snapshots, want at most %d: %v", cycle, snaps, keptSnapshots, after)
		}
		if cycle >= 4 {
			for ino := range after {
				if _, ok := before[ino]; !ok {
					t.Fatalf("cycle %d: a new inode %d (%s); before: %v", cycle, ino, after[ino], before)
				}
			}
		}
		before = after
	}
}
