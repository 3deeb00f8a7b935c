package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
)

// TruncateTo removes the end of the log so that its log end offset is at
// most offset, as a follower does before fetching from a new leader
// (KIP-101): every batch entirely below offset is kept, and a batch
// containing offset is removed whole, so the log end offset becomes that
// batch's baseOffset (Kafka's LogSegment.truncateTo). Nothing happens when
// offset is at or beyond the log end offset; an offset below the first
// segment is TruncateFullyAndStartAt(offset). Later segments are deleted,
// the segment holding offset is cut with its indexes and aborted-transaction
// index, producer snapshots above the new end are deleted, the producer and
// transaction state is rebuilt (newest snapshot at or below the new end plus
// the batch headers after it, as Open does), the high watermark, the log
// start offset and the recovery point are lowered to the new end if above
// it, and leader epochs starting at or beyond it are dropped. Everything is
// durable when it returns.
//
// A crash in the middle reopens to a consistent log: the recovery point is
// lowered and persisted first, and the first later segment is deleted (and
// the deletion made durable) before the others, so recovery meets a gap and
// never brings a later segment back; at worst the cut segment keeps its
// tail. Readers holding data beyond the new end (only possible when it is
// below the high watermark) may get read errors.
//
// Errors: ErrOffsetOutOfRange for a negative offset; ErrLogClosed;
// *StorageError, after which the log refuses appends (reopen it).
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrLogClosed
	}
	if l.writeErr != nil {
		return l.writeErr
	}
	if offset >= l.leo.Load() {
		return nil
	}
	segs := l.segments()
	if offset < segs[0].base {
		return l.truncateFullyLocked(offset)
	}
	i := sortSearchSegments(segs, offset)
	s := segs[i]
	if err := l.ensureLoaded(segs, i); err != nil {
		return err
	}
	cut, next := s.size.Load(), l.leo.Load()
	if i+1 < len(segs) {
		next = segs[i+1].base
	}
	pos, h, found, err := s.locate(offset, cut)
	if err != nil {
		return ioErr("read", s.logPath, err)
	}
	if found {
		cut, next = pos, h.BaseOffset
	}
	if err := l.truncateLocked(i, cut, next); err != nil {
		if l.writeErr == nil {
			l.writeErr = err
		}
		return err
	}
	return nil
}

