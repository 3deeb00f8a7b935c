package coordinator

// Groups and offsets as records of __consumer_offsets.
//
// With Config.Log set, the coordinator is Kafka's: the state of group G
// lives in partition PartitionFor(G, Config.LogPartitions) of
// __consumer_offsets, in Kafka's record formats (kmsg.OffsetCommitKey/Value,
// kmsg.GroupMetadataKey/Value; a nil value is a tombstone), and this
// coordinator serves only the groups of the partitions it has loaded
// (LoadPartition, when this broker becomes their leader; UnloadPartition
// when it stops). groups.db stays the materialised view: every offset and
// group in it carries the log offset of the record it came from, and bucket
// "log" holds, per partition, the offset up to which the view reflects the
// log, so a single node's load replays only the tail; with a replicated
// log (Config.LogReplicated) a load rebuilds the partition's view from the
// log start, since a former leader's log loses its uncommitted tail. Only
// committed appends move the checkpoint. Records are applied only over
// older ones, so replaying a record twice changes nothing.
//
// OffsetCommit appends its records and answers once the partition's high
// watermark has passed them (GroupLog.Append's wait), then applies them to
// groups.db and memory. Group metadata (when a rebalance completes, when
// the group empties, when a static member is replaced), tombstones of
// deleted offsets and groups (OffsetDelete, DeleteGroups, expiry) and the
// offsets a transaction commits are appended without waiting, and applied
// at once, as before.
//
// Without Config.Log (tests, tools) every group is served from groups.db
// alone, as in earlier versions.

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

// GroupError reports what a request for groupID gets here: 0, or
// COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR or (closed)
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) GroupError(groupID string) int16 { return c.keyCode(groupID) }

func offsetCommitRecord(group, topic string, partition int32, e *offsetEntry) LogRecord {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	r := LogRecord{Key: k.AppendTo(nil)}
	if e != nil {
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset, v.LeaderEpoch, v.CommitTimestamp = 3, e.offset, e.leaderEpoch, e.commitTime.UnixMilli()
		if e.metadata != nil {
			v.Metadata = *e.metadata
		}
		r.Value = v.AppendTo(nil)
	}
	return r
}

