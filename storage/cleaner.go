package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Log compaction (Kafka's LogCleaner), for cleanup.policy=compact.
//
// The log is divided at the first dirty offset (the cleaner checkpoint):
// below it the log has been cleaned, above it not. A clean covers the
// cleanable segments: every segment but the active one whose records all lie
// below the last stable offset (hence the high watermark) and, for the dirty
// ones, whose largest timestamp is older than min.compaction.lag.ms. It
// builds an OffsetMap of the latest offset of every key in the dirty part,
// then rewrites the cleanable segments from the start of the log, grouped
// into segments of at most segment.bytes, keeping a record when:
//
//   - it lies beyond the map's range (the map filled up: a later pass
//     covers it), or
//   - it has a key, its offset is the latest for that key, and it has a value
//     or is a tombstone still within delete.retention.ms.
//
// Records without a key are dropped. Batches are rewritten record by record:
// kept records are copied byte for byte, the batch keeps its baseOffset,
// lastOffsetDelta, timestamps, producer fields and codec (compressed batches
// are decompressed and recompressed with their codec), so offsets never
// change. A batch left without records is dropped, except that an empty batch
// (header only, recordCount 0) is kept for the last data batch of every known
// producer, so that idempotent de-duplication and sequence checks survive,
// and for the last batch of every output segment, so that each segment still
// ends where the next begins (recovery relies on that to detect lost
// segments).
//
// Transactions (KIP-98): batches of aborted transactions are removed.
// A COMMIT marker can be dropped once no batch of its transaction is left
// before it, an ABORT marker once none of its aborted batches is left; both
// only after delete.retention.ms, like tombstones. An ABORT marker that is
// kept with data still behind it keeps its entry in the new segment's
// .txnindex.
//
// When the map fills before the dirty part is covered, the clean ends at the
// last batch it mapped (a pass), and Clean starts another pass from there.
//
// Tombstone and marker retention is counted from when the segment holding
// them was cleaned: a rewritten segment's modification time is set to the
// time of the clean when it held dirty data, else kept as the newest of its
// sources'; tombstones in a source are kept while the source is dirty or
// younger than delete.retention.ms.
//
// # Files and crash safety
//
// A group of segments with base offset B is written as B.log.cleaned,
// B.index.cleaned, B.timeindex.cleaned and B.txnindex.cleaned, fsynced. The
// indexes are renamed to .swap, then B.log.cleaned to B.log.swap: that rename
// is the commit point. The old segments' files are then removed and the .swap
// files renamed to their final names, the .log last. Open deletes .cleaned
// files (a clean that did not commit) and completes a swap it finds: it
// removes the .log files whose base lies in [B, end of B.log.swap) with
// their indexes, replaces each index that has a .swap, and renames
// B.log.swap to B.log.
//
// Cleaner checkpoint ("cleaner-offset-checkpoint"): two lines of text,
// replaced atomically: "0\n<first dirty offset>\n". Missing or malformed
// means the whole log is dirty.
const (
	cleanedSuffix         = ".cleaned"
	swapSuffix            = ".swap"
	cleanerCheckpointName = "cleaner-offset-checkpoint"
)

// ErrCleanAborted is returned by Clean when the log changed under the
// cleaner (retention, truncation or closing removed a segment it was
// rewriting); nothing was replaced, and a later Clean starts over.
var ErrCleanAborted = errors.New("storage: clean aborted: the log changed")

// CleanOptions are the cleaner's settings for one Clean.
type CleanOptions struct {
	// Map is the dedupe buffer (log.cleaner.dedupe.buffer.size); required.
	// It is cleared before each pass.
	Map *OffsetMap
	// MinCompactionLagMs is min.compaction.lag.ms: dirty segments with a
	// record newer than this are not cleaned.
	MinCompactionLagMs int64
	// DeleteRetentionMs is delete.retention.ms: how long tombstones and
	// transaction markers are kept after their segment was cleaned.
	DeleteRetentionMs int64
	// Compress compresses a records section with codec, for rewriting
	// compressed batches; when nil (or failing) a compressed batch that
	// loses only some records is kept whole.
	Compress func(codec int8, records []byte) ([]byte, error)
	// Throttle, when set, is called with the bytes read or written after
	// each batch; it may sleep (log.cleaner.io.max.bytes.per.second).
	Throttle func(bytes int64)
}

// CleanStats describes a Clean.
type CleanStats struct {
	Passes           int   // map fills (0 when there was nothing to clean)
	SegmentsCleaned  int   // source segments rewritten
	BytesRead        int64 // segment bytes read (map building and rewriting)
	BytesWritten     int64 // bytes written to cleaned segments
	RecordsRead      int64 // records examined while rewriting
	RecordsKept      int64
	MapKeys          int   // distinct keys in the map at its fullest
	FirstDirtyOffset int64 // the cleaner checkpoint before
	EndOffset        int64 // the cleaner checkpoint after
	Elapsed          time.Duration
}

// CleanableState is how much of a compacted log is waiting for the cleaner.
type CleanableState struct {
	FirstDirtyOffset       int64 // the cleaner checkpoint, at least the log start offset
	FirstUncleanableOffset int64 // end of the cleanable segments
	CleanBytes, DirtyBytes int64 // cleanable segments below / from the first dirty offset
	DirtyRatio             float64
	// Overdue is set when a dirty cleanable segment holds a record older
	// than max.compaction.lag.ms: it must be cleaned whatever the ratio.
	Overdue bool
}

// Cleanable reports the dirty part of the log, for the cleaner to pick the
// dirtiest log (min.cleanable.dirty.ratio) or an overdue one
// (max.compaction.lag.ms, <= 0 meaning none).
func (l *Log) Cleanable(minCompactionLagMs, maxCompactionLagMs int64) CleanableState {
	segs, firstDirty, upper := l.cleanRange(minCompactionLagMs)
	st := CleanableState{FirstDirtyOffset: firstDirty, FirstUncleanableOffset: upper}
	nowMs := l.rcfg.Load().Now().UnixMilli()
	for i, s := range segs[:len(segs)-1] {
		end := segs[i+1].base
		if end > upper {
			break
		}
		if end <= firstDirty {
			st.CleanBytes += s.size.Load()
			continue
		}
		st.DirtyBytes += s.size.Load()
		if maxCompactionLagMs > 0 && !st.Overdue {
			if ts, err := l.firstBatchTimestamp(s); err == nil && ts >= 0 && nowMs-ts > maxCompactionLagMs {
				st.Overdue = true
			}
		}
	}
	if total := st.CleanBytes + st.DirtyBytes; total > 0 {
		st.DirtyRatio = float64(st.DirtyBytes) / float64(total)
	}
	return st
}

// firstBatchTimestamp is the maxTimestamp of the segment's first batch.
func (l *Log) firstBatchTimestamp(s *segment) (int64, error) {
	f, err := s.use()
	if err != nil {
		return -1, err
	}
	defer s.unuse()
	var hb [BatchHeaderSize]byte
	if _, err := f.ReadAt(hb[:], 0); err != nil {
		return -1, err
	}
	return parseHeader(hb[:]).MaxTimestamp, nil
}

// cleanRange returns the segments, the first dirty offset and the end of the
// cleanable segments (a segment base; segs[0].base when none is cleanable).
// Only segs[i] with segs[i+1].base <= upper are cleanable.
func (l *Log) cleanRange(minLagMs int64) (segs []*segment, firstDirty, upper int64) {
	segs = l.segments()
	lso := l.logStartOffset.Load()
	firstDirty = l.cleanerCheckpoint()
	if firstDirty < lso || firstDirty > l.leo.Load() {
		firstDirty = lso
	}
	limit := l.LastStableOffset() // at most the high watermark
	nowMs := l.rcfg.Load().Now().UnixMilli()
	upper = segs[0].base
	for i := 0; i+1 < len(segs); i++ {
		end := segs[i+1].base
		if end > limit {
			break
		}
		if minLagMs > 0 && end > firstDirty {
			if !segs[i].acquire() {
				break
			}
			ts, err := l.largestTimestamp(segs, i)
			segs[i].release()
			if err != nil || nowMs-ts < minLagMs {
				break
			}
		}
		upper = end
	}
	return segs, firstDirty, upper
}

// cleanerCheckpoint is the persisted first dirty offset, 0 when none.
func (l *Log) cleanerCheckpoint() int64 {
	if v := l.cleanerOffset.Load(); v >= 0 {
		return v
	}
	v := int64(0)
	b, err := os.ReadFile(filepath.Join(l.dir, cleanerCheckpointName))
	if err == nil {
		var version, off int64
		if _, err := fmt.Sscanf(string(b), "%d\n%d\n", &version, &off); err == nil && version == 0 && off >= 0 {
			v = off
		}
	}
	l.cleanerOffset.CompareAndSwap(-1, v)
	return l.cleanerOffset.Load()
}

// setCleanerCheckpoint persists the first dirty offset.
func (l *Log) setCleanerCheckpoint(off int64) error {
	l.cleanerOffset.Store(off)
	return WriteFileAtomic(filepath.Join(l.dir, cleanerCheckpointName), fmt.Appendf(nil, "0\n%d\n", off))
}

// Clean compacts the log (see "Log compaction" above) and returns what it
// did. It may run while the log is appended to and read: it rewrites only
// segments below the active one and below the last stable offset, and
// replaces them under the append lock; readers holding Slices of replaced
// segments keep reading the old files. Cleans of one log are serialised.
//
// Errors: ErrLogClosed; ErrCleanAborted when retention or truncation
// removed a segment being rewritten; *StorageError; an error when the map
// cannot hold the keys of a single batch.
func (l *Log) Clean(opts CleanOptions) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	start := time.Now()
	stats := CleanStats{FirstDirtyOffset: -1, EndOffset: -1}
	if opts.Map == nil {
		return stats, errors.New("storage: Clean without an offset map")
	}
	for {
		if l.closed.Load() {
			return stats, ErrLogClosed
		}
		more, err := l.cleanPass(opts, &stats)
		if err != nil || !more {
			stats.Elapsed = time.Since(start)
			return stats, err
		}
	}
}