// truncateLocked cuts the log at position cut of segment i, which becomes
// the active segment, with next as the new log end offset. Lock should be
// held.
func (l *Log) truncateLocked(i int, cut, next int64) error {
	segs := l.segments()
	s, dead := segs[i], segs[i+1:]

	// Readers, the log end and the recovery point first.
	rest := append([]*segment(nil), segs[:i+1]...)
	l.segs.Store(&rest)
	l.leo.Store(next)
	if l.end.Load().hw > next {
		l.end.Store(endState{hw: next, seg: s, pos: cut})
	}
	l.logEnd.Store(&endState{hw: next, seg: s, pos: cut})
	l.dropHWEndsAboveLocked(next)
	if l.logStartOffset.Load() > next {
		l.logStartOffset.Store(next)
	}
	l.recoveryPoint.Store(min(l.recoveryPoint.Load(), next))
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	if l.cleanerCheckpoint() > next {
		if err := l.setCleanerCheckpoint(next); err != nil {
			return err
		}
	}
	if err := l.deleteSnapshotsAbove(next); err != nil {
		return err
	}

	// Later segments: the first one durably before the others.
	for k, d := range dead {
		l.logger.Info("deleting segment", "file", d.logPath, "reason", "truncation", "bytes", d.size.Load())
		if err := d.removeFiles(); err != nil {
			return err
		}
		if k == 0 || k == len(dead)-1 {
			if err := SyncDir(l.dir); err != nil {
				return err
			}
		}
	}
	for _, d := range dead {
		d.release()
	}

	// The segment itself, its indexes and aborted transactions.
	if hook := l.rcfg.Load().BeforeIO; hook != nil {
		if err := hook("truncate", s.logPath); err != nil {
			return ioErr("truncate", s.logPath, err)
		}
	}
	if cut < s.size.Load() {
		l.logger.Info("truncating segment", "file", s.logPath, "bytes", s.size.Load()-cut, "logEndOffset", next)
	}
	if err := s.truncateFile(cut); err != nil {
		return ioErr("truncate", s.logPath, err)
	}
	s.size.Store(cut)
	if err := l.fsync(s); err != nil {
		return ioErr("fsync", s.logPath, err)
	}
	if err := s.truncateIndexes(cut, next); err != nil {
		return err
	}
	if err := s.truncateAborted(next); err != nil {
		return err
	}
	if cut == 0 {
		s.firstAppendMs = 0
		s.firstBatchTsSet = false
	} else if s.firstAppendMs == 0 {
		s.firstAppendMs = l.cfg.Now().UnixMilli()
	}

	// State derived from the log.
	l.producers = newProducerStateManager()
	if err := l.loadProducerState(); err != nil {
		return err
	}
	l.publishStableLocked()
	if err := l.truncateEpochsFromEndLocked(next); err != nil {
		return err
	}
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	l.wakeAll()
	return nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset: log start offset, log end offset and high watermark all become
// offset, the producer state and the leader-epoch cache are cleared. A
// follower does this when the leader's log starts beyond its own end. A
// crash in the middle reopens to the old log, a suffix of it, or the new
// empty log, each consistent.
//
// Errors: ErrOffsetOutOfRange for a negative offset; ErrLogClosed;
// *StorageError, after which the log refuses appends (reopen it).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrOffsetOutOfRange, offset)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrLogClosed
	}
	if l.writeErr != nil {
		return l.writeErr
	}
	return l.truncateFullyLocked(offset)
}

// truncateFullyLocked is TruncateFullyAndStartAt. Lock should be held.
func (l *Log) truncateFullyLocked(offset int64) error {
	err := func() error {
		if err := l.born(); err != nil {
			return err
		}
		old := l.segments()
		for _, s := range old {
			l.logger.Info("deleting segment", "file", s.logPath, "reason", "truncation", "bytes", s.size.Load())
			if err := s.removeFiles(); err != nil {
				return err
			}
		}
		if err := l.deleteSnapshotsAbove(-1); err != nil {
			return err
		}
		if err := SyncDir(l.dir); err != nil {
			return err
		}
		seg, err := createSegment(l.dir, offset, l.logger, l.files())
		if err != nil {
			return err
		}
		if err := SyncDir(l.dir); err != nil {
			seg.release()
			return err
		}
		segs := []*segment{seg}
		l.segs.Store(&segs)
		for _, s := range old {
			s.release()
		}
		st := &endState{hw: offset, seg: seg, pos: 0}
		l.leo.Store(offset)
		l.logStartOffset.Store(offset)
		l.recoveryPoint.Store(offset)
		l.end.Store(*st)
		l.logEnd.Store(st)
		clear(l.hwEnds)
		l.hwEnds = l.hwEnds[:0]
		l.producers = newProducerStateManager()
		l.publishStableLocked()
		if err := l.setCleanerCheckpoint(offset); err != nil {
			return err
		}
		if err := l.setEpochsLocked(nil); err != nil {
			return err
		}
		return l.writeCheckpoint()
	}()
	if err != nil && l.writeErr == nil {
		l.writeErr = err
	}
	l.wakeAll()
	return err
}

// dropHWEndsAboveLocked forgets queued batch ends beyond offset. Lock
// should be held.
func (l *Log) dropHWEndsAboveLocked(offset int64) {
	n := sort.Search(len(l.hwEnds), func(i int) bool { return l.hwEnds[i].hw > offset })
	clear(l.hwEnds[n:])
	l.hwEnds = l.hwEnds[:n]
}

