package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Leader-epoch cache (Kafka's LeaderEpochFileCache), file
// "leader-epoch-checkpoint", Kafka's text format, replaced atomically (see
// writeFileAtomic) whenever it changes:
//
//	0\n                       version
//	<count>\n
//	<epoch> <startOffset>\n   count lines, both strictly increasing
//
// Each entry says that the leader of that epoch appended its first batch
// at startOffset. An entry is added when a batch (Append, AppendMarker,
// AppendAsFollower) carries a partitionLeaderEpoch above the latest, or by
// AssignLeaderEpoch when a replica becomes leader. Entries at or beyond the
// log end offset are dropped by truncation (and on Open); entries before
// the log start offset collapse into one starting at it. A missing or
// malformed file is rebuilt on Open from the partitionLeaderEpoch of every
// batch; otherwise Open reads the file, and after a crash the batches it
// revalidates: an entry a batch starts is written without an fsync (as
// Kafka's assign), synced before the recovery point moves past it.
const leaderEpochFileName = "leader-epoch-checkpoint"

// EpochEntry is one entry of the leader-epoch cache.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

func (l *Log) epochEntries() []EpochEntry {
	if p := l.epochs.Load(); p != nil {
		return *p
	}
	return nil
}

// LeaderEpochs returns the leader-epoch cache, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry { return slices.Clone(l.epochEntries()) }

// LatestLeaderEpoch is the latest leader epoch in the cache, -1 when it is
// empty.
func (l *Log) LatestLeaderEpoch() int32 {
	e := l.epochEntries()
	if len(e) == 0 {
		return -1
	}
	return e[len(e)-1].Epoch
}

// AssignLeaderEpoch starts leader epoch epoch at startOffset, as a replica
// becoming leader does at its log end offset. It is ignored when epoch is
// not above the latest epoch or either value is negative; entries starting
// at or after startOffset are replaced, keeping start offsets strictly
// increasing. The cache file is written before it returns, without an
// fsync when the entry only adds to it (as an entry a batch starts: a
// broker taking over thousands of partitions does not wait for the disk
// for each; an epoch lost to a crash before any batch of it reached the
// disk is one that no replica has a batch of).
//
// Errors: ErrLogClosed; *StorageError when the file cannot be written.
func (l *Log) AssignLeaderEpoch(epoch int32, startOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrLogClosed
	}
	return l.assignEpochLocked(epoch, startOffset, true)
}

// EndOffsetForLeaderEpoch answers OffsetForLeaderEpoch as Kafka's leader
// does: for the latest epoch, (epoch, log end offset); otherwise the largest
// epoch <= the requested one and, as end offset, the start offset of the
// first epoch above the requested one. A requested epoch below every cached
// epoch gives (requested epoch, start offset of the first cached epoch), as
// Kafka answers (its data is gone; the follower restarts from there).
// (-1, -1) (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) when epoch is -1, the
// cache is empty, or epoch is above the latest.
func (l *Log) EndOffsetForLeaderEpoch(epoch int32) (leaderEpoch int32, endOffset int64) {
	entries := l.epochEntries()
	leo := l.leo.Load()
	if epoch < 0 || len(entries) == 0 {
		return -1, -1
	}
	if entries[len(entries)-1].Epoch == epoch {
		return epoch, leo
	}
	higher := sortSearchEpochs(entries, epoch+1) // first entry with Epoch > epoch
	if higher == len(entries) {
		return -1, -1
	}
	if higher == 0 {
		return epoch, entries[0].StartOffset
	}
	return entries[higher-1].Epoch, entries[higher].StartOffset
}

// sortSearchEpochs is the index of the first entry with Epoch >= epoch.
func sortSearchEpochs(entries []EpochEntry, epoch int32) int {
	i, _ := slices.BinarySearchFunc(entries, epoch, func(e EpochEntry, ep int32) int {
		if e.Epoch < ep {
			return -1
		}
		if e.Epoch > ep {
			return 1
		}
		return 0
	})
	return i
}

// assignEpochLocked adds (epoch, startOffset) when epoch is above the latest,
// removing entries that start at or after startOffset. With lazy, an entry
// that only adds to the cache is written without an fsync
// (setEpochsLazilyLocked). Lock should be held.
func (l *Log) assignEpochLocked(epoch int32, startOffset int64, lazy bool) error {
	cur := l.epochEntries()
	if epoch < 0 || startOffset < 0 || (len(cur) > 0 && epoch <= cur[len(cur)-1].Epoch) {
		return nil
	}
	n := len(cur)
	for n > 0 && cur[n-1].StartOffset >= startOffset {
		n--
	}
	next := append(slices.Clone(cur[:n]), EpochEntry{Epoch: epoch, StartOffset: startOffset})
	if lazy && n == len(cur) {
		return l.setEpochsLazilyLocked(next)
	}
	return l.setEpochsLocked(next)
}

