//go:build unix

package storage

import (
	"golang.org/x/sys/unix"
)

// mmapFile maps a whole file read-only; an empty file gives nil.
func mmapFile(path string) ([]byte, error) {
	f, size, err := openIndexFile(path, "mmap")
	if f == nil {
		return nil, err
	}
	defer f.Close()
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, ioErr("mmap", path, err)
	}
	return data, nil
}

// munmap releases a mapping made by mmapFile.
func munmap(b []byte) { _ = unix.Munmap(b) }
