package coordinator

// The runtime's log writer and loader (Kafka's PartitionWriter and
// CoordinatorLoader): GroupLog is the coordinators' view of their internal
// topic, implemented by the broker. A write to a partition is appended and
// counted in flight until its fate is known (writeLocked), so the
// checkpoint of the coordinator's bbolt view (bucket "log": partition →
// the offset up to which the view reflects the log) never passes a batch
// that may still be lost; what the request then answers is
// commitErrLocked's. A load replays the tail of the log after the view's
// checkpoint, or the whole log where it may have been truncated
// (replayTail). The group and transaction coordinators keep a view and use
// all of it; the share coordinator keeps its state in memory and uses
// appendAndWait and Replay alone.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	bolt "go.etcd.io/bbolt"
)

// LogRecord is one record of a coordinator's internal topic
// (__consumer_offsets, __transaction_state, __share_group_state).
type LogRecord struct {
	Key, Value []byte // Value nil: a tombstone

	// What Replay reports of the record's batch: Transactional for a
	// record of a transactional batch of ProducerID at ProducerEpoch;
	// Control (with Transactional) for a transaction marker of that
	// producer, a COMMIT if Commit, else an ABORT (Key and Value are then
	// not set). Append ignores them.
	Transactional bool
	Control       bool
	Commit        bool
	ProducerID    int64
	ProducerEpoch int16
}

// GroupLog is a coordinator's view of its internal topic
// (__consumer_offsets, __transaction_state, __share_group_state),
// implemented by the broker.
type GroupLog interface {
	// Append appends records to partition as one batch, if this broker
	// leads it. It returns the offset after the batch and wait, which
	// blocks until the partition's high watermark has reached that offset
	// (nil) or the batch cannot be committed here (leadership lost,
	// timeout).
	Append(partition int32, records []LogRecord) (next int64, wait func() error, err error)
	// AppendTxn appends records as Append does, as one transactional
	// batch of producerID at producerEpoch: the group coordinator's
	// append of a TxnOffsetCommit (Kafka's coordinator-origin append: the
	// producer's epoch is checked, not its sequence).
	AppendTxn(partition int32, producerID int64, producerEpoch int16, records []LogRecord) (next int64, wait func() error, err error)
	// AppendMarker appends the COMMIT (commit) or ABORT control batch
	// that ends producerID's transaction in partition, as Append does.
	AppendMarker(partition int32, producerID int64, producerEpoch int16, commit bool) (next int64, wait func() error, err error)
	// Replay calls fn with every committed record of partition at or
	// after from (from the log start offset if from is below it), the
	// records of transactional batches and the transaction markers
	// included (see LogRecord), and returns the offset after the last one
	// read.
	Replay(partition int32, from int64, fn func(offset int64, r LogRecord) error) (next int64, err error)
}

// replayed is a record read by a load: see LogRecord.
type replayed struct {
	offset int64
	key    []byte
	value  []byte
	// a record of a transactional batch or (control) a marker of the
	// producer: see LogRecord
	txn, control, commit bool
	producerID           int64
	producerEpoch        int16
}

// bucketLog is the bucket of a coordinator's bbolt view that holds, per
// partition (uint32 big endian), the offset (int64) up to which the view
// reflects the partition's log.
var bucketLog = []byte("log")

func putCheckpoint(tx *bolt.Tx, p int32, next int64) error {
	b, err := tx.CreateBucketIfNotExists(bucketLog)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint32(nil, uint32(p)), binary.BigEndian.AppendUint64(nil, uint64(next)))
}

func getCheckpoint(tx *bolt.Tx, p int32) int64 {
	if b := tx.Bucket(bucketLog); b != nil {
		if v := b.Get(binary.BigEndian.AppendUint32(nil, uint32(p))); len(v) == 8 {
			return int64(binary.BigEndian.Uint64(v))
		}
	}
	return 0
}

// checkpointLocked records in tx, a transaction of the coordinator's view,
// that the view reflects partition p's log up to logNext, unless a batch
// to p is in flight: its records may lie below logNext and must be
// replayed after a crash.
//
// Lock should be held.
func (rt *coordinatorRuntime) checkpointLocked(tx *bolt.Tx, p int32) error {
	if rt.inflight[p] > 0 {
		return nil
	}
	return putCheckpoint(tx, p, rt.logNext[p])
}

// advanceLocked moves partition p's logNext to next, a batch committed
// and held by the view, unless it is there already.
//
// Lock should be held.
func (rt *coordinatorRuntime) advanceLocked(p int32, next int64) {
	if next > rt.logNext[p] {
		rt.logNext[p] = next
	}
}

// appendRecords is the appendTo of writeLocked for a plain batch.
func (rt *coordinatorRuntime) appendRecords(recs []LogRecord) func(p int32) (int64, func() error, error) {
	return func(p int32) (int64, func() error, error) { return rt.stateLog.Append(p, recs) }
}

