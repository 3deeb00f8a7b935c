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

// maxProducerBatches is how many recent batches are remembered per producer
// to recognise retries, as in Kafka (max.in.flight.requests.per.connection
// may not exceed 5 for idempotent producers).
const maxProducerBatches = 5

// Producer-state snapshot (<20-digit offset>.snapshot): the state of every
// idempotent producer after all batches below offset, big-endian:
//
//	 0 version       int16   3 (1: without txnFirstOffset; 2: without coordinatorEpoch)
//	 2 crc           uint32  CRC-32C of bytes 6..end
//	 6 producerCount int32
//	10 producers, each:
//	     producerId  int64
//	     epoch       int16
//	     batchCount  int8    0..5 (1..5 in version 1)
//	     txnFirstOffset int64 first offset of the ongoing transaction, -1 if none (version 2)
//	     coordinatorEpoch int32 of the producer's last transaction marker, -1 if none (version 3)
//	     batchCount batches, oldest first, each 32 bytes:
//	       firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | timestamp int64
//
// Snapshots are written (atomically, see WriteFileAtomic) when a segment is
// rolled and when the log is closed, always after the data below their
// offset has been fsynced. Open loads the newest one not beyond the
// recovered log end and replays batch headers from its offset; snapshots
// beyond the log end or failing their CRC are deleted. The newest
// keptSnapshots are kept.
const (
	snapshotVersion      = 3
	snapshotHeaderSize   = 10
	snapshotProducerSize = 23 // 11 in version 1, 19 in version 2
	snapshotBatchSize    = 32
	keptSnapshots        = 3
)

// batchMeta is what is remembered of one batch of an idempotent producer.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// producerEntry is the state of one producer id.
type producerEntry struct {
	epoch   int16
	n       int
	batches [maxProducerBatches]batchMeta // oldest first
	// txnFirst is the first offset of the producer's ongoing transaction in
	// this log, -1 when none; txnSeg and txnPos locate that batch (nil
	// until known after a restart, see Log.locateTxnStarts).
	txnFirst int64
	txnSeg   *segment
	txnPos   int64
	// coordinatorEpoch is that of the producer's last transaction marker
	// in this log, -1 before one (Kafka's ProducerStateEntry).
	coordinatorEpoch int32
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, txnFirst: -1, coordinatorEpoch: -1}
}

// lastOffset is the offset of the producer's last batch, -1 without one.
func (e *producerEntry) lastOffset() int64 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].lastOffset
}

func (e *producerEntry) last() *batchMeta { return &e.batches[e.n-1] }

// bumpEpoch moves the producer to epoch if it is newer, forgetting the
// batches of the old epoch: a transaction marker can bump the epoch
// (transaction version 2 bumps it at every end), and the producer's next
// batch then starts at sequence 0 and must not be taken for a retry of an
// old-epoch batch with the same sequence numbers (Kafka's
// ProducerStateEntry.maybeUpdateProducerEpoch).
func (e *producerEntry) bumpEpoch(epoch int16) {
	if epoch > e.epoch {
		e.epoch, e.n = epoch, 0
	}
}

