package protocol

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync/atomic"
)

// Region is a byte range of an open file, sent with sendfile(2) on Linux
// (out_linux.go) and copied through a buffer elsewhere (out_other.go).
type Region struct {
	File *os.File
	Pos  int64
	Size int64
}

// Out is one encoded response frame, size prefix included: byte slices and
// file regions in wire order. Its parts are written with writev and
// sendfile, so record bytes never pass through user space (Linux; other
// systems copy file regions, see sendRegion).
type Out struct {
	parts []outPart
	size  int64      // bytes after the size prefix
	first [1]outPart // parts' first backing array: one allocation for a plain response

	// Kept for the next frame encoded into a reused Out: the byte
	// buffers of EncodeFetchResponseInto (bufs[:nbuf] in use) and
	// WriteTo's list of buffers for writev.
	bufs [][]byte
	nbuf int
	iov  net.Buffers
	send *regionSender // sendRegion's state, kept with the connection's raw descriptor (Linux)
}

// nextBuf returns an empty byte buffer owned by o: one a previous frame
// used when there is one, else a new one of capacity size. Give it back
// with keepBuf once it has been appended to.
func (o *Out) nextBuf(size int) []byte {
	if o.nbuf < len(o.bufs) {
		o.nbuf++
		return o.bufs[o.nbuf-1][:0]
	}
	o.bufs = append(o.bufs, make([]byte, 0, size))
	o.nbuf++
	return o.bufs[o.nbuf-1]
}

// keepBuf records b, the last buffer from nextBuf after appends (which may
// have moved it), for reuse by the next frame.
func (o *Out) keepBuf(b []byte) { o.bufs[o.nbuf-1] = b }

type outPart struct {
	b []byte
	r Region
}

// sendfileBytes counts the bytes sent with sendfile(2), so that a test can
// prove the zero-copy path was taken (TestOut_WriteToUsesSendfile); it
// stays 0 on systems without that path.
var sendfileBytes atomic.Int64

// NewOut returns an Out whose first part is b, which must start with four
// bytes reserved for the size prefix.
func NewOut(b []byte) *Out {
	o := &Out{}
	o.Reset(b)
	return o
}

// Reset makes o a frame whose first part is b, as NewOut does, keeping
// the capacity of o's list of parts. o must not be in use (being written).
// An Out must not be copied once it holds a part (its list may point into
// itself); resetting one in place is fine.
func (o *Out) Reset(b []byte) {
	parts := o.parts
	if cap(parts) == 0 {
		parts = o.first[:0]
	}
	clear(parts) // drop references to the previous frame's buffers and files
	o.parts = append(parts[:0], outPart{b: b})
	o.size = int64(len(b)) - 4
}

// AppendBytes adds bytes to the end of the frame.
func (o *Out) AppendBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	o.parts = append(o.parts, outPart{b: b})
	o.size += int64(len(b))
}

// AppendRegion adds a file region to the end of the frame.
func (o *Out) AppendRegion(r Region) {
	if r.Size <= 0 {
		return
	}
	o.parts = append(o.parts, outPart{r: r})
	o.size += r.Size
}

// Size is the frame's size without its prefix.
func (o *Out) Size() int64 { return o.size }

// Bytes materialises the whole frame (prefix included) in memory, reading
// file regions with pread. It is meant for tests and non-socket writers.
func (o *Out) Bytes() ([]byte, error) {
	o.finish()
	buf := make([]byte, 0, o.size+4)
	for _, p := range o.parts {
		if p.r.File == nil {
			buf = append(buf, p.b...)
			continue
		}
		start := len(buf)
		buf = append(buf, make([]byte, p.r.Size)...)
		if _, err := p.r.File.ReadAt(buf[start:], p.r.Pos); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func (o *Out) finish() {
	binary.BigEndian.PutUint32(o.parts[0].b[:4], uint32(o.size))
}

// WriteTo writes the frame to conn: runs of byte parts with writev, file
// regions with sendRegion (sendfile on Linux when conn exposes its
// descriptor, else a copy).
func (o *Out) WriteTo(conn net.Conn) (int64, error) {
	o.finish()
	if len(o.parts) == 1 && o.parts[0].r.File == nil {
		n, err := conn.Write(o.parts[0].b) // most answers: one write(2), no allocation
		return int64(n), err
	}
	var total int64
	// o.iov is consumed by its WriteTo: iov keeps the backing array.
	iov := o.iov[:0]
	flush := func() error {
		if len(iov) == 0 {
			return nil
		}
		o.iov = iov
		n, err := o.iov.WriteTo(conn)
		total += n
		iov = iov[:0]
		return err
	}
	for _, p := range o.parts {
		if p.r.File == nil {
			iov = append(iov, p.b)
			continue
		}
		if err := flush(); err != nil {
			return total, err
		}
		n, err := o.sendRegion(conn, p.r)
		total += n
		if err != nil {
			return total, err
		}
	}
	err := flush()
	clear(iov[:cap(iov)]) // keep no frame's buffers alive through the list
	o.iov = iov[:0]
	return total, err
}

// copyRegion writes a file region to w by reading it (pread, at r.Pos:
// the file's own position is never used, so concurrent readers of one
// segment do not disturb each other). It is sendRegion where sendfile(2)
// cannot be used: a connection without a descriptor (TLS, a test's pipe),
// and every connection on systems other than Linux (out_other.go). A file
// shorter than the region is io.ErrUnexpectedEOF, as with sendfile: the
// frame's size prefix promised the whole region.
func copyRegion(w io.Writer, r Region) (int64, error) {
	n, err := io.Copy(w, io.NewSectionReader(r.File, r.Pos, r.Size))
	if err == nil && n < r.Size {
		err = io.ErrUnexpectedEOF // file shorter than the region
	}
	return n, err
}

// WriteToWriter writes the frame to w part by part, reading file regions
// into it: for connections whose bytes must pass through user space (TLS,
// where sendfile cannot be used). Give it a buffered writer so that small
// parts are not written one by one.
func (o *Out) WriteToWriter(w io.Writer) (int64, error) {
	o.finish()
	var total int64
	for _, p := range o.parts {
		var n int64
		var err error
		if p.r.File == nil {
			var k int
			k, err = w.Write(p.b)
			n = int64(k)
		} else {
			n, err = copyRegion(w, p.r)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
