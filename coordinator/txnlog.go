package coordinator

// Transactional ids as records of __transaction_state.
//
// With TxnConfig.Log set, the transaction coordinator is Kafka's: the state
// of transactional id T lives in partition PartitionFor(T,
// TxnConfig.LogPartitions) of __transaction_state, as Kafka's records
// (kmsg.TxnMetadataKey / TxnMetadataValue version 1; a nil value is the
// tombstone of an expired id), and this coordinator serves only the ids of
// the partitions it has loaded (LoadPartition, when this broker becomes
// their leader; UnloadPartition when it stops). Every transition (the
// epoch bump of InitProducerId, Ongoing with its partitions, Prepare*,
// Complete*) is appended and waited for (the partition's high watermark)
// before it is installed and answered, as Kafka's TransactionStateManager
// does. The coordinator's lock is not held while the record replicates:
// the id is pending meanwhile (Kafka's TransactionMetadata.pendingState),
// so other requests for it answer CONCURRENT_TRANSACTIONS, which clients
// retry, while other ids proceed. A failed append leaves the state
// unchanged and the request answers Kafka's mapping of the error
// (appendError: NOT_COORDINATOR, or COORDINATOR_NOT_AVAILABLE; also
// NOT_COORDINATOR once the partition is unloaded), so the producer looks
// the coordinator up again.
//
// What Kafka's record has no field for is kept in a tagged field of the
// value that Kafka ignores (txnExtTag: the groups of the transaction and
// the retry epoch). txns.db stays the materialised view: each record notes
// the log offset it came from, and bucket "log" holds the per-partition
// checkpoint, so a single node's load replays only the tail (with a
// replicated log, TxnConfig.LogReplicated, a load rebuilds the partition's
// view from the log start). Records of a txns.db written
// before the log existed are appended to the log when their partition is
// first loaded.
//
// A load completes the transactions it finds in PrepareCommit or
// PrepareAbort (markers sent again) and lets the abort loop abort the
// Ongoing ones past their timeout; the epochs the log holds fence the
// producers the previous coordinator served.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	bolt "go.etcd.io/bbolt"
)

// txnExtTag is the tagged field of TxnMetadataValue holding what Kafka's
// record has no field for (JSON txnExt).
const txnExtTag = 10000

type txnExt struct {
	Groups    []string `json:"groups,omitempty"`
	LastEpoch int16    `json:"last_epoch"`
	Bumped    bool     `json:"bumped,omitempty"`
}

// TxnError reports what a request for transactional id gets here: 0, or
// COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR or (closed)
// COORDINATOR_NOT_AVAILABLE.
func (c *TxnCoordinator) TxnError(id string) int16 { return c.keyCode(id) }

