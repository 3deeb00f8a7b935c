package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxRequestBytes is Kafka's default socket.request.max.bytes.
const DefaultMaxRequestBytes = 100 << 20

// ErrFrameTooLarge is returned when a size prefix exceeds the cap.
var ErrFrameTooLarge = errors.New("request size exceeds socket.request.max.bytes")

// ErrNegativeFrame is returned when a size prefix is negative.
var ErrNegativeFrame = errors.New("negative request size")

// ReadFrameSize reads a 4-byte size prefix and checks it against max.
// Nothing is allocated before the check.
func ReadFrameSize(r io.Reader, max int32) (int32, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: %d", ErrNegativeFrame, n)
	case n > max:
		return 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, max)
	}
	return n, nil
}

// ReadFrame reads one size-prefixed frame of at most max bytes. The body is
// read in chunks of at most 64 KiB growing the buffer as bytes arrive, so a
// peer that announces a large frame and then stalls holds only what it has
// actually sent.
func ReadFrame(r io.Reader, limit int32) ([]byte, error) {
	n, err := ReadFrameSize(r, limit)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, n)
}

// ReadFrameBody reads the n bytes of a frame whose size prefix was read
// (and checked) with ReadFrameSize.
func ReadFrameBody(r io.Reader, n int32) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	buf := make([]byte, 0, chunk)
	for len(buf) < int(n) {
		want := min(int(n)-len(buf), max(cap(buf)-len(buf), chunk))
		if cap(buf)-len(buf) < want {
			grown := make([]byte, len(buf), min(int(n), 2*cap(buf)+want))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}
