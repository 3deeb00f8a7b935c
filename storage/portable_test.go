package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// The portable fallbacks of sys_other.go and mmap_other.go, which are what
// macOS and Windows run, exercised here on every system.

// TestPlaceByRename_ReplacesAtomically: the rename-based replacement puts
// the new content in place of the old, leaves no temporary file and no
// spare, creates the file when there was none, and treats a temporary file
// already gone (placed by a later write) as done.
func TestPlaceByRename_ReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, checkpointName)
	tmp := path + deferredSuffix
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string) {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Fatalf("%s holds %q (%v), want %q", path, b, err, want)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("directory holds %v, want only %s", ents, checkpointName)
		}
	}
	write(tmp, "v1 logStartOffset=0 recoveryPoint=0\n") // no file yet
	if err := placeByRename(tmp, path); err != nil {
		t.Fatal(err)
	}
	check("v1 logStartOffset=0 recoveryPoint=0\n")
	write(tmp, "v1 logStartOffset=5 recoveryPoint=42\n")
	if err := placeByRename(tmp, path); err != nil {
		t.Fatal(err)
	}
	check("v1 logStartOffset=5 recoveryPoint=42\n")
	if err := placeByRename(tmp, path); err != nil { // tmp already placed
		t.Fatalf("placing a temporary file already gone: %v", err)
	}
	check("v1 logStartOffset=5 recoveryPoint=42\n")

	// WriteFileAtomic goes through the same rename on every
	// system; read back through the checkpoint parser.
	if err := WriteFileAtomic(path, encodeCheckpoint(checkpoint{logStartOffset: 7, recoveryPoint: 9, highWatermark: 8})); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := readCheckpointFile(dir); err != nil || !ok || c != (checkpoint{7, 9, 8}) {
		t.Fatalf("checkpoint after WriteFileAtomic: %+v %v %v", c, ok, err)
	}
}

// TestSyncTree_SyncsEveryFileAndDirectory: syncTree, syncfs(2)'s stand-in,
// fsyncs every regular file and every directory under the root (files
// first, then the directories), only the directories when asked for
// those, skips what was removed meanwhile and reports any other failure as
// a *StorageError naming the path.
func TestSyncTree_SyncsEveryFileAndDirectory(t *testing.T) {
	root := t.TempDir()
	var wantFiles, wantDirs []string
	wantDirs = append(wantDirs, root)
	for _, p := range []string{"orders-0", "orders-1", "orders-1/sub"} {
		if err := os.Mkdir(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		wantDirs = append(wantDirs, filepath.Join(root, p))
	}
	for _, p := range []string{"meta.properties", "orders-0/00000000000000000000.log", "orders-0/00000000000000000000.index",
		"orders-0/checkpoint.deferred.tmp", "orders-1/sub/x"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
		wantFiles = append(wantFiles, filepath.Join(root, p))
	}
	if err := os.Symlink(filepath.Join(root, "orders-0"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var files, dirs []string
	record := func(p string, dir bool) error {
		mu.Lock()
		defer mu.Unlock()
		if dir {
			dirs = append(dirs, p)
		} else {
			if len(dirs) > 0 {
				t.Errorf("file %s synced after a directory", p)
			}
			files = append(files, p)
		}
		return nil
	}
	if err := syncTree(root, true, record); err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	slices.Sort(dirs)
	slices.Sort(wantFiles)
	slices.Sort(wantDirs)
	if !slices.Equal(files, wantFiles) || !slices.Equal(dirs, wantDirs) {
		t.Fatalf("synced files %v and dirs %v, want %v and %v", files, dirs, wantFiles, wantDirs)
	}

	files, dirs = nil, nil
	if err := syncTree(root, false, record); err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	if len(files) != 0 || !slices.Equal(dirs, wantDirs) {
		t.Fatalf("directories only: synced files %v and dirs %v, want no file and %v", files, dirs, wantDirs)
	}

	// A file removed between the walk and its fsync is skipped; any other
	// failure stops the sync with the path.
	gone := filepath.Join(root, "orders-0", "00000000000000000000.index")
	failing := filepath.Join(root, "orders-0", "00000000000000000000.log")
	eio := errors.New("input/output error")
	err := syncTree(root, true, func(p string, dir bool) error {
		switch p {
		case gone:
			return &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		case failing:
			return eio
		}
		return nil
	})
	var se *StorageError
	if !errors.As(err, &se) || se.Path != failing || !errors.Is(err, eio) {
		t.Fatalf("failing fsync: %v, want a *StorageError for %s", err, failing)
	}
	if err := syncTree(root, true, func(p string, dir bool) error {
		if p == gone {
			return &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		}
		return nil
	}); err != nil {
		t.Fatalf("a file removed meanwhile: %v", err)
	}

	// The real fsyncs, and a root that is not there.
	if err := syncTree(root, true, fsyncPath); err != nil {
		t.Fatal(err)
	}
	if err := syncTree(filepath.Join(root, "missing"), true, fsyncPath); !errors.As(err, &se) {
		t.Fatalf("missing root: %v, want a *StorageError", err)
	}
}

// TestReadIndexFile_MatchesMapping: the heap copy that stands for mmap
// where there is none holds exactly the bytes the mapping does; an empty
// file gives nil and a missing one a *StorageError.
func TestReadIndexFile_MatchesMapping(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00000000000000000000.index")
	var want []byte // entries (10i, 100i)
	for i := range 1000 {
		want = binary.BigEndian.AppendUint32(want, uint32(10*i))
		want = binary.BigEndian.AppendUint32(want, uint32(100*i))
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	heap, err := readIndexFile(path)
	if err != nil || !bytes.Equal(heap, want) {
		t.Fatalf("readIndexFile: %d bytes, %v; want the %d written", len(heap), err, len(want))
	}
	mapped, err := mmapFile(path)
	if err != nil || !bytes.Equal(mapped, heap) {
		t.Fatalf("mmapFile and readIndexFile differ (%v)", err)
	}
	munmap(mapped)

	var x offsetIndex
	x.setHeap(heap, len(heap))
	if rel, pos := x.lookup(5555); rel != 5550 || pos != 55500 {
		t.Fatalf("lookup(5555) on the heap copy = %d, %d; want 5550, 55500", rel, pos)
	}

	empty := filepath.Join(dir, "empty.index")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readIndexFile(empty); b != nil || err != nil {
		t.Fatalf("empty file: %v %v, want nil nil", b, err)
	}
	var se *StorageError
	if _, err := readIndexFile(filepath.Join(dir, "missing.index")); !errors.As(err, &se) {
		t.Fatalf("missing file: %v, want a *StorageError", err)
	}
}