// txnLogRecord encodes id's state as a __transaction_state record; a nil
// m is the tombstone.
func txnLogRecord(id string, m *txnMeta) LogRecord {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = id
	r := LogRecord{Key: k.AppendTo(nil)}
	if m == nil {
		return r
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	v.ProducerID, v.ProducerEpoch = m.producerID, m.epoch
	v.TimeoutMillis = int32(m.timeout.Milliseconds())
	v.State = kmsg.TransactionState(m.state)
	for t, ps := range m.partitionsByTopic() {
		vt := kmsg.NewTxnMetadataValueTopic()
		vt.Topic, vt.Partitions = t, ps
		v.Topics = append(v.Topics, vt)
	}
	slices.SortFunc(v.Topics, func(a, b kmsg.TxnMetadataValueTopic) int {
		if a.Topic < b.Topic {
			return -1
		}
		if a.Topic > b.Topic {
			return 1
		}
		return 0
	})
	v.LastUpdateTimestamp, v.StartTimestamp = m.updated.UnixMilli(), m.startMillis()
	v.PreviousProducerID, v.NextProducerID = m.prevProducerID, m.nextProducerID
	v.NextProducerEpoch = noProducerEpoch
	ext, _ := json.Marshal(txnExt{Groups: m.sortedGroups(), LastEpoch: m.lastEpoch, Bumped: m.bumped})
	v.UnknownTags.Set(txnExtTag, ext)
	r.Value = v.AppendTo(nil)
	return r
}

// txnMetaFromLog decodes a TxnMetadataValue.
func txnMetaFromLog(v *kmsg.TxnMetadataValue) (txnMeta, bool) {
	st := txnState(v.State)
	if st < txnEmpty || st > txnPrepareEpochFence || st == txnDead || st == txnPrepareEpochFence {
		return txnMeta{}, false
	}
	m := txnMeta{
		producerID:     v.ProducerID,
		prevProducerID: noProducerID,
		nextProducerID: noProducerID,
		epoch:          v.ProducerEpoch,
		lastEpoch:      noProducerEpoch,
		timeout:        time.Duration(v.TimeoutMillis) * time.Millisecond,
		state:          st,
		partitions:     make(map[topicPartition]struct{}),
		groups:         make(map[string]struct{}),
		updated:        time.UnixMilli(v.LastUpdateTimestamp),
	}
	if v.Version >= 1 {
		m.prevProducerID, m.nextProducerID = v.PreviousProducerID, v.NextProducerID
	}
	if v.StartTimestamp >= 0 {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[topicPartition{t.Topic, p}] = struct{}{}
		}
	}
	v.UnknownTags.Each(func(tag uint32, b []byte) {
		var ext txnExt
		if tag != txnExtTag || json.Unmarshal(b, &ext) != nil {
			return
		}
		m.lastEpoch, m.bumped = ext.LastEpoch, ext.Bumped
		for _, g := range ext.Groups {
			m.groups[g] = struct{}{}
		}
	})
	return m, true
}

// appendTxnsLocked appends records to partition p and waits for them to be
// committed; it returns the offset of the first. The lock stays held
// meanwhile: it is used only while p is loading (migratePartitionLocked),
// when no request for p's ids is served.
//
// Lock should be held.
func (c *TxnCoordinator) appendTxnsLocked(p int32, recs []LogRecord) (int64, error) {
	next, err := c.appendAndWait(p, recs)
	if err != nil {
		return 0, err
	}
	c.advanceLocked(p, next)
	return next - int64(len(recs)), nil
}

// logTransitionLocked appends id's new state m to its partition of
// __transaction_state and waits, without the lock, until the record is
// committed; e is pending meanwhile, so other requests for the id answer
// CONCURRENT_TRANSACTIONS while other ids proceed. A new id enters c.txns
// for the wait (fresh) and leaves it again if the append fails. It returns
// the record's offset.
//
// Lock should be held.
func (c *TxnCoordinator) logTransitionLocked(e *txnEntry, m txnMeta) (off int64, fresh bool, _ *kerr.Error) {
	if err := c.ownerErrLocked(e.id); err != nil {
		return 0, false, err
	}
	next, wait, done, err := c.writeLocked(c.partitionOf(e.id), c.appendRecords([]LogRecord{txnLogRecord(e.id, &m)}))
	if err != nil {
		return 0, false, appendError(err)
	}
	if _, ok := c.txns[e.id]; !ok {
		c.txns[e.id] = e
		fresh = true
	}
	e.pending, e.pendingState = true, m.state
	c.mu.Unlock()
	werr := wait()
	c.mu.Lock()
	e.pending = false
	kerrv := c.commitErrLocked(e.id, werr)
	if kerrv == nil && c.txns[e.id] != e {
		// The partition moved meanwhile and back (Kafka checks the
		// coordinator epoch after the append).
		kerrv = kerr.NotCoordinator
	}
	done(kerrv == nil)
	if kerrv != nil {
		if fresh && c.txns[e.id] == e {
			delete(c.txns, e.id)
		}
		return 0, false, kerrv
	}
	return next - 1, fresh, nil
}

