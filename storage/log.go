package storage

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Log is one partition's log: a directory of segments. Appends, rolls,
// retention and Close are serialised by one mutex; reads use atomically
// published state (the segment list and the high watermark's position) and
// never wait for the appender, not even during an fsync.
type Log struct {
	dir    string
	logger *slog.Logger

	flushMu sync.Mutex // serialises Flush and Close; taken before mu
	ckptMu  sync.Mutex // serialises writes of the checkpoint file and guards:
	// ckpt is what the checkpoint file holds (or will once a LogDir's Sync
	// places it), when ckptKnown: writeCheckpoint skips writing it again.
	ckpt      checkpoint
	ckptKnown bool
	cleanMu   sync.Mutex // serialises Clean; taken before mu

	cleanerOffset atomic.Int64 // the cleaner checkpoint; -1 until read

	// ld is the LogDir the log was opened through, nil when opened alone.
	// deferring is set while Open or LogDir.CloseLogs runs on the log (by
	// the goroutine that owns it then): its fsyncs are left to ld.Sync.
	ld        *LogDir
	deferring bool

	// recoveredFrom is the base offset of the first segment Open
	// revalidated after a crash, -1 when it trusted the files.
	recoveredFrom int64
	// epochsUnwritten: the leader-epoch cache has an entry added since
	// the file was last written (setEpochsLazilyLocked); epochFileMu
	// serialises the file's writers (under l.mu or, for syncEpochs, not).
	epochsUnwritten atomic.Bool
	epochFileMu     sync.Mutex

	// unborn: nothing of the log is on disk yet (unborn.go); birthMu
	// guards birthFiles, the owner's files its birth writes (AddFile).
	// dirMade: the birth made the directory (guarded by the first
	// segment's file lock, as births are).
	unborn     atomic.Bool
	birthMu    sync.Mutex
	birthFiles []File
	dirMade    bool

	mu          sync.Mutex // serialises writers (Append, roll, retention, Close) and guards:
	cfg         Config
	producers   producerStateManager
	lastFlushMs int64
	writeErr    error // sticky: set by a failed write or fsync
	// replicated is Config.ReplicatedHighWatermark, fixed at Open.
	replicated bool
	// hwEnds are the ends of recent batches above the high watermark
	// (replicated mode), oldest first: where SetHighWatermark finds the
	// file position of a new high watermark without reading the log.
	hwEnds []*endState

	// Published for readers, who do not take mu; written under mu (the
	// recovery point also by Flush).
	closed         atomic.Bool
	rcfg           atomic.Pointer[Config]     // copy of cfg
	segs           atomic.Pointer[[]*segment] // sorted by base offset; replaced, never modified
	leo            atomic.Int64
	end            endCell                      // the high watermark and its position
	logEnd         atomic.Pointer[endState]     // the log end offset and its position (replicated mode)
	epochs         atomic.Pointer[[]EpochEntry] // leader-epoch cache; replaced, never modified
	stable         atomic.Pointer[endState]     // first open transaction's batch; nil when none is open
	logStartOffset atomic.Int64
	recoveryPoint  atomic.Int64 // every batch below it is fsynced
	notify         atomic.Pointer[chan struct{}]
	// Waiters (Wait) woken with notify; hasWaiters spares an advance the
	// lock when there are none.
	waitMu     sync.Mutex
	waiters    []*Waiter
	hasWaiters atomic.Bool
	// Watchers (Watch) told of every change, under waitMu.
	watchers    []Watcher
	hasWatchers atomic.Bool
}

// endState is the high watermark and where it is in the log: readers see
// only the bytes of seg below pos (and nothing of later segments).
type endState struct {
	hw  int64
	seg *segment
	pos int64
}

// readable is how many bytes of s are below the high watermark.
func (st endState) readable(s *segment) int64 {
	switch {
	case s == st.seg:
		return st.pos
	case s.base >= st.hw:
		return 0
	}
	return s.size.Load()
}

// endCell publishes an endState to readers that take no lock, without
// allocating a new one per append: a sequence lock. A writer makes seq odd,
// stores the fields, and makes it even again; a reader loads seq, the
// fields and seq again, and retries unless seq was even and unchanged, so
// it never sees fields of two different states. All fields are atomics
// (sequentially consistent in Go's memory model), which is what makes the
// retry check sound and keeps the race detector informed. Writers hold
// Log.mu (or own the Log during Open); the CAS on seq keeps them exclusive
// regardless.
type endCell struct {
	seq atomic.Uint64
	hw  atomic.Int64
	seg atomic.Pointer[segment]
	pos atomic.Int64
}