// truncateEpochsFromEndLocked removes the entries starting at or after
// end (the new log end offset). Lock should be held.
func (l *Log) truncateEpochsFromEndLocked(end int64) error {
	cur := l.epochEntries()
	n := len(cur)
	for n > 0 && cur[n-1].StartOffset >= end {
		n--
	}
	if n == len(cur) {
		return nil
	}
	return l.setEpochsLocked(slices.Clone(cur[:n]))
}

// truncateEpochsFromStartLocked makes the cache start at start (the new log
// start offset): the entries starting at or before it are replaced by the
// last of them, moved to start. Lock should be held.
func (l *Log) truncateEpochsFromStartLocked(start int64) error {
	cur := l.epochEntries()
	next := truncateEpochsFromStart(cur, start)
	if slices.Equal(next, cur) {
		return nil
	}
	return l.setEpochsLocked(next)
}

func truncateEpochsFromStart(cur []EpochEntry, start int64) []EpochEntry {
	i := 0
	for i < len(cur) && cur[i].StartOffset <= start {
		i++
	}
	if i == 0 {
		return cur
	}
	return append([]EpochEntry{{Epoch: cur[i-1].Epoch, StartOffset: start}}, cur[i:]...)
}

// setEpochsLocked publishes and persists the cache (the file fsynced,
// unless deferring). A failed write is sticky, as a failed append: the
// file no longer matches the log. Lock should be held.
func (l *Log) setEpochsLocked(entries []EpochEntry) error {
	l.epochs.Store(&entries)
	l.epochFileMu.Lock()
	defer l.epochFileMu.Unlock()
	unwritten := l.epochsUnwritten.Swap(false)
	if err := l.writeFileAtomic(filepath.Join(l.dir, leaderEpochFileName), encodeEpochs(entries)); err != nil {
		l.epochsUnwritten.Store(unwritten)
		l.writeErr = err
		return err
	}
	return nil
}

// setEpochsLazilyLocked is setEpochsLocked for an entry added at the end
// (Kafka's assign): only the cache in memory changes, and the file is
// written later, before the recovery point is next persisted (syncEpochs,
// from writeCheckpoint: a flush, a roll, Close). A replica becoming the
// leader of thousands of partitions at once (a failover) thus writes no
// file per partition on the way, and a partition's first write or a
// follower's first batch of a new epoch does not wait for one. That is
// safe because an entry not yet in the file can be found again: after a
// crash, recovery derives the entries of the batches past the recovery
// point from the batches themselves (loadLeaderEpochs), and an epoch
// with no batch yet answers OffsetForLeaderEpoch as the epoch before it
// would. Lock should be held.
func (l *Log) setEpochsLazilyLocked(entries []EpochEntry) error {
	l.epochs.Store(&entries)
	l.epochsUnwritten.Store(true)
	return nil
}

// syncEpochs writes the leader-epoch file (fsynced; while deferring the
// LogDir's Sync does it) if the cache gained entries since it was last
// written, so that every entry of the batches below a recovery point
// about to be persisted is durable.
func (l *Log) syncEpochs() error {
	if !l.epochsUnwritten.Load() {
		return nil
	}
	l.epochFileMu.Lock()
	defer l.epochFileMu.Unlock()
	if !l.epochsUnwritten.Swap(false) {
		return nil
	}
	if err := l.writeFileAtomic(filepath.Join(l.dir, leaderEpochFileName), encodeEpochs(l.epochEntries())); err != nil {
		l.epochsUnwritten.Store(true)
		return err
	}
	return nil
}

