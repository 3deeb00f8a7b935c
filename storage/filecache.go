package storage

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
)

// Open files of many segments (Kafka keeps every segment's .log open and
// its indexes mapped, and asks operators to raise ulimit -n and
// vm.max_map_count; a broker with 100,000 partitions would need more than
// a process may have). A segment's .log file is opened when first used, not
// when its log is opened; in a LogDir it may be closed again while nothing
// uses it, together with the read-only mappings of its indexes, so that a
// LogDir keeps at most a bounded number of segments open (fileCache).
//
// A user of a segment's file pins it (segment.use, segment.unuse): readers
// while they read, a Slice until Release, the writer while it writes,
// truncates or fsyncs, the cleaner while it reads a segment, recovery while
// it rebuilds one. A pinned file is never closed, so a Slice handed to
// sendfile stays valid; the limit is therefore soft, exceeded only by files
// pinned at once. An unpinned file is closed by the clock hand of the
// cache (second chance: a file used since the hand last passed is skipped
// once); one written since its last fsync is fsynced first, and a failure
// of that fsync is kept and returned by the segment's next write or fsync,
// so that closing a file never loses an fsync that was owed, nor its error.
// Reopening it reopens the same path (errors are *StorageError, as those of
// the first open) and maps its indexes again if they were mapped.
//
// A segment whose files are about to be removed (retention, truncation,
// the cleaner's swap, a deleted log still read) is reopened if need be and
// then never closed before its last reference goes: its path may already
// name another file (the cleaner's swap reuses it), or none.

// fileCache bounds the segments whose .log file a LogDir keeps open.
type fileCache struct {
	limit atomic.Int64 // at most this many open, unless pinned; > 0

	mu   sync.Mutex // taken after a segment's fh.mu, never before it (TryLock)
	ring []*segment // open segments that may be closed, in clock order
	hand int        // next position of the clock hand in ring
	open atomic.Int64

	opens, closes atomic.Int64 // counters, for FileCacheStats
}

// FileCacheStats describes a LogDir's open segment files.
type FileCacheStats struct {
	Limit  int   // the configured bound (SetMaxOpenFiles)
	Open   int64 // segments whose .log file is open now
	Opens  int64 // files opened since OpenLogDir (first opens and reopens)
	Closes int64 // files closed to stay within the limit
}

// fileState is the state of a segment's .log file, guarded by mu.
type fileState struct {
	mu      sync.Mutex
	f       *os.File
	pins    int
	dirty   bool        // written (or truncated) since its last fsync
	err     error       // an fsync before closing it failed: returned by its next write or fsync
	kept    bool        // never closed before the last reference: its files are (being) removed
	removed bool        // its path no longer names its file: never reopened
	done    bool        // closed for good (last reference gone)
	slot    int         // position in cache.ring, -1 when not there (guarded by cache.mu)
	ref     atomic.Bool // used since the clock hand last passed
	cache   *fileCache  // nil: opened on first use and kept until the last reference
	// bear, set on the first segment of an unborn log (unborn.go), creates
	// the log's directory; the first use then creates the .log file.
	bear func() error
}

// soloFiles is the cache of the logs opened alone (Open, not through a
// LogDir): nil, so that their files stay open once used. Tests set it
// (STORAGE_TEST_MAX_OPEN_FILES) to run every test under a tiny bound.
var soloFiles *fileCache

// syncBeforeClose fsyncs a dirty file before it is closed to make room;
// a test seam.
var syncBeforeClose = (*os.File).Sync

// errSegmentGone is returned for a use of a segment whose file cannot be
// reopened: removed while closed (a reopen failed first), or closed for good.
var errSegmentGone = errors.New("segment file was removed")