// Load returns the last stored state.
func (c *endCell) Load() endState {
	for {
		s := c.seq.Load()
		if s&1 == 0 {
			st := endState{hw: c.hw.Load(), seg: c.seg.Load(), pos: c.pos.Load()}
			if c.seq.Load() == s {
				return st
			}
		}
		runtime.Gosched() // a writer is between its two increments
	}
}

// Store publishes st.
func (c *endCell) Store(st endState) {
	for {
		s := c.seq.Load()
		if s&1 == 0 && c.seq.CompareAndSwap(s, s+1) {
			break
		}
		runtime.Gosched()
	}
	c.hw.Store(st.hw)
	c.seg.Store(st.seg)
	c.pos.Store(st.pos)
	c.seq.Add(1)
}

// AppendOptions are the broker-chosen parts of an append.
type AppendOptions struct {
	LeaderEpoch   int32 // written into partitionLeaderEpoch
	LogAppendTime int64 // >= 0: set the LogAppendTime attribute and maxTimestamp to this; -1: keep CreateTime
	// Coordinator: a batch a coordinator writes for a producer (Kafka's
	// AppendOrigin.COORDINATOR, the transactional offset commits of
	// __consumer_offsets): the producer's epoch is checked, its sequence
	// is not, and the batch is never taken for a retry.
	Coordinator bool
}

// AppendResult describes an appended batch.
type AppendResult struct {
	BaseOffset, LastOffset int64
	LogAppendTime          int64 // -1 unless LogAppendTime was used; for a Duplicate the original batch's maxTimestamp
	LogStartOffset         int64
	Duplicate              bool // idempotent retry: offsets are the original ones, nothing appended
}

// ReadResult is the answer to a Read.
type ReadResult struct {
	Slice            Slice // Size 0 when there is nothing to return
	HighWatermark    int64
	LastStableOffset int64 // first offset of the oldest open transaction, else HighWatermark
	LogStartOffset   int64
}

func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) active() *segment {
	segs := l.segments()
	return segs[len(segs)-1]
}

// UpdateConfig replaces the configuration; it applies to the next append,
// roll, flush check and retention run. ReplicatedHighWatermark cannot be
// changed on an open log: its value from Open is kept.
func (l *Log) UpdateConfig(cfg Config) {
	cfg = cfg.normalized()
	l.mu.Lock()
	cfg.ReplicatedHighWatermark = l.replicated
	l.cfg = cfg
	l.rcfg.Store(&cfg)
	l.mu.Unlock()
}

