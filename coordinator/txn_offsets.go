package coordinator

// Transactional offsets in the group coordinator: TxnOffsetCommit stores
// offsets per (group, producer id) as pending; they are invisible to
// OffsetFetch (which answers UNSTABLE_OFFSET_COMMIT for them when asked for
// stable offsets) until the transaction coordinator calls
// CompleteTxnOffsets after the transaction's markers are written. They are
// kept in bbolt, so a transaction completed after a crash still finds them.
//
// With a log (Config.Log) this is Kafka's way (KIP-98): TxnOffsetCommit
// appends the OffsetCommit records to the group's partition of
// __consumer_offsets as a transactional batch of the producer and answers
// once they are committed; the transaction's end appends a COMMIT or ABORT
// marker for the producer there (CompleteTxnOffsetsIn, the WriteTxnMarkers
// of that partition), after which the pending offsets of every group of
// the partition are applied or dropped. Loading the partition replays the
// same: transactional records become pending, a marker applies (COMMIT)
// or drops (ABORT) its producer's pending offsets appended before it, and
// those of a transaction still open stay pending. The "txn_offsets" bucket
// is then the view of the pending offsets up to the partition's
// checkpoint; entries without a log offset are a legacy data directory's,
// completed as before (their committed offsets appended as plain records).

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

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
//	                              OffsetCommit, so not applied on commit;
//	                              bit 1: the producer epoch follows),
//	                              [producer epoch (int16 big endian)],
//	                              then the offset record of bucket "offsets",
//	                              whose log offset is that of the
//	                              transactional record (-1: not in the log).
var bucketTxnOffsets = []byte("txn_offsets")

const (
	pendingSuperseded = 0x01
	pendingHasEpoch   = 0x02
)

// pendingTxnOffset is one partition's offset in an open transaction.
// superseded records that a plain OffsetCommit of the same partition came
// after it: Kafka applies a transactional offset on commit only if no
// commit was appended after it (GroupMetadata.completePendingTxnOffsetCommit).
type pendingTxnOffset struct {
	entry      offsetEntry
	superseded bool
	epoch      int16 // the producer epoch of its record; -1 if unknown
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
	if p.epoch < 0 {
		return append([]byte{flags}, encodeOffset(p.entry)...)
	}
	v := binary.BigEndian.AppendUint16([]byte{flags | pendingHasEpoch}, uint16(p.epoch))
	return append(v, encodeOffset(p.entry)...)
}

func decodePending(key, val []byte) (int64, offsetKey, pendingTxnOffset, error) {
	if len(key) < 8 || len(val) < 1 {
		return 0, offsetKey{}, pendingTxnOffset{}, &CorruptError{Bucket: "txn_offsets", Key: key, Reason: "too short"}
	}
	flags, rest, epoch := val[0], val[1:], int16(-1)
	if flags&pendingHasEpoch != 0 {
		if len(rest) < 2 {
			return 0, offsetKey{}, pendingTxnOffset{}, &CorruptError{Bucket: "txn_offsets", Key: key, Reason: "too short"}
		}
		epoch, rest = int16(binary.BigEndian.Uint16(rest)), rest[2:]
	}
	topic, p, e, err := decodeOffset(key[8:], rest)
	if err != nil {
		return 0, offsetKey{}, pendingTxnOffset{}, err
	}
	return int64(binary.BigEndian.Uint64(key)), offsetKey{topic, p}, pendingTxnOffset{entry: e, superseded: flags&pendingSuperseded != 0, epoch: epoch}, nil
}