// cleanPass runs one pass: fill the map from the first dirty offset, rewrite
// the segments up to the end of what was mapped, move the checkpoint. more
// is set when dirty cleanable data is left (the map was full).
func (l *Log) cleanPass(opts CleanOptions, stats *CleanStats) (more bool, err error) {
	segs, firstDirty, upper := l.cleanRange(opts.MinCompactionLagMs)
	if stats.FirstDirtyOffset < 0 {
		stats.FirstDirtyOffset, stats.EndOffset = firstDirty, firstDirty
	}
	if firstDirty >= upper {
		return false, nil
	}
	n := 0 // cleanable segments
	for n+1 < len(segs) && segs[n+1].base <= upper {
		n++
	}
	segs = segs[:n:n]
	for _, s := range segs {
		if !s.acquire() {
			return false, ErrCleanAborted
		}
	}
	defer func() {
		for _, s := range segs {
			s.release()
		}
	}()
	cfg := l.rcfg.Load()
	l.mu.Lock()
	lastData := make(map[int64]int64, len(l.producers.producers))
	for id, e := range l.producers.producers {
		lastData[id] = e.lastOffset()
	}
	l.mu.Unlock()
	aborted := l.AbortedTransactions(segs[0].base, upper)

	// 1. The map, from the first dirty offset.
	m := opts.Map
	m.Clear()
	end, err := l.buildOffsetMap(segs, firstDirty, upper, aborted, cfg.Decompress, opts, stats)
	if err != nil {
		return false, err
	}
	stats.MapKeys = max(stats.MapKeys, m.Len())
	stats.Passes++

	// 2. Rewrite the segments holding offsets below end, in groups.
	k := 0
	for k < len(segs) && segs[k].base < end {
		k++
	}
	c := &cleaner{l: l, opts: opts, cfg: cfg, stats: stats, m: m, firstDirty: firstDirty, lastData: lastData,
		txns: newCleanTxns(aborted), nowMs: cfg.Now().UnixMilli(), ends: map[*segment]int64{}}
	for i, s := range segs {
		c.ends[s] = upper
		if i+1 < len(segs) {
			c.ends[s] = segs[i+1].base
		}
	}
	for _, g := range groupSegments(segs[:k], c.ends, cfg.SegmentBytes) {
		if l.closed.Load() {
			return false, ErrLogClosed
		}
		if err := c.cleanGroup(g); err != nil {
			return false, err
		}
	}
	if err := l.setCleanerCheckpoint(end); err != nil {
		return false, err
	}
	stats.EndOffset = end
	return end < upper, nil
}