// Append validates batch (see ValidateBatch), applies the idempotent-producer
// rules, assigns it the next offsets and writes it to the active segment,
// rolling first when segment.bytes or segment.ms demand it. The batch is
// modified in place: baseOffset, partitionLeaderEpoch and, with
// LogAppendTime, the attributes, maxTimestamp and CRC. The high watermark
// advances before Append returns, after an fsync when flush.messages calls
// for one; with Config.ReplicatedHighWatermark it does not (see
// SetHighWatermark). A partitionLeaderEpoch above the latest leader epoch
// starts a new epoch in the leader-epoch cache at the batch's baseOffset.
//
// Errors: ErrUnsupportedMagic, ErrCorruptBatch, ErrInvalidRecord (batch
// rejected); ErrInvalidProducerEpoch, ErrOutOfOrderSequence (idempotence);
// ErrLogClosed; *StorageError when writing fails, after which every Append
// fails with that error.
func (l *Log) Append(batch []byte, opts AppendOptions) (AppendResult, error) {
	h, err := ValidateBatch(batch)
	if err != nil {
		return AppendResult{}, err
	}
	idempotent := h.ProducerID >= 0 && !h.Control()
	if idempotent && (h.BaseSequence < 0 || h.ProducerEpoch < 0) {
		return AppendResult{}, fmt.Errorf("%w: producer %d with epoch %d and sequence %d", ErrInvalidRecord, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return AppendResult{}, ErrLogClosed
	}
	if l.writeErr != nil {
		return AppendResult{}, l.writeErr
	}
	if idempotent && opts.Coordinator {
		if e := l.producers.producers[h.ProducerID]; e != nil && h.ProducerEpoch < e.epoch {
			return AppendResult{}, fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
		}
	} else if idempotent {
		dup, err := l.producers.check(h)
		if err != nil {
			return AppendResult{}, err
		}
		if dup != nil {
			// Kafka answers a duplicate with the original batch's max
			// timestamp as its log append time, whatever the topic's
			// timestamp type.
			return AppendResult{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: dup.timestamp,
				LogStartOffset: l.logStartOffset.Load(), Duplicate: true}, nil
		}
	}
	cfg := l.cfg
	nowMs := cfg.Now().UnixMilli()
	res := AppendResult{LogAppendTime: -1}
	if opts.LogAppendTime >= 0 {
		setLogAppendTime(batch, opts.LogAppendTime)
		h.Attributes |= attrLogAppendTime
		h.MaxTimestamp = opts.LogAppendTime
		res.LogAppendTime = opts.LogAppendTime
	}
	h.BaseOffset, h.PartitionLeaderEpoch = l.leo.Load(), opts.LeaderEpoch
	setBatchOffsetAndEpoch(batch, h.BaseOffset, h.PartitionLeaderEpoch)
	if err := l.assignEpochLocked(h.PartitionLeaderEpoch, h.BaseOffset, true); err != nil {
		return AppendResult{}, err
	}

	seg, pos, err := l.writeLocked(batch, h, nowMs)
	if err != nil {
		return AppendResult{}, err
	}
	if idempotent && l.producers.update(h, seg, pos) {
		l.publishStableLocked()
	}
	if err := l.syncIfDueLocked(seg, nowMs); err != nil {
		return AppendResult{}, err
	}
	if !l.replicated {
		l.advanceHighWatermark(seg, pos+h.Size(), h.LastOffset()+1)
	}
	res.BaseOffset, res.LastOffset = h.BaseOffset, h.LastOffset()
	res.LogStartOffset = l.logStartOffset.Load()
	return res, nil
}

// writeLocked writes batch (offsets assigned, described by h) to the active
// segment, rolling first if needed, indexes it and advances the log end
// offset. It returns the segment and position written. Lock should be held.
func (l *Log) writeLocked(batch []byte, h BatchHeader, nowMs int64) (*segment, int64, error) {
	seg, err := l.maybeRollLocked(h.Size(), h.LastOffset(), h.MaxTimestamp, nowMs)
	if err != nil {
		return nil, 0, err
	}
	pos := seg.size.Load()
	if err := l.writeBytesLocked(seg, batch, pos, nowMs); err != nil {
		return nil, 0, err
	}
	seg.noteFirstBatch(pos, h.MaxTimestamp)
	seg.track(pos, h.Size(), h.LastOffset(), h.MaxTimestamp, l.cfg.IndexIntervalBytes)
	l.leo.Store(h.LastOffset() + 1)
	l.publishLogEndLocked(seg, pos+h.Size(), h.LastOffset()+1)
	return seg, pos, nil
}

// writeBytesLocked writes b at pos, the end of seg, and grows seg's size.
// Lock should be held.
func (l *Log) writeBytesLocked(seg *segment, b []byte, pos, nowMs int64) error {
	if err := l.writeAt(seg, b, pos); err != nil {
		werr := ioErr("write", seg.logPath, err)
		// A failed write (a full disk, say) leaves nothing behind once
		// the partial bytes are cut off: later appends may succeed when
		// space returns. If the file cannot be restored, refuse appends.
		if terr := seg.truncateFile(pos); terr != nil {
			l.writeErr = werr
		}
		return werr
	}
	seg.size.Store(pos + int64(len(b)))
	if seg.firstAppendMs == 0 {
		seg.firstAppendMs = nowMs
	}
	return nil
}

// syncIfDueLocked fsyncs seg when flush.messages messages have been
// appended since the last flush. Lock should be held.
func (l *Log) syncIfDueLocked(seg *segment, nowMs int64) error {
	leo := l.leo.Load()
	if leo-l.recoveryPoint.Load() < l.cfg.FlushMessages {
		return nil
	}
	if err := l.fsync(seg); err != nil {
		l.writeErr = ioErr("fsync", seg.logPath, err)
		return l.writeErr
	}
	l.recoveryPoint.Store(leo)
	l.lastFlushMs = nowMs
	return nil
}

// advanceHighWatermark publishes a new high watermark at pos in seg and wakes
// the Notify waiters.
func (l *Log) advanceHighWatermark(seg *segment, pos, hw int64) {
	l.end.Store(endState{hw: hw, seg: seg, pos: pos})
	l.wakeAll()
}

// Notify returns a channel that is closed when the high watermark next
// advances, or when the log is closed. Call it before checking the high
// watermark so that an advance in between is not missed. With
// Config.ReplicatedHighWatermark it is also closed when the log end offset
// advances, so that follower fetches (ReadForFollower) can wait on it.
func (l *Log) Notify() <-chan struct{} {
	for {
		if ch := l.notify.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if l.notify.CompareAndSwap(nil, &ch) {
			if l.closed.Load() {
				l.wakeAll()
			}
			return ch
		}
	}
}

func (l *Log) wakeAll() {
	if ch := l.notify.Swap(nil); ch != nil {
		close(*ch)
	}
	l.tellWatchers()
	if l.hasWaiters.Load() {
		l.waitMu.Lock()
		ws := l.waiters
		l.waiters = nil
		l.hasWaiters.Store(false)
		l.waitMu.Unlock()
		for _, w := range ws {
			w.wake()
		}
	}
}

// A Waiter waits for the next advance of any of several logs without a
// goroutine or a channel per log: a long-polling Fetch of thousands of
// partitions adds itself to each partition's log (Wait), reads, waits on
// C, and takes itself off again (Unwait). Kafka's delayed fetch is watched
// per partition the same way.
type Waiter struct {
	c chan struct{}
}

// NewWaiter returns a Waiter with nothing to wait for yet.
func NewWaiter() *Waiter { return &Waiter{c: make(chan struct{}, 1)} }

// C receives once after one of the logs the Waiter was added to advanced
// or closed (more advances before it is read coalesce).
func (w *Waiter) C() <-chan struct{} { return w.c }

func (w *Waiter) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Wait adds w to the waiters woken by the log's next advance of the high
// watermark (and, with Config.ReplicatedHighWatermark, of the log end
// offset) or its closing, as Notify's channel is closed. Call it before
// checking the high watermark so that an advance in between is not
// missed, and Unwait when no longer waiting. A waiter is taken off the
// log when woken.
func (l *Log) Wait(w *Waiter) {
	l.waitMu.Lock()
	l.waiters = append(l.waiters, w)
	l.hasWaiters.Store(true)
	l.waitMu.Unlock()
	if l.closed.Load() {
		l.wakeAll()
	}
}

// Waiters is the number of Waiters on the log (long polls waiting for it
// to advance).
func (l *Log) Waiters() int {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	return len(l.waiters)
}

// A Watcher is told of every change of what a read of the log may answer:
// an append, a new high watermark (and so last stable offset), a new log
// start offset, a truncation, the log's closing, or a change outside the
// log that its owner reports (Changed). Unlike a Waiter it stays until
// Unwatch: a fetch session watches each of its partitions' logs, so that
// an idle session's fetch visits only the partitions that changed. A
// Watcher is called with the log's locks held: it must only note the
// change and return, never call back into the log.
type Watcher interface {
	LogChanged()
}

// Watch adds w to the log's watchers. Call it before reading the log, so
// that a change after the read is not missed. A closed log tells w at once.
func (l *Log) Watch(w Watcher) {
	l.waitMu.Lock()
	l.watchers = append(l.watchers, w)
	l.hasWatchers.Store(true)
	l.waitMu.Unlock()
	if l.closed.Load() {
		w.LogChanged()
	}
}

// Unwatch takes w off the log's watchers if it is there.
func (l *Log) Unwatch(w Watcher) {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	if i := slices.Index(l.watchers, w); i >= 0 {
		last := len(l.watchers) - 1
		l.watchers[i] = l.watchers[last]
		l.watchers[last] = nil
		l.watchers = l.watchers[:last]
		l.hasWatchers.Store(last > 0)
	}
}

// Watchers is the number of Watchers on the log.
func (l *Log) Watchers() int {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	return len(l.watchers)
}

// Changed tells the log's watchers that what a read of it answers changed
// outside the log: its owner's leadership of the partition.
func (l *Log) Changed() { l.tellWatchers() }

func (l *Log) tellWatchers() {
	if !l.hasWatchers.Load() {
		return
	}
	l.waitMu.Lock()
	for _, w := range l.watchers {
		w.LogChanged()
	}
	l.waitMu.Unlock()
}

// Unwait takes w off the log's waiters if it is still there.
func (l *Log) Unwait(w *Waiter) {
	if !l.hasWaiters.Load() {
		return
	}
	l.waitMu.Lock()
	if i := slices.Index(l.waiters, w); i >= 0 {
		last := len(l.waiters) - 1
		l.waiters[i] = l.waiters[last]
		l.waiters[last] = nil
		l.waiters = l.waiters[:last]
		if last == 0 {
			l.hasWaiters.Store(false)
		}
	}
	l.waitMu.Unlock()
}

// maybeRollLocked returns the segment to append a batch of size bytes ending
// at lastOffset, with largest timestamp maxTs, to, rolling when the active
// one is full, too old, or cannot index lastOffset. Lock should be held.
//
// Too old is Kafka's rule (LogSegment.shouldRoll, KIP-33): when the
// segment's first batch has a timestamp, the new batch's largest timestamp
// more than segment.ms after it; otherwise the segment's first append more
// than segment.ms ago by the clock. So records with old timestamps followed
// by current ones (a transaction marker, a LogAppendTime batch) start a
// new segment, as on Kafka.
func (l *Log) maybeRollLocked(size, lastOffset, maxTs, nowMs int64) (*segment, error) {
	seg := l.active()
	cur := seg.size.Load()
	if cur == 0 {
		return seg, nil
	}
	if cur+size > l.cfg.SegmentBytes || l.segmentAgedLocked(seg, maxTs, nowMs) ||
		lastOffset-seg.base > math.MaxInt32 {
		return l.rollLocked()
	}
	return seg, nil
}

// segmentAgedLocked reports whether seg, not empty, is older than
// segment.ms for a batch with largest timestamp maxTs appended at nowMs
// (see maybeRollLocked). Lock should be held.
func (l *Log) segmentAgedLocked(seg *segment, maxTs, nowMs int64) bool {
	if ts := seg.rollTimestampLocked(); ts >= 0 {
		return maxTs-ts > l.cfg.SegmentMs
	}
	return seg.firstAppendMs > 0 && nowMs-seg.firstAppendMs > l.cfg.SegmentMs
}

// rollLocked closes the active segment (final time-index entry, fsync of the
// log and indexes, indexes mmapped), writes a producer snapshot at the log end
// and starts a new active segment there. Lock should be held.
func (l *Log) rollLocked() (*segment, error) {
	old := l.active()
	base := l.leo.Load()
	if old.size.Load() == 0 {
		return old, nil
	}
	old.sealTimeIndex()
	// Pinned through the roll: its indexes are mapped below.
	if _, err := old.use(); err != nil {
		l.writeErr = err
		return nil, err
	}
	defer old.unuse()
	if err := l.fsync(old); err != nil {
		l.writeErr = ioErr("fsync", old.logPath, err)
		return nil, l.writeErr
	}
	if err := old.persistIndexes(true); err != nil {
		l.writeErr = err
		return nil, err
	}
	if err := old.syncTxnIndex(); err != nil {
		l.writeErr = err
		return nil, err
	}
	for _, x := range []struct {
		f    *indexFile
		path string
	}{{&old.index.indexFile, old.path(indexSuffix)}, {&old.timeIndex.indexFile, old.path(timeIndexSuffix)}} {
		if err := x.f.mapFile(x.path); err != nil {
			l.logger.Warn("keeping index on the heap", "file", x.path, "err", err)
		}
	}
	if err := l.producers.writeSnapshot(l.dir, base); err != nil {
		l.writeErr = err
		return nil, err
	}
	seg, err := createSegment(l.dir, base, l.logger, l.files())
	if err != nil {
		l.writeErr = err
		return nil, err
	}
	if err := SyncDir(l.dir); err != nil {
		seg.release()
		l.writeErr = err
		return nil, err
	}
	segs := append(append([]*segment(nil), l.segments()...), seg)
	l.segs.Store(&segs)
	l.recoveryPoint.Store(base)
	if err := l.writeCheckpoint(); err != nil {
		l.logger.Warn("checkpoint after roll", "dir", l.dir, "err", err)
	}
	return seg, nil
}

// writeCheckpoint persists the current log start offset and recovery point,
// and in replicated mode the high watermark.
func (l *Log) writeCheckpoint() error {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	c := l.checkpointNow()
	if l.ckptKnown && c == l.ckpt && !l.epochsUnwritten.Load() {
		return nil // unchanged: an idle partition's stop rewrites nothing
	}
	if err := l.syncEpochs(); err != nil {
		return err
	}
	if err := l.writeFileAtomic(filepath.Join(l.dir, checkpointName), encodeCheckpoint(c)); err != nil {
		l.ckptKnown = false
		return err
	}
	l.ckpt, l.ckptKnown = c, true
	return nil
}

// checkpointNow is what writeCheckpoint writes.
func (l *Log) checkpointNow() checkpoint {
	c := checkpoint{logStartOffset: l.logStartOffset.Load(), recoveryPoint: l.recoveryPoint.Load(), highWatermark: -1}
	if l.replicated {
		c.highWatermark = l.end.Load().hw
	}
	return c
}

// writeFileAtomic is WriteFileAtomic, or while deferring a write whose
// fsyncs and rename the LogDir's Sync does.
func (l *Log) writeFileAtomic(path string, data []byte) error {
	if err := l.born(); err != nil {
		return err
	}
	if l.deferring {
		return l.ld.writeDeferred(path, data, "", true)
	}
	return WriteFileAtomic(path, data)
}

// syncDir fsyncs the log's directory, unless deferring.
func (l *Log) syncDir() error {
	if l.deferring {
		l.ld.pending.Store(true)
		return nil
	}
	return SyncDir(l.dir)
}

// Read returns the bytes of the log starting with the batch that contains
// offset: at most maxBytes (possibly ending inside a batch, which clients
// drop), but at least that whole batch when minOneBatch is set; nothing when
// that batch is larger than maxBytes and minOneBatch is not set. Only data
// below the high watermark is returned, and never more than the rest of one
// segment. offset == LogEndOffset gives an empty Slice; the caller must
// Release every Slice it gets, empty or not.
//
// Errors: ErrOffsetOutOfRange when offset < LogStartOffset or > LogEndOffset;
// ErrLogClosed; *StorageError for I/O failures or damaged data.
func (l *Log) Read(offset int64, maxBytes int32, minOneBatch bool) (ReadResult, error) {
	return l.read(offset, maxBytes, minOneBatch, l.end.Load)
}

// read serves Read and ReadCommitted: limit gives the end of what may be
// returned (the high watermark, or the last stable offset).
func (l *Log) read(offset int64, maxBytes int32, minOneBatch bool, limit func() endState) (ReadResult, error) {
	for attempt := 0; ; attempt++ {
		if l.closed.Load() {
			return ReadResult{}, ErrLogClosed
		}
		st := limit()
		res := ReadResult{HighWatermark: l.end.Load().hw, LastStableOffset: l.LastStableOffset(), LogStartOffset: l.logStartOffset.Load()}
		if offset < res.LogStartOffset || offset > l.leo.Load() {
			return res, fmt.Errorf("%w: offset %d, log is [%d, %d]", ErrOffsetOutOfRange, offset, res.LogStartOffset, l.leo.Load())
		}
		if offset >= st.hw {
			return res, nil
		}
		slice, retry, err := l.readFrom(st, offset, maxBytes, minOneBatch)
		if retry && attempt < 100 {
			continue // a segment was deleted under us: look again
		}
		res.Slice = slice
		return res, err
	}
}

// readFrom serves Read from the segment holding offset (or a later one).
// retry means a segment was deleted concurrently.
func (l *Log) readFrom(st endState, offset int64, maxBytes int32, minOneBatch bool) (Slice, bool, error) {
	segs := l.segments()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		return Slice{}, true, nil
	}
	for ; i < len(segs); i++ {
		s := segs[i]
		if !s.acquire() {
			return Slice{}, true, nil
		}
		f, err := s.use()
		if err != nil {
			s.release()
			return Slice{}, false, err
		}
		done := func() { s.unuse(); s.release() }
		readable := st.readable(s)
		if err := l.ensureLoaded(segs, i); err != nil {
			done()
			return Slice{}, false, err
		}
		pos, h, found, err := s.locate(offset, readable)
		if err != nil {
			done()
			return Slice{}, false, ioErr("read", s.logPath, err)
		}
		if !found {
			done()
			continue
		}
		size := min(int64(maxBytes), readable-pos)
		if size < h.Size() {
			if !minOneBatch {
				done()
				return Slice{}, false, nil
			}
			size = h.Size()
		}
		// The Slice keeps its pin: the file stays open until Release.
		return Slice{File: f, Pos: pos, Size: size, h: &sliceHandle{seg: s}}, false, nil
	}
	return Slice{}, false, nil
}

