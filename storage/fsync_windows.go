package storage

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// fsyncPath fsyncs (FlushFileBuffers) the file at path; for a directory it
// does nothing. Windows cannot flush a directory: FlushFileBuffers needs a
// handle with write access, which a directory does not give, and fails
// with "Access is denied". NTFS journals the changes to directories, and
// the renames that must be durable (renameFile) are made write-through.
// The error is a *StorageError.
func fsyncPath(path string, dir bool) error {
	if dir {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0) // FlushFileBuffers needs write access
	if err != nil {
		return ioErr("open", path, err)
	}
	err = f.Sync()
	f.Close()
	return ioErr("fsync", path, err)
}

// renameFile renames from to to, replacing to if it exists, and returns
// once the rename is on disk (MOVEFILE_WRITE_THROUGH): on Windows this
// stands for the directory fsync that follows a rename elsewhere.
func renameFile(from, to string) error {
	f, err := windows.UTF16PtrFromString(longPath(from))
	if err == nil {
		var t *uint16
		if t, err = windows.UTF16PtrFromString(longPath(to)); err == nil {
			err = windows.MoveFileEx(f, t, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH)
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// longPath gives a path too long for the Win32 limit (MAX_PATH, 260) the
// \\?\ prefix that lifts it, as package os does for its own calls.
func longPath(p string) string {
	if len(p) < 248 || strings.HasPrefix(p, `\\`) {
		return p
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return `\\?\` + abs
}