// groupSegments splits segs, whose ends (offset after each) are given, into
// runs of at most maxBytes bytes whose offsets fit the 32-bit relative
// offsets of an index (Kafka's groupSegmentsBySize); a run has at least one
// segment.
func groupSegments(segs []*segment, ends map[*segment]int64, maxBytes int64) [][]*segment {
	var out [][]*segment
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].size.Load()
		for j < len(segs) && size+segs[j].size.Load() <= maxBytes && ends[segs[j]]-1-segs[i].base <= math.MaxInt32 {
			size += segs[j].size.Load()
			j++
		}
		out = append(out, segs[i:j])
		i = j
	}
	return out
}

// batchReader reads a segment's batches in order.
type batchReader struct {
	s    *segment
	r    *bufio.Reader
	pos  int64
	size int64
	buf  []byte
}

// newBatchReader reads s from f, its file (pinned by the caller).
func newBatchReader(s *segment, f io.ReaderAt, buf []byte) *batchReader {
	size := s.size.Load()
	return &batchReader{s: s, r: bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20), size: size, buf: buf}
}

// next returns the next batch (valid until the next call) and its header;
// ok is false at the end of the segment.
func (br *batchReader) next() (b []byte, h BatchHeader, ok bool, err error) {
	if br.pos >= br.size {
		return nil, h, false, nil
	}
	if br.size-br.pos < BatchHeaderSize {
		return nil, h, false, &CorruptionError{File: br.s.logPath, Pos: br.pos, Reason: "partial batch header"}
	}
	if cap(br.buf) < BatchHeaderSize {
		br.buf = make([]byte, 0, 64<<10)
	}
	hb := br.buf[:BatchHeaderSize]
	if _, err := io.ReadFull(br.r, hb); err != nil {
		return nil, h, false, ioErr("read", br.s.logPath, err)
	}
	h = parseHeader(hb)
	if h.Magic != 2 || h.Length < batchMinLength || br.pos+h.Size() > br.size {
		return nil, h, false, &CorruptionError{File: br.s.logPath, Pos: br.pos, Reason: fmt.Sprintf("batch header: magic %d, batchLength %d", h.Magic, h.Length)}
	}
	if int64(cap(br.buf)) < h.Size() {
		nb := make([]byte, h.Size(), h.Size()*2)
		copy(nb, hb)
		br.buf = nb
	}
	b = br.buf[:h.Size()]
	if _, err := io.ReadFull(br.r, b[BatchHeaderSize:]); err != nil {
		return nil, h, false, ioErr("read", br.s.logPath, err)
	}
	br.pos += h.Size()
	return b, h, true, nil
}