func (e *producerEntry) push(b batchMeta) {
	if e.n == maxProducerBatches {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
}

// ProducerState describes an idempotent producer known to the log.
type ProducerState struct {
	ProducerID    int64
	Epoch         int16
	LastSequence  int32
	LastTimestamp int64
	LastOffset    int64
	// TxnStartOffset is the first offset of the producer's ongoing
	// transaction in this log, -1 when none (DescribeProducers).
	TxnStartOffset int64
	// CoordinatorEpoch is the transaction coordinator epoch of the
	// producer's last marker in this log, -1 before one (DescribeProducers).
	CoordinatorEpoch int32
}

// producerStateManager tracks idempotent producers. Lock should be held
// (Log.mu) for every method.
type producerStateManager struct {
	producers map[int64]*producerEntry
	// unreplicated are the transactions ended by a marker at or above
	// the high watermark, in marker order (replicated logs only): they
	// hold back the last stable offset until the marker is committed
	// (Kafka's ProducerStateManager.unreplicatedTxns). Until then a
	// read_committed reader must not see them: the marker may be lost
	// with this leader, and the records end with the producer's next
	// transaction instead.
	unreplicated []unreplicatedTxn
}

// unreplicatedTxn is a transaction whose marker is not yet below the high
// watermark: its first batch (offset, segment and position; seg nil until
// located after a restart) and its marker's offset.
type unreplicatedTxn struct {
	first, marker int64
	seg           *segment
	pos           int64
}

func newProducerStateManager() producerStateManager {
	return producerStateManager{producers: make(map[int64]*producerEntry)}
}

// check applies Kafka's idempotence rules to batch h (producerId >= 0). It
// returns the original batch when h is a retry of one of the last five.
func (m *producerStateManager) check(h BatchHeader) (*batchMeta, error) {
	e := m.producers[h.ProducerID]
	if e == nil {
		return nil, nil // unknown producer: any sequence starts it
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d bumped epoch to %d with sequence %d, expected 0", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	last := h.LastSequence()
	for i := 0; i < e.n; i++ {
		if b := &e.batches[i]; b.firstSeq == h.BaseSequence && b.lastSeq == last {
			dup := *b
			return &dup, nil
		}
	}
	if e.n > 0 {
		if want := incSequence(e.last().lastSeq, 1); h.BaseSequence != want {
			return nil, fmt.Errorf("%w: producer %d epoch %d sequence %d, expected %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, want)
		}
	}
	return nil, nil
}

// update records an appended (or replayed) batch whose offsets are assigned,
// written at pos in seg. It reports whether the batch started a transaction.
func (m *producerStateManager) update(h BatchHeader, seg *segment, pos int64) (txnStarted bool) {
	e := m.producers[h.ProducerID]
	switch {
	case e == nil:
		e = newProducerEntry(h.ProducerEpoch)
		m.producers[h.ProducerID] = e
	case h.ProducerEpoch > e.epoch:
		txnFirst, txnSeg, txnPos, coordEpoch := e.txnFirst, e.txnSeg, e.txnPos, e.coordinatorEpoch
		*e = *newProducerEntry(h.ProducerEpoch)
		// A transaction stays open across an epoch bump until its marker;
		// the last marker's coordinator epoch is kept, as in Kafka.
		e.txnFirst, e.txnSeg, e.txnPos, e.coordinatorEpoch = txnFirst, txnSeg, txnPos, coordEpoch
	case h.ProducerEpoch < e.epoch:
		return false // fenced; cannot have been appended
	}
	e.push(batchMeta{
		firstSeq: h.BaseSequence, lastSeq: h.LastSequence(),
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset(),
		timestamp: h.MaxTimestamp,
	})
	if h.Transactional() && e.txnFirst < 0 {
		e.txnFirst, e.txnSeg, e.txnPos = h.BaseOffset, seg, pos
		return true
	}
	return false
}

// expire forgets producers whose last batch is below logStartOffset, unless
// they have a transaction open.
func (m *producerStateManager) expire(logStartOffset int64) {
	for id, e := range m.producers {
		if e.txnFirst < 0 && e.lastOffset() < logStartOffset {
			delete(m.producers, id)
		}
	}
}

// states lists the producers by id.
func (m *producerStateManager) states() []ProducerState {
	out := make([]ProducerState, 0, len(m.producers))
	for id, e := range m.producers {
		ps := ProducerState{ProducerID: id, Epoch: e.epoch, LastSequence: -1, LastTimestamp: -1, LastOffset: -1, TxnStartOffset: e.txnFirst, CoordinatorEpoch: e.coordinatorEpoch}
		if e.n > 0 {
			b := e.last()
			ps.LastSequence, ps.LastTimestamp, ps.LastOffset = b.lastSeq, b.timestamp, b.lastOffset
		}
		out = append(out, ps)
	}
	slices.SortFunc(out, func(a, b ProducerState) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// encode serialises the state in the snapshot format.
func (m *producerStateManager) encode() []byte {
	ids := make([]int64, 0, len(m.producers))
	for id := range m.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	be := binary.BigEndian
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(ids)*(snapshotProducerSize+snapshotBatchSize))
	be.PutUint16(b, snapshotVersion)
	be.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := m.producers[id]
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = append(b, byte(e.n))
		b = be.AppendUint64(b, uint64(e.txnFirst))
		b = be.AppendUint32(b, uint32(e.coordinatorEpoch))
		for _, m := range e.batches[:e.n] {
			b = be.AppendUint32(b, uint32(m.firstSeq))
			b = be.AppendUint32(b, uint32(m.lastSeq))
			b = be.AppendUint64(b, uint64(m.firstOffset))
			b = be.AppendUint64(b, uint64(m.lastOffset))
			b = be.AppendUint64(b, uint64(m.timestamp))
		}
	}
	be.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeProducerSnapshot parses a snapshot; it never panics on bad input.
func decodeProducerSnapshot(b []byte) (map[int64]*producerEntry, error) {
	be := binary.BigEndian
	if len(b) < snapshotHeaderSize {
		return nil, errors.New("too short")
	}
	version := be.Uint16(b)
	if version < 1 || version > snapshotVersion {
		return nil, fmt.Errorf("version %d", version)
	}
	producerSize, minBatches := snapshotProducerSize, 0
	switch version {
	case 1:
		producerSize, minBatches = 11, 1
	case 2:
		producerSize = 19
	}
	if crc := crc32.Checksum(b[6:], castagnoli); crc != be.Uint32(b[2:]) {
		return nil, fmt.Errorf("crc %08x, computed %08x", be.Uint32(b[2:]), crc)
	}
	count := int64(int32(be.Uint32(b[6:])))
	if count < 0 || count > int64(len(b)/producerSize) {
		return nil, fmt.Errorf("producer count %d", count)
	}
	out := make(map[int64]*producerEntry, count)
	p := b[snapshotHeaderSize:]
	for i := int64(0); i < count; i++ {
		if len(p) < producerSize {
			return nil, errors.New("truncated producer")
		}
		id, e := int64(be.Uint64(p)), newProducerEntry(int16(be.Uint16(p[8:])))
		e.n = int(p[10])
		if version >= 2 {
			e.txnFirst = int64(be.Uint64(p[11:]))
			if e.txnFirst < -1 {
				return nil, fmt.Errorf("producer %d: bad transaction start %d", id, e.txnFirst)
			}
		}
		if version >= 3 {
			e.coordinatorEpoch = int32(be.Uint32(p[19:]))
		}
		p = p[producerSize:]
		if e.n < minBatches || e.n > maxProducerBatches || len(p) < e.n*snapshotBatchSize {
			return nil, fmt.Errorf("producer %d: bad batch count %d", id, e.n)
		}
		for j := 0; j < e.n; j++ {
			e.batches[j] = batchMeta{
				firstSeq: int32(be.Uint32(p)), lastSeq: int32(be.Uint32(p[4:])),
				firstOffset: int64(be.Uint64(p[8:])), lastOffset: int64(be.Uint64(p[16:])),
				timestamp: int64(be.Uint64(p[24:])),
			}
			p = p[snapshotBatchSize:]
		}
		out[id] = e
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(p))
	}
	return out, nil
}

// writeSnapshot writes the state as the snapshot for offset and deletes all
// but the newest keptSnapshots snapshots.
func (m *producerStateManager) writeSnapshot(dir string, offset int64) error {
	if err := WriteFileAtomic(offsetFileName(dir, offset, snapshotSuffix), m.encode()); err != nil {
		return err
	}
	offsets, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	for len(offsets) > keptSnapshots {
		if err := os.Remove(offsetFileName(dir, offsets[0], snapshotSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ioErr("remove", offsetFileName(dir, offsets[0], snapshotSuffix), err)
		}
		offsets = offsets[1:]
	}
	return nil
}

// listSnapshots returns the offsets of the snapshots in dir, ascending.
func listSnapshots(dir string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ioErr("readdir", dir, err)
	}
	var out []int64
	for _, e := range entries {
		if off, ok := parseOffsetFileName(e.Name(), snapshotSuffix); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}
