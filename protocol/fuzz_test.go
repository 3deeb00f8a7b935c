package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadFrame reads frames from arbitrary bytes with a 64 KiB cap, the
// way the broker's connection reader does: ReadFrameSize, then
// ReadFrameInto into a pooled buffer, which goes back with PutFrame before
// the next frame is read (so later frames reuse earlier frames' buffers).
//
// Invariants: never panics; never returns more than the cap; every frame it
// returns is exactly the announced size and the bytes that followed its
// prefix, whatever a reused buffer held before.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 4, 1})
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 1, 'd', 0, 0, 0, 0, 0, 0, 0, 2, 'e'})
	f.Add(append([]byte{0, 0, 0x10, 0}, bytes.Repeat([]byte{0xAA}, 4096)...))
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for off := 0; ; {
			got, err := ReadFrameSize(r, limit)
			if err != nil {
				return
			}
			frame, err := ReadFrameInto(r, got)
			if err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(in[off:]))
			if len(frame) > limit || n != len(frame) || !bytes.Equal(frame, in[off+4:off+4+n]) {
				t.Fatalf("frame of %d bytes at %d of %d input bytes, announced %d", len(frame), off, len(in), n)
			}
			off += 4 + n
			PutFrame(frame)
		}
	})
}

// FuzzParseRequestHeader parses arbitrary request headers, flexible or not.
//
// Invariants: never panics; the body returned is a suffix of the frame.
func FuzzParseRequestHeader(f *testing.F) {
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 3, 'c', 'l', 'i', 0, 9}, true)
	f.Add([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff}, false)
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 2, 1, 0x80}, true)
	f.Fuzz(func(t *testing.T, frame []byte, flexible bool) {
		_, body, err := ParseRequestHeader(frame, flexible)
		if err != nil {
			return
		}
		if len(body) > len(frame) || !bytes.Equal(body, frame[len(frame)-len(body):]) {
			t.Fatal("body is not a suffix of the frame")
		}
	})
}
