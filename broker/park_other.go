//go:build !linux

package broker

import "time"

// parker parks idle connections; on this system it does not exist and
// every connection keeps its reader (park_linux.go).
type parker struct{}

func newParker(time.Duration) *parker        { return nil }
func (p *parker) park(*conn, time.Time) bool { return false }
func (p *parker) close()                     {}
func (p *parker) parked() int                { return 0 }
func (p *parker) released(int)               {}