// LoadPartition makes this coordinator serve the transactional ids of
// partition p of __transaction_state, which this broker now leads:
// txns.db is brought up to the end of the log, ids txns.db holds from
// before the log existed are appended to it, and the ids are loaded;
// meanwhile their requests answer COORDINATOR_LOAD_IN_PROGRESS. Then the
// transactions found in Prepare* are completed.
func (c *TxnCoordinator) LoadPartition(p int32) error {
	return c.loadPartition(p, func() error { return c.replayPartition(p) }, func() (func(), error) {
		if err := c.migratePartitionLocked(p); err != nil {
			return nil, err
		}
		ids, metas, err := c.loadTxns(func(id string) bool { return c.partitionOf(id) == p })
		if err != nil {
			return nil, err
		}
		unfinished := c.installLocked(ids, metas)
		return func() {
			c.finishAll(unfinished, "completing transaction after a coordinator move failed; will retry")
		}, nil
	})
}

// replayPartition brings txns.db's view of partition p up to the end of
// its log (the runtime's replayTail: from the view's checkpoint on a
// single node, rebuilt from the log start with a replicated log,
// TxnConfig.LogReplicated, as Kafka's coordinator loads the whole
// partition: the view holds only records answered as committed, but an
// unclean election truncates those too). Records of transactional batches
// and markers are not a transaction's state and are skipped.
func (c *TxnCoordinator) replayPartition(p int32) error {
	recs, next, rebuild, err := c.replayTail(c.db, p, c.cfg.LogReplicated, func(r LogRecord) bool { return !r.Transactional && !r.Control })
	if err != nil {
		return err
	}
	err = c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTxns)
		if err != nil {
			return err
		}
		if rebuild {
			var stale [][]byte
			b.ForEach(func(k, v []byte) error {
				var rec txnRecord
				if c.partitionOf(string(k)) == p && json.Unmarshal(v, &rec) == nil && rec.Logged {
					stale = append(stale, slices.Clone(k))
				}
				return nil
			})
			for _, k := range stale {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		for _, r := range recs {
			if err := applyTxnRecord(b, r); err != nil {
				return err
			}
		}
		return putCheckpoint(tx, p, next)
	})
	if err != nil {
		return err
	}
	c.replayedTo(p, next)
	return nil
}

// applyTxnRecord applies one replayed record to bucket txns unless the view
// already holds a later one for its id.
func applyTxnRecord(b *bolt.Bucket, r replayed) error {
	if len(r.key) < 2 || binary.BigEndian.Uint16(r.key) != 0 {
		return nil
	}
	var k kmsg.TxnMetadataKey
	if k.ReadFrom(r.key) != nil {
		return nil
	}
	id := []byte(k.TransactionalID)
	if old := b.Get(id); old != nil {
		var rec txnRecord
		if json.Unmarshal(old, &rec) == nil && rec.Logged && rec.LogOffset >= r.offset {
			return nil
		}
	}
	if r.value == nil {
		return b.Delete(id)
	}
	var v kmsg.TxnMetadataValue
	if v.ReadFrom(r.value) != nil {
		return nil
	}
	m, ok := txnMetaFromLog(&v)
	if !ok {
		return nil
	}
	val, err := encodeTxn(m, r.offset)
	if err != nil {
		return err
	}
	return b.Put(id, val)
}

// migratePartitionLocked appends to the log the ids of partition p that
// txns.db holds without a log offset (written before __transaction_state
// existed) and records their offsets.
//
// Lock should be held.
func (c *TxnCoordinator) migratePartitionLocked(p int32) error {
	ids, metas, err := c.loadTxns(func(id string) bool { return c.partitionOf(id) == p })
	if err != nil {
		return err
	}
	var legacy []string
	c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTxns)
		for _, id := range ids {
			var rec txnRecord
			if v := b.Get([]byte(id)); v != nil && json.Unmarshal(v, &rec) == nil && !rec.Logged {
				legacy = append(legacy, id)
			}
		}
		return nil
	})
	if len(legacy) == 0 {
		return nil
	}
	recs := make([]LogRecord, 0, len(legacy))
	for _, id := range legacy {
		m := metas[id]
		recs = append(recs, txnLogRecord(id, &m))
	}
	base, err := c.appendTxnsLocked(p, recs)
	if err != nil {
		return fmt.Errorf("coordinator: migrating transactional ids to __transaction_state-%d: %w", p, err)
	}
	for i, id := range legacy {
		if err := c.putTxn(p, id, metas[id], base+int64(i)); err != nil {
			return err
		}
	}
	c.log.Info("migrated transactional ids to __transaction_state", "partition", p, "count", len(legacy))
	return nil
}

