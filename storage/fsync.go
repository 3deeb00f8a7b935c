package storage

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// SyncDir fsyncs the directory dir so that the entries created, renamed and
// removed in it are durable. The error is a *StorageError. On Windows, where
// a directory cannot be flushed, it does nothing (fsync_windows.go).
func SyncDir(dir string) error { return fsyncPath(dir, true) }

// syncTree fsyncs, with sync, every directory under root (root included)
// and, with files, every regular file: what syncfs(2) makes durable, for
// systems without it (sys_other.go). The files are synced several at a
// time (Parallel), the directories after them. A file or directory
// removed while the tree is walked is skipped; root itself must exist. The
// first error is returned, a *StorageError.
func syncTree(root string, files bool, sync func(path string, dir bool) error) error {
	var paths, dirs []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil && p != root && errors.Is(err, fs.ErrNotExist):
			return nil // removed since its directory was read
		case err != nil:
			return ioErr("read", p, err)
		case e.IsDir():
			dirs = append(dirs, p)
		case files && e.Type().IsRegular():
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	errs := make([]error, len(paths))
	Parallel(len(paths), func(i int) {
		if err := sync(paths[i], false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs[i] = ioErr("fsync", paths[i], err)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if err := sync(d, true); err != nil && (d == root || !errors.Is(err, fs.ErrNotExist)) {
			return ioErr("fsync", d, err)
		}
	}
	return nil
}
