package storage

import (
	"os"
	"sync/atomic"
)

// Slice is a byte range of a segment file, for sendfile-style transfer. The
// file stays open until Release, even if the segment is deleted meanwhile
// or its LogDir is over its bound of open files (it pins the file).
type Slice struct {
	File      *os.File
	Pos, Size int64
	h         *sliceHandle
}

type sliceHandle struct {
	seg      *segment
	released atomic.Bool
}

// Release gives the segment back; it must be called once per Slice (further
// calls do nothing). The Slice must not be used afterwards.
func (s Slice) Release() {
	if s.h != nil && s.h.released.CompareAndSwap(false, true) {
		s.h.seg.unuse()
		s.h.seg.release()
	}
}

// ReadAll reads the Slice's bytes.
func (s Slice) ReadAll() ([]byte, error) {
	if s.Size == 0 {
		return nil, nil
	}
	b := make([]byte, s.Size)
	if _, err := s.File.ReadAt(b, s.Pos); err != nil {
		return nil, ioErr("read", s.File.Name(), err)
	}
	return b, nil
}