// rawRecord is one record of a batch as stored.
type rawRecord struct {
	raw         []byte // the whole record, length varint included
	offsetDelta int32
	tsDelta     int64
	key         []byte // nil for a null key
	value       []byte // nil for a null value
	nullValue   bool
}

// walkRecords calls fn for each of count records in records. Malformed
// records are ErrInvalidRecord.
func walkRecords(records []byte, count int32, fn func(rawRecord)) error {
	p := records
	for i := int32(0); i < count; i++ {
		bad := func(what string) error { return fmt.Errorf("%w: record %d: %s", ErrInvalidRecord, i, what) }
		length, n := varint32(p)
		if n <= 0 || length < 1 || int64(length) > int64(len(p)-n) {
			return bad("bad length")
		}
		r := rawRecord{raw: p[:n+int(length)]}
		body := p[n+1 : n+int(length)] // after the attributes
		p = p[n+int(length):]
		if r.tsDelta, n = binary.Varint(body); n <= 0 {
			return bad("bad timestampDelta")
		}
		body = body[n:]
		if r.offsetDelta, n = varint32(body); n <= 0 {
			return bad("bad offsetDelta")
		}
		body = body[n:]
		klen, n := varint32(body)
		if n <= 0 || klen < -1 || int64(klen) > int64(len(body)-n) {
			return bad("bad key")
		}
		body = body[n:]
		if klen >= 0 {
			r.key, body = body[:klen:klen], body[klen:]
		}
		vlen, n := varint32(body)
		if n <= 0 || vlen < -1 {
			return bad("bad value")
		}
		r.nullValue = vlen < 0
		if vlen >= 0 {
			if int64(vlen) > int64(len(body)-n) {
				return bad("bad value")
			}
			r.value = body[n : n+int(vlen) : n+int(vlen)]
		}
		fn(r)
	}
	return nil
}

// batchRecords returns the uncompressed records section of batch b.
func batchRecords(b []byte, h BatchHeader, decompress func(int8, []byte) ([]byte, error)) ([]byte, error) {
	rec := b[BatchHeaderSize:]
	if h.Codec() == CodecNone {
		return rec, nil
	}
	if decompress == nil {
		return nil, errors.New("no decompressor")
	}
	return decompress(h.Codec(), rec)
}

// buildOffsetMap fills opts.Map with the keys of the non-aborted data
// records from firstDirty up to upper, stopping at a batch boundary when the
// map is full. It returns the end of what it mapped (the offset after the
// last batch taken, or upper).
func (l *Log) buildOffsetMap(segs []*segment, firstDirty, upper int64, aborted []AbortedTxn, decompress func(int8, []byte) ([]byte, error), opts CleanOptions, stats *CleanStats) (int64, error) {
	var relevant []AbortedTxn
	for _, a := range aborted {
		if a.LastOffset >= firstDirty {
			relevant = append(relevant, a)
		}
	}
	txns := newCleanTxns(relevant)
	m := opts.Map
	var buf []byte
	var pinned *segment // the segment being read, unpinned when done with it
	defer func() {
		if pinned != nil {
			pinned.unuse()
		}
	}()
	for i := max(0, sortSearchSegments(segs, firstDirty)); i < len(segs); i++ {
		s := segs[i]
		if pinned != nil {
			pinned.unuse()
			pinned = nil
		}
		f, err := s.use()
		if err != nil {
			return 0, err
		}
		pinned = s
		br := newBatchReader(s, f, buf)
		for {
			b, h, ok, err := br.next()
			if err != nil {
				return 0, err
			}
			if !ok {
				break
			}
			buf = br.buf
			stats.BytesRead += h.Size()
			if opts.Throttle != nil {
				opts.Throttle(h.Size())
			}
			if h.LastOffset() < firstDirty {
				continue
			}
			if h.Control() {
				typ, ok := int16(0), false
				if h.RecordCount > 0 {
					typ, ok = markerType(b[BatchHeaderSize:])
				}
				txns.onControl(h, typ, ok)
				continue
			}
			if txns.onBatch(h) {
				continue
			}
			if m.Full(int(h.RecordCount)) {
				if m.Len() == 0 {
					return 0, fmt.Errorf("storage: offset map of %d keys cannot hold a batch of %d records", m.Capacity(), h.RecordCount)
				}
				m.latest = max(m.latest, h.BaseOffset-1)
				return h.BaseOffset, nil
			}
			recs, err := batchRecords(b, h, decompress)
			if err != nil {
				// Keys unknown: its records are kept, being absent from the map.
				l.logger.Warn("cleaner cannot read batch", "file", s.logPath, "offset", h.BaseOffset, "err", err)
				continue
			}
			if err := walkRecords(recs, h.RecordCount, func(r rawRecord) {
				if off := h.BaseOffset + int64(r.offsetDelta); r.key != nil && off >= firstDirty {
					m.Put(r.key, off)
				}
			}); err != nil {
				return 0, ioErr("read", s.logPath, err)
			}
		}
	}
	m.latest = max(m.latest, upper-1) // every batch below was mapped
	return upper, nil
}

