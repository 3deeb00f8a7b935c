package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// File names in a partition directory. Segment files and producer-state
// snapshots are named by a 20-digit zero-padded offset so that ls sorts them:
//
//	00000000000000000000.log        record batches, back to back, as appended
//	00000000000000000000.index      offset index (see index.go)
//	00000000000000000000.timeindex  time index (see index.go)
//	00000000000000001234.snapshot   producer state before offset 1234 (see producer.go)
//	checkpoint                      log start offset, recovery point, high watermark (see checkpoint.go)
//	leader-epoch-checkpoint         leader epochs and their start offsets (see epoch.go)
//	checkpoint.spare, leader-epoch-checkpoint.spare
//	                                the previous content, whose inode the next replacement reuses (checkpoint.go)
//	clean-shutdown                  empty; present only between Close and Open
//
// A .log file holds the batches whose offsets start at its base offset, in
// increasing offset order and without a header; the next segment starts at
// the offset after its last batch. Offsets have gaps only where the cleaner
// removed records (see cleaner.go); it keeps every segment's last batch,
// possibly emptied, so that segments still follow each other without gaps. Files ending in .tmp are half-written replacements and are removed
// by Open.
const (
	logSuffix        = ".log"
	indexSuffix      = ".index"
	timeIndexSuffix  = ".timeindex"
	snapshotSuffix   = ".snapshot"
	tmpSuffix        = ".tmp"
	offsetNameDigits = 20
)

// offsetFileName is the 20-digit file name for offset with suffix.
func offsetFileName(dir string, offset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, suffix))
}

// parseOffsetFileName parses a name made by offsetFileName.
func parseOffsetFileName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) || len(name) != offsetNameDigits+len(suffix) {
		return 0, false
	}
	n, err := strconv.ParseInt(name[:offsetNameDigits], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// tsOffset is a segment's largest timestamp and the last offset of the batch
// in which it was first reached; ts -1 means no timestamp yet.
type tsOffset struct{ ts, offset int64 }

var noTimestamp = &tsOffset{ts: -1, offset: -1}

// segment is one .log file with its indexes. It is reference counted: the Log
// holds one reference while the segment is in its list, and each reader or
// Slice holds one; the file is closed and the indexes unmapped when the last
// reference goes, so a deleted segment stays readable to those holding it.
type segment struct {
	base    int64
	logPath string
	fh      fileState // the .log file, opened when used (filecache.go)
	logger  *slog.Logger

	size  atomic.Int64 // bytes written to the .log file
	refs  atomic.Int32
	maxTs atomic.Pointer[tsOffset] // largest timestamp; nil until the indexes are loaded

	index     offsetIndex
	timeIndex timeIndex
	aborted   atomic.Pointer[[]AbortedTxn] // aborted-transaction index (.txnindex); replaced, never modified

	loadMu      sync.Mutex
	loaded      atomic.Bool // indexes checked (or rebuilt) and usable
	indexWarned atomic.Bool

	// Writer state, guarded by Log.mu.
	bytesSinceIndex int64 // log bytes since the last offset-index entry
	firstAppendMs   int64 // clock time of the first append, for segment.ms; 0 when empty
	// firstBatchTs is the largest timestamp of the segment's first batch
	// when firstBatchTsSet: segment.ms measures from it (Kafka's
	// rollingBasedTimestamp) when it is not negative.
	firstBatchTs    int64
	firstBatchTsSet bool
}

// noteFirstBatch records the largest timestamp of a batch written at pos,
// when it is the segment's first. Lock (Log.mu) should be held.
func (s *segment) noteFirstBatch(pos, maxTs int64) {
	if pos == 0 {
		s.firstBatchTs, s.firstBatchTsSet = maxTs, true
	}
}

// rollTimestampLocked is the largest timestamp of the segment's first
// batch, read from the file when not known yet (a segment opened from disk
// or cut short); -1 when it cannot be read. Lock (Log.mu) should be held.
func (s *segment) rollTimestampLocked() int64 {
	if !s.firstBatchTsSet {
		s.firstBatchTs = s.firstMaxTimestamp()
		s.firstBatchTsSet = true
	}
	return s.firstBatchTs
}

// firstMaxTimestamp is the largest timestamp of the segment's first
// batch, read from the file; -1 when it cannot be read.
func (s *segment) firstMaxTimestamp() int64 {
	f, err := s.use()
	if err != nil {
		return -1
	}
	defer s.unuse()
	var hb [BatchHeaderSize]byte
	if _, err := f.ReadAt(hb[:], 0); err != nil {
		return -1
	}
	return parseHeader(hb[:]).MaxTimestamp
}

func (s *segment) path(suffix string) string {
	return offsetFileName(filepath.Dir(s.logPath), s.base, suffix)
}

// newSegment is a segment of dir at base whose file is opened when first
// used, through the LogDir's cache fc (nil for a log opened alone).
func newSegment(dir string, base int64, logger *slog.Logger, fc *fileCache) *segment {
	s := &segment{base: base, logPath: offsetFileName(dir, base, logSuffix), logger: logger}
	s.fh.cache, s.fh.slot = fc, -1
	return s
}

// openSegment finds an existing .log file; it is opened when first used
// and its indexes are loaded later.
func openSegment(dir string, base int64, logger *slog.Logger, fc *fileCache) (*segment, error) {
	s := newSegment(dir, base, logger, fc)
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return nil, ioErr("open", s.logPath, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, ioErr("open", s.logPath, errors.New("not a regular file"))
	}
	s.size.Store(fi.Size())
	s.refs.Store(1)
	return s, nil
}

// createSegment creates an empty segment (replacing stale files of that name)
// ready to be the active one.
func createSegment(dir string, base int64, logger *slog.Logger, fc *fileCache) (*segment, error) {
	s := newSegment(dir, base, logger, fc)
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if err := os.WriteFile(s.path(suffix), nil, 0o644); err != nil {
			return nil, ioErr("create", s.path(suffix), err)
		}
	}
	if err := os.Remove(s.path(txnIndexSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, ioErr("remove", s.path(txnIndexSuffix), err)
	}
	f, err := os.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, ioErr("create", s.logPath, err)
	}
	if err := f.Close(); err != nil {
		return nil, ioErr("create", s.logPath, err)
	}
	s.refs.Store(1)
	s.maxTs.Store(noTimestamp)
	s.loaded.Store(true)
	return s, nil
}

