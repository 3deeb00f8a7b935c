//go:build !unix

package storage

// mmapFile reads a whole index file onto the heap (readIndexFile): an
// index of a closed segment is only ever read, so a copy serves as the
// read-only mapping does on Unix (mmap_unix.go), at the cost of memory
// rather than page cache.
func mmapFile(path string) ([]byte, error) { return readIndexFile(path) }

// munmap releases what mmapFile returned: the heap copy is left to the
// garbage collector.
func munmap([]byte) {}
