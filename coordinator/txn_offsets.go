package coordinator

// Transactional offsets in the group coordinator: TxnOffsetCommit stores
// offsets per (group, producer id) as pending; they are invisible to
// OffsetFetch (which answers UNSTABLE_OFFSET_COMMIT for them when asked for
// stable offsets) until the transaction coordinator calls
// CompleteTxnOffsets after the transaction's markers are written. They are
// kept in bbolt, so a transaction completed after a crash still finds them.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// On-disk format of pending transactional offsets in groups.db:
//
//	bucket "txn_offsets": one nested bucket per group id; in it
//	                      key   = producer id (int64 big endian), topic,
//	                              0x00, partition (uint32 big endian)
//	                      value = flags (bit 0: superseded by a later
//	                              OffsetCommit, so not applied on commit),
//	                              then the offset record of bucket "offsets".
var bucketTxnOffsets = []byte("txn_offsets")

const pendingSuperseded = 0x01

// pendingTxnOffset is one partition's offset in an open transaction.
// superseded records that a plain OffsetCommit of the same partition came
// after it: Kafka applies a transactional offset on commit only if no
// commit was appended after it (GroupMetadata.completePendingTxnOffsetCommit).
type pendingTxnOffset struct {
	entry      offsetEntry
	superseded bool
}

// txnPendingOffsets is group id → producer id → partition → offset.
type txnPendingOffsets map[string]map[int64]map[offsetKey]pendingTxnOffset

func pendingKeyBytes(producerID int64, topic string, partition int32) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(topic)+5), uint64(producerID))
	return append(k, offsetKeyBytes(topic, partition)...)
}

func encodePending(p pendingTxnOffset) []byte {
	var flags byte
	if p.superseded {
		flags |= pendingSuperseded
	}
	return append([]byte{flags}, encodeOffset(p.entry)...)
}

func decodePending(key, val []byte) (int64, offsetKey, pendingTxnOffset, error) {
	if len(key) < 8 || len(val) < 1 {
		return 0, offsetKey{}, pendingTxnOffset{}, &CorruptError{Bucket: "txn_offsets", Key: key, Reason: "too short"}
	}
	topic, p, e, err := decodeOffset(key[8:], val[1:])
	if err != nil {
		return 0, offsetKey{}, pendingTxnOffset{}, err
	}
	return int64(binary.BigEndian.Uint64(key)), offsetKey{topic, p}, pendingTxnOffset{entry: e, superseded: val[0]&pendingSuperseded != 0}, nil
}

// loadPendingTx restores pending transactional offsets.
func (c *Coordinator) loadPendingTx(tx *bolt.Tx) error {
	root, err := tx.CreateBucketIfNotExists(bucketTxnOffsets)
	if err != nil {
		return err
	}
	return root.ForEach(func(k, v []byte) error {
		if v != nil {
			return &CorruptError{Bucket: "txn_offsets", Key: k, Reason: "not a bucket"}
		}
		group := string(k)
		return root.Bucket(k).ForEach(func(k, v []byte) error {
			pid, key, p, err := decodePending(k, v)
			if err != nil {
				return err
			}
			c.pendingFor(group, pid)[key] = p
			return nil
		})
	})
}

// pendingFor returns (creating) the pending offsets of one producer in one
// group.
//
// Lock should be held.
func (c *Coordinator) pendingFor(group string, producerID int64) map[offsetKey]pendingTxnOffset {
	byPID := c.txnPending[group]
	if byPID == nil {
		byPID = make(map[int64]map[offsetKey]pendingTxnOffset)
		c.txnPending[group] = byPID
	}
	m := byPID[producerID]
	if m == nil {
		m = make(map[offsetKey]pendingTxnOffset)
		byPID[producerID] = m
	}
	return m
}

// hasPendingTxnOffsetLocked reports whether any open transaction has an
// offset for the partition (Kafka's hasPendingOffsetCommitsForTopicPartition).
//
// Lock should be held.
func (c *Coordinator) hasPendingTxnOffsetLocked(group, topic string, partition int32) bool {
	for _, m := range c.txnPending[group] {
		if _, ok := m[offsetKey{topic, partition}]; ok {
			return true
		}
	}
	return false
}

