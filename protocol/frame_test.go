package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readFrame reads one size-prefixed frame the way the broker's connection
// reader does: ReadFrameSize, then ReadFrameInto (a pooled buffer).
func readFrame(r io.Reader, limit int32) ([]byte, error) {
	n, err := ReadFrameSize(r, limit)
	if err != nil {
		return nil, err
	}
	return ReadFrameInto(r, n)
}

func TestReadFrameSize_RejectsOversizeAndNegative(t *testing.T) {
	for _, tc := range []struct {
		size int32
		want error
	}{{-1, ErrNegativeFrame}, {101, ErrFrameTooLarge}} {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, tc.size)
		if _, err := readFrame(&b, 100); !errors.Is(err, tc.want) {
			t.Fatalf("size %d: got %v, want %v", tc.size, err, tc.want)
		}
	}
}

func TestReadFrameInto_LargeAndShortFrames(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, 300<<10)
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, int32(len(payload)))
	b.Write(payload)
	got, err := readFrame(&b, 1<<20)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("got %d bytes, err %v", len(got), err)
	}
	// Announced larger than what follows: an error, not a hang or a panic.
	var short bytes.Buffer
	binary.Write(&short, binary.BigEndian, int32(200<<10))
	short.Write(payload[:1000])
	if _, err := readFrame(&short, 1<<20); err == nil {
		t.Fatal("short frame accepted")
	}
}

func TestParseRequestHeader_V2SkipsTags(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sw", "1"
	// A client's frame (header v2 with no tagged fields), without its size
	// prefix; the header is 8 fixed bytes and the client id (2+3).
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("cli")).AppendRequest(nil, req, 99)[4:]
	const tagsAt = 8 + 2 + 3
	if f[tagsAt] != 0 {
		t.Fatalf("formatter wrote tagged fields: %x", f)
	}
	wantBody := req.AppendTo(nil)
	// The same header with one tagged field (tag 5, 2 bytes), which no
	// client sends yet but every server must skip.
	tags := kbin.AppendUvarint(nil, 1) // one field
	tags = kbin.AppendUvarint(tags, 5) // its tag
	tags = kbin.AppendUvarint(tags, 2) // its size
	tags = append(tags, 'x', 'y')
	f = append(append(f[:tagsAt:tagsAt], tags...), wantBody...)
	h, body, err := ParseRequestHeader(f, true)
	if err != nil {
		t.Fatal(err)
	}
	if h.Key != int16(kmsg.ApiVersions) || h.Version != 3 || h.CorrelationID != 99 || *h.ClientID != "cli" || !bytes.Equal(body, wantBody) {
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

// TestReadFrameInto_EmptyFrame: a size prefix of 0 is valid framing (the
// header check refuses it later); reading it once indexed past the pool's
// size classes and panicked the broker's connection reader.
func TestReadFrameInto_EmptyFrame(t *testing.T) {
	frame, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 0}), 100)
	if err != nil || len(frame) != 0 {
		t.Fatalf("got %d bytes, err %v", len(frame), err)
	}
	if n := FrameAllocSize(0); n != 0 {
		t.Fatalf("FrameAllocSize(0) = %d, want 0", n)
	}
	PutFrame(frame)
}

// TestReadFrameSize_BufferedLikeUnbuffered: from a *bufio.Reader (the
// broker's, read without copying) the size and the errors are those of a
// plain reader: the size, io.EOF on a clean end, io.ErrUnexpectedEOF on a
// torn prefix, and the size check.
func TestReadFrameSize_BufferedLikeUnbuffered(t *testing.T) {
	for _, in := range [][]byte{{0, 0, 1, 0, 9}, {}, {0, 0}, {0x7f, 0, 0, 0}, {0xff, 0, 0, 0}} {
		n1, err1 := ReadFrameSize(bytes.NewReader(in), 1<<20)
		br := bufio.NewReader(bytes.NewReader(in))
		n2, err2 := ReadFrameSize(br, 1<<20)
		if n1 != n2 || (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
			t.Fatalf("%x: buffered %d, %v; plain %d, %v", in, n2, err2, n1, err1)
		}
		if err1 == nil {
			if rest, _ := io.ReadAll(br); !bytes.Equal(rest, in[4:]) {
				t.Fatalf("%x: left %x after the prefix", in, rest)
			}
		}
	}
	if n, err := ReadFrameSize(bufio.NewReader(bytes.NewReader(nil)), 1); !errors.Is(err, io.EOF) || n != 0 {
		t.Fatalf("empty: %d, %v", n, err)
	}
	if _, err := ReadFrameSize(bufio.NewReader(bytes.NewReader([]byte{0, 0})), 1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("torn: %v", err)
	}
}