// cleanTxns follows transactions through the batches being cleaned
// (Kafka's CleanedTransactionMetadata).
type cleanTxns struct {
	pending          []AbortedTxn // not yet started, by first offset
	ongoingAborted   map[int64]*abortedSeen
	ongoingCommitted map[int64]bool
	kept             []AbortedTxn // aborted transactions whose marker is kept, for the .txnindex being written
}

type abortedSeen struct {
	txn      AbortedTxn
	observed bool // a batch of it was met (and removed)
}

func newCleanTxns(aborted []AbortedTxn) *cleanTxns {
	return &cleanTxns{pending: aborted, ongoingAborted: map[int64]*abortedSeen{}, ongoingCommitted: map[int64]bool{}}
}

func (t *cleanTxns) upTo(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.ongoingAborted[a.ProducerID] = &abortedSeen{txn: a}
		t.pending = t.pending[1:]
	}
}

// onBatch reports whether data batch h belongs to an aborted transaction.
func (t *cleanTxns) onBatch(h BatchHeader) bool {
	t.upTo(h.LastOffset())
	if !h.Transactional() {
		return false
	}
	if a := t.ongoingAborted[h.ProducerID]; a != nil {
		a.observed = true
		return true
	}
	t.ongoingCommitted[h.ProducerID] = true
	return false
}

// onControl ends a transaction at its marker and reports whether the marker
// may be dropped (past delete.retention.ms).
func (t *cleanTxns) onControl(h BatchHeader, typ int16, ok bool) (canDiscard bool) {
	t.upTo(h.LastOffset())
	if !ok {
		return true // an empty control batch: already cleaned
	}
	switch typ {
	case markerAbort:
		a := t.ongoingAborted[h.ProducerID]
		delete(t.ongoingAborted, h.ProducerID)
		if a != nil && a.observed {
			t.kept = append(t.kept, a.txn)
			return false
		}
		return true
	case markerCommit:
		seen := t.ongoingCommitted[h.ProducerID]
		delete(t.ongoingCommitted, h.ProducerID)
		return !seen
	}
	return false
}

// cleaner rewrites the groups of one pass.
type cleaner struct {
	l          *Log
	opts       CleanOptions
	cfg        *Config
	stats      *CleanStats
	m          *OffsetMap
	firstDirty int64
	lastData   map[int64]int64    // producer id → offset of its last data batch
	ends       map[*segment]int64 // the offset after each source segment
	txns       *cleanTxns
	nowMs      int64
	buf        []byte
	out        []byte
}

// cleanGroup writes the cleaned version of group and swaps it in.
func (c *cleaner) cleanGroup(group []*segment) error {
	l := c.l
	base := group[0].base
	cleanedPath := offsetFileName(l.dir, base, logSuffix) + cleanedSuffix
	f, err := os.OpenFile(cleanedPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ioErr("create", cleanedPath, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			removeCleaned(l.dir, base)
		}
	}()
	ns := &segment{base: base, logPath: cleanedPath, logger: l.logger}
	ns.maxTs.Store(noTimestamp)
	w := bufio.NewWriterSize(f, 1<<20)
	var pos int64
	write := func(b []byte, h BatchHeader) error {
		if _, err := w.Write(b); err != nil {
			return ioErr("write", cleanedPath, err)
		}
		ns.track(pos, int64(len(b)), h.LastOffset(), h.MaxTimestamp, c.cfg.IndexIntervalBytes)
		pos += int64(len(b))
		c.stats.BytesWritten += int64(len(b))
		if c.opts.Throttle != nil {
			c.opts.Throttle(int64(len(b)))
		}
		return nil
	}
	c.txns.kept = c.txns.kept[:0]
	dirty := false
	var modMs int64
	var pinned *segment // the source being read, unpinned when done with it
	defer func() {
		if pinned != nil {
			pinned.unuse()
		}
	}()
	for gi, s := range group {
		if pinned != nil {
			pinned.unuse()
			pinned = nil
		}
		sf, err := s.use()
		if err != nil {
			return err
		}
		pinned = s
		srcEnd := c.ends[s]
		srcDirty := srcEnd > c.firstDirty
		srcMs := s.lastModifiedMs()
		if srcDirty {
			dirty = true
		} else {
			modMs = max(modMs, srcMs)
		}
		retainDeletes := srcDirty || c.nowMs-srcMs <= c.opts.DeleteRetentionMs
		br := newBatchReader(s, sf, c.buf)
		for {
			b, h, more, err := br.next()
			if err != nil {
				return err
			}
			if !more {
				break
			}
			c.buf = br.buf
			c.stats.BytesRead += h.Size()
			if c.opts.Throttle != nil {
				c.opts.Throttle(h.Size())
			}
			lastInGroup := gi == len(group)-1 && br.pos == br.size
			nb, err := c.filterBatch(b, h, retainDeletes, lastInGroup)
			if err != nil {
				return ioErr("read", s.logPath, err)
			}
			if nb != nil {
				if err := write(nb, parseHeader(nb)); err != nil {
					return err
				}
			}
		}
	}
	if pos == 0 {
		return nil // nothing at all (empty sources): leave them
	}
	if err := w.Flush(); err != nil {
		return ioErr("write", cleanedPath, err)
	}
	if err := f.Sync(); err != nil {
		return ioErr("fsync", cleanedPath, err)
	}
	if err := f.Close(); err != nil {
		return ioErr("close", cleanedPath, err)
	}
	if dirty {
		modMs = c.nowMs
	}
	mt := time.UnixMilli(modMs)
	if err := os.Chtimes(cleanedPath, mt, mt); err != nil {
		return ioErr("chtimes", cleanedPath, err)
	}
	ns.sealTimeIndex()
	if err := ns.index.persist(offsetFileName(l.dir, base, indexSuffix)+cleanedSuffix, true); err != nil {
		return err
	}
	if err := ns.timeIndex.persist(offsetFileName(l.dir, base, timeIndexSuffix)+cleanedSuffix, true); err != nil {
		return err
	}
	kept := append([]AbortedTxn(nil), c.txns.kept...)
	if err := writeTxnIndexFile(offsetFileName(l.dir, base, txnIndexSuffix)+cleanedSuffix, kept); err != nil {
		return err
	}
	if err := l.swapIn(group, base, kept); err != nil {
		return err
	}
	ok = true
	c.stats.SegmentsCleaned += len(group)
	return nil
}

