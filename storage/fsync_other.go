//go:build !windows

package storage

import "os"

// fsyncPath fsyncs the file or directory at path. The error is a
// *StorageError.
func fsyncPath(path string, _ bool) error {
	f, err := os.Open(path)
	if err != nil {
		return ioErr("open", path, err)
	}
	err = f.Sync()
	f.Close()
	return ioErr("fsync", path, err)
}

// renameFile renames from to to, replacing to atomically if it exists;
// the caller fsyncs the directory to make it durable.
func renameFile(from, to string) error { return os.Rename(from, to) }
