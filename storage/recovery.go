package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Open opens the log in dir, creating the directory and an empty first
// segment if needed, and recovers it:
//
//   - after a clean shutdown (marker present) the files are trusted; only the
//     last segment's indexes are read and checked against the batches after
//     their last entry (rebuilt if missing or inconsistent), so opening does
//     not read the segments' data;
//   - otherwise every batch from the segment containing the recovery point to
//     the end is validated (framing, offsets, CRC); the log is truncated at the
//     first bad one, later segments are deleted, and the indexes of the
//     validated segments are rebuilt.
//
// Indexes of the other segments are loaded, checked and if need be rebuilt
// when first used. The producer state is loaded from the newest snapshot not
// beyond the log end and completed by replaying batch headers.
func Open(dir string, cfg Config) (*Log, error) {
	return open(dir, cfg, nil, false)
}

// open is Open; through a LogDir (ld set) it leaves its fsyncs to ld.Sync,
// and trustClean says that ld's clean-shutdown list names the log.
func open(dir string, cfg Config, ld *LogDir, trustClean bool) (*Log, error) {
	cfg = cfg.normalized()
	if ld != nil {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return newUnbornLog(dir, cfg, ld), nil
		}
	}
	l := newLog(dir, cfg, ld)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, ioErr("mkdir", dir, err)
	}
	err := l.load(trustClean)
	l.deferring = false
	if err != nil {
		if p := l.segs.Load(); p != nil {
			for _, s := range *p {
				s.release()
			}
		}
		return nil, err
	}
	return l, nil
}

// newLog returns a Log of dir with nothing loaded; cfg is normalized.
func newLog(dir string, cfg Config, ld *LogDir) *Log {
	l := &Log{dir: dir, logger: cfg.Logger, cfg: cfg, producers: newProducerStateManager(), ld: ld, deferring: ld != nil, recoveredFrom: -1}
	l.cleanerOffset.Store(-1)
	l.rcfg.Store(&cfg)
	return l
}

// newUnbornLog returns an unborn log of dir (unborn.go), whose directory
// does not exist; cfg is normalized.
func newUnbornLog(dir string, cfg Config, ld *LogDir) *Log {
	l := newLog(dir, cfg, ld)
	l.openUnborn()
	l.deferring = false
	return l
}

// load reads the directory and recovers the log; trustClean treats it as
// cleanly shut down without its own marker (LogDir's list names it).
func (l *Log) load(trustClean bool) error {
	d, err := l.scanDir()
	if err != nil {
		return err
	}
	marker := d.clean
	d.clean = d.clean || trustClean
	ck, ckOK, err := readCheckpointFile(l.dir)
	if err != nil {
		return err
	}
	lso, rp := ck.logStartOffset, ck.recoveryPoint
	segs, leo, err := l.openSegments(d, lso, rp, ckOK)
	if err != nil {
		return err
	}
	if !ckOK || lso < segs[0].base {
		lso = segs[0].base
	}
	l.initEnd(segs, min(lso, leo), leo)
	if err := l.loadTxnIndexes(segs, d.txnIndexes, leo); err != nil {
		return err
	}
	if err := l.loadProducerState(); err != nil {
		return err
	}
	l.publishStableLocked()
	if err := l.loadReplicationState(); err != nil {
		return err
	}
	// What the file holds; a new log (no segment before, no checkpoint)
	// reads the same without one, so creating a partition writes none (and
	// costs no fsync). writeCheckpoint writes only what differs.
	if fresh := !ckOK && len(d.bases) == 0; fresh {
		ck, ckOK = l.checkpointNow(), true
	}
	l.ckpt, l.ckptKnown = ck, ckOK
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	if marker {
		return l.removeCleanShutdownMarker()
	}
	return nil
}

// dirListing is what scanDir found in a log directory.
type dirListing struct {
	clean      bool           // the clean-shutdown marker is present
	bases      []int64        // base offsets of the .log files, ascending
	txnIndexes map[int64]bool // base offsets that have a .txnindex file
}