// filterBatch returns the cleaned form of batch b: b itself when every
// record stays, a rewritten batch, an empty batch, or nil to drop it.
func (c *cleaner) filterBatch(b []byte, h BatchHeader, retainDeletes, lastInGroup bool) ([]byte, error) {
	keepEmpty := lastInGroup
	if h.Control() {
		typ, ok := int16(0), false
		if h.RecordCount > 0 {
			typ, ok = markerType(b[BatchHeaderSize:])
		}
		if c.txns.onControl(h, typ, ok) && !retainDeletes {
			if keepEmpty {
				return emptyBatch(h), nil
			}
			return nil, nil
		}
		return b, nil
	}
	abortedBatch := c.txns.onBatch(h)
	if h.ProducerID >= 0 {
		if last, ok := c.lastData[h.ProducerID]; ok && last == h.LastOffset() {
			keepEmpty = true
		}
	}
	if abortedBatch {
		c.stats.RecordsRead += int64(h.RecordCount)
		if keepEmpty {
			return emptyBatch(h), nil
		}
		return nil, nil
	}
	latest := c.m.LatestOffset()
	if h.BaseOffset > latest { // beyond the map: a later pass
		c.stats.RecordsRead += int64(h.RecordCount)
		c.stats.RecordsKept += int64(h.RecordCount)
		return b, nil
	}
	recs, err := batchRecords(b, h, c.cfg.Decompress)
	if err != nil {
		c.l.logger.Warn("cleaner keeps a batch it cannot read", "offset", h.BaseOffset, "err", err)
		return b, nil
	}
	out := c.out[:0]
	n, total := int32(0), int32(0)
	err = walkRecords(recs, h.RecordCount, func(r rawRecord) {
		total++
		off := h.BaseOffset + int64(r.offsetDelta)
		keep := off > latest
		if !keep && r.key != nil {
			keep = off >= c.m.Get(r.key) && (!r.nullValue || retainDeletes)
		}
		if keep {
			out = append(out, r.raw...)
			n++
		}
	})
	c.out = out
	if err != nil {
		return nil, err
	}
	c.stats.RecordsRead += int64(total)
	c.stats.RecordsKept += int64(n)
	switch {
	case n == total:
		return b, nil
	case n == 0 && keepEmpty:
		return emptyBatch(h), nil
	case n == 0:
		return nil, nil
	}
	if h.Codec() != CodecNone {
		if c.opts.Compress == nil {
			c.stats.RecordsKept += int64(total - n)
			return b, nil
		}
		z, err := c.opts.Compress(h.Codec(), out)
		if err != nil {
			c.l.logger.Warn("cleaner keeps a batch it cannot recompress", "offset", h.BaseOffset, "err", err)
			c.stats.RecordsKept += int64(total - n)
			return b, nil
		}
		out = z
	}
	return rebuildBatch(b[:BatchHeaderSize], out, n, h.Attributes), nil
}

// rebuildBatch makes a batch from header hdr (baseOffset, lastOffsetDelta,
// timestamps and producer fields kept) with records and count.
func rebuildBatch(hdr, records []byte, count int32, attrs int16) []byte {
	be := binary.BigEndian
	nb := make([]byte, BatchHeaderSize+len(records))
	copy(nb, hdr)
	copy(nb[BatchHeaderSize:], records)
	be.PutUint32(nb[batchLengthPos:], uint32(len(nb)-batchLengthOverhead))
	be.PutUint16(nb[batchAttributesPos:], uint16(attrs))
	be.PutUint32(nb[batchRecordCountPos:], uint32(count))
	be.PutUint32(nb[batchCRCPos:], crc32.Checksum(nb[batchAttributesPos:], castagnoli))
	return nb
}

