package storage

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"
)

// Transactions in the log (KIP-98).
//
// A transactional producer's batches carry the transactional attribute.
// The first such batch of a producer opens a transaction in this log; the
// transaction stays open until the coordinator writes a marker (a control
// batch: COMMIT or ABORT) for that producer. The last stable offset (LSO) is
// the first offset of the oldest open transaction, or the high watermark
// when none is open; read_committed readers see nothing at or beyond it
// (ReadCommitted).
//
// An ABORT marker adds an entry to the aborted-transaction index of the
// segment it is written to (Kafka's .txnindex), so a read_committed fetch
// can tell the client which producers' batches to drop without the broker
// reading any records (AbortedTransactions).
//
// .txnindex format: entries of 34 bytes, big-endian, in marker order:
//
//	version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64
//
// firstOffset is the transaction's first offset in this log, lastOffset the
// offset of its ABORT marker, lastStableOffset the LSO once it completed.
// Entries are appended when the marker is written and fsynced with the
// segment; after a crash they are re-derived while replaying the log after
// the newest producer snapshot (duplicates are recognised).
//
// Marker record (one record in a control batch, attributes transactional|control):
//
//	key:   version int16 (0) | type int16 (0 = ABORT, 1 = COMMIT)
//	value: version int16 (0) | coordinatorEpoch int32
const (
	txnIndexSuffix = ".txnindex"
	txnEntrySize   = 34

	markerAbort  = 0
	markerCommit = 1
)

// AbortedTxn is one aborted transaction of one producer in this log.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// buildMarker encodes a control batch holding one transaction marker.
func buildMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, nowMs int64) []byte {
	typ := int16(markerAbort)
	if commit {
		typ = markerCommit
	}
	be := binary.BigEndian
	key := be.AppendUint16(be.AppendUint16(nil, 0), uint16(typ))
	value := be.AppendUint32(be.AppendUint16(nil, 0), uint32(coordinatorEpoch))
	var rec []byte
	rec = append(rec, 0)              // attributes
	rec = binary.AppendVarint(rec, 0) // timestampDelta
	rec = binary.AppendVarint(rec, 0) // offsetDelta
	rec = binary.AppendVarint(rec, int64(len(key)))
	rec = append(rec, key...)
	rec = binary.AppendVarint(rec, int64(len(value)))
	rec = append(rec, value...)
	rec = binary.AppendVarint(rec, 0) // headers
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(rec)+2)
	b = append(binary.AppendVarint(b, int64(len(rec))), rec...)
	be.PutUint32(b[8:], uint32(len(b)-12))
	be.PutUint32(b[12:], ^uint32(0)) // partitionLeaderEpoch, set on append
	b[16] = 2
	be.PutUint16(b[21:], attrTransactional|attrControl)
	be.PutUint32(b[23:], 0) // lastOffsetDelta
	be.PutUint64(b[27:], uint64(nowMs))
	be.PutUint64(b[35:], uint64(nowMs))
	be.PutUint64(b[43:], uint64(producerID))
	be.PutUint16(b[51:], uint16(epoch))
	be.PutUint32(b[53:], ^uint32(0)) // baseSequence -1
	be.PutUint32(b[57:], 1)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// markerType returns the type of the marker record in a control batch whose
// records section begins rec; ok is false when it is not a marker.
func markerType(rec []byte) (typ int16, ok bool) {
	typ, _, ok = parseMarker(rec)
	return typ, ok
}

// parseMarker is markerType that also returns the marker's coordinator
// epoch (-1 when its value is missing or short).
func parseMarker(rec []byte) (typ int16, coordinatorEpoch int32, ok bool) {
	typ, ok = markerKey(rec)
	if !ok {
		return 0, -1, false
	}
	// markerKey checked the record up to the end of its key: skip it.
	coordinatorEpoch = -1
	skipVarint := func(p []byte) []byte { _, n := binary.Varint(p); return p[n:] }
	p := skipVarint(rec)              // record length
	p = skipVarint(skipVarint(p[1:])) // attributes, timestamp and offset deltas
	klen, n := binary.Varint(p)
	p = p[n+int(klen):]
	if vlen, n := binary.Varint(p); n > 0 && vlen >= 6 && int64(len(p)-n) >= vlen {
		coordinatorEpoch = int32(binary.BigEndian.Uint32(p[n+2:]))
	}
	return typ, coordinatorEpoch, true
}