// loadPendingTx restores the pending transactional offsets of the groups
// for which keep is true (all if nil), replacing what memory holds of
// them.
func (c *Coordinator) loadPendingTx(tx *bolt.Tx, keep func(id string) bool) error {
	for g := range c.txnPending {
		if keep == nil || keep(g) {
			delete(c.txnPending, g)
		}
	}
	root, err := tx.CreateBucketIfNotExists(bucketTxnOffsets)
	if err != nil {
		return err
	}
	return root.ForEach(func(k, v []byte) error {
		if v != nil {
			return &CorruptError{Bucket: "txn_offsets", Key: k, Reason: "not a bucket"}
		}
		group := string(k)
		if keep != nil && !keep(group) {
			return nil
		}
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
// Consumer groups check the member epoch and, for an older one, the
// assignment epochs of the partitions committed (commitfence.go).
//
// With a log the offsets are appended as a transactional batch and finish
// is returned: it waits (without the lock) until the batch is committed,
// then stores the offsets as pending, or sets r's errors. It must be
// called, without this coordinator's lock and the transaction
// coordinator's; r is complete once it returns. finish is nil when r is
// complete already.
func (c *Coordinator) txnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, r *kmsg.TxnOffsetCommitResponse) (finish func()) {
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
		return nil
	}
	gen, memberID, instanceID := req.Generation, req.MemberID, deref(req.InstanceID)
	if req.Version < 3 {
		gen, memberID, instanceID = -1, "", ""
	}
	g := c.groups[req.Group]
	if g == nil {
		g = newGroup(req.Group, c.cfg.Now())
	}
	// The partitions checked are those that would be written.
	parts := func(yield func(offsetKey) bool) {
		for i, t := range req.Topics {
			for j, p := range t.Partitions {
				if r.Topics[i].Partitions[j].ErrorCode == 0 && !c.metadataTooLarge(p.Metadata) && !yield(offsetKey{t.Topic, p.Partition}) {
					return
				}
			}
		}
	}
	if g.st != nil {
		kind := commitKind{txn: true, version: req.Version, instance: req.Version >= 3 && req.InstanceID != nil}
		if err := validateStreamsOffsetCommit(g, memberID, gen, kind, parts); err != nil {
			setAll(err)
			return nil
		}
	} else if g.cg != nil {
		kind := commitKind{txn: true, version: req.Version, instance: req.Version >= 3 && req.InstanceID != nil}
		if err := validateConsumerOffsetCommit(g, memberID, gen, kind, parts); err != nil {
			setAll(err)
			return nil
		}
	} else if !(gen < 0 && g.state == stateEmpty) && (gen >= 0 || memberID != "" || instanceID != "") {
		if err := g.validateMember(memberID, instanceID); err != nil {
			setAll(err)
			return nil
		}
		if gen != g.generation {
			setAll(kerr.IllegalGeneration)
			return nil
		}
	}
	now := c.cfg.Now()
	var ws []pendingWrite
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &r.Topics[i].Partitions[j]
			if rp.ErrorCode != 0 {
				continue
			}
			if c.metadataTooLarge(p.Metadata) {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			ws = append(ws, pendingWrite{
				key:  offsetKey{t.Topic, p.Partition},
				p:    pendingTxnOffset{entry: offsetEntry{offset: p.Offset, leaderEpoch: epoch, metadata: p.Metadata, commitTime: now, logOffset: -1}, epoch: -1},
				resp: rp,
			})
		}
	}
	if len(ws) == 0 {
		return nil
	}
	if c.cfg.Log != nil {
		return c.appendTxnOffsetsLocked(req.Group, req.ProducerID, req.ProducerEpoch, ws)
	}
	c.storePendingLocked(req.Group, req.ProducerID, ws)
	return nil
}

// pendingWrite is one partition of a TxnOffsetCommit to store as pending.
type pendingWrite struct {
	key  offsetKey
	p    pendingTxnOffset
	resp *kmsg.TxnOffsetCommitResponseTopicPartition
}

// appendTxnOffsetsLocked appends ws as a transactional batch of
// producerID to group's partition and returns txnOffsetCommit's finish.
//
// Lock should be held.
func (c *Coordinator) appendTxnOffsetsLocked(group string, producerID int64, epoch int16, ws []pendingWrite) func() {
	recs := make([]LogRecord, len(ws))
	for i, w := range ws {
		recs[i] = offsetCommitRecord(group, w.key.topic, w.key.partition, &w.p.entry)
	}
	next, wait, done, kerrv := c.appendWithLocked(group, func(p int32) (int64, func() error, error) {
		return c.cfg.Log.AppendTxn(p, producerID, epoch, recs)
	})
	if kerrv != nil {
		for _, w := range ws {
			w.resp.ErrorCode = kerrv.Code
		}
		return nil
	}
	return func() {
		werr := wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		done(werr == nil)
		if werr != nil {
			c.log.Warn("transactional offsets not committed to __consumer_offsets", "group", group, "err", werr)
		}
		if fail := c.commitErrLocked(group, werr); fail != nil {
			for _, w := range ws {
				w.resp.ErrorCode = fail.Code
			}
			return
		}
		base := next - int64(len(ws))
		for i := range ws {
			ws[i].p.entry.logOffset, ws[i].p.epoch = base+int64(i), epoch
		}
		c.storePendingLocked(group, producerID, ws)
	}
}