// emptyBatch is h's batch without records and without compression, as
// Kafka's cleaner keeps a producer's last batch.
func emptyBatch(h BatchHeader) []byte {
	var hdr [BatchHeaderSize]byte
	be := binary.BigEndian
	be.PutUint64(hdr[batchBaseOffsetPos:], uint64(h.BaseOffset))
	be.PutUint32(hdr[batchLeaderEpochPos:], uint32(h.PartitionLeaderEpoch))
	hdr[batchMagicPos] = 2
	be.PutUint32(hdr[batchLastOffsetDeltaPos:], uint32(h.LastOffsetDelta))
	be.PutUint64(hdr[batchBaseTimestampPos:], uint64(h.BaseTimestamp))
	be.PutUint64(hdr[batchMaxTimestampPos:], uint64(h.MaxTimestamp))
	be.PutUint64(hdr[batchProducerIDPos:], uint64(h.ProducerID))
	be.PutUint16(hdr[batchProducerEpochPos:], uint16(h.ProducerEpoch))
	be.PutUint32(hdr[batchBaseSequencePos:], uint32(h.BaseSequence))
	return rebuildBatch(hdr[:], nil, 0, h.Attributes&^attrCodecMask)
}

// writeTxnIndexFile writes a .txnindex file holding entries, fsynced.
func writeTxnIndexFile(path string, entries []AbortedTxn) error {
	be := binary.BigEndian
	var b []byte
	for _, a := range entries {
		b = be.AppendUint16(b, 0)
		b = be.AppendUint64(b, uint64(a.ProducerID))
		b = be.AppendUint64(b, uint64(a.FirstOffset))
		b = be.AppendUint64(b, uint64(a.LastOffset))
		b = be.AppendUint64(b, uint64(a.LastStableOffset))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ioErr("create", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return ioErr("write", path, err)
}

// removeCleaned deletes the .cleaned files of base.
func removeCleaned(dir string, base int64) {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		_ = os.Remove(offsetFileName(dir, base, suffix) + cleanedSuffix)
	}
}

var segmentSuffixes = []string{txnIndexSuffix, indexSuffix, timeIndexSuffix}

// swapIn replaces group, whose cleaned files for base are written, by the
// cleaned segment, under the append lock. It returns ErrCleanAborted when
// the group is no longer in the log.
func (l *Log) swapIn(group []*segment, base int64, aborted []AbortedTxn) error {
	segs := l.segments()
	for i := range group { // indexes are loaded before any file is renamed
		k := sortSearchSegments(segs, group[i].base)
		if k >= 0 && segs[k] == group[i] {
			if err := l.ensureLoaded(segs, k); err != nil {
				return err
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrLogClosed
	}
	segs = l.segments()
	k := sortSearchSegments(segs, base)
	if k < 0 || k+len(group) >= len(segs) {
		return ErrCleanAborted
	}
	for i, s := range group {
		if segs[k+i] != s {
			return ErrCleanAborted
		}
	}
	hook := l.rcfg.Load().BeforeIO
	step := func(op, path string) error {
		if hook != nil {
			if err := hook(op, path); err != nil {
				return ioErr(op, path, err)
			}
		}
		return nil
	}
	final := func(suffix string) string { return offsetFileName(l.dir, base, suffix) }
	for _, suffix := range segmentSuffixes {
		if err := renameFile(final(suffix)+cleanedSuffix, final(suffix)+swapSuffix); err != nil {
			return ioErr("rename", final(suffix)+cleanedSuffix, err)
		}
	}
	if err := step("clean-commit", final(logSuffix)+cleanedSuffix); err != nil {
		return err
	}
	if err := renameFile(final(logSuffix)+cleanedSuffix, final(logSuffix)+swapSuffix); err != nil {
		return ioErr("rename", final(logSuffix)+cleanedSuffix, err)
	}
	if err := SyncDir(l.dir); err != nil {
		return err
	}
	// Committed: from here a failure leaves the swap for Open to complete,
	// and the log refuses appends until it is reopened.
	err := func() error {
		if err := step("clean-swap", final(logSuffix)+swapSuffix); err != nil {
			return err
		}
		for _, s := range group {
			if err := s.removeFiles(); err != nil {
				return err
			}
		}
		if err := step("clean-rename", final(logSuffix)+swapSuffix); err != nil {
			return err
		}
		if err := finishSwap(l.dir, base); err != nil {
			return err
		}
		return SyncDir(l.dir)
	}()
	if err != nil {
		l.writeErr = err
		return err
	}
	ns, err := openSegment(l.dir, base, l.logger, l.files())
	if err != nil {
		l.writeErr = err
		return err
	}
	if len(aborted) > 0 {
		ns.aborted.Store(&aborted)
	}
	rest := make([]*segment, 0, len(segs)-len(group)+1)
	rest = append(append(append(rest, segs[:k]...), ns), segs[k+len(group):]...)
	l.segs.Store(&rest)
	for _, s := range group {
		s.release()
	}
	return nil
}

// finishSwap renames base's .swap files to their final names, the .log
// last, replacing what is there, and removes an empty .txnindex.
func finishSwap(dir string, base int64) error {
	for _, suffix := range segmentSuffixes {
		p := offsetFileName(dir, base, suffix)
		if _, err := os.Stat(p + swapSuffix); err != nil {
			continue // renamed before a crash
		}
		if err := renameFile(p+swapSuffix, p); err != nil {
			return ioErr("rename", p+swapSuffix, err)
		}
	}
	p := offsetFileName(dir, base, logSuffix)
	if err := renameFile(p+swapSuffix, p); err != nil {
		return ioErr("rename", p+swapSuffix, err)
	}
	tp := offsetFileName(dir, base, txnIndexSuffix)
	if fi, err := os.Stat(tp); err == nil && fi.Size() == 0 {
		if err := os.Remove(tp); err != nil {
			return ioErr("remove", tp, err)
		}
	}
	return nil
}

// recoverCleanerFiles runs before Open lists a log directory: it deletes
// .cleaned files (a clean that did not commit) and index .swap files
// without their .log.swap, and completes every committed swap
// (B.log.swap): the segments it replaces, those with a base in [B, end of
// the swap), are removed and the .swap files renamed.
func recoverCleanerFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ioErr("readdir", dir, err)
	}
	var swaps []int64
	var logs []int64
	changed := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case len(name) > len(cleanedSuffix) && name[len(name)-len(cleanedSuffix):] == cleanedSuffix:
			_ = os.Remove(filepath.Join(dir, name))
			changed = true
		case len(name) > len(swapSuffix) && name[len(name)-len(swapSuffix):] == swapSuffix:
			if base, ok := parseOffsetFileName(name[:len(name)-len(swapSuffix)], logSuffix); ok {
				swaps = append(swaps, base)
			}
		default:
			if base, ok := parseOffsetFileName(name, logSuffix); ok {
				logs = append(logs, base)
			}
		}
	}
	for _, e := range entries { // index swaps of a clean that did not commit
		name := e.Name()
		if len(name) <= len(swapSuffix) || name[len(name)-len(swapSuffix):] != swapSuffix {
			continue
		}
		committed := false
		for _, suffix := range segmentSuffixes {
			if base, ok := parseOffsetFileName(name[:len(name)-len(swapSuffix)], suffix); ok {
				_, err := os.Stat(offsetFileName(dir, base, logSuffix) + swapSuffix)
				committed = err == nil
				if !committed {
					_ = os.Remove(filepath.Join(dir, name))
					changed = true
				}
			}
		}
	}
	for _, base := range swaps {
		end, err := swapEnd(offsetFileName(dir, base, logSuffix) + swapSuffix)
		if err != nil {
			return err
		}
		for _, b := range logs {
			if b < base || b >= end {
				continue
			}
			for _, suffix := range []string{logSuffix, txnIndexSuffix, indexSuffix, timeIndexSuffix} {
				p := offsetFileName(dir, b, suffix)
				if b == base && suffix != logSuffix {
					if _, err := os.Stat(p + swapSuffix); err != nil {
						continue // already the cleaned one
					}
				}
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return ioErr("remove", p, err)
				}
			}
		}
		if err := SyncDir(dir); err != nil {
			return err
		}
		if err := finishSwap(dir, base); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		return SyncDir(dir)
	}
	return nil
}