// supersedePendingTx marks the pending transactional offsets of partitions
// that a plain commit is overwriting, inside that commit's bbolt
// transaction, and returns the marks to apply once it committed.
func (c *Coordinator) supersedePendingTx(tx *bolt.Tx, group string, ws []offsetWrite) (func(), error) {
	byPID := c.txnPending[group]
	if len(byPID) == 0 {
		return func() {}, nil
	}
	type mark struct {
		pid int64
		key offsetKey
	}
	var marks []mark
	var b *bolt.Bucket
	for _, w := range ws {
		key := offsetKey{w.topic, w.partition}
		for _, pid := range sortedInt64Keys(byPID) {
			p, ok := byPID[pid][key]
			if !ok || p.superseded {
				continue
			}
			if b == nil {
				root, err := tx.CreateBucketIfNotExists(bucketTxnOffsets)
				if err != nil {
					return nil, err
				}
				if b, err = root.CreateBucketIfNotExists([]byte(group)); err != nil {
					return nil, err
				}
			}
			p.superseded = true
			if err := b.Put(pendingKeyBytes(pid, key.topic, key.partition), encodePending(p)); err != nil {
				return nil, err
			}
			marks = append(marks, mark{pid, key})
		}
	}
	return func() {
		for _, m := range marks {
			p := byPID[m.pid][m.key]
			p.superseded = true
			byPID[m.pid][m.key] = p
		}
	}, nil
}

