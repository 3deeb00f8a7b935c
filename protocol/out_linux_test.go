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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := readFrame(c, 10<<20)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
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