// ensureLoaded loads the indexes of segs[i] if needed. The caller holds a
// reference to the segment.
func (l *Log) ensureLoaded(segs []*segment, i int) error {
	s := segs[i]
	if s.loaded.Load() {
		return nil
	}
	next := int64(-1)
	if i+1 < len(segs) {
		next = segs[i+1].base
	}
	if _, err := s.loadIndexes(l.rcfg.Load().IndexIntervalBytes, false, next); err != nil {
		var ce *CorruptionError
		if errors.As(err, &ce) {
			l.logger.Error("damaged segment", "file", ce.File, "pos", ce.Pos, "reason", ce.Reason)
			return nil // indexes cover the good prefix; reads past it fail
		}
		return err
	}
	return nil
}

// Recovered reports whether Open revalidated the log's last segments, as
// after an unclean shutdown, rather than trusting its files.
func (l *Log) Recovered() bool { return l.recoveredFrom >= 0 }

// LogStartOffset is the first offset that can be read.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset.Load() }

// LogEndOffset is the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// HighWatermark is the offset below which records are readable; on a single
// broker it equals LogEndOffset except while an append is in flight. With
// Config.ReplicatedHighWatermark it is what SetHighWatermark last set.
func (l *Log) HighWatermark() int64 { return l.end.Load().hw }