// deleteSnapshotsAbove deletes the producer snapshots beyond offset (all of
// them for -1): they describe batches that are no longer in the log.
func (l *Log) deleteSnapshotsAbove(offset int64) error {
	offsets, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	for _, off := range offsets {
		if off <= offset {
			continue
		}
		path := offsetFileName(l.dir, off, snapshotSuffix)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ioErr("remove", path, err)
		}
	}
	return nil
}

// truncateIndexes cuts the segment's indexes to the batches before file
// position cut (offsets below next), keeps them on the heap (the segment
// becomes the active one), recomputes the largest timestamp and the bytes
// since the last index entry from the batches after that entry, and writes
// the files out. The caller must have exclusive use of the writer state.
func (s *segment) truncateIndexes(cut, next int64) error {
	f, err := s.use() // and its indexes mapped again if they were dropped
	if err != nil {
		return err
	}
	defer s.unuse()
	s.index.mu.RLock()
	data := s.index.data
	k := sort.Search(len(data)/offsetIndexEntrySize, func(j int) bool {
		_, p := offsetEntry(data, j)
		return int64(p) >= cut
	})
	idx := bytes.Clone(data[:k*offsetIndexEntrySize])
	idxPersisted := min(s.index.persisted, len(idx))
	lastPos := int64(0)
	if k > 0 {
		_, p := offsetEntry(data, k-1)
		lastPos = int64(p)
	}
	s.index.mu.RUnlock()

	s.timeIndex.mu.RLock()
	tdata := s.timeIndex.data
	tk := sort.Search(len(tdata)/timeIndexEntrySize, func(j int) bool {
		_, rel := timeEntry(tdata, j)
		return s.base+int64(rel) >= next
	})
	tidx := bytes.Clone(tdata[:tk*timeIndexEntrySize])
	tPersisted := min(s.timeIndex.persisted, len(tidx))
	mt := tsOffset{ts: -1, offset: -1}
	if tk > 0 {
		ts, rel := timeEntry(tdata, tk-1)
		mt = tsOffset{ts: ts, offset: s.base + int64(rel)}
	}
	s.timeIndex.mu.RUnlock()

	s.index.setHeap(idx, idxPersisted)
	s.timeIndex.setHeap(tidx, tPersisted)

	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	w := window{r: f, path: s.logPath, end: cut, buf: *bp}
	for pos := lastPos; pos < cut; {
		hb, err := w.header(pos)
		if err != nil {
			return ioErr("read", s.logPath, err)
		}
		h := parseHeader(hb)
		if h.MaxTimestamp > mt.ts {
			mt = tsOffset{ts: h.MaxTimestamp, offset: h.LastOffset()}
		}
		pos += h.Size()
	}
	s.maxTs.Store(&mt)
	s.bytesSinceIndex = cut - lastPos
	return s.persistIndexes(true)
}

// truncateAborted drops the aborted transactions whose marker is at or
// beyond next, in memory and in the .txnindex file, which is rewritten
// from the kept entries (or removed) so that no stale entry can come back.
func (s *segment) truncateAborted(next int64) error {
	cur := s.abortedTxns()
	k := 0
	for k < len(cur) && cur[k].LastOffset < next {
		k++
	}
	kept := append([]AbortedTxn(nil), cur[:k]...)
	s.aborted.Store(&kept)
	path := s.path(txnIndexSuffix)
	if k == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ioErr("remove", path, err)
		}
		return nil
	}
	be := binary.BigEndian
	var b []byte
	for _, a := range kept {
		b = be.AppendUint16(b, 0)
		b = be.AppendUint64(b, uint64(a.ProducerID))
		b = be.AppendUint64(b, uint64(a.FirstOffset))
		b = be.AppendUint64(b, uint64(a.LastOffset))
		b = be.AppendUint64(b, uint64(a.LastStableOffset))
	}
	return WriteFileAtomic(path, b)
}