// UnloadPartition stops serving the transactional ids of partition p: this
// broker no longer leads it. txns.db keeps the view for a later load; a
// marker write in flight finishes, but its completion is left to the new
// coordinator.
func (c *TxnCoordinator) UnloadPartition(p int32) {
	c.unloadPartition(p, func() {
		for id, e := range c.txns {
			if c.partitionOf(id) != p {
				continue
			}
			c.timers.cancelLocked(&e.retry)
			for _, pid := range []int64{e.meta.producerID, e.meta.nextProducerID} {
				if c.byPID[pid] == id {
					delete(c.byPID, pid)
				}
			}
			delete(c.txns, id)
		}
	})
}

// HasUnloggedState reports whether txns.db holds transactional ids written
// before __transaction_state existed.
func (c *TxnCoordinator) HasUnloggedState() bool {
	found := false
	c.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketTxns); b != nil {
			b.ForEach(func(_, v []byte) error {
				var rec txnRecord
				if json.Unmarshal(v, &rec) == nil && !rec.Logged {
					found = true
				}
				return nil
			})
		}
		return nil
	})
	return found
}

// logTombstonesLocked appends the tombstones of expiring ids, a batch per
// partition, and returns the ids whose tombstones were committed and that
// are still unchanged. The ids are pending (Dead) and the lock is released
// while the batches replicate.
//
// Lock should be held.
func (c *TxnCoordinator) logTombstonesLocked(ids []string) []string {
	byPart := map[int32][]string{}
	for _, id := range ids {
		if c.ownerErrLocked(id) == nil {
			byPart[c.partitionOf(id)] = append(byPart[c.partitionOf(id)], id)
		}
	}
	type batch struct {
		p    int32
		ids  []*txnEntry
		wait func() error
		done func(advance bool)
	}
	var batches []batch
	for _, p := range sortedKeys(byPart) {
		recs := make([]LogRecord, 0, len(byPart[p]))
		for _, id := range byPart[p] {
			recs = append(recs, txnLogRecord(id, nil))
		}
		_, wait, done, err := c.writeLocked(p, c.appendRecords(recs))
		if err != nil {
			c.log.Warn("appending tombstones of expired transactional ids failed", "partition", p, "err", err)
			continue
		}
		b := batch{p: p, wait: wait, done: done}
		for _, id := range byPart[p] {
			e := c.txns[id]
			e.pending, e.pendingState = true, txnDead
			b.ids = append(b.ids, e)
		}
		batches = append(batches, b)
	}
	if len(batches) == 0 {
		return nil
	}
	c.mu.Unlock()
	errs := make([]error, len(batches))
	for i, b := range batches {
		errs[i] = b.wait()
	}
	c.mu.Lock()
	var out []string
	for i, b := range batches {
		b.done(errs[i] == nil)
		for _, e := range b.ids {
			e.pending = false
		}
		if errs[i] != nil {
			c.log.Warn("tombstones of expired transactional ids were not committed", "partition", b.p, "err", errs[i])
			continue
		}
		if c.coordinatorErrLocked(b.ids[0].id) != nil {
			continue
		}
		for _, e := range b.ids {
			if c.txns[e.id] == e {
				out = append(out, e.id)
			}
		}
	}
	slices.Sort(out)
	return out
}
