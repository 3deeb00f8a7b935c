package storage

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The Linux ways of the LogDir and of atomic replacement: renameat2's
// exchange and syncfs(2). Other systems have portable equivalents in
// sys_other.go.

// placeFile puts tmp in place of path: swapped with it (the old content
// kept as path's spare with keepSpare, else removed), or renamed to it when
// path does not exist (or the file system cannot swap). A tmp already gone
// (a later write placed a newer one) is not an error.
func placeFile(tmp, path string, keepSpare bool) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		if !keepSpare || os.Rename(tmp, path+spareSuffix) != nil {
			_ = os.Remove(tmp)
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Lstat(tmp); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
	}
	return placeByRename(tmp, path)
}

// syncFS syncs the file system holding d (syncfs(2)).
func (d *LogDir) syncFS() error {
	f, err := os.Open(d.path)
	if err != nil {
		return ioErr("open", d.path, err)
	}
	defer f.Close()
	return ioErr("syncfs", d.path, unix.Syncfs(int(f.Fd())))
}

// syncEntries makes durable the renames Sync has just done: on Linux
// another syncfs(2).
func (d *LogDir) syncEntries() error { return d.syncFS() }