// writeLocked appends a batch to partition p with appendTo (GroupLog's
// Append through appendRecords, AppendTxn or AppendMarker) and counts it
// in flight, so that the checkpoint does not pass it, until done is called
// under the lock once its fate is known: advance when the batch was
// committed and the view holds it, which moves logNext past it. Only such
// a batch moves the checkpoint: one that failed (leadership lost) may be
// truncated and its offsets reused by the next leader's records, which a
// load must then replay.
//
// Lock should be held.
func (rt *coordinatorRuntime) writeLocked(p int32, appendTo func(p int32) (int64, func() error, error)) (next int64, wait func() error, done func(advance bool), err error) {
	next, wait, err = appendTo(p)
	if err != nil {
		return 0, nil, nil, err
	}
	rt.inflight[p]++
	return next, wait, func(advance bool) {
		rt.inflight[p]--
		if advance {
			rt.advanceLocked(p, next)
		}
	}, nil
}

// appendAndWait appends recs to partition p and waits until they are
// committed; it returns the offset after them. The batch is not counted in
// flight, nor logNext moved: for the writes of a load (migrations of data
// written before the log existed) and the share coordinator's, which keeps
// no checkpoint.
func (rt *coordinatorRuntime) appendAndWait(p int32, recs []LogRecord) (next int64, err error) {
	next, wait, err := rt.stateLog.Append(p, recs)
	if err == nil {
		err = wait()
	}
	return next, err
}

// commitErrLocked is what a request for key answers once the batch it
// waited for without the lock has its fate (wait returned werr) and the
// lock is held again, as Kafka checks the coordinator epoch after an
// append: the append's error (appendError), COORDINATOR_NOT_AVAILABLE if
// the coordinator closed meanwhile, NOT_COORDINATOR if key's partition was
// unloaded; nil when the batch is committed and key still served here.
//
// Lock should be held.
func (rt *coordinatorRuntime) commitErrLocked(key string, werr error) *kerr.Error {
	switch {
	case werr != nil:
		return appendError(werr)
	case rt.closed:
		return kerr.CoordinatorNotAvailable
	case rt.ownerErrLocked(key) != nil:
		return kerr.NotCoordinator
	}
	return nil
}

// appendError maps a failed append to a coordinator's log partition
// (__consumer_offsets, __transaction_state) to the answer, as Kafka's
// coordinators do (TransactionStateManager.appendTransactionToLog,
// GroupMetadataManager.storeGroup): the partition not led here
// NOT_COORDINATOR, too few replicas or a timeout COORDINATOR_NOT_AVAILABLE
// (both make the client look the coordinator up again and retry), a record
// too large UNKNOWN_SERVER_ERROR. Errors without a Kafka code (the
// partition is not on this broker, the broker is stopping) answer
// NOT_COORDINATOR.
func appendError(err error) *kerr.Error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.NotCoordinator
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.NotCoordinator:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	}
	return kerr.CoordinatorNotAvailable
}

// replayTail reads the committed records of partition p that keep accepts
// (nil: all), for the coordinator's view in db: from the view's checkpoint
// on a single node; from the log start with a replicated log (replicated:
// while this broker did not lead p, its log may have lost an uncommitted
// tail that the view had taken in, and the next leader's records at the
// same offsets would be skipped as older), or where the log ends below the
// checkpoint (it was truncated: an unclean election). rebuild reports the
// latter two: the view of p is to be dropped before recs are applied. next
// is the offset after the log's last record. It is called without the
// lock, while p loads.
func (rt *coordinatorRuntime) replayTail(db *boltFile, p int32, replicated bool, keep func(LogRecord) bool) (recs []replayed, next int64, rebuild bool, err error) {
	var from int64
	if !replicated {
		db.View(func(tx *bolt.Tx) error { from = getCheckpoint(tx, p); return nil })
	}
	collect := func(off int64, r LogRecord) error {
		if keep == nil || keep(r) {
			recs = append(recs, replayed{offset: off, key: slices.Clone(r.Key), value: slices.Clone(r.Value),
				txn: r.Transactional, control: r.Control, commit: r.Commit, producerID: r.ProducerID, producerEpoch: r.ProducerEpoch})
		}
		return nil
	}
	if next, err = rt.stateLog.Replay(p, from, collect); err != nil {
		return nil, 0, false, fmt.Errorf("coordinator: replaying %s-%d: %w", rt.topic, p, err)
	}
	rebuild = replicated
	if next < from { // truncated below the view: rebuild it
		rebuild = true
		recs = recs[:0]
		if next, err = rt.stateLog.Replay(p, 0, collect); err != nil {
			return nil, 0, false, fmt.Errorf("coordinator: replaying %s-%d: %w", rt.topic, p, err)
		}
	}
	return recs, next, rebuild, nil
}

// replayedTo sets partition p's logNext to next, the end of the log a
// load replayed: what this broker appended before may be gone.
func (rt *coordinatorRuntime) replayedTo(p int32, next int64) {
	rt.mu.Lock()
	rt.logNext[p] = next
	rt.mu.Unlock()
}
