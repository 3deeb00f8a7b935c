package storage

import (
	"fmt"
)

// ApplyRetention deletes the oldest segments that are entirely below the log
// start offset, whose largest timestamp (or, without timestamps, file
// modification time) is older than retention.ms, or while the log is larger
// than retention.bytes, in that order, and moves the log start offset to the
// first remaining segment. Only a prefix of the log is ever deleted. When the
// active segment must go, an empty one is rolled first so that the log always
// has an active segment. It returns the number of segments deleted.
func (l *Log) ApplyRetention() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrLogClosed
	}
	cfg, segs := l.cfg, l.segments()
	nowMs := cfg.Now().UnixMilli()
	n := l.belowStartOffsetLocked(l.logStartOffset.Load())
	if cfg.RetentionMs >= 0 {
		for ; n < len(segs) && segs[n].size.Load() > 0; n++ {
			ts, err := l.largestTimestamp(segs, n)
			if err != nil {
				return 0, err
			}
			if nowMs-ts <= cfg.RetentionMs {
				break
			}
		}
	}
	if cfg.RetentionBytes >= 0 {
		diff := -cfg.RetentionBytes
		for _, s := range segs[n:] {
			diff += s.size.Load()
		}
		for ; n < len(segs) && segs[n].size.Load() > 0 && diff-segs[n].size.Load() >= 0; n++ {
			diff -= segs[n].size.Load()
		}
	}
	n = l.belowHighWatermarkLocked(n)
	if err := l.deletePrefixLocked(n, "retention"); err != nil {
		return 0, err
	}
	return n, nil
}

// largestTimestamp is the retention timestamp of segs[i]: its largest record
// timestamp, or the file's modification time when it has none.
func (l *Log) largestTimestamp(segs []*segment, i int) (int64, error) {
	if err := l.ensureLoaded(segs, i); err != nil {
		return 0, err
	}
	if mt := segs[i].maxTs.Load(); mt != nil && mt.ts >= 0 {
		return mt.ts, nil
	}
	return segs[i].lastModifiedMs(), nil
}

// belowStartOffsetLocked counts the leading non-empty segments whose records
// are all below offset. Lock should be held.
func (l *Log) belowStartOffsetLocked(offset int64) int {
	segs, n := l.segments(), 0
	for ; n < len(segs) && segs[n].size.Load() > 0; n++ {
		end := l.leo.Load()
		if n+1 < len(segs) {
			end = segs[n+1].base
		}
		if end > offset {
			break
		}
	}
	return n
}

// belowHighWatermarkLocked limits n, a number of leading segments to
// delete, to those entirely below the high watermark, as Kafka does: with
// Config.ReplicatedHighWatermark a segment still being replicated is kept.
// In the default mode the high watermark is the log end offset and nothing
// changes. Lock should be held.
func (l *Log) belowHighWatermarkLocked(n int) int {
	segs, hw := l.segments(), l.end.Load().hw
	for i := 0; i < n; i++ {
		end := l.leo.Load()
		if i+1 < len(segs) {
			end = segs[i+1].base
		}
		if end > hw {
			return i
		}
	}
	return n
}

// deletePrefixLocked deletes the first n segments, rolling a new active
// segment first if all of them must go, moves the log start offset to the
// first remaining segment if it was below, persists it, and forgets the
// producers whose last batch is gone. Lock should be held.
func (l *Log) deletePrefixLocked(n int, why string) error {
	if n == 0 {
		return nil
	}
	if n == len(l.segments()) {
		if l.writeErr != nil {
			return l.writeErr
		}
		if _, err := l.rollLocked(); err != nil {
			return err
		}
	}
	segs := l.segments()
	dead := segs[:n]
	rest := append([]*segment(nil), segs[n:]...)
	if lso := rest[0].base; lso > l.logStartOffset.Load() {
		l.logStartOffset.Store(lso)
		defer l.tellWatchers()
	}
	if err := l.truncateEpochsFromStartLocked(l.logStartOffset.Load()); err != nil {
		return err
	}
	l.segs.Store(&rest)
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	var first error
	for _, s := range dead {
		l.logger.Info("deleting segment", "file", s.logPath, "reason", why, "bytes", s.size.Load())
		if err := s.removeFiles(); err != nil && first == nil {
			first = err
		}
		s.release()
	}
	l.producers.expire(l.logStartOffset.Load())
	return first
}

// DeleteRecordsBefore moves the log start offset to offset (-1 means the high
// watermark), persists it, and deletes the segments entirely below it. Records
// below the log start offset are no longer readable even when their segment
// remains. It returns the new log start offset (unchanged when offset is not
// above it). Errors: ErrOffsetOutOfRange when offset is above the high
// watermark or negative (other than -1); ErrLogClosed; *StorageError.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrLogClosed
	}
	hw := l.end.Load().hw
	if offset == -1 {
		offset = hw
	}
	lso := l.logStartOffset.Load()
	if offset < 0 || offset > hw {
		return lso, fmt.Errorf("%w: offset %d, high watermark %d", ErrOffsetOutOfRange, offset, hw)
	}
	if offset <= lso {
		return lso, nil
	}
	l.logStartOffset.Store(offset)
	defer l.tellWatchers()
	if err := l.writeCheckpoint(); err != nil {
		return offset, err
	}
	if err := l.truncateEpochsFromStartLocked(offset); err != nil {
		return offset, err
	}
	if err := l.deletePrefixLocked(l.belowStartOffsetLocked(offset), "log start offset"); err != nil {
		return offset, err
	}
	l.producers.expire(offset)
	return offset, nil
}
