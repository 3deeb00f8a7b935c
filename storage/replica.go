package storage

import (
	"fmt"
	"sort"
)

// maxHWEnds bounds the queue of batch ends kept above the high watermark in
// replicated mode; beyond it the oldest half is dropped and SetHighWatermark
// falls back to the offset index and a scan of batch headers.
const maxHWEnds = 4096

// publishLogEndLocked records that the log now ends at offset next, at pos
// in seg. In replicated mode it publishes that end for ReadForFollower,
// queues it for SetHighWatermark and wakes Notify waiters; in the default
// mode the caller advances the high watermark instead. Lock should be held.
func (l *Log) publishLogEndLocked(seg *segment, pos, next int64) {
	if !l.replicated {
		return
	}
	st := &endState{hw: next, seg: seg, pos: pos}
	l.logEnd.Store(st)
	if len(l.hwEnds) >= maxHWEnds {
		n := copy(l.hwEnds, l.hwEnds[len(l.hwEnds)/2:])
		clear(l.hwEnds[n:])
		l.hwEnds = l.hwEnds[:n]
	}
	l.hwEnds = append(l.hwEnds, st)
	l.wakeAll()
}

// logEndState is the end of what followers may read: the log end offset.
func (l *Log) logEndState() endState {
	if l.replicated {
		return *l.logEnd.Load()
	}
	return l.end.Load()
}

// ReadForFollower is Read up to the log end offset instead of the high
// watermark: what a leader serves to a follower's Fetch (Kafka's
// FetchIsolation LOG_END). In the default mode it is Read.
func (l *Log) ReadForFollower(offset int64, maxBytes int32, minOneBatch bool) (ReadResult, error) {
	return l.read(offset, maxBytes, minOneBatch, l.logEndState)
}

// SetHighWatermark advances the high watermark of a log opened with
// Config.ReplicatedHighWatermark to hw, clamped to the log end offset; a
// value not above the current high watermark is ignored (the high watermark
// only moves back by truncation). hw should be a batch boundary, as it is
// when it is some replica's log end offset; an hw inside a batch makes that
// batch readable only once the high watermark passes its end. Readers and
// Notify waiters see the new value at once; it is persisted in the
// checkpoint at the next Flush, roll or Close. In the default mode it does
// nothing.
//
// Errors: ErrLogClosed; *StorageError when the position of hw cannot be
// read from the log.
func (l *Log) SetHighWatermark(hw int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrLogClosed
	}
	if !l.replicated {
		return nil
	}
	hw = min(hw, l.leo.Load())
	if hw <= l.end.Load().hw {
		return nil
	}
	st, err := l.endStateAtLocked(hw)
	if err != nil {
		return err
	}
	l.end.Store(*st)
	l.trimHWEndsLocked(hw)
	l.noteHighWatermarkLocked()
	l.wakeAll()
	return nil
}

// trimHWEndsLocked drops the queued batch ends at or below hw. Lock should
// be held.
func (l *Log) trimHWEndsLocked(hw int64) {
	i := sort.Search(len(l.hwEnds), func(i int) bool { return l.hwEnds[i].hw > hw })
	n := copy(l.hwEnds, l.hwEnds[i:])
	clear(l.hwEnds[n:])
	l.hwEnds = l.hwEnds[:n]
}

// endStateAtLocked returns offset (at most the log end offset) with its
// position in the log: from the queue of recent batch ends, or else found
// with the offset index and batch headers. An offset inside a batch is
// placed at that batch's start. Lock should be held.
func (l *Log) endStateAtLocked(offset int64) (*endState, error) {
	q := l.hwEnds
	if i := sort.Search(len(q), func(i int) bool { return q[i].hw >= offset }); i < len(q) && q[i].hw == offset {
		return q[i], nil
	}
	segs := l.segments()
	if offset >= l.leo.Load() {
		act := segs[len(segs)-1]
		return &endState{hw: l.leo.Load(), seg: act, pos: act.size.Load()}, nil
	}
	i := max(0, sortSearchSegments(segs, offset))
	s := segs[i]
	if err := l.ensureLoaded(segs, i); err != nil {
		return nil, err
	}
	size := s.size.Load()
	pos, _, found, err := s.locate(offset, size)
	if err != nil {
		return nil, ioErr("read", s.logPath, err)
	}
	if !found {
		pos = size
	}
	return &endState{hw: offset, seg: s, pos: pos}, nil
}

// loadReplicationState completes Open: the log end's position, the
// leader-epoch cache and, in
// replicated mode, the high watermark from the checkpoint (clamped to
// [logStartOffset, logEndOffset]; the log start offset without one, as
// Kafka does without a high-watermark checkpoint). Lock should be held (or
// exclusive use, during Open).
func (l *Log) loadReplicationState() error {
	l.replicated = l.cfg.ReplicatedHighWatermark
	segs := l.segments()
	act := segs[len(segs)-1]
	leo := l.leo.Load()
	l.logEnd.Store(&endState{hw: leo, seg: act, pos: act.size.Load()})
	if err := l.loadLeaderEpochs(); err != nil {
		return err
	}
	if !l.replicated {
		return nil
	}
	c, ok, err := readCheckpointFile(l.dir)
	if err != nil {
		return err
	}
	hw := int64(0)
	if ok && c.highWatermark >= 0 {
		hw = c.highWatermark
	}
	hw = max(l.logStartOffset.Load(), min(hw, leo))
	st, err := l.endStateAtLocked(hw)
	if err != nil {
		return fmt.Errorf("placing the high watermark %d: %w", hw, err)
	}
	l.end.Store(*st)
	// The transactions replayed from the log whose markers are not
	// committed hold back the last stable offset from here on.
	l.publishStableLocked()
	return nil
}
