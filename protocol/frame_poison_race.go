//go:build race

package protocol

// A -race build poisons released frames: the race detector sees a read
// after release only when it overlaps the next write of the buffer; the
// poison makes every such read return garbage.
func init() { poisonFrames.Store(true) }