// storePendingLocked stores ws as producerID's pending offsets in group,
// in bbolt and memory; a partition whose stored pending offset comes from
// a later record keeps it.
//
// Lock should be held.
func (c *Coordinator) storePendingLocked(group string, producerID int64, ws []pendingWrite) {
	m := c.txnPending[group][producerID]
	kept := ws[:0]
	for _, w := range ws {
		if old, ok := m[w.key]; ok && w.p.entry.logOffset >= 0 && old.entry.logOffset >= w.p.entry.logOffset {
			continue // replayed by a reload meanwhile, or newer
		}
		kept = append(kept, w)
	}
	ws = kept
	if len(ws) == 0 {
		return
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketTxnOffsets)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(group))
		if err != nil {
			return err
		}
		for _, w := range ws {
			if err := b.Put(pendingKeyBytes(producerID, w.key.topic, w.key.partition), encodePending(w.p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.log.Warn("persisting transactional offsets failed", "group", group, "err", err)
		for _, w := range ws {
			w.resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		return
	}
	m = c.pendingFor(group, producerID)
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
//
// With a log it is CompleteTxnOffsetsIn of group's partition: the marker
// ends the producer's transaction in every group of the partition.
func (c *Coordinator) CompleteTxnOffsets(group string, producerID int64, commit bool) error {
	if c.cfg.Log != nil {
		return c.CompleteTxnOffsetsIn(c.partitionOf(group), producerID, commit)
	}
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

// completeTxnInLog is CompleteTxnOffsetsIn with a log: if the producer
// has offsets of p's groups in the log pending, the marker is appended to
// p and, once committed, they are applied or dropped as its replay does;
// pending offsets of a legacy data directory (not in the log) are then
// completed as without a log.
func (c *Coordinator) completeTxnInLog(p int32, producerID int64, commit bool) error {
	c.mu.Lock()
	locked := true
	defer func() {
		if locked {
			c.mu.Unlock()
		}
	}()
	loadedErr := func() error {
		if c.closed {
			return ErrClosed
		}
		if err := c.partitionErrLocked(p); err != nil {
			return err
		}
		return nil
	}
	if err := loadedErr(); err != nil {
		return err
	}
	mine := func(g string) bool { return c.partitionOf(g) == p }
	epoch, logged := int16(-1), false
	for g, byPID := range c.txnPending {
		if !mine(g) {
			continue
		}
		for _, pe := range byPID[producerID] {
			if pe.entry.logOffset >= 0 {
				logged, epoch = true, max(epoch, pe.epoch)
			}
		}
	}
	if logged {
		next, wait, done, kerrv := c.appendToLocked(p, func(p int32) (int64, func() error, error) {
			return c.cfg.Log.AppendMarker(p, producerID, max(epoch, 0), commit)
		})
		if kerrv != nil {
			return kerrv
		}
		c.mu.Unlock()
		werr := wait()
		c.mu.Lock()
		if werr != nil {
			done(false)
			return fmt.Errorf("coordinator: marker of producer %d in __consumer_offsets-%d: %w", producerID, p, appendError(werr))
		}
		if err := loadedErr(); err != nil {
			done(true)
			return err
		}
		err := c.applyMarkerLocked(mine, producerID, commit, next-1)
		done(true)
		if err != nil {
			return err
		}
	}
	var groups []string
	for g, byPID := range c.txnPending {
		if !mine(g) {
			continue
		}
		for _, pe := range byPID[producerID] {
			if pe.entry.logOffset < 0 {
				groups = append(groups, g)
				break
			}
		}
	}
	slices.Sort(groups)
	var committed []func() *kerr.Error
	for _, g := range groups {
		cm, err := c.completeTxnOffsetsLocked(g, producerID, commit)
		if err != nil {
			return err
		}
		committed = append(committed, cm)
	}
	c.mu.Unlock()
	locked = false
	if kerrv := waitCommitted(committed...); kerrv != nil {
		return fmt.Errorf("coordinator: committed offsets of producer %d in __consumer_offsets-%d: %w", producerID, p, kerrv)
	}
	return nil
}

// appliedOffset is an offset a transaction's COMMIT marker applied.
type appliedOffset struct {
	group string
	key   offsetKey
	entry offsetEntry
}

// applyMarkerLocked applies the marker of producerID at markerOffset to
// bbolt (applyMarkerTx) and memory, for the groups mine selects.
//
// Lock should be held.
func (c *Coordinator) applyMarkerLocked(mine func(string) bool, producerID int64, commit bool, markerOffset int64) error {
	var applied []appliedOffset
	err := c.db.Update(func(tx *bolt.Tx) error {
		var err error
		applied, err = applyMarkerTx(tx, mine, producerID, commit, markerOffset)
		return err
	})
	if err != nil {
		return err
	}
	for g, byPID := range c.txnPending {
		m := byPID[producerID]
		if !mine(g) || m == nil {
			continue
		}
		for k, pe := range m {
			if pe.entry.logOffset >= 0 && pe.entry.logOffset < markerOffset {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(byPID, producerID)
		}
		if len(byPID) == 0 {
			delete(c.txnPending, g)
		}
	}
	for _, a := range applied {
		g := c.groups[a.group]
		if g == nil {
			g = newGroup(a.group, c.cfg.Now())
			c.groups[a.group] = g
		}
		ps := g.offsets[a.key.topic]
		if ps == nil {
			ps = make(map[int32]offsetEntry)
			g.offsets[a.key.topic] = ps
		}
		if cur, ok := ps[a.key.partition]; !ok || cur.logOffset < a.entry.logOffset {
			ps[a.key.partition] = a.entry
		}
	}
	return nil
}

// applyMarkerTx applies to groups.db the COMMIT (commit) or ABORT marker
// of producerID at markerOffset of the log: the producer's pending offsets
// of the groups mine selects whose records precede the marker are removed
// and, on COMMIT, become committed offsets unless the view holds a later
// commit of the partition (Kafka's completePendingTxnOffsetCommit compares
// the records' offsets the same way). It returns the offsets applied.
func applyMarkerTx(tx *bolt.Tx, mine func(string) bool, producerID int64, commit bool, markerOffset int64) ([]appliedOffset, error) {
	root := tx.Bucket(bucketTxnOffsets)
	if root == nil {
		return nil, nil
	}
	var groups [][]byte
	root.ForEach(func(k, v []byte) error {
		if v == nil && mine(string(k)) {
			groups = append(groups, slices.Clone(k))
		}
		return nil
	})
	prefix := binary.BigEndian.AppendUint64(nil, uint64(producerID))
	var applied []appliedOffset
	for _, g := range groups {
		b := root.Bucket(g)
		var dels [][]byte
		cur := b.Cursor()
		for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
			_, key, pe, err := decodePending(k, v)
			if err != nil {
				return nil, err
			}
			if pe.entry.logOffset < 0 || pe.entry.logOffset >= markerOffset {
				continue
			}
			dels = append(dels, slices.Clone(k))
			if commit {
				applied = append(applied, appliedOffset{string(g), key, pe.entry})
			}
		}
		for _, k := range dels {
			if err := b.Delete(k); err != nil {
				return nil, err
			}
		}
		if k, _ := b.Cursor().First(); k == nil {
			if err := root.DeleteBucket(g); err != nil {
				return nil, err
			}
		}
	}
	kept := applied[:0]
	for _, a := range applied {
		ob, err := tx.CreateBucketIfNotExists(bucketOffsets)
		if err != nil {
			return nil, err
		}
		b, err := ob.CreateBucketIfNotExists([]byte(a.group))
		if err != nil {
			return nil, err
		}
		kb := offsetKeyBytes(a.key.topic, a.key.partition)
		if old := b.Get(kb); old != nil {
			if _, _, e, err := decodeOffset(kb, old); err == nil && e.logOffset >= a.entry.logOffset {
				continue
			}
		}
		if err := b.Put(kb, encodeOffset(a.entry)); err != nil {
			return nil, err
		}
		kept = append(kept, a)
	}
	return kept, nil
}

// replayTxnRecord applies a replayed record of a transactional batch to
// groups.db: an offset commit becomes its producer's pending offset,
// unless the view holds one from a later record.
func replayTxnRecord(tx *bolt.Tx, r replayed) error {
	if len(r.key) < 2 || r.value == nil {
		return nil
	}
	if v := binary.BigEndian.Uint16(r.key); v > 1 {
		return nil // only offset commits are transactional
	}
	var k kmsg.OffsetCommitKey
	var v kmsg.OffsetCommitValue
	if k.ReadFrom(r.key) != nil || v.ReadFrom(r.value) != nil {
		return nil
	}
	root, err := tx.CreateBucketIfNotExists(bucketTxnOffsets)
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists([]byte(k.Group))
	if err != nil {
		return err
	}
	kb := pendingKeyBytes(r.producerID, k.Topic, k.Partition)
	if old := b.Get(kb); old != nil {
		if _, _, pe, err := decodePending(kb, old); err == nil && pe.entry.logOffset >= r.offset {
			return nil
		}
	}
	md := v.Metadata
	e := offsetEntry{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: &md, commitTime: time.UnixMilli(v.CommitTimestamp), logOffset: r.offset}
	if v.Version < 3 {
		e.leaderEpoch = -1
	}
	return b.Put(kb, encodePending(pendingTxnOffset{entry: e, epoch: r.producerEpoch}))
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