// Size is the total size in bytes of the segment files.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// ProducerStates lists the idempotent producers the log knows, by id.
func (l *Log) ProducerStates() []ProducerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.states()
}

// Flush fsyncs the active segment and writes out its index entries, then
// advances and persists the recovery point. Segments before the active one
// (and their indexes) were fsynced when they were rolled. The active
// segment's index files are written but not fsynced: the recovery point lies
// in the active segment, so after a crash that segment is revalidated and its
// indexes rebuilt anyway. Appends may continue during the fsync.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return ErrLogClosed
	}
	if l.writeErr != nil {
		l.mu.Unlock()
		return l.writeErr
	}
	if l.unborn.Load() {
		l.mu.Unlock()
		return nil // nothing written: nothing to flush
	}
	seg, leo := l.active(), l.leo.Load()
	seg.acquire()
	nowMs := l.cfg.Now().UnixMilli()
	l.mu.Unlock()
	defer seg.release()

	if err := l.fsync(seg); err != nil {
		l.mu.Lock()
		l.writeErr = ioErr("fsync", seg.logPath, err)
		l.mu.Unlock()
		return ioErr("fsync", seg.logPath, err)
	}
	if err := seg.persistIndexes(false); err != nil {
		return err
	}
	l.mu.Lock()
	if leo > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(leo)
	}
	l.lastFlushMs = nowMs
	l.mu.Unlock()
	return l.writeCheckpoint()
}

