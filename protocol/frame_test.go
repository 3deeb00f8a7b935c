package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestReadFrame_RejectsOversizeAndNegative(t *testing.T) {
	for _, tc := range []struct {
		size int32
		want error
	}{{-1, ErrNegativeFrame}, {101, ErrFrameTooLarge}} {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, tc.size)
		if _, err := ReadFrame(&b, 100); !errors.Is(err, tc.want) {
			t.Fatalf("size %d: got %v, want %v", tc.size, err, tc.want)
		}
	}
}

func TestReadFrame_LargeAndShortFrames(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, 300<<10)
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, int32(len(payload)))
	b.Write(payload)
	got, err := ReadFrame(&b, 1<<20)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("got %d bytes, err %v", len(got), err)
	}
	// Announced larger than what follows: an error, not a hang or a panic.
	var short bytes.Buffer
	binary.Write(&short, binary.BigEndian, int32(200<<10))
	short.Write(payload[:1000])
	if _, err := ReadFrame(&short, 1<<20); err == nil {
		t.Fatal("short frame accepted")
	}
}

func TestParseRequestHeader_V2SkipsTags(t *testing.T) {
	var f []byte
	f = binary.BigEndian.AppendUint16(f, 18)
	f = binary.BigEndian.AppendUint16(f, 3)
	f = binary.BigEndian.AppendUint32(f, 99)
	f = binary.BigEndian.AppendUint16(f, 3)
	f = append(f, "cli"...)
	f = append(f, 1, 5, 2, 'x', 'y') // one tag: key 5, 2 bytes
	f = append(f, 0xAB)              // body
	h, body, err := ParseRequestHeader(f, true)
	if err != nil {
		t.Fatal(err)
	}
	if h.Key != 18 || h.Version != 3 || h.CorrelationID != 99 || *h.ClientID != "cli" || !bytes.Equal(body, []byte{0xAB}) {
		t.Fatalf("bad header %+v body %x", h, body)
	}
	if _, _, err := ParseRequestHeader(f[:12], true); err == nil {
		t.Fatal("truncated header accepted")
	}
}

func TestReadFrameInto_PooledBuffersAreFullyOverwritten(t *testing.T) {
	first, err := ReadFrameInto(bytes.NewReader(bytes.Repeat([]byte{0xAA}, 5000)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	PutFrame(first)
	second, err := ReadFrameInto(bytes.NewReader(bytes.Repeat([]byte{0x01}, 4500)), 4500)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 4500 || bytes.Count(second, []byte{0x01}) != 4500 {
		t.Fatalf("got %d bytes, %d of them from this frame", len(second), bytes.Count(second, []byte{0x01}))
	}
	if _, err := ReadFrameInto(bytes.NewReader(make([]byte, 10)), 4096); err == nil {
		t.Fatal("short frame accepted")
	}
	PutFrame(make([]byte, 100)) // not from the pool: ignored
}