// txnOffsetCommit validates a TxnOffsetCommit the transaction coordinator
// has verified against the group, and stores its offsets as pending for
// req.ProducerID. Partitions of r that already carry an error are skipped;
// r.Topics parallels req.Topics. The checks are Kafka's for transactional
// commits (GroupCoordinator.validateOffsetCommit with isTransactional):
// commits without generation and member are accepted whatever the group's
// state; otherwise the member must be current (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID) in the current generation (ILLEGAL_GENERATION).
func (c *Coordinator) txnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, r *kmsg.TxnOffsetCommitResponse) {
	setAll := func(err *kerr.Error) {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if rp := &r.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode = err.Code
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		setAll(kerr.CoordinatorNotAvailable)
		return
	}
	gen, memberID, instanceID := req.Generation, req.MemberID, deref(req.InstanceID)
	if req.Version < 3 {
		gen, memberID, instanceID = -1, "", ""
	}
	g := c.groups[req.Group]
	if g == nil {
		g = newGroup(req.Group, c.cfg.Now())
	}
	if g.cg != nil {
		if err := validateConsumerTxnOffsetCommit(g, memberID, gen); err != nil {
			setAll(err)
			return
		}
	} else if !(gen < 0 && g.state == stateEmpty) && (gen >= 0 || memberID != "" || instanceID != "") {
		if err := g.validateMember(memberID, instanceID); err != nil {
			setAll(err)
			return
		}
		if gen != g.generation {
			setAll(kerr.IllegalGeneration)
			return
		}
	}
	now := c.cfg.Now()
	type write struct {
		key  offsetKey
		p    pendingTxnOffset
		resp *kmsg.TxnOffsetCommitResponseTopicPartition
	}
	var ws []write
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &r.Topics[i].Partitions[j]
			if rp.ErrorCode != 0 {
				continue
			}
			if p.Metadata != nil && len(*p.Metadata) > c.cfg.OffsetMetadataMaxSize {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			ws = append(ws, write{
				key:  offsetKey{t.Topic, p.Partition},
				p:    pendingTxnOffset{entry: offsetEntry{offset: p.Offset, leaderEpoch: epoch, metadata: p.Metadata, commitTime: now, logOffset: -1}},
				resp: rp,
			})
		}
	}
	if len(ws) == 0 {
		return
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketTxnOffsets)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(req.Group))
		if err != nil {
			return err
		}
		for _, w := range ws {
			if err := b.Put(pendingKeyBytes(req.ProducerID, w.key.topic, w.key.partition), encodePending(w.p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.log.Warn("persisting transactional offsets failed", "group", req.Group, "err", err)
		for _, w := range ws {
			w.resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		return
	}
	m := c.pendingFor(req.Group, req.ProducerID)
	for _, w := range ws {
		m[w.key] = w.p
	}
}

// CompleteTxnOffsets ends the pending transactional offsets of producerID in
// group after the transaction's markers were written: on commit they
// become the group's committed offsets (except those a later OffsetCommit
// superseded), on abort they are dropped. It is idempotent, so the
// transaction coordinator may call it again after a crash. It returns an
// error, and changes nothing, if bbolt fails. With a log it returns once
// the committed offsets' records are committed to __consumer_offsets, and
// an error if they were not (they are applied here nonetheless, and a
// second call finds nothing left to do).
func (c *Coordinator) CompleteTxnOffsets(group string, producerID int64, commit bool) error {
	c.mu.Lock()
	committed, err := c.completeTxnOffsetsLocked(group, producerID, commit)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if kerrv := waitCommitted(committed); kerrv != nil {
		return fmt.Errorf("coordinator: committed offsets of group %q: %w", group, kerrv)
	}
	return nil
}

// completeTxnOffsetsLocked is CompleteTxnOffsets under the lock; committed
// waits for the records.
//
// Lock should be held.
func (c *Coordinator) completeTxnOffsetsLocked(group string, producerID int64, commit bool) (committed func() *kerr.Error, _ error) {
	if c.closed {
		return nil, ErrClosed
	}
	pending := c.txnPending[group][producerID]
	if len(pending) == 0 {
		return nil, nil
	}
	var apply []offsetWrite
	if commit {
		for _, k := range sortedOffsetKeys(pending) {
			if p := pending[k]; !p.superseded {
				apply = append(apply, offsetWrite{topic: k.topic, partition: k.partition, entry: p.entry})
			}
		}
	}
	if len(apply) > 0 && c.cfg.Log != nil {
		// The committed offsets become OffsetCommit records of the group's
		// partition (Kafka keeps the transactional records and their
		// marker there instead).
		recs := make([]LogRecord, len(apply))
		for i := range apply {
			recs[i] = offsetCommitRecord(group, apply[i].topic, apply[i].partition, &apply[i].entry)
		}
		var off int64
		if off, committed = c.appendAsyncLocked(group, recs); off >= 0 {
			for i := range apply {
				apply[i].entry.logOffset = off - int64(len(apply)-1-i)
			}
		}
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		if root := tx.Bucket(bucketTxnOffsets); root != nil {
			if b := root.Bucket([]byte(group)); b != nil {
				for k := range pending {
					if err := b.Delete(pendingKeyBytes(producerID, k.topic, k.partition)); err != nil {
						return err
					}
				}
				if len(c.txnPending[group]) == 1 {
					if err := root.DeleteBucket([]byte(group)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
						return err
					}
				}
			}
		}
		if len(apply) == 0 {
			return nil
		}
		root, err := tx.CreateBucketIfNotExists(bucketOffsets)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(group))
		if err != nil {
			return err
		}
		for _, w := range apply {
			if err := b.Put(offsetKeyBytes(w.topic, w.partition), encodeOffset(w.entry)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return committed, err
	}
	delete(c.txnPending[group], producerID)
	if len(c.txnPending[group]) == 0 {
		delete(c.txnPending, group)
	}
	if len(apply) > 0 {
		g := c.groups[group]
		if g == nil {
			g = newGroup(group, c.cfg.Now())
			c.groups[group] = g
		}
		for _, w := range apply {
			ps := g.offsets[w.topic]
			if ps == nil {
				ps = make(map[int32]offsetEntry)
				g.offsets[w.topic] = ps
			}
			ps[w.partition] = w.entry
		}
	}
	return committed, nil
}

// deleteTopicPendingLocked drops pending transactional offsets of a deleted
// topic (Kafka's GroupMetadata.removeOffsets drops pending ones too).
//
// Lock should be held.
func (c *Coordinator) deleteTopicPendingLocked(topic string) error {
	type del struct {
		group string
		pid   int64
		key   offsetKey
	}
	var dels []del
	for _, group := range sortedKeys(c.txnPending) {
		for pid, m := range c.txnPending[group] {
			for k := range m {
				if k.topic == topic {
					dels = append(dels, del{group, pid, k})
				}
			}
		}
	}
	if len(dels) == 0 {
		return nil
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketTxnOffsets)
		if root == nil {
			return nil
		}
		for _, d := range dels {
			if b := root.Bucket([]byte(d.group)); b != nil {
				if err := b.Delete(pendingKeyBytes(d.pid, d.key.topic, d.key.partition)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range dels {
		delete(c.txnPending[d.group][d.pid], d.key)
		if len(c.txnPending[d.group][d.pid]) == 0 {
			delete(c.txnPending[d.group], d.pid)
		}
		if len(c.txnPending[d.group]) == 0 {
			delete(c.txnPending, d.group)
		}
	}
	return nil
}

// PendingTxnOffsets returns a copy of group's pending transactional offsets,
// producer id → topic → partition → offset; nil if there are none.
func (c *Coordinator) PendingTxnOffsets(group string) map[int64]map[string]map[int32]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.txnPending[group]) == 0 {
		return nil
	}
	out := make(map[int64]map[string]map[int32]int64)
	for pid, m := range c.txnPending[group] {
		byTopic := make(map[string]map[int32]int64)
		for k, p := range m {
			if byTopic[k.topic] == nil {
				byTopic[k.topic] = make(map[int32]int64)
			}
			byTopic[k.topic][k.partition] = p.entry.offset
		}
		out[pid] = byTopic
	}
	return out
}

func sortedInt64Keys[V any](m map[int64]V) []int64 {
	return slices.Sorted(maps.Keys(m))
}

func sortedOffsetKeys[V any](m map[offsetKey]V) []offsetKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b offsetKey) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
}