// acquire takes a reference; false means the segment is already closed.
func (s *segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference, closing the segment with the last one.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.closeForGood()
		s.index.release()
		s.timeIndex.release()
	}
}

// removeFiles unlinks the segment's files; open references keep the data
// (the file is kept open for them: keepOpen).
func (s *segment) removeFiles() error {
	s.keepOpen()
	var first error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(s.path(suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = ioErr("remove", s.path(suffix), err)
		}
	}
	return first
}

// lastModifiedMs is the .log file's modification time in Unix milliseconds.
func (s *segment) lastModifiedMs() int64 {
	f, err := s.use()
	if err != nil {
		return 0
	}
	defer s.unuse()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixMilli()
}

// track records a batch of size bytes written at pos in the in-memory indexes,
// following Kafka's rule. Lock should be held (Log.mu, or exclusive use).
func (s *segment) track(pos, size, lastOffset, maxTimestamp int64, interval int32) {
	mt := s.maxTs.Load()
	if maxTimestamp > mt.ts {
		mt = &tsOffset{ts: maxTimestamp, offset: lastOffset}
		s.maxTs.Store(mt)
	}
	if s.bytesSinceIndex > int64(interval) {
		s.index.add(lastOffset-s.base, pos)
		if mt.ts >= 0 {
			s.timeIndex.maybeAdd(mt.ts, mt.offset-s.base)
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += size
}

// sealTimeIndex adds the segment's largest timestamp as a final time-index
// entry, as done when a segment is rolled or closed.
func (s *segment) sealTimeIndex() {
	if mt := s.maxTs.Load(); mt != nil && mt.ts >= 0 {
		s.timeIndex.maybeAdd(mt.ts, mt.offset-s.base)
	}
}

// persistIndexes writes out in-memory index entries, fsyncing when sync is set.
func (s *segment) persistIndexes(sync bool) error {
	if err := s.index.persist(s.path(indexSuffix), sync); err != nil {
		return err
	}
	return s.timeIndex.persist(s.path(timeIndexSuffix), sync)
}

// window reads a file through a buffer, serving small ranges from it.
type window struct {
	r     io.ReaderAt
	path  string
	end   int64 // bytes beyond end are never read
	buf   []byte
	start int64 // file position of buf[0]
	n     int   // valid bytes in buf
}

// at returns the n bytes at pos (n <= len(buf)), valid until the next call.
func (w *window) at(pos int64, n int) ([]byte, error) {
	if pos >= w.start && pos+int64(n) <= w.start+int64(w.n) {
		off := pos - w.start
		return w.buf[off : off+int64(n)], nil
	}
	if pos < 0 || pos+int64(n) > w.end || n > len(w.buf) {
		return nil, io.ErrUnexpectedEOF
	}
	want := min(int64(len(w.buf)), w.end-pos)
	got, err := w.r.ReadAt(w.buf[:want], pos)
	if got < n {
		w.n = 0
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, ioErr("read", w.path, err)
	}
	w.start, w.n = pos, got
	return w.buf[:n], nil
}

// header returns the batch header at pos, checking its framing: magic 2 and a
// batchLength that fits before w.end.
func (w *window) header(pos int64) ([]byte, error) {
	if w.end-pos < BatchHeaderSize {
		return nil, &CorruptionError{File: w.path, Pos: pos, Reason: fmt.Sprintf("%d bytes left, less than a batch header", w.end-pos)}
	}
	h, err := w.at(pos, BatchHeaderSize)
	if err != nil {
		return nil, err
	}
	if h[batchMagicPos] != 2 {
		return nil, &CorruptionError{File: w.path, Pos: pos, Reason: fmt.Sprintf("magic %d", int8(h[batchMagicPos]))}
	}
	length := int64(int32(binary.BigEndian.Uint32(h[batchLengthPos:])))
	if length < batchMinLength || pos+batchLengthOverhead+length > w.end {
		return nil, &CorruptionError{File: w.path, Pos: pos, Reason: fmt.Sprintf("batchLength %d does not fit in %d bytes", length, w.end-pos)}
	}
	return h, nil
}

const readBufSize = 16 << 10

var readBufPool = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// crcBufPool holds the larger buffers of a recovery's CRC checks: a broker
// recovering thousands of logs after a crash would otherwise allocate, and
// collect, one per segment.
var crcBufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// locate finds the first batch whose last offset is >= target among the
// first readable bytes of the segment. The indexes must be loaded.
func (s *segment) locate(target, readable int64) (pos int64, h BatchHeader, found bool, err error) {
	if readable <= 0 {
		return 0, h, false, nil
	}
	f, err := s.use()
	if err != nil {
		return 0, h, false, err
	}
	defer s.unuse()
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	w := window{r: f, path: s.logPath, end: readable, buf: *bp}
	for pos = s.startPos(&w, target); pos < readable; pos += h.Size() {
		b, err := w.header(pos)
		if err != nil {
			return 0, h, false, err
		}
		h = parseHeader(b)
		if h.LastOffset() >= target {
			return pos, h, true, nil
		}
	}
	return 0, h, false, nil
}

// startPos is where to start scanning for target: the position of the
// offset-index entry for it, once the batch there is confirmed to end at the
// entry's offset, else 0. Only entries after the last one are checked at
// load time; this keeps a damaged entry in the middle from sending a read to
// the wrong batch.
func (s *segment) startPos(w *window, target int64) int64 {
	rel, pos := s.index.lookup(target - s.base)
	if rel < 0 {
		return 0
	}
	if b, err := w.header(pos); err == nil && parseHeader(b).LastOffset() == s.base+rel {
		return pos
	}
	if s.indexWarned.CompareAndSwap(false, true) {
		s.logger.Warn("offset index entry does not match the log; scanning from the start", "file", s.path(indexSuffix), "offset", s.base+rel, "pos", pos)
	}
	return 0
}

// readBatch reads the whole batch at pos described by h.
func (s *segment) readBatch(pos int64, h BatchHeader) ([]byte, error) {
	f, err := s.use()
	if err != nil {
		return nil, err
	}
	defer s.unuse()
	b := make([]byte, h.Size())
	if _, err := f.ReadAt(b, pos); err != nil {
		return nil, ioErr("read", s.logPath, err)
	}
	return b, nil
}

// scanResult is what a scan of a segment's batches found.
type scanResult struct {
	next    int64            // offset after the last good batch
	end     int64            // file position after the last good batch
	corrupt *CorruptionError // first bad batch, nil when the whole file is good
}

// rebuild scans the segment from the start, checking each batch's framing,
// offset continuity and, when verifyCRC, its CRC, and rebuilds the in-memory
// indexes (heap mode) for the good prefix. It stops at the first bad batch.
// The caller must have exclusive use of the segment.
func (s *segment) rebuild(interval int32, verifyCRC bool) (scanResult, error) {
	s.index.setHeap(nil, 0)
	s.timeIndex.setHeap(nil, 0)
	s.maxTs.Store(noTimestamp)
	s.bytesSinceIndex = 0
	size := s.size.Load()
	res := scanResult{next: s.base}
	f, err := s.use()
	if err != nil {
		return res, err
	}
	defer s.unuse()
	pool := &readBufPool
	if verifyCRC {
		pool = &crcBufPool
	}
	bp := pool.Get().(*[]byte)
	defer pool.Put(bp)
	w := window{r: f, path: s.logPath, end: size, buf: *bp}
	for res.end < size {
		pos := res.end
		hb, err := w.header(pos)
		if err != nil {
			var ce *CorruptionError
			if errors.As(err, &ce) {
				res.corrupt = ce
				return res, nil
			}
			return res, err
		}
		h := parseHeader(hb)
		bad := func(reason string) (scanResult, error) {
			res.corrupt = &CorruptionError{File: s.logPath, Pos: pos, Reason: reason}
			return res, nil
		}
		if h.BaseOffset < res.next { // gaps are compaction's
			return bad(fmt.Sprintf("baseOffset %d, expected at least %d", h.BaseOffset, res.next))
		}
		if h.LastOffsetDelta < 0 || h.LastOffset()-s.base > math.MaxUint32 {
			return bad(fmt.Sprintf("lastOffsetDelta %d", h.LastOffsetDelta))
		}
		if verifyCRC {
			crc := crc32.Update(0, castagnoli, hb[batchAttributesPos:])
			for off, end := pos+BatchHeaderSize, pos+h.Size(); off < end; {
				n := int(min(end-off, int64(len(w.buf))))
				b, err := w.at(off, n)
				if err != nil {
					return res, err
				}
				crc = crc32.Update(crc, castagnoli, b)
				off += int64(n)
			}
			if crc != h.CRC {
				return bad(fmt.Sprintf("crc %08x, computed %08x", h.CRC, crc))
			}
		}
		s.track(pos, h.Size(), h.LastOffset(), h.MaxTimestamp, interval)
		res.next, res.end = h.LastOffset()+1, pos+h.Size()
	}
	return res, nil
}

// checkIndexes verifies the on-disk indexes (idx, tidx) of a segment that was
// cleanly written: well-formed, and consistent with the batches after the last
// offset-index entry, which it reads. expectNext is the offset after the
// segment (-1 when unknown, for the last segment). It returns the next offset,
// the largest timestamp and the bytes since the last index entry, or an error
// describing the disagreement.
func (s *segment) checkIndexes(idx, tidx []byte, interval int32, expectNext int64) (next int64, mt tsOffset, bytesSince int64, err error) {
	size := s.size.Load()
	maxRel := int64(math.MaxUint32)
	if expectNext >= 0 {
		maxRel = expectNext - 1 - s.base
	}
	if err := checkOffsetIndex(idx, maxRel, size); err != nil {
		return 0, mt, 0, fmt.Errorf("offset index: %v", err)
	}
	if err := checkTimeIndex(tidx, maxRel); err != nil {
		return 0, mt, 0, fmt.Errorf("time index: %v", err)
	}
	// Walk the batches from the last indexed one to the end of the file.
	pos, wantLast, next := int64(0), int64(-1), s.base
	if n := len(idx) / offsetIndexEntrySize; n > 0 {
		r, p := offsetEntry(idx, n-1)
		pos, wantLast = int64(p), s.base+int64(r)
	}
	mt = tsOffset{ts: -1, offset: -1}
	f, err := s.use()
	if err != nil {
		return 0, mt, 0, err
	}
	defer s.unuse()
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	w := window{r: f, path: s.logPath, end: size, buf: *bp}
	for first := true; pos < size; first = false {
		b, err := w.header(pos)
		if err != nil {
			return 0, mt, 0, err
		}
		h := parseHeader(b)
		switch {
		case first && wantLast >= 0 && h.LastOffset() != wantLast:
			return 0, mt, 0, fmt.Errorf("last index entry says offset %d at %d, batch there ends at %d", wantLast, pos, h.LastOffset())
		case first && wantLast < 0 && h.BaseOffset < s.base:
			return 0, mt, 0, fmt.Errorf("first batch has offset %d, segment base is %d", h.BaseOffset, s.base)
		case !first && h.BaseOffset < next:
			return 0, mt, 0, fmt.Errorf("batch at %d has offset %d, expected at least %d", pos, h.BaseOffset, next)
		case !first && bytesSince > int64(interval):
			return 0, mt, 0, fmt.Errorf("batch at %d should have an index entry", pos)
		case h.LastOffsetDelta < 0:
			return 0, mt, 0, fmt.Errorf("batch at %d has lastOffsetDelta %d", pos, h.LastOffsetDelta)
		}
		if first && wantLast >= 0 {
			bytesSince = 0
		}
		if h.MaxTimestamp > mt.ts {
			mt = tsOffset{ts: h.MaxTimestamp, offset: h.LastOffset()}
		}
		bytesSince += h.Size()
		next = h.LastOffset() + 1
		pos += h.Size()
	}
	if expectNext >= 0 && next != expectNext {
		return 0, mt, 0, fmt.Errorf("segment ends at offset %d, next segment starts at %d", next, expectNext)
	}
	if n := len(tidx) / timeIndexEntrySize; n > 0 {
		ts, rel := timeEntry(tidx, n-1)
		if mt.ts > ts {
			return 0, mt, 0, fmt.Errorf("time index ends at timestamp %d, batches reach %d", ts, mt.ts)
		}
		// The last entry is the segment's largest timestamp: check that the
		// batch it names ends there and has that timestamp.
		_, pos := offsetLookup(idx, int64(rel))
		for {
			b, err := w.header(pos)
			if err != nil {
				return 0, mt, 0, fmt.Errorf("time index entry (%d, %d): %v", ts, s.base+int64(rel), err)
			}
			h := parseHeader(b)
			if h.LastOffset() >= s.base+int64(rel) {
				if h.LastOffset() != s.base+int64(rel) || h.MaxTimestamp != ts {
					return 0, mt, 0, fmt.Errorf("time index entry (%d, %d) does not match batch %d..%d with maxTimestamp %d",
						ts, s.base+int64(rel), h.BaseOffset, h.LastOffset(), h.MaxTimestamp)
				}
				break
			}
			pos += h.Size()
		}
		mt = tsOffset{ts: ts, offset: s.base + int64(rel)}
	} else if size > 0 {
		return 0, mt, 0, errors.New("time index is empty")
	}
	return next, mt, bytesSince, nil
}

// loadIndexes makes the segment's indexes usable: it reads them (into the
// heap when heap is set, for the active segment, else mmapped), checks them
// with checkIndexes, and rebuilds them from the .log file when they are
// missing or do not agree. It returns the segment's next offset. A batch that
// is damaged (framing or offsets) is returned as a *CorruptionError, with the
// indexes built for the good prefix.
func (s *segment) loadIndexes(interval int32, heap bool, expectNext int64) (int64, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded.Load() {
		return expectNext, nil
	}
	// Pinned while the indexes are mapped: mappings exist only while the
	// file is open, and go with it (filecache.go).
	if _, err := s.use(); err != nil {
		return 0, err
	}
	defer s.unuse()
	read := mmapFile
	if heap {
		read = func(p string) ([]byte, error) {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, ioErr("read", p, err)
			}
			return b, nil
		}
	}
	unmap := func(b []byte) {
		if !heap && b != nil {
			munmap(b)
		}
	}
	idx, err1 := read(s.path(indexSuffix))
	tidx, err2 := read(s.path(timeIndexSuffix))
	var reason error
	switch {
	case err1 != nil:
		reason = err1
	case err2 != nil:
		reason = err2
	default:
		next, mt, bytesSince, err := s.checkIndexes(idx, tidx, interval, expectNext)
		if err == nil {
			if heap {
				s.index.setHeap(idx, len(idx))
				s.timeIndex.setHeap(tidx, len(tidx))
			} else {
				s.index.mu.Lock()
				s.index.data, s.index.mapped, s.index.persisted = idx, idx != nil, len(idx)
				s.index.mu.Unlock()
				s.timeIndex.mu.Lock()
				s.timeIndex.data, s.timeIndex.mapped, s.timeIndex.persisted = tidx, tidx != nil, len(tidx)
				s.timeIndex.mu.Unlock()
			}
			s.maxTs.Store(&mt)
			s.bytesSinceIndex = bytesSince
			s.loaded.Store(true)
			return next, nil
		}
		reason = err
	}
	unmap(idx)
	unmap(tidx)
	s.logger.Warn("rebuilding segment indexes", "file", s.logPath, "reason", reason)
	res, err := s.rebuild(interval, false)
	if err != nil {
		return 0, err
	}
	if err := s.persistIndexes(true); err != nil {
		return 0, err
	}
	if !heap {
		if err := s.index.mapFile(s.path(indexSuffix)); err != nil {
			return 0, err
		}
		if err := s.timeIndex.mapFile(s.path(timeIndexSuffix)); err != nil {
			return 0, err
		}
	}
	s.loaded.Store(true)
	if res.corrupt != nil {
		return res.next, res.corrupt
	}
	return res.next, nil
}

// truncateFile cuts the .log file to size bytes (not its size field).
func (s *segment) truncateFile(size int64) error {
	f, err := s.use()
	if err != nil {
		return err
	}
	defer s.unuseWritten()
	return f.Truncate(size)
}
