package protocol

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestOut_WriteToUsesSendfile sends a region over a real loopback TCP
// connection and checks the bytes arrive and went through sendfile.
func TestOut_WriteToUsesSendfile(t *testing.T) {
	dir := t.TempDir()
	payload := bytes.Repeat([]byte("x"), 1<<20)
	f, err := os.Create(filepath.Join(dir, "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(payload)
	c, got := loopbackReceiver(t, func(c net.Conn) ([]byte, error) { return readFrame(c, 10<<20) })
	defer c.Close()
	before := sendfileBytes.Load()
	out := NewOut([]byte{0, 0, 0, 0, 'h', 'i'})
	out.AppendRegion(Region{File: f, Pos: 0, Size: int64(len(payload))})
	out.AppendBytes([]byte("end"))
	if _, err := out.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	b := <-got
	want := append(append([]byte("hi"), payload...), "end"...)
	if !bytes.Equal(b, want) {
		t.Fatalf("got %d bytes, want %d", len(b), len(want))
	}
	if sent := sendfileBytes.Load() - before; sent != int64(len(payload)) {
		t.Fatalf("sendfile sent %d bytes, want %d", sent, len(payload))
	}
}