// scanDir lists the log directory, deleting the leftovers of interrupted
// writes (temporary files) and of deletions (indexes without a .log).
func (l *Log) scanDir() (dirListing, error) {
	if err := recoverCleanerFiles(l.dir); err != nil {
		return dirListing{}, err
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return dirListing{}, ioErr("readdir", l.dir, err)
	}
	d := dirListing{txnIndexes: map[int64]bool{}}
	var indexFiles []string
	for _, e := range entries {
		name := e.Name()
		if name == cleanShutdownName {
			d.clean = true
		} else if strings.HasSuffix(name, tmpSuffix) {
			_ = os.Remove(filepath.Join(l.dir, name))
		} else if base, ok := parseOffsetFileName(name, logSuffix); ok {
			d.bases = append(d.bases, base)
		} else if _, ok := parseOffsetFileName(name, indexSuffix); ok {
			indexFiles = append(indexFiles, name)
		} else if _, ok := parseOffsetFileName(name, timeIndexSuffix); ok {
			indexFiles = append(indexFiles, name)
		} else if base, ok := parseOffsetFileName(name, txnIndexSuffix); ok {
			d.txnIndexes[base] = true
		}
	}
	slices.Sort(d.bases)
	for _, name := range indexFiles { // indexes without a .log are leftovers of a deletion
		base, _ := parseOffsetFileName(strings.TrimSuffix(strings.TrimSuffix(name, timeIndexSuffix), indexSuffix)+logSuffix, logSuffix)
		if _, found := slices.BinarySearch(d.bases, base); !found {
			_ = os.Remove(filepath.Join(l.dir, name))
		}
	}
	return d, nil
}

// openSegments opens the segments listed in d, or creates the first one at
// lso in a directory without any, and recovers them: openClean after a clean
// shutdown, otherwise recoverSegments from the segment containing the
// recovery point rp (from the start if the checkpoint was unusable). It
// returns the segments, also published in l.segs, and the log end offset.
func (l *Log) openSegments(d dirListing, lso, rp int64, ckOK bool) ([]*segment, int64, error) {
	if len(d.bases) == 0 {
		s, err := createSegment(l.dir, lso, l.logger, l.files())
		if err != nil {
			return nil, 0, err
		}
		segs := []*segment{s}
		l.segs.Store(&segs)
		return segs, lso, nil
	}
	var segs []*segment
	for _, base := range d.bases {
		s, err := openSegment(l.dir, base, l.logger, l.files())
		if err != nil {
			for _, s := range segs {
				s.release()
			}
			return nil, 0, err
		}
		segs = append(segs, s)
	}
	l.segs.Store(&segs)
	var leo int64
	var err error
	if d.clean {
		segs, leo, err = l.openClean(segs)
	} else {
		if !ckOK {
			rp = 0
		}
		k := max(0, sortSearchSegments(segs, rp))
		level := slog.LevelInfo
		if l.ld != nil {
			level = slog.LevelDebug // one of thousands: the owner says how many (Log.Recovered)
		}
		l.logger.Log(context.Background(), level, "recovering log after unclean shutdown", "dir", l.dir, "fromSegment", segs[k].logPath, "recoveryPoint", rp)
		segs, leo, err = l.recoverSegments(segs, k)
	}
	l.segs.Store(&segs)
	if err != nil {
		return nil, 0, err
	}
	return segs, leo, nil
}

// initEnd publishes the recovered offsets and the end of the active segment,
// and starts the active segment's age (segment.ms) at its first batch's
// timestamp when that lies in the past, at now otherwise.
func (l *Log) initEnd(segs []*segment, lso, leo int64) {
	l.logStartOffset.Store(lso)
	l.leo.Store(leo)
	l.recoveryPoint.Store(leo)
	act := segs[len(segs)-1]
	l.end.Store(endState{hw: leo, seg: act, pos: act.size.Load()})
	nowMs := l.cfg.Now().UnixMilli()
	l.lastFlushMs = nowMs
	if act.size.Load() > 0 {
		act.firstAppendMs = nowMs
		if ts := act.firstMaxTimestamp(); ts > 0 && ts < nowMs {
			act.firstAppendMs = ts
		}
	}
}

