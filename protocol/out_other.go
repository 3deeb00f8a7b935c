//go:build !linux

package protocol

import "net"

// sendRegion sends a file region by copying it (copyRegion): sendfile(2)
// with an explicit offset, which out_linux.go uses, is Linux's. Go's own
// sendfile path elsewhere (TCPConn.ReadFrom of an *os.File) sends from the
// file's shared position, which concurrent readers of a segment would
// disturb, so it is not used either.
func (o *Out) sendRegion(conn net.Conn, r Region) (int64, error) {
	return copyRegion(conn, r)
}

// regionSender is out_linux.go's sendfile state; nothing here.
type regionSender struct{}