// swapEnd is the offset after the last batch of a .log.swap file.
func swapEnd(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, ioErr("open", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, ioErr("stat", path, err)
	}
	s := &segment{logPath: path}
	s.size.Store(fi.Size())
	br := newBatchReader(s, f, nil)
	end := int64(-1)
	for {
		_, h, ok, err := br.next()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		end = h.LastOffset() + 1
	}
	if end < 0 {
		return 0, &CorruptionError{File: path, Reason: "empty swap file"}
	}
	return end, nil
}

// RecordCheck is one record of a produced batch as the produce path
// validates it (Kafka's LogValidator).
type RecordCheck struct {
	Index     int32 // position in the batch, from 0 (Kafka's batchIndex)
	NullKey   bool
	Timestamp int64 // the batch's firstTimestamp plus the record's delta
	// Key and Value are the record's (nil when null), valid only during
	// the call.
	Key, Value []byte
}

// WalkBatchRecords calls fn for each record of the v2 batch b (already
// validated). decompress expands compressed records; when it is nil a
// compressed batch is not walked. Errors: ErrInvalidRecord for records that
// do not parse or do not decompress.
func WalkBatchRecords(b []byte, decompress func(codec int8, compressed []byte) ([]byte, error), fn func(RecordCheck)) error {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return err
	}
	if int64(len(b)) < h.Size() || h.Control() || (h.Codec() != CodecNone && decompress == nil) {
		return nil
	}
	recs, err := batchRecords(b[:h.Size()], h, decompress)
	if err != nil {
		return fmt.Errorf("%w: decompress: %v", ErrInvalidRecord, err)
	}
	i := int32(0)
	return walkRecords(recs, h.RecordCount, func(r rawRecord) {
		fn(RecordCheck{Index: i, NullKey: r.key == nil, Timestamp: h.BaseTimestamp + r.tsDelta, Key: r.key, Value: r.value})
		i++
	})
}