// FlushIfDue flushes when there is unflushed data and flush.ms has passed
// since the last flush. The broker calls it periodically.
func (l *Log) FlushIfDue() error {
	l.mu.Lock()
	due := !l.closed.Load() && l.leo.Load() > l.recoveryPoint.Load() &&
		l.cfg.Now().UnixMilli()-l.lastFlushMs >= l.cfg.FlushMs
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// Close flushes the log, writes a producer snapshot and the checkpoint, and
// marks the shutdown clean so that the next Open trusts the files. Slices
// still held stay readable until released. A second Close returns
// ErrLogClosed.
func (l *Log) Close() error { return l.close(false) }

// close is Close; deferred (LogDir.CloseLogs) writes what Close writes
// without the fsyncs (the LogDir's Sync does them) or the clean-shutdown
// marker (the LogDir's list names the log instead).
func (l *Log) close(deferred bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrLogClosed
	}
	err := l.writeErr
	if err == nil && !l.unborn.Load() {
		l.deferring = deferred
		err = l.shutdownLocked()
		l.deferring = false
	}
	l.closed.Store(true)
	l.releaseAllLocked()
	return err
}

// shutdownLocked makes everything durable and writes the clean-shutdown
// marker; while deferring it only writes, leaving the fsyncs, the
// replacement of the checkpoint and snapshot, and the marker to the
// LogDir. Lock should be held.
func (l *Log) shutdownLocked() error {
	seg, leo := l.active(), l.leo.Load()
	seg.sealTimeIndex()
	if !l.deferring {
		if err := seg.syncFile(); err != nil {
			return ioErr("fsync", seg.logPath, err)
		}
	}
	if err := seg.persistIndexes(!l.deferring); err != nil {
		return err
	}
	if l.deferring {
		// The snapshot is renamed into place by the LogDir's Sync; with
		// keptSnapshots already there, the oldest one's inode is reused.
		// A snapshot at the log end with the same content (nothing
		// appended since the last one) is kept as it is.
		path, enc := offsetFileName(l.dir, leo, snapshotSuffix), l.producers.encode()
		if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, enc) {
			reuse := ""
			if offs, err := listSnapshots(l.dir); err == nil && len(offs) >= keptSnapshots && offs[0] != leo {
				reuse = offsetFileName(l.dir, offs[0], snapshotSuffix)
			}
			if err := l.ld.writeDeferred(path, enc, reuse, false); err != nil {
				return err
			}
		}
	} else if err := l.producers.writeSnapshot(l.dir, leo); err != nil {
		return err
	}
	l.recoveryPoint.Store(leo)
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	if l.deferring {
		l.ld.pending.Store(true)
		return nil
	}
	if err := os.WriteFile(filepath.Join(l.dir, cleanShutdownName), nil, 0o644); err != nil {
		return ioErr("create", filepath.Join(l.dir, cleanShutdownName), err)
	}
	return SyncDir(l.dir)
}