// markerKey reads the type from the key of the marker record that rec
// begins; ok is false when it is not a marker.
func markerKey(rec []byte) (typ int16, ok bool) {
	p := rec
	varint := func() (int64, bool) {
		v, n := binary.Varint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	if _, ok := varint(); !ok { // record length
		return 0, false
	}
	if len(p) < 1 {
		return 0, false
	}
	p = p[1:] // attributes
	if _, ok := varint(); !ok {
		return 0, false
	}
	if _, ok := varint(); !ok {
		return 0, false
	}
	klen, ok := varint()
	if !ok || klen < 4 || int64(len(p)) < klen {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(p[2:])), true
}

// AppendMarker writes a transaction marker for producerID: COMMIT when
// commit is set, else ABORT. It ends the producer's open transaction in
// this log (if any), moving the last stable offset; an ABORT records the
// transaction in the aborted-transaction index. It returns the marker's
// offset.
//
// Errors: ErrInvalidProducerEpoch when epoch is older than the producer's;
// ErrCoordinatorFenced when coordinatorEpoch is older than that of the
// producer's last marker (a zombie coordinator's late marker must not end
// a transaction its successor's producer has since begun);
// ErrLogClosed; *StorageError.
func (l *Log) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch, leaderEpoch int32) (int64, error) {
	return l.appendMarker(producerID, epoch, commit, coordinatorEpoch, leaderEpoch, false)
}

// AppendBumpedMarker is AppendMarker for a marker whose epoch the
// coordinator bumped past that of the transaction's batches (transaction
// version 2, where every end bumps the epoch, or a producer fenced by its
// successor). Such a marker at the producer's current epoch, while the
// producer has a transaction open, is the late marker of the transaction
// before: it is refused (ErrInvalidProducerEpoch), or it would end the open
// one. At that epoch with none open it is a retry, and appended (Kafka's
// rule for transaction version 2 markers).
func (l *Log) AppendBumpedMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch, leaderEpoch int32) (int64, error) {
	return l.appendMarker(producerID, epoch, commit, coordinatorEpoch, leaderEpoch, true)
}

func (l *Log) appendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch, leaderEpoch int32, bumped bool) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return -1, ErrLogClosed
	}
	if l.writeErr != nil {
		return -1, l.writeErr
	}
	e := l.producers.producers[producerID]
	if e != nil && epoch < e.epoch {
		return -1, fmt.Errorf("%w: marker for producer %d with epoch %d, producer is at %d", ErrInvalidProducerEpoch, producerID, epoch, e.epoch)
	}
	if bumped && e != nil && epoch == e.epoch && e.txnFirst >= 0 {
		return -1, fmt.Errorf("%w: bumped marker for producer %d at its current epoch %d while a transaction is open from offset %d", ErrInvalidProducerEpoch, producerID, epoch, e.txnFirst)
	}
	if e != nil && coordinatorEpoch < e.coordinatorEpoch {
		return -1, fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, its last marker's was %d", ErrCoordinatorFenced, producerID, coordinatorEpoch, e.coordinatorEpoch)
	}
	nowMs := l.cfg.Now().UnixMilli()
	batch := buildMarker(producerID, epoch, commit, coordinatorEpoch, nowMs)
	h := parseHeader(batch)
	h.BaseOffset, h.PartitionLeaderEpoch = l.leo.Load(), leaderEpoch
	setBatchOffsetAndEpoch(batch, h.BaseOffset, h.PartitionLeaderEpoch)
	if err := l.assignEpochLocked(h.PartitionLeaderEpoch, h.BaseOffset, true); err != nil {
		return -1, err
	}
	seg, pos, err := l.writeLocked(batch, h, nowMs)
	if err != nil {
		return -1, err
	}
	if e == nil {
		e = newProducerEntry(epoch)
		l.producers.producers[producerID] = e
	}
	e.bumpEpoch(epoch)
	e.coordinatorEpoch = coordinatorEpoch
	if err := l.completeTxnLocked(producerID, e, commit, h.BaseOffset, seg); err != nil {
		return -1, err
	}
	if err := l.syncIfDueLocked(seg, nowMs); err != nil {
		return -1, err
	}
	if !l.replicated {
		l.advanceHighWatermark(seg, pos+h.Size(), h.BaseOffset+1)
	}
	return h.BaseOffset, nil
}

