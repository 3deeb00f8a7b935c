package protocol

import (
	"errors"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendRegion sends a file region with sendfile(2), using an explicit
// offset so that concurrent readers of one segment file never share a file
// position (Go's own sendfile path uses the file's position). Its state
// and conn's raw descriptor are kept in o, so that an Out reused on one
// connection sends without allocating. Other systems copy the region
// (out_other.go).
func (o *Out) sendRegion(conn net.Conn, r Region) (int64, error) {
	s := o.send
	if s == nil || s.conn != conn {
		sc, ok := conn.(syscall.Conn)
		if !ok {
			return copyRegion(conn, r)
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return copyRegion(conn, r)
		}
		if s == nil {
			s = &regionSender{}
			s.fn = s.sendfile
			o.send = s
		}
		s.conn, s.raw = conn, raw
	}
	s.src, s.off, s.remain, s.err = int(r.File.Fd()), r.Pos, r.Size, nil
	for s.remain > 0 && s.err == nil {
		if err := s.raw.Write(s.fn); err != nil {
			s.err = err
		}
	}
	n, err := r.Size-s.remain, s.err
	s.err = nil
	return n, err
}

// regionSender is the state of one sendRegion: the source descriptor, its
// offset and the bytes left, and the first error.
type regionSender struct {
	conn net.Conn
	raw  syscall.RawConn
	fn   func(fd uintptr) bool // sendfile, bound once

	src         int
	off, remain int64
	err         error
}

// sendfile sends from s.src to the socket fd until done, an error, or the
// socket would block (false: wait until writable).
func (s *regionSender) sendfile(fd uintptr) bool {
	for s.remain > 0 {
		n, err := unix.Sendfile(int(fd), s.src, &s.off, int(min(s.remain, 1<<30)))
		if n > 0 {
			s.remain -= int64(n)
			sendfileBytes.Add(int64(n))
		}
		switch {
		case errors.Is(err, unix.EAGAIN):
			return false // wait until writable
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			s.err = err
			return true
		case n == 0:
			s.err = io.ErrUnexpectedEOF // file shorter than the region
			return true
		}
	}
	return true
}
