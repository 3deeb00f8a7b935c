package protocol

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestOut_CopyRegionSendsExactBytes exercises copyRegion, which is how
// every file region is sent on systems without sendfile (out_other.go),
// on Linux too: over a real loopback TCP connection a region from the
// middle of a file arrives byte for byte, the file's own position is left
// where it was (concurrent fetches of one segment share the *os.File), and
// a region running past the end of the file fails instead of sending short.
func TestOut_CopyRegionSendsExactBytes(t *testing.T) {
	payload := make([]byte, 3<<20+17) // several copy buffers, an odd tail
	for i := range payload {
		payload[i] = byte(i*31 + i>>8)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(payload); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(123, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	c, got := loopbackReceiver(t, func(c net.Conn) ([]byte, error) { return io.ReadAll(c) })
	r := Region{File: f, Pos: 4097, Size: int64(len(payload)) - 4097 - 5}
	n, err := copyRegion(c, r)
	c.Close()
	if err != nil || n != r.Size {
		t.Fatalf("copyRegion = %d, %v; want %d, nil", n, err, r.Size)
	}
	if b := <-got; !bytes.Equal(b, payload[r.Pos:r.Pos+r.Size]) {
		t.Fatalf("received %d bytes that differ from the %d of the region", len(b), r.Size)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 123 {
		t.Fatalf("file position moved to %d, want 123", pos)
	}

	var buf bytes.Buffer
	n, err = copyRegion(&buf, Region{File: f, Pos: int64(len(payload)) - 10, Size: 100})
	if !errors.Is(err, io.ErrUnexpectedEOF) || n != 10 || !bytes.Equal(buf.Bytes(), payload[len(payload)-10:]) {
		t.Fatalf("region past the end: %d bytes, %v; want the 10 there are and io.ErrUnexpectedEOF", n, err)
	}
}

// loopbackReceiver returns a client connection to a loopback listener and
// the channel on which the listener's side hands over what read read
// from it (nil when the accept failed).
func loopbackReceiver(t *testing.T, read func(net.Conn) ([]byte, error)) (net.Conn, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := read(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return c, got
}
