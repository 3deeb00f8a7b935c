package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadFrame reads a frame from arbitrary bytes with a 1 KiB cap.
//
// Invariants: never panics; never returns more than the cap; a frame it
// returns is exactly the announced size and the bytes that followed it.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 4, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ReadFrame(bytes.NewReader(in), 1024)
		if err != nil {
			return
		}
		if len(got) > 1024 || len(in) < 4 || int(binary.BigEndian.Uint32(in)) != len(got) || !bytes.Equal(got, in[4:4+len(got)]) {
			t.Fatalf("frame of %d bytes from %d input bytes", len(got), len(in))
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