func encodeEpochs(entries []EpochEntry) []byte {
	b := fmt.Appendf(nil, "0\n%d\n", len(entries))
	for _, e := range entries {
		b = fmt.Appendf(b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b
}

// decodeEpochs parses the cache file; it never panics on bad input.
func decodeEpochs(b []byte) ([]EpochEntry, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, errors.New("does not end with a newline")
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, errors.New("bad version line")
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count != len(lines)-2 {
		return nil, fmt.Errorf("count %q for %d entries", lines[1], len(lines)-2)
	}
	out := make([]EpochEntry, 0, count)
	for _, line := range lines[2:] {
		ep, off, ok := strings.Cut(line, " ")
		epoch, err1 := strconv.ParseInt(ep, 10, 32)
		start, err2 := strconv.ParseInt(off, 10, 64)
		if !ok || err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			return nil, fmt.Errorf("bad entry %q", line)
		}
		if n := len(out); n > 0 && (int32(epoch) <= out[n-1].Epoch || start <= out[n-1].StartOffset) {
			return nil, fmt.Errorf("entry %q does not follow %v", line, out[n-1])
		}
		out = append(out, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return out, nil
}

// loadLeaderEpochs reads the cache file, or rebuilds it from the batch
// headers when it is missing or malformed, then drops the entries at or
// beyond the log end offset and moves those before the log start offset
// to it. Lock should be held (or exclusive use, during Open).
func (l *Log) loadLeaderEpochs() error {
	path := filepath.Join(l.dir, leaderEpochFileName)
	b, err := os.ReadFile(path)
	missing := errors.Is(err, fs.ErrNotExist)
	var entries []EpochEntry
	var reason error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		reason = err
	case err != nil:
		return ioErr("read", path, err)
	default:
		entries, reason = decodeEpochs(b)
	}
	switch {
	case reason != nil:
		if l.Size() > 0 {
			// A missing file is what a crash leaves when the cache was
			// never written (it is written lazily, setEpochsLazilyLocked):
			// after kill -9 every partition written since its last flush
			// has none, so that is not worth a warning per partition.
			level := slog.LevelWarn
			if missing {
				level = slog.LevelDebug
			}
			l.logger.Log(context.Background(), level, "rebuilding the leader-epoch cache from the log", "file", path, "reason", reason)
		}
		if entries, err = l.scanEpochs(-1, nil); err != nil {
			return err
		}
	case l.recoveredFrom >= 0:
		// The batches recovery revalidated say which epochs start where
		// among them: the file, replaced without an fsync since the
		// recovery point, may not have their entries yet.
		n := len(entries)
		for n > 0 && entries[n-1].StartOffset >= l.recoveredFrom {
			n--
		}
		if entries, err = l.scanEpochs(l.recoveredFrom, slices.Clone(entries[:n])); err != nil {
			return err
		}
	}
	leo := l.leo.Load()
	n := len(entries)
	for n > 0 && entries[n-1].StartOffset >= leo {
		n--
	}
	entries = truncateEpochsFromStart(entries[:n], l.logStartOffset.Load())
	l.epochs.Store(&entries)
	if len(entries) == 0 && missing {
		return nil // a missing file reads as an empty cache: nothing to write
	}
	if enc := encodeEpochs(entries); !bytes.Equal(enc, b) {
		return l.writeFileAtomic(path, enc)
	}
	return nil
}

// scanEpochs reads the partitionLeaderEpoch of every batch in the segments
// from the one based at from (-1: all) and returns out with where each
// epoch above the previous ones starts added. A damaged batch ends the
// scan.
func (l *Log) scanEpochs(from int64, out []EpochEntry) ([]EpochEntry, error) {
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	for _, s := range l.segments() {
		if s.base < from {
			continue
		}
		var stop bool
		var err error
		if out, stop, err = s.scanEpochs(out, *bp); err != nil {
			return nil, err
		} else if stop {
			return out, nil
		}
	}
	return out, nil
}

// scanEpochs is Log.scanEpochs for one segment; stop means a damaged batch
// ended the scan.
func (s *segment) scanEpochs(out []EpochEntry, buf []byte) (_ []EpochEntry, stop bool, _ error) {
	f, err := s.use()
	if err != nil {
		return nil, false, err
	}
	defer s.unuse()
	size := s.size.Load()
	w := window{r: f, path: s.logPath, end: size, buf: buf}
	for pos := int64(0); pos < size; {
		hb, err := w.header(pos)
		if err != nil {
			var ce *CorruptionError
			if errors.As(err, &ce) {
				return out, true, nil
			}
			return nil, false, err
		}
		h := parseHeader(hb)
		if e := h.PartitionLeaderEpoch; e >= 0 && (len(out) == 0 || e > out[len(out)-1].Epoch) && h.BaseOffset >= 0 &&
			(len(out) == 0 || h.BaseOffset > out[len(out)-1].StartOffset) {
			out = append(out, EpochEntry{Epoch: e, StartOffset: h.BaseOffset})
		}
		pos += h.Size()
	}
	return out, false, nil
}
