//go:build unix

package storage

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mmapFile maps a whole file read-only; an empty file gives nil.
func mmapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ioErr("open", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr("stat", path, err)
	}
	if fi.Size() == 0 {
		return nil, nil
	}
	if fi.Size() > math.MaxInt32 {
		return nil, ioErr("mmap", path, fmt.Errorf("index of %d bytes is too large", fi.Size()))
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, ioErr("mmap", path, err)
	}
	return data, nil
}

// munmap releases a mapping made by mmapFile.
func munmap(b []byte) { _ = unix.Munmap(b) }