// completeTxnLocked ends producerID's open transaction at the marker at
// markerOffset in seg. Lock should be held.
func (l *Log) completeTxnLocked(producerID int64, e *producerEntry, commit bool, markerOffset int64, seg *segment) error {
	if e.txnFirst < 0 {
		return nil
	}
	first := e.txnFirst
	if l.cfg.ReplicatedHighWatermark {
		l.producers.unreplicated = append(l.producers.unreplicated, unreplicatedTxn{first: first, marker: markerOffset, seg: e.txnSeg, pos: e.txnPos})
	}
	e.txnFirst, e.txnSeg, e.txnPos = -1, nil, 0
	lso := markerOffset + 1
	if f := l.producers.firstOpen(); f != nil {
		lso = min(lso, f.txnFirst)
	}
	var err error
	if !commit {
		err = seg.addAborted(AbortedTxn{ProducerID: producerID, FirstOffset: first, LastOffset: markerOffset, LastStableOffset: lso})
	}
	l.publishStableLocked()
	return err
}

// firstOpen returns the producer whose open transaction started first.
func (m *producerStateManager) firstOpen() *producerEntry {
	var first *producerEntry
	for _, e := range m.producers {
		if e.txnFirst >= 0 && (first == nil || e.txnFirst < first.txnFirst) {
			first = e
		}
	}
	return first
}

// publishStableLocked publishes where read_committed readers must stop:
// the first offset of the oldest transaction that is open or whose marker
// is not yet below the high watermark. Transactions whose marker the high
// watermark has passed are forgotten (once the log's replication state is
// loaded: Open replays markers before it knows the high watermark).
// Lock should be held.
func (l *Log) publishStableLocked() {
	hw := l.end.Load().hw
	u := l.producers.unreplicated
	if l.replicated {
		i := 0
		for i < len(u) && u[i].marker < hw {
			i++
		}
		if i > 0 {
			n := copy(u, u[i:])
			clear(u[n:])
			u = u[:n]
			l.producers.unreplicated = u
		}
	}
	first, seg, pos := int64(-1), (*segment)(nil), int64(0)
	if f := l.producers.firstOpen(); f != nil {
		if f.txnSeg == nil {
			l.locateTxnStartsLocked()
		}
		first, seg, pos = f.txnFirst, f.txnSeg, f.txnPos
	}
	for i := range u {
		t := &u[i]
		if t.marker < hw || first >= 0 && t.first >= first {
			continue
		}
		if t.seg == nil {
			t.seg, t.pos = l.locateLocked(t.first)
		}
		first, seg, pos = t.first, t.seg, t.pos
	}
	if first < 0 {
		l.stable.Store(nil)
		return
	}
	l.stable.Store(&endState{hw: first, seg: seg, pos: pos})
}

// noteHighWatermarkLocked republishes the last stable offset after the
// high watermark moved, if a transaction waited for its marker to be
// committed. Lock should be held.
func (l *Log) noteHighWatermarkLocked() {
	if len(l.producers.unreplicated) > 0 {
		l.publishStableLocked()
	}
}

// locateTxnStartsLocked finds the segment and position of open
// transactions' first batches (unknown after loading a snapshot).
func (l *Log) locateTxnStartsLocked() {
	for _, e := range l.producers.producers {
		if e.txnFirst < 0 || e.txnSeg != nil {
			continue
		}
		e.txnSeg, e.txnPos = l.locateLocked(e.txnFirst)
	}
}

// locateLocked finds the segment and position of the batch at offset; if
// it is not found (truncated away), the start of the segment it would be
// in, where read_committed readers then stop. Lock should be held.
func (l *Log) locateLocked(offset int64) (*segment, int64) {
	segs := l.segments()
	i := max(0, sortSearchSegments(segs, offset))
	s := segs[i]
	if l.ensureLoaded(segs, i) == nil {
		if pos, _, found, err := s.locate(offset, s.size.Load()); err == nil && found {
			return s, pos
		}
	}
	return s, 0
}