// loadTxnIndexes loads the aborted transactions of the segments that have a
// .txnindex file.
func (l *Log) loadTxnIndexes(segs []*segment, txnIndexes map[int64]bool, leo int64) error {
	for _, s := range segs {
		if txnIndexes[s.base] {
			if err := s.loadAborted(leo); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeCleanShutdownMarker deletes the marker of the clean shutdown that
// load trusted, durably, so that a crash from now on is recovered as one.
func (l *Log) removeCleanShutdownMarker() error {
	marker := filepath.Join(l.dir, cleanShutdownName)
	if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ioErr("remove", marker, err)
	}
	return l.syncDir()
}

// sortSearchSegments returns the index of the segment containing offset (the
// last with base <= offset), or -1.
func sortSearchSegments(segs []*segment, offset int64) int {
	i, _ := slices.BinarySearchFunc(segs, offset, func(s *segment, off int64) int {
		if s.base <= off {
			return -1
		}
		return 1
	})
	return i - 1
}

// openClean loads a cleanly shut down log: only the last segment's indexes
// are checked. A last segment whose batches turn out to be damaged is
// recovered as after a crash.
func (l *Log) openClean(segs []*segment) ([]*segment, int64, error) {
	act := segs[len(segs)-1]
	next, err := act.loadIndexes(l.cfg.IndexIntervalBytes, true, -1)
	if err == nil {
		return segs, next, nil
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		return segs, 0, err
	}
	l.logger.Warn("damaged last segment despite clean shutdown; recovering it", "file", ce.File, "pos", ce.Pos, "reason", ce.Reason)
	act.loaded.Store(false)
	return l.recoverSegments(segs, len(segs)-1)
}

// recoverSegments validates segs[k:] batch by batch, truncating at the first
// bad batch and deleting the segments after it, rebuilds their indexes and
// fsyncs them. It returns the remaining segments and the log end offset.
func (l *Log) recoverSegments(segs []*segment, k int) ([]*segment, int64, error) {
	l.recoveredFrom = segs[k].base
	next := segs[k].base
	for i := k; i < len(segs); i++ {
		var stop bool
		var err error
		if segs, next, stop, err = l.recoverSegment(segs, i, next); err != nil {
			return segs, 0, err
		} else if stop {
			break
		}
	}
	return segs, next, nil
}

// recoverSegment is recoverSegments' work on segs[i], which is pinned
// meanwhile (its indexes are mapped): it returns the segments left, the
// offset after segs[i], and stop when segs[i] and those after it were
// dropped.
func (l *Log) recoverSegment(segs []*segment, i int, next int64) (_ []*segment, _ int64, stop bool, _ error) {
	s, interval := segs[i], l.cfg.IndexIntervalBytes
	if s.base != next {
		l.logger.Warn("segment does not continue the log; deleting it and the ones after it",
			"file", s.logPath, "base", s.base, "expected", next)
		if err := l.dropSegments(segs[i:]); err != nil {
			return segs, 0, false, err
		}
		return segs[:i], next, true, nil
	}
	if _, err := s.use(); err != nil {
		return segs, 0, false, err
	}
	defer s.unuse()
	res, err := s.rebuild(interval, true)
	if err != nil {
		return segs, 0, false, err
	}
	if c := res.corrupt; c != nil {
		size := s.size.Load()
		l.logger.Warn("truncating log at damaged batch", "file", c.File, "pos", c.Pos, "reason", c.Reason,
			"truncatedBytes", size-res.end, "deletedSegments", len(segs)-i-1)
		if err := s.truncateFile(res.end); err != nil {
			return segs, 0, false, ioErr("truncate", s.logPath, err)
		}
		s.size.Store(res.end)
		if err := l.dropSegments(segs[i+1:]); err != nil {
			return segs, 0, false, err
		}
		segs = segs[:i+1]
	}
	last := i == len(segs)-1
	if !last {
		s.sealTimeIndex()
	}
	if l.deferring {
		l.ld.pending.Store(true)
	} else if err := s.syncFile(); err != nil {
		return segs, 0, false, ioErr("fsync", s.logPath, err)
	}
	if err := s.persistIndexes(!l.deferring); err != nil {
		return segs, 0, false, err
	}
	if !last {
		if err := s.index.mapFile(s.path(indexSuffix)); err != nil {
			return segs, 0, false, err
		}
		if err := s.timeIndex.mapFile(s.path(timeIndexSuffix)); err != nil {
			return segs, 0, false, err
		}
	}
	s.loaded.Store(true)
	return segs, res.next, false, nil
}

// dropSegments deletes segments during recovery.
func (l *Log) dropSegments(segs []*segment) error {
	for _, s := range segs {
		if err := s.removeFiles(); err != nil {
			return err
		}
		s.release()
	}
	if len(segs) == 0 {
		return nil
	}
	return l.syncDir()
}

// loadProducerState loads the newest usable snapshot and replays the batch
// headers after it.
func (l *Log) loadProducerState() error {
	offsets, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	segs, leo := l.segments(), l.leo.Load()
	from := int64(-1)
	for j := len(offsets) - 1; j >= 0 && from < 0; j-- {
		path := offsetFileName(l.dir, offsets[j], snapshotSuffix)
		var reason error
		if offsets[j] > leo {
			reason = fmt.Errorf("beyond the log end offset %d", leo)
		} else if b, err := os.ReadFile(path); err != nil {
			reason = err
		} else if m, err := decodeProducerSnapshot(b); err != nil {
			reason = err
		} else {
			l.producers.producers, from = m, offsets[j]
			continue
		}
		l.logger.Warn("deleting producer snapshot", "file", path, "reason", reason)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ioErr("remove", path, err)
		}
	}
	if from < 0 {
		from = segs[0].base
	}
	if err := l.replayProducers(segs, from); err != nil {
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			return err
		}
		l.logger.Error("damaged segment while loading producer state", "file", ce.File, "pos", ce.Pos, "reason", ce.Reason)
	}
	l.producers.expire(l.logStartOffset.Load())
	return nil
}