func groupMetadataRecord(id string, rec *groupRecord) LogRecord {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, id
	r := LogRecord{Key: k.AppendTo(nil)}
	if rec == nil {
		return r
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = rec.ProtocolType, rec.Generation, rec.StateTimeMs
	if rec.Protocol != "" {
		v.Protocol = kmsg.StringPtr(rec.Protocol)
	}
	if rec.Leader != "" {
		v.Leader = kmsg.StringPtr(rec.Leader)
	}
	for _, mr := range rec.Members {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = mr.ID, mr.ClientID, mr.ClientHost
		if mr.InstanceID != "" {
			m.InstanceID = kmsg.StringPtr(mr.InstanceID)
		}
		m.RebalanceTimeoutMillis, m.SessionTimeoutMillis = int32(mr.RebalanceTimeoutMs), int32(mr.SessionTimeoutMs)
		for _, p := range mr.Protocols {
			if p.Name == rec.Protocol {
				m.Subscription = p.Metadata
			}
		}
		m.Assignment = mr.Assignment
		v.Members = append(v.Members, m)
	}
	r.Value = v.AppendTo(nil)
	return r
}

// groupRecordFromLog converts a GroupMetadataValue back; members keep only
// the selected protocol, as Kafka's records do.
func groupRecordFromLog(v *kmsg.GroupMetadataValue) groupRecord {
	rec := groupRecord{Version: groupRecordVersion, ProtocolType: v.ProtocolType, Generation: v.Generation, StateTimeMs: v.CurrentStateTimestamp}
	if v.Protocol != nil {
		rec.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		rec.Leader = *v.Leader
	}
	for _, m := range v.Members {
		mr := memberRecord{ID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeoutMs: int64(m.SessionTimeoutMillis), RebalanceTimeoutMs: int64(m.RebalanceTimeoutMillis), Assignment: m.Assignment}
		if m.InstanceID != nil {
			mr.InstanceID = *m.InstanceID
		}
		if rec.Protocol != "" {
			mr.Protocols = []protocolRecord{{rec.Protocol, m.Subscription}}
		}
		rec.Members = append(rec.Members, mr)
	}
	return rec
}

// appendLocked appends records to groupID's partition (the runtime's
// writeLocked) and counts the batch as in flight until done is called
// (under the lock) with its outcome: committed is true when wait returned
// nil. done also records the partition's checkpoint in groups.db once no
// batch to it is in flight.
//
// Lock should be held.
func (c *Coordinator) appendLocked(groupID string, recs []LogRecord) (next int64, wait func() error, done func(committed bool), err *kerr.Error) {
	return c.appendWithLocked(groupID, c.appendRecords(recs))
}

// appendWithLocked is appendLocked with the append to groupID's partition
// done by appendTo.
//
// Lock should be held.
func (c *Coordinator) appendWithLocked(groupID string, appendTo func(p int32) (int64, func() error, error)) (next int64, wait func() error, done func(committed bool), err *kerr.Error) {
	if err := c.ownerErrLocked(groupID); err != nil {
		return 0, nil, nil, err
	}
	return c.appendToLocked(c.partitionOf(groupID), appendTo)
}

// appendToLocked is appendLocked for partition p, loaded here, with the
// append done by appendTo.
//
// Lock should be held.
func (c *Coordinator) appendToLocked(p int32, appendTo func(p int32) (int64, func() error, error)) (next int64, wait func() error, done func(committed bool), err *kerr.Error) {
	next, wait, written, aerr := c.writeLocked(p, appendTo)
	if aerr != nil {
		c.log.Warn("appending to __consumer_offsets failed", "partition", p, "err", aerr)
		return 0, nil, nil, kerr.NotCoordinator
	}
	done = func(committed bool) {
		written(committed)
		if c.inflight[p] == 0 && c.parts[p] == partLoaded {
			if err := c.db.Update(func(tx *bolt.Tx) error { return c.checkpointLocked(tx, p) }); err != nil {
				c.log.Warn("recording the __consumer_offsets checkpoint failed", "partition", p, "err", err)
			}
		}
	}
	return next, wait, done, nil
}

// appendAsyncLocked appends records without waiting for them; their bbolt
// and memory effects are applied by the caller at once. It returns the
// offset of the last record (-1 if none was appended) and committed, which
// blocks until the records are committed and returns what a request waiting
// for them answers: nil, or the append's error (appendError) or
// NOT_COORDINATOR if the partition was unloaded meanwhile. committed is nil
// without a log; it must be called without the lock.
//
// Lock should be held.
func (c *Coordinator) appendAsyncLocked(groupID string, recs []LogRecord) (int64, func() *kerr.Error) {
	if c.cfg.Log == nil || len(recs) == 0 {
		return -1, nil
	}
	next, wait, done, err := c.appendLocked(groupID, recs)
	if err != nil {
		return -1, func() *kerr.Error { return err }
	}
	finished := make(chan struct{})
	var res *kerr.Error
	go func() {
		werr := wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		defer close(finished)
		done(werr == nil)
		if werr != nil {
			c.log.Warn("a __consumer_offsets record was not committed", "group", groupID, "err", werr)
		}
		res = c.commitErrLocked(groupID, werr)
	}()
	return next - 1, func() *kerr.Error { <-finished; return res }
}

// waitCommitted calls every non-nil committed function (appendAsyncLocked)
// and returns the first error.
func waitCommitted(committed ...func() *kerr.Error) *kerr.Error {
	var first *kerr.Error
	for _, f := range committed {
		if f == nil {
			continue
		}
		if err := f(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// LoadPartition makes this coordinator serve the groups of partition p of
// __consumer_offsets, which this broker now leads: groups.db is brought up
// to the end of the partition's log (replaying from its checkpoint), groups
// and offsets groups.db holds from before the log existed (an upgraded data
// directory) are written to the log, and the groups are loaded. Meanwhile
// their requests answer COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) LoadPartition(p int32) error {
	return c.loadPartition(p, func() error { return c.replayPartition(p) }, func() (func(), error) {
		mine := func(id string) bool { return c.partitionOf(id) == p }
		if err := c.loadLocked(mine); err != nil {
			return nil, err
		}
		for _, g := range c.groups {
			if !mine(g.id) {
				continue
			}
			for _, id := range g.order {
				c.scheduleHeartbeatLocked(g, g.members[id], g.members[id].sessionTimeout)
			}
		}
		c.scheduleModernTimersLocked(mine)
		return nil, nil
	})
}

// replayPartition brings groups.db's view of partition p up to the end of
// its log (the runtime's replayTail: from the view's checkpoint on a
// single node, rebuilt from the log start with a replicated log, as
// Kafka's coordinator loads the whole partition), then migrates what the
// view holds from before the log existed.
func (c *Coordinator) replayPartition(p int32) error {
	recs, next, rebuild, err := c.replayTail(c.db, p, c.cfg.LogReplicated, nil)
	if err != nil {
		return err
	}
	if err := c.db.Update(func(tx *bolt.Tx) error {
		if rebuild {
			if err := c.dropStoredPartition(tx, p); err != nil {
				return err
			}
		}
		mine := func(g string) bool { return c.partitionOf(g) == p }
		for _, r := range recs {
			var err error
			switch {
			case r.control:
				_, err = applyMarkerTx(tx, mine, r.producerID, r.commit, r.offset)
			case r.txn:
				err = replayTxnRecord(tx, r)
			default:
				err = applyRecord(tx, r)
			}
			if err != nil {
				return err
			}
		}
		return putCheckpoint(tx, p, next)
	}); err != nil {
		return err
	}
	c.replayedTo(p, next)
	return c.migratePartition(p)
}

// applyRecord applies one replayed record to groups.db unless the view
// already holds a later one for its key.
func applyRecord(tx *bolt.Tx, r replayed) error {
	if len(r.key) < 2 {
		return nil
	}
	switch binary.BigEndian.Uint16(r.key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(r.key) != nil {
			return nil
		}
		root, err := tx.CreateBucketIfNotExists(bucketOffsets)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(k.Group))
		if err != nil {
			return err
		}
		kb := offsetKeyBytes(k.Topic, k.Partition)
		if old := b.Get(kb); old != nil {
			if _, _, e, err := decodeOffset(kb, old); err == nil && e.logOffset >= r.offset {
				return nil
			}
		}
		if r.value == nil {
			return b.Delete(kb)
		}
		var v kmsg.OffsetCommitValue
		if v.ReadFrom(r.value) != nil {
			return nil
		}
		md := v.Metadata
		e := offsetEntry{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: &md, commitTime: time.UnixMilli(v.CommitTimestamp), logOffset: r.offset}
		if v.Version < 3 {
			e.leaderEpoch = -1
		}
		return b.Put(kb, encodeOffset(e))
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(r.key) != nil {
			return nil
		}
		gb, err := tx.CreateBucketIfNotExists(bucketGroups)
		if err != nil {
			return err
		}
		if old := gb.Get([]byte(k.Group)); old != nil {
			var rec groupRecord
			if json.Unmarshal(old, &rec) == nil && rec.Logged && rec.LogOffset >= r.offset {
				return nil
			}
		}
		if r.value == nil {
			if err := gb.Delete([]byte(k.Group)); err != nil {
				return err
			}
			// A group tombstone follows its offsets' tombstones; whatever
			// offsets are left are older than it.
			if root := tx.Bucket(bucketOffsets); root != nil {
				if ob := root.Bucket([]byte(k.Group)); ob != nil {
					var stale [][]byte
					ob.ForEach(func(kb, vb []byte) error {
						if _, _, e, err := decodeOffset(kb, vb); err != nil || e.logOffset < r.offset {
							stale = append(stale, slices.Clone(kb))
						}
						return nil
					})
					for _, kb := range stale {
						if err := ob.Delete(kb); err != nil {
							return err
						}
					}
				}
			}
			return nil
		}
		var v kmsg.GroupMetadataValue
		if v.ReadFrom(r.value) != nil {
			return nil
		}
		rec := groupRecordFromLog(&v)
		rec.LogOffset, rec.Logged = r.offset, true
		val, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return gb.Put([]byte(k.Group), val)
	default:
		if isModernKey(int16(binary.BigEndian.Uint16(r.key))) {
			return applyModernRecord(tx, r)
		}
	}
	return nil
}

// dropStoredPartition removes from groups.db the view of partition p's
// log: the groups, offsets, pending transactional offsets and KIP-848/share
// group records that came from the log. What was stored before the log
// existed (no log offset) stays, for migratePartition (groups, offsets) or
// completion as before (pending transactional offsets).
func (c *Coordinator) dropStoredPartition(tx *bolt.Tx, p int32) error {
	mine := func(k []byte) bool { return c.partitionOf(string(k)) == p }
	if gb := tx.Bucket(bucketGroups); gb != nil {
		var ids [][]byte
		gb.ForEach(func(k, v []byte) error {
			var rec groupRecord
			if mine(k) && (json.Unmarshal(v, &rec) != nil || rec.Logged) {
				ids = append(ids, slices.Clone(k))
			}
			return nil
		})
		for _, id := range ids {
			if err := gb.Delete(id); err != nil {
				return err
			}
		}
	}
	// dropLogged deletes the entries of the nested buckets of p's groups
	// in root that came from the log, and the buckets left empty.
	dropLogged := func(root *bolt.Bucket, logged func(k, v []byte) bool) error {
		if root == nil {
			return nil
		}
		var groups [][]byte
		root.ForEach(func(k, v []byte) error {
			if v == nil && mine(k) {
				groups = append(groups, slices.Clone(k))
			}
			return nil
		})
		for _, id := range groups {
			b := root.Bucket(id)
			var keys [][]byte
			left := 0
			b.ForEach(func(k, v []byte) error {
				if logged(k, v) {
					keys = append(keys, slices.Clone(k))
				} else {
					left++
				}
				return nil
			})
			if left == 0 {
				if err := root.DeleteBucket(id); err != nil {
					return err
				}
				continue
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := dropLogged(tx.Bucket(bucketOffsets), func(k, v []byte) bool {
		_, _, e, err := decodeOffset(k, v)
		return err != nil || e.logOffset >= 0
	}); err != nil {
		return err
	}
	if err := dropLogged(tx.Bucket(bucketTxnOffsets), func(k, v []byte) bool {
		_, _, pe, err := decodePending(k, v)
		return err != nil || pe.entry.logOffset >= 0
	}); err != nil {
		return err
	}
	if err := dropLogged(tx.Bucket(bucketModern), func(_, v []byte) bool {
		return len(v) < 8 || int64(binary.BigEndian.Uint64(v)) >= 0
	}); err != nil {
		return err
	}
	return putCheckpoint(tx, p, 0)
}

// migratePartition writes to the log what groups.db holds of partition p
// without a log offset: the groups and offsets of a data directory written
// before __consumer_offsets existed. It waits for them to be committed and
// then records their offsets in groups.db.
func (c *Coordinator) migratePartition(p int32) error {
	type legacyGroup struct {
		id      string
		rec     *groupRecord
		offsets []offsetWrite
	}
	var legacy []legacyGroup
	index := map[string]int{}
	get := func(id string) *legacyGroup {
		i, ok := index[id]
		if !ok {
			i = len(legacy)
			index[id] = i
			legacy = append(legacy, legacyGroup{id: id})
		}
		return &legacy[i]
	}
	err := c.db.View(func(tx *bolt.Tx) error {
		if gb := tx.Bucket(bucketGroups); gb != nil {
			gb.ForEach(func(k, v []byte) error {
				var rec groupRecord
				if c.partitionOf(string(k)) == p && json.Unmarshal(v, &rec) == nil && !rec.Logged {
					get(string(k)).rec = &rec
				}
				return nil
			})
		}
		root := tx.Bucket(bucketOffsets)
		if root == nil {
			return nil
		}
		return root.ForEach(func(k, _ []byte) error {
			b := root.Bucket(k)
			if b == nil || c.partitionOf(string(k)) != p {
				return nil
			}
			return b.ForEach(func(kb, vb []byte) error {
				topic, part, e, err := decodeOffset(kb, vb)
				if err == nil && e.logOffset < 0 {
					lg := get(string(k))
					lg.offsets = append(lg.offsets, offsetWrite{topic: topic, partition: part, entry: e})
				}
				return nil
			})
		})
	})
	if err != nil || len(legacy) == 0 {
		return err
	}
	for _, lg := range legacy {
		var recs []LogRecord
		if lg.rec != nil {
			recs = append(recs, groupMetadataRecord(lg.id, lg.rec))
		}
		for i := range lg.offsets {
			recs = append(recs, offsetCommitRecord(lg.id, lg.offsets[i].topic, lg.offsets[i].partition, &lg.offsets[i].entry))
		}
		next, err := c.appendAndWait(p, recs)
		if err != nil {
			return fmt.Errorf("coordinator: migrating group %q to __consumer_offsets: %w", lg.id, err)
		}
		base := next - int64(len(recs))
		err = c.db.Update(func(tx *bolt.Tx) error {
			off := base
			if lg.rec != nil {
				lg.rec.LogOffset, lg.rec.Logged = off, true
				val, err := json.Marshal(lg.rec)
				if err != nil {
					return err
				}
				if err := tx.Bucket(bucketGroups).Put([]byte(lg.id), val); err != nil {
					return err
				}
				off++
			}
			if len(lg.offsets) > 0 {
				b := tx.Bucket(bucketOffsets).Bucket([]byte(lg.id))
				for _, w := range lg.offsets {
					w.entry.logOffset = off
					off++
					if err := b.Put(offsetKeyBytes(w.topic, w.partition), encodeOffset(w.entry)); err != nil {
						return err
					}
				}
			}
			return putCheckpoint(tx, p, next)
		})
		if err != nil {
			return err
		}
		c.log.Info("migrated a group to __consumer_offsets", "group", lg.id, "partition", p, "offsets", len(lg.offsets))
	}
	return nil
}

// UnloadPartition stops serving the groups of partition p: this broker no
// longer leads it. Blocked JoinGroup and SyncGroup calls answer
// NOT_COORDINATOR; groups.db keeps the view for a later load.
func (c *Coordinator) UnloadPartition(p int32) {
	c.unloadPartition(p, func() {
		for id, g := range c.groups {
			if c.partitionOf(id) != p {
				continue
			}
			c.cancelGroupTimersLocked(g)
			for _, s := range g.pending {
				c.timers.cancelLocked(s)
			}
			for _, mid := range g.order {
				m := g.members[mid]
				c.completeJoinLocked(m, joinError(mid, kerr.NotCoordinator))
				c.completeSyncLocked(m, syncError(kerr.NotCoordinator))
			}
			delete(c.groups, id)
		}
		for id := range c.txnPending {
			if c.partitionOf(id) == p {
				delete(c.txnPending, id) // groups.db keeps them for a later load
			}
		}
		for id, sg := range c.shares {
			if c.partitionOf(id) != p {
				continue
			}
			for _, m := range sg.members {
				c.timers.cancelLocked(&m.hb)
			}
			delete(c.shares, id)
		}
	})
}

// TxnOffsetCommit stores a transaction's offsets as pending, as Kafka's
// group coordinator does when the transaction coordinator is another
// broker (which then completes them with CompleteTxnOffsetsIn). Unknown
// partitions answer UNKNOWN_TOPIC_OR_PARTITION.
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	r, pending := txnOffsetCommitAnswer(req, c.partitionExists)
	if pending == 0 {
		return r
	}
	if req.Group == "" || req.TransactionalID == "" {
		code := kerr.InvalidGroupID.Code
		if req.Group != "" {
			code = kerr.InvalidRequest.Code
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if rp := &r.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode = code
				}
			}
		}
		return r
	}
	if finish := c.txnOffsetCommit(req, r); finish != nil {
		finish()
	}
	return r
}

// CompleteTxnOffsetsIn completes (CompleteTxnOffsets) the pending offsets
// of producerID in every group of partition p of __consumer_offsets: the
// transaction marker of that partition. NOT_COORDINATOR if p is not
// loaded here.
func (c *Coordinator) CompleteTxnOffsetsIn(p int32, producerID int64, commit bool) error {
	if c.cfg.Log != nil {
		return c.completeTxnInLog(p, producerID, commit)
	}
	// Without a log every group is served here, whatever p.
	c.mu.Lock()
	var groups []string
	for g, byProducer := range c.txnPending {
		if _, ok := byProducer[producerID]; ok {
			groups = append(groups, g)
		}
	}
	c.mu.Unlock()
	slices.Sort(groups)
	for _, g := range groups {
		if err := c.CompleteTxnOffsets(g, producerID, commit); err != nil {
			return err
		}
	}
	return nil
}
