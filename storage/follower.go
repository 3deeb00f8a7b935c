package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FollowerAppendResult describes what AppendAsFollower appended.
type FollowerAppendResult struct {
	FirstOffset int64 // baseOffset of the first batch; -1 when nothing was appended
	LastOffset  int64 // last offset of the last batch; -1 when nothing was appended
	Count       int   // number of whole batches appended
	Bytes       int64 // bytes appended
}

// followerBatch is one batch of a follower append: its header and where it
// is in the records given.
type followerBatch struct {
	h   BatchHeader
	off int64
}

// splitFollowerRecords validates records, the records field of a Fetch
// response partition: whole v2 batches, each checked as by ValidateBatch,
// with contiguous offsets; a truncated batch at the end is ignored, as
// Kafka's clients and followers do.
func splitFollowerRecords(records []byte) ([]followerBatch, error) {
	var out []followerBatch
	for off := 0; len(records)-off >= batchLengthOverhead; {
		length := int64(int32(binary.BigEndian.Uint32(records[off+batchLengthPos:])))
		if length < batchMinLength {
			return nil, fmt.Errorf("%w: batchLength %d at byte %d", ErrCorruptBatch, length, off)
		}
		if int64(len(records)-off) < batchLengthOverhead+length {
			break // partial batch at the end of the response
		}
		b := records[off : off+batchLengthOverhead+int(length)]
		h, err := ValidateReplicatedBatch(b)
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", off, err)
		}
		// A compacted log has gaps between batches: offsets only
		// increase, as Kafka's follower checks.
		if n := len(out); n > 0 && h.BaseOffset <= out[n-1].h.LastOffset() {
			return nil, fmt.Errorf("%w: batch at offset %d follows one ending at %d", ErrOffsetMismatch, h.BaseOffset, out[n-1].h.LastOffset())
		}
		out = append(out, followerBatch{h: h, off: int64(off)})
		off += len(b)
	}
	return out, nil
}

// AppendAsFollower appends batches replicated from the partition leader:
// records is the records field of a Fetch response partition, zero or more
// whole v2 batches possibly followed by a truncated one (ignored). The
// batches keep their baseOffset and partitionLeaderEpoch and are written
// byte for byte, so a follower's segments hold exactly the leader's bytes.
// The first batch must start at the log end offset and each must follow the
// previous one.
//
// Like Kafka's follower, it does not apply the idempotence rules (the
// leader did); it records each idempotent producer's batches so that, once
// this replica leads, a retried batch is recognised as a duplicate. Control
// batches end transactions (ABORTs go to the aborted-transaction index) and
// transactional batches open them, as on the leader. A partitionLeaderEpoch
// above the latest leader epoch starts a new epoch in the leader-epoch cache.
// Segments are rolled as Append rolls them; the batches that fit in one
// segment are written with one write. The log is fsynced when
// flush.messages calls for it. In the default mode the high watermark
// advances to the new log end offset; with Config.ReplicatedHighWatermark it
// does not (SetHighWatermark).
//
// Errors: ErrUnsupportedMagic, ErrCorruptBatch, ErrInvalidRecord (a batch is
// damaged: nothing is appended); ErrOffsetMismatch; ErrLogClosed;
// *StorageError when writing fails (sticky, as for Append).
func (l *Log) AppendAsFollower(records []byte) (FollowerAppendResult, error) {
	res := FollowerAppendResult{FirstOffset: -1, LastOffset: -1}
	batches, err := splitFollowerRecords(records)
	if err != nil {
		return res, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return res, ErrLogClosed
	}
	if l.writeErr != nil {
		return res, l.writeErr
	}
	if len(batches) == 0 {
		return res, nil
	}
	if leo := l.leo.Load(); batches[0].h.BaseOffset < leo {
		return res, fmt.Errorf("%w: first batch at offset %d, log end offset is %d", ErrOffsetMismatch, batches[0].h.BaseOffset, leo)
	}
	for _, b := range batches {
		if err := l.assignEpochLocked(b.h.PartitionLeaderEpoch, b.h.BaseOffset, true); err != nil {
			return res, err
		}
	}
	nowMs := l.cfg.Now().UnixMilli()
	var seg *segment
	var segEnd int64
	for i := 0; i < len(batches); {
		first := batches[i].h
		if seg, err = l.maybeRollLocked(first.Size(), first.LastOffset(), first.MaxTimestamp, nowMs); err != nil {
			return res, err
		}
		// The run of batches that fits in seg is written at once.
		pos, size, j := seg.size.Load(), first.Size(), i+1
		for ; j < len(batches); j++ {
			h := batches[j].h
			if pos+size+h.Size() > l.cfg.SegmentBytes || h.LastOffset()-seg.base > math.MaxInt32 {
				break
			}
			size += h.Size()
		}
		start := batches[i].off
		if err := l.writeBytesLocked(seg, records[start:start+size], pos, nowMs); err != nil {
			return res, err
		}
		stable := false
		for _, b := range batches[i:j] {
			h, bpos := b.h, pos+b.off-start
			seg.noteFirstBatch(bpos, h.MaxTimestamp)
			seg.track(bpos, h.Size(), h.LastOffset(), h.MaxTimestamp, l.cfg.IndexIntervalBytes)
			l.leo.Store(h.LastOffset() + 1)
			l.publishLogEndLocked(seg, bpos+h.Size(), h.LastOffset()+1)
			if h.ProducerID < 0 {
				continue
			}
			if !h.Control() {
				stable = l.producers.update(h, seg, bpos) || stable
				continue
			}
			rec := records[b.off+BatchHeaderSize : b.off+h.Size()]
			if typ, coordEpoch, ok := parseMarker(rec); ok {
				if err := l.applyMarkerLocked(h, typ == markerCommit, coordEpoch, seg); err != nil {
					return res, err
				}
			}
		}
		if stable {
			l.publishStableLocked()
		}
		segEnd = pos + size
		res.Count += j - i
		res.Bytes += size
		i = j
	}
	if err := l.syncIfDueLocked(seg, nowMs); err != nil {
		return res, err
	}
	res.FirstOffset, res.LastOffset = batches[0].h.BaseOffset, batches[len(batches)-1].h.LastOffset()
	if !l.replicated {
		l.advanceHighWatermark(seg, segEnd, res.LastOffset+1)
	}
	return res, nil
}

// applyMarkerLocked applies a transaction marker appended as a follower or
// found replaying the log: the producer's epoch moves up to the marker's
// and its open transaction ends. Lock should be held.
func (l *Log) applyMarkerLocked(h BatchHeader, commit bool, coordinatorEpoch int32, seg *segment) error {
	e := l.producers.producers[h.ProducerID]
	if e == nil {
		e = newProducerEntry(h.ProducerEpoch)
		l.producers.producers[h.ProducerID] = e
	}
	e.bumpEpoch(h.ProducerEpoch)
	e.coordinatorEpoch = coordinatorEpoch
	return l.completeTxnLocked(h.ProducerID, e, commit, h.BaseOffset, seg)
}