// use pins the segment's .log file and returns it, opening it first when
// it is not open. Every use must be matched by one unuse (or unuseWritten).
func (s *segment) use() (*os.File, error) {
	h := &s.fh
	h.mu.Lock()
	if f := h.f; f != nil {
		h.pins++
		h.mu.Unlock()
		h.ref.Store(true)
		return f, nil
	}
	if h.done || h.removed {
		h.mu.Unlock()
		return nil, ioErr("open", s.logPath, errSegmentGone)
	}
	flag := os.O_RDWR
	if h.bear != nil {
		if err := h.bear(); err != nil {
			h.mu.Unlock()
			return nil, err
		}
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(s.logPath, flag, 0o644)
	if err != nil {
		h.mu.Unlock()
		return nil, ioErr("open", s.logPath, err)
	}
	h.bear = nil
	if err := s.index.restore(s.path(indexSuffix)); err != nil {
		f.Close()
		h.mu.Unlock()
		return nil, err
	}
	if err := s.timeIndex.restore(s.path(timeIndexSuffix)); err != nil {
		s.index.drop()
		f.Close()
		h.mu.Unlock()
		return nil, err
	}
	h.f, h.pins = f, 1
	h.ref.Store(true)
	c := h.cache
	if c != nil {
		c.opens.Add(1)
		c.mu.Lock()
		h.slot = len(c.ring)
		c.ring = append(c.ring, s)
		c.open.Add(1)
		c.mu.Unlock()
	}
	h.mu.Unlock()
	if c != nil {
		c.shrink()
	}
	return f, nil
}

// unuse drops a pin taken by use.
func (s *segment) unuse() { s.unpin(false) }

// unuseWritten drops a pin taken by use to write or truncate the file: the
// file is dirty until its next fsync.
func (s *segment) unuseWritten() { s.unpin(true) }

func (s *segment) unpin(written bool) {
	h := &s.fh
	h.mu.Lock()
	h.pins--
	if written {
		h.dirty = true
	}
	h.mu.Unlock()
	if c := h.cache; c != nil && c.open.Load() > c.limit.Load() {
		c.shrink()
	}
}

// syncFile fsyncs the segment's .log file (opening it if need be). An
// fsync that failed when the file was closed to make room is returned
// instead, and again by every later call.
func (s *segment) syncFile() error {
	f, err := s.use()
	if err != nil {
		return err
	}
	defer s.unuse()
	h := &s.fh
	h.mu.Lock()
	if h.err != nil {
		err := h.err
		h.mu.Unlock()
		return err
	}
	h.dirty = false
	h.mu.Unlock()
	if err := f.Sync(); err != nil {
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
		return err
	}
	return nil
}

// useForWrite is use for a write: it fails with the error of an fsync that
// failed when the file was closed to make room (the file's content on disk
// is then unknown, as after any failed fsync).
func (s *segment) useForWrite() (*os.File, error) {
	f, err := s.use()
	if err != nil {
		return nil, err
	}
	s.fh.mu.Lock()
	err = s.fh.err
	s.fh.mu.Unlock()
	if err != nil {
		s.unuse()
		return nil, err
	}
	return f, nil
}

// keepOpen opens the segment's file if need be and keeps it open until the
// last reference goes; it is called before the segment's files are removed,
// while the log still holds its reference. If the file cannot be opened,
// later uses fail (errSegmentGone) rather than open whatever the path then
// names.
func (s *segment) keepOpen() {
	h := &s.fh
	_, err := s.use()
	h.mu.Lock()
	if err == nil && !h.kept {
		h.kept = true
		if c := h.cache; c != nil {
			c.mu.Lock()
			c.unringLocked(s)
			c.mu.Unlock()
		}
	}
	h.removed = true
	h.mu.Unlock()
	if err == nil {
		s.unuse()
	}
}

// closeForGood closes the file with the segment's last reference.
func (s *segment) closeForGood() {
	h := &s.fh
	h.mu.Lock()
	h.done = true
	if h.f != nil {
		h.f.Close()
		h.f = nil
		if c := h.cache; c != nil {
			c.mu.Lock()
			c.unringLocked(s)
			c.open.Add(-1)
			c.mu.Unlock()
		}
	}
	h.mu.Unlock()
}

// unringLocked takes s out of the ring. Lock (c.mu) should be held.
func (c *fileCache) unringLocked(s *segment) {
	i := s.fh.slot
	if i < 0 {
		return
	}
	last := len(c.ring) - 1
	c.ring[i] = c.ring[last]
	c.ring[i].fh.slot = i
	c.ring[last] = nil
	c.ring = c.ring[:last]
	s.fh.slot = -1
}

// shrink closes unpinned files until at most limit are open, or none is
// left that can be closed.
func (c *fileCache) shrink() {
	for c.open.Load() > c.limit.Load() {
		if !c.closeOne() {
			return
		}
	}
}

// closeOne closes one unpinned file chosen by the clock hand; false when
// every open file is pinned (or busy).
func (c *fileCache) closeOne() bool {
	c.mu.Lock()
	for tries := 2*len(c.ring) + 1; tries > 0 && len(c.ring) > 0; tries-- {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		s := c.ring[c.hand]
		c.hand++
		if s.fh.ref.Swap(false) || !s.fh.mu.TryLock() {
			continue
		}
		if s.fh.pins > 0 || s.fh.f == nil {
			s.fh.mu.Unlock()
			continue
		}
		c.unringLocked(s)
		c.open.Add(-1)
		c.mu.Unlock()
		s.closeFileLocked()
		s.fh.mu.Unlock()
		c.closes.Add(1)
		return true
	}
	c.mu.Unlock()
	return false
}

// closeFileLocked closes the unpinned file, fsyncing it first when it is
// dirty, and unmaps the indexes. Lock (fh.mu) should be held.
func (s *segment) closeFileLocked() {
	h := &s.fh
	if h.dirty && h.err == nil {
		if err := syncBeforeClose(h.f); err != nil {
			h.err = ioErr("fsync", s.logPath, err)
			s.logger.Error("fsync before closing an idle segment failed; the log refuses appends", "file", s.logPath, "err", err)
		}
	}
	h.dirty = false
	h.f.Close()
	h.f = nil
	s.index.drop()
	s.timeIndex.drop()
}

// stats reports the cache's counters.
func (c *fileCache) stats() FileCacheStats {
	return FileCacheStats{Limit: int(c.limit.Load()), Open: c.open.Load(), Opens: c.opens.Load(), Closes: c.closes.Load()}
}
