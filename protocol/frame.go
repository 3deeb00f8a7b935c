package protocol

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// DefaultMaxRequestBytes is Kafka's default socket.request.max.bytes.
const DefaultMaxRequestBytes = 100 << 20

// ErrFrameTooLarge is returned when a size prefix exceeds the cap.
var ErrFrameTooLarge = errors.New("request size exceeds socket.request.max.bytes")

// ErrNegativeFrame is returned when a size prefix is negative.
var ErrNegativeFrame = errors.New("negative request size")

// ReadFrameSize reads a 4-byte size prefix and checks it against max.
// Nothing is allocated before the check.
// From a *bufio.Reader the prefix is taken without copying it (or
// allocating); errors are those of io.ReadFull either way.
func ReadFrameSize(r io.Reader, max int32) (int32, error) {
	var n int32
	if br, ok := r.(*bufio.Reader); ok && br.Size() >= 4 {
		b, err := br.Peek(4)
		if err != nil {
			if len(b) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		n = int32(binary.BigEndian.Uint32(b))
		br.Discard(4)
	} else {
		var sz [4]byte
		if _, err := io.ReadFull(r, sz[:]); err != nil {
			return 0, err
		}
		n = int32(binary.BigEndian.Uint32(sz[:]))
	}
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: %d", ErrNegativeFrame, n)
	case n > max:
		return 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, max)
	}
	return n, nil
}

// Frame buffers are kept for reuse by power-of-two size class, from 4 KiB
// to 4 MiB, up to maxRetainedFrameBytes in all: a burst of large produce
// requests must not leave the broker holding its peak memory afterwards.
// Larger frames are allocated and left to the collector. A reused buffer
// is not zeroed: ReadFrameInto overwrites every byte it returns.
const (
	minPooledFrame        = 12 // 4 KiB
	maxPooledFrame        = 22 // 4 MiB
	maxRetainedFrameBytes = 32 << 20
)

var framePool struct {
	sync.Mutex
	free     [maxPooledFrame + 1][][]byte
	retained int
}

// frameClass is the pool's size class for an n-byte frame, or -1 when such
// frames are not pooled: larger than the largest class, or empty (a frame
// of size 0 carries no header; it is read, refused and dropped).
func frameClass(n int) int {
	if n <= 0 || n > 1<<maxPooledFrame {
		return -1
	}
	return max(bits.Len(uint(n-1)), minPooledFrame)
}

// FrameAllocSize is how many bytes ReadFrameInto allocates for an n-byte
// frame (its size class), which is what a memory budget must charge.
func FrameAllocSize(n int32) int64 {
	if c := frameClass(int(n)); c >= 0 {
		return 1 << c
	}
	return int64(n)
}

// ReadFrameInto reads the n-byte body of a frame into a reused buffer when
// one is free. Give the buffer back with PutFrame once nothing refers to it.
func ReadFrameInto(r io.Reader, n int32) ([]byte, error) {
	var buf []byte
	if c := frameClass(int(n)); c >= 0 {
		fp := &framePool
		fp.Lock()
		if k := len(fp.free[c]); k > 0 {
			buf = fp.free[c][k-1][:n]
			fp.free[c] = fp.free[c][:k-1]
			fp.retained -= cap(buf)
		}
		fp.Unlock()
		if buf == nil {
			buf = make([]byte, n, 1<<c)
		}
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		PutFrame(buf)
		return nil, err
	}
	return buf, nil
}

// PutFrame returns a buffer from ReadFrameInto for reuse (or drops it when
// enough are kept already).
func PutFrame(buf []byte) {
	if poisonFrames.Load() {
		b := buf[:cap(buf)]
		for i := range b {
			b[i] = poisonByte
		}
	}
	c := frameClass(cap(buf))
	if c < 0 || cap(buf) != 1<<c {
		return
	}
	fp := &framePool
	fp.Lock()
	if fp.retained+cap(buf) <= maxRetainedFrameBytes {
		fp.free[c] = append(fp.free[c], buf[:0])
		fp.retained += cap(buf)
	}
	fp.Unlock()
}