// releaseAllLocked drops the log's references to its segments and wakes
// waiters. Lock should be held.
func (l *Log) releaseAllLocked() {
	for _, s := range l.segments() {
		s.release()
	}
	l.wakeAll()
}

// Delete closes the log without flushing and removes its directory, as
// far as it is the log's (RemoveLogDir).
func (l *Log) Delete() error {
	l.mu.Lock()
	if !l.closed.Load() {
		l.closed.Store(true)
		segs := l.segments()
		l.releaseAllLocked()
		// Segments still read (a Slice being sent) keep their files open:
		// they could not be reopened once the directory is gone.
		for _, s := range segs {
			if s.refs.Load() > 0 {
				s.keepOpen()
			}
		}
	}
	l.mu.Unlock()
	kept, err := RemoveLogDir(l.dir, l.rcfg.Load().OwnedFiles...)
	if len(kept) > 0 {
		l.logger.Warn("deleted log: keeping its directory for the files Gregor did not write", "dir", l.dir, "kept", kept)
	}
	return err
}

// writeAt writes b at pos in seg's file, through the BeforeIO seam.
func (l *Log) writeAt(seg *segment, b []byte, pos int64) error {
	if hook := l.rcfg.Load().BeforeIO; hook != nil {
		if err := hook("write", seg.logPath); err != nil {
			return err
		}
	}
	f, err := seg.useForWrite()
	if err != nil {
		return err
	}
	defer seg.unuseWritten()
	_, err = f.WriteAt(b, pos)
	return err
}

// fsync syncs seg's file, through the BeforeIO seam. A failed fsync is
// sticky for the caller: the kernel may have dropped the dirty pages, so
// what is in the page cache can no longer be trusted to reach the disk.
func (l *Log) fsync(seg *segment) error {
	if hook := l.rcfg.Load().BeforeIO; hook != nil {
		if err := hook("fsync", seg.logPath); err != nil {
			return err
		}
	}
	return seg.syncFile()
}

// files is the LogDir's cache of open segment files, nil for a log opened
// alone (its files stay open once used).
func (l *Log) files() *fileCache {
	if l.ld == nil {
		return soloFiles
	}
	return l.ld.files
}