// replayProducers applies the headers of the batches at or after offset from
// to the producer state.
func (l *Log) replayProducers(segs []*segment, from int64) error {
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	for i := max(0, sortSearchSegments(segs, from)); i < len(segs); i++ {
		if err := l.replaySegment(segs, i, from, *bp); err != nil {
			return err
		}
	}
	return nil
}

// replaySegment is replayProducers for segs[i], pinned meanwhile.
func (l *Log) replaySegment(segs []*segment, i int, from int64, buf []byte) error {
	s := segs[i]
	f, err := s.use()
	if err != nil {
		return err
	}
	defer s.unuse()
	if err := l.ensureLoaded(segs, i); err != nil {
		return err
	}
	size := s.size.Load()
	w := window{r: f, path: s.logPath, end: size, buf: buf}
	pos := int64(0)
	if from > s.base {
		pos = s.startPos(&w, from)
	}
	for pos < size {
		hb, err := w.header(pos)
		if err != nil {
			return err
		}
		h := parseHeader(hb)
		if h.BaseOffset >= from && h.ProducerID >= 0 {
			if !h.Control() {
				l.producers.update(h, s, pos)
			} else if err := l.replayMarker(&w, s, pos, h); err != nil {
				return err
			}
		}
		pos += h.Size()
	}
	return nil
}

// replayMarker applies a transaction marker found while replaying the log.
func (l *Log) replayMarker(w *window, s *segment, pos int64, h BatchHeader) error {
	n := int(min(h.Size()-BatchHeaderSize, 32))
	rec, err := w.at(pos+BatchHeaderSize, n)
	if err != nil {
		return err
	}
	typ, coordEpoch, ok := parseMarker(rec)
	if !ok {
		return nil
	}
	e := l.producers.producers[h.ProducerID]
	if e == nil {
		e = newProducerEntry(h.ProducerEpoch)
		l.producers.producers[h.ProducerID] = e
	}
	e.epoch = max(e.epoch, h.ProducerEpoch)
	e.coordinatorEpoch = coordEpoch
	return l.completeTxnLocked(h.ProducerID, e, typ == markerCommit, h.BaseOffset, s)
}