// stableState is the end of what read_committed readers may see.
func (l *Log) stableState() endState {
	e := l.end.Load()
	if s := l.stable.Load(); s != nil && s.hw < e.hw {
		return *s
	}
	return e
}

// LastStableOffset is the first offset of the oldest open transaction, or
// the high watermark when none is open.
func (l *Log) LastStableOffset() int64 { return l.stableState().hw }

// ReadCommitted is Read for read_committed consumers: it returns nothing at
// or beyond the last stable offset, and the aborted transactions that
// overlap what it returns (from offset to the last stable offset), oldest
// first.
func (l *Log) ReadCommitted(offset int64, maxBytes int32, minOneBatch bool) (ReadResult, []AbortedTxn, error) {
	res, err := l.read(offset, maxBytes, minOneBatch, l.stableState)
	if err != nil || res.Slice.Size == 0 {
		return res, nil, err
	}
	return res, l.AbortedTransactions(offset, res.LastStableOffset), nil
}

// AbortedTransactions lists the aborted transactions with a batch in
// [from, upTo): those whose marker is at or after from and that started
// before upTo.
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	var out []AbortedTxn
	for _, s := range l.segments() {
		for _, a := range s.abortedTxns() {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

func (s *segment) abortedTxns() []AbortedTxn {
	if p := s.aborted.Load(); p != nil {
		return *p
	}
	return nil
}

// addAborted records an aborted transaction in the segment's index, in
// memory and in its .txnindex file; an entry already there is not added
// twice (replay after a crash). Lock should be held.
func (s *segment) addAborted(a AbortedTxn) error {
	cur := s.abortedTxns()
	if slices.Contains(cur, a) {
		return nil
	}
	next := append(slices.Clone(cur), a)
	s.aborted.Store(&next)
	be := binary.BigEndian
	var b []byte
	b = be.AppendUint16(b, 0)
	b = be.AppendUint64(b, uint64(a.ProducerID))
	b = be.AppendUint64(b, uint64(a.FirstOffset))
	b = be.AppendUint64(b, uint64(a.LastOffset))
	b = be.AppendUint64(b, uint64(a.LastStableOffset))
	f, err := os.OpenFile(s.path(txnIndexSuffix), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return ioErr("open", s.path(txnIndexSuffix), err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ioErr("write", s.path(txnIndexSuffix), err)
	}
	return nil
}

// loadAborted reads the segment's .txnindex, keeping the entries whose
// marker is below end (entries past a truncation are dropped).
func (s *segment) loadAborted(end int64) error {
	b, err := os.ReadFile(s.path(txnIndexSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return ioErr("read", s.path(txnIndexSuffix), err)
	}
	var out []AbortedTxn
	be := binary.BigEndian
	for ; len(b) >= txnEntrySize; b = b[txnEntrySize:] {
		a := AbortedTxn{ProducerID: int64(be.Uint64(b[2:])), FirstOffset: int64(be.Uint64(b[10:])),
			LastOffset: int64(be.Uint64(b[18:])), LastStableOffset: int64(be.Uint64(b[26:]))}
		if be.Uint16(b) != 0 || a.LastOffset < s.base || a.LastOffset >= end || a.FirstOffset > a.LastOffset {
			s.logger.Warn("dropping aborted-transaction index entry", "file", s.path(txnIndexSuffix), "entry", a)
			continue
		}
		out = append(out, a)
	}
	if len(out) > 0 {
		s.aborted.Store(&out)
	}
	return nil
}

// syncTxnIndex fsyncs the segment's .txnindex if it has one.
func (s *segment) syncTxnIndex() error {
	if len(s.abortedTxns()) == 0 {
		return nil
	}
	f, err := os.OpenFile(s.path(txnIndexSuffix), os.O_WRONLY, 0)
	if err != nil {
		return ioErr("open", s.path(txnIndexSuffix), err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return ioErr("fsync", s.path(txnIndexSuffix), err)
	}
	return nil
}
