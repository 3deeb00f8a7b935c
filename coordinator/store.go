package coordinator

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// On-disk format of Dir/groups.db (bbolt; every update is one transaction,
// fsynced when it commits).
//
//	bucket "groups":  group id → JSON groupRecord (format version "v": 1): the
//	                  group as of its last completed rebalance (members with
//	                  their protocols and assignments), its last transition to
//	                  Empty, or its last static member replacement.
//	bucket "offsets": one nested bucket per group id; in it
//	                  key   = topic, 0x00, partition (uint32 big endian)
//	                  value = format 0x02, offset int64, leader epoch int32,
//	                          commit time (Unix ms) int64, log offset int64
//	                          (of its __consumer_offsets record, -1 for none),
//	                          metadata length int32 (-1 = null), metadata
//	                          bytes. Format 0x01, written before
//	                          __consumer_offsets existed, has no log offset.
//	bucket "log":     __consumer_offsets partition (uint32 big endian) →
//	                  the offset (int64) up to which this view reflects
//	                  that partition's log (grouplog.go).
//	bucket "txn_offsets": pending transactional offsets, see txn_offsets.go.
//	bucket "modern_groups": one nested bucket per KIP-848, share or streams group id;
//	                  in it a __consumer_offsets record key → its log
//	                  offset (int64, -1 without a log) and value
//	                  (modernlog.go).
//	bucket "share_state": no longer used (share-partition state moved
//	                  to __share_group_state, sharecoord.go); left as it is.
//
// Topic names cannot contain 0x00, so keys sort by topic then partition.
var (
	bucketGroups  = []byte("groups")
	bucketOffsets = []byte("offsets")
)

const (
	groupRecordVersion    = 1
	offsetRecordVersionV1 = 0x01
	offsetRecordVersion   = 0x02
	offsetRecordMinLenV1  = 1 + 8 + 4 + 8 + 4
	offsetRecordMinLen    = 1 + 8 + 4 + 8 + 8 + 4
)

type groupRecord struct {
	Version      int            `json:"v"`
	ProtocolType string         `json:"protocol_type"`
	Protocol     string         `json:"protocol"`
	Generation   int32          `json:"generation"`
	Leader       string         `json:"leader"`
	StateTimeMs  int64          `json:"state_time_ms"`
	Members      []memberRecord `json:"members"`
	// LogOffset is the offset of the group's GroupMetadata record in
	// __consumer_offsets, if Logged.
	LogOffset int64 `json:"log_offset,omitempty"`
	Logged    bool  `json:"logged,omitempty"`
}

type memberRecord struct {
	ID                 string           `json:"id"`
	InstanceID         string           `json:"instance_id,omitempty"`
	ClientID           string           `json:"client_id"`
	ClientHost         string           `json:"client_host"`
	SessionTimeoutMs   int64            `json:"session_timeout_ms"`
	RebalanceTimeoutMs int64            `json:"rebalance_timeout_ms"`
	Protocols          []protocolRecord `json:"protocols"`
	Assignment         []byte           `json:"assignment"`
}

type protocolRecord struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// storeGroupLocked persists g's metadata and current assignments; committed
// (nil without a log) waits for its __consumer_offsets record, see
// appendAsyncLocked.
//
// Lock should be held.
func (c *Coordinator) storeGroupLocked(g *group) (committed func() *kerr.Error, _ error) {
	rec := groupRecord{
		Version:      groupRecordVersion,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Generation:   g.generation,
		Leader:       g.leader,
		StateTimeMs:  g.stateTime.UnixMilli(),
	}
	for _, id := range g.order {
		m := g.members[id]
		mr := memberRecord{
			ID:                 id,
			InstanceID:         m.instanceID,
			ClientID:           m.clientID,
			ClientHost:         m.clientHost,
			SessionTimeoutMs:   m.sessionTimeout.Milliseconds(),
			RebalanceTimeoutMs: m.rebalanceTimeout.Milliseconds(),
			Assignment:         m.assignment,
		}
		for _, p := range m.protocols {
			mr.Protocols = append(mr.Protocols, protocolRecord{p.name, p.metadata})
		}
		rec.Members = append(rec.Members, mr)
	}
	off, committed := c.appendAsyncLocked(g.id, []LogRecord{groupMetadataRecord(g.id, &rec)})
	if off >= 0 {
		rec.LogOffset, rec.Logged = off, true
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return committed, err
	}
	return committed, c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketGroups)
		if err != nil {
			return err
		}
		return b.Put([]byte(g.id), val)
	})
}

// storeOffsetsLocked writes a group's commits in one transaction.
//
// Lock should be held.
func (c *Coordinator) storeOffsetsLocked(groupID string, ws []offsetWrite) error {
	var applyMarks func()
	err := c.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketOffsets)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(groupID))
		if err != nil {
			return err
		}
		for _, w := range ws {
			if err := b.Put(offsetKeyBytes(w.topic, w.partition), encodeOffset(w.entry)); err != nil {
				return err
			}
		}
		apply, err := c.supersedePendingTx(tx, groupID, ws)
		if err != nil {
			return err
		}
		applyMarks = apply
		return nil
	})
	if err == nil {
		applyMarks()
	}
	return err
}

// deleteStoredOffsets deletes offsets from groups.db and appends their
// tombstones; committed waits for those (appendAsyncLocked).
//
// Lock should be held.
func (c *Coordinator) deleteStoredOffsets(groupID string, keys []offsetKey) (committed func() *kerr.Error, _ error) {
	var tombstones []LogRecord
	for _, k := range keys {
		tombstones = append(tombstones, offsetCommitRecord(groupID, k.topic, k.partition, nil))
	}
	_, committed = c.appendAsyncLocked(groupID, tombstones)
	return committed, c.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketOffsets)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(groupID))
		if b == nil {
			return nil
		}
		for _, k := range keys {
			if err := b.Delete(offsetKeyBytes(k.topic, k.partition)); err != nil {
				return err
			}
		}
		return nil
	})
}

// deleteStoredGroup deletes g from groups.db and appends its tombstones;
// committed waits for those (appendAsyncLocked).
//
// Lock should be held.
func (c *Coordinator) deleteStoredGroup(g *group) (committed func() *kerr.Error, _ error) {
	groupID := g.id
	var tombstones []LogRecord
	for _, topic := range sortedKeys(g.offsets) {
		for _, p := range sortedKeys(g.offsets[topic]) {
			tombstones = append(tombstones, offsetCommitRecord(groupID, topic, p, nil))
		}
	}
	var modern []LogRecord
	if err := c.db.Update(func(tx *bolt.Tx) error {
		var err error
		modern, err = c.modernTombstones(tx, groupID)
		return err
	}); err != nil {
		return nil, err
	}
	if g.cg != nil {
		g.cg.logged = map[string][]byte{}
	}
	if g.st != nil {
		g.st.logged = map[string][]byte{}
	}
	tombstones = append(tombstones, modern...)
	tombstones = append(tombstones, groupMetadataRecord(groupID, nil))
	_, committed = c.appendAsyncLocked(groupID, tombstones)
	return committed, c.db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketGroups); b != nil {
			if err := b.Delete([]byte(groupID)); err != nil {
				return err
			}
		}
		if root := tx.Bucket(bucketOffsets); root != nil {
			if err := root.DeleteBucket([]byte(groupID)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	})
}

func offsetKeyBytes(topic string, partition int32) []byte {
	k := make([]byte, 0, len(topic)+5)
	k = append(k, topic...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

func encodeOffset(e offsetEntry) []byte {
	v := make([]byte, 0, offsetRecordMinLen)
	v = append(v, offsetRecordVersion)
	v = binary.BigEndian.AppendUint64(v, uint64(e.offset))
	v = binary.BigEndian.AppendUint32(v, uint32(e.leaderEpoch))
	v = binary.BigEndian.AppendUint64(v, uint64(e.commitTime.UnixMilli()))
	v = binary.BigEndian.AppendUint64(v, uint64(e.logOffset))
	if e.metadata == nil {
		return binary.BigEndian.AppendUint32(v, 0xffffffff)
	}
	v = binary.BigEndian.AppendUint32(v, uint32(len(*e.metadata)))
	return append(v, *e.metadata...)
}

// CorruptError is returned by Open when a stored record cannot be decoded.
type CorruptError struct {
	Bucket string
	Key    []byte
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("coordinator: corrupt %s record %q: %s", e.Bucket, e.Key, e.Reason)
}

func decodeOffset(key, val []byte) (topic string, partition int32, e offsetEntry, err error) {
	corrupt := func(reason string) error { return &CorruptError{Bucket: "offsets", Key: key, Reason: reason} }
	if len(key) < 5 || key[len(key)-5] != 0 {
		return "", 0, e, corrupt("bad key")
	}
	topic = string(key[:len(key)-5])
	partition = int32(binary.BigEndian.Uint32(key[len(key)-4:]))
	minLen := offsetRecordMinLen
	switch {
	case len(val) >= offsetRecordMinLenV1 && val[0] == offsetRecordVersionV1:
		minLen = offsetRecordMinLenV1
		e.logOffset = -1
	case len(val) >= offsetRecordMinLen && val[0] == offsetRecordVersion:
		e.logOffset = int64(binary.BigEndian.Uint64(val[21:]))
	default:
		return "", 0, e, corrupt("bad value header")
	}
	e.offset = int64(binary.BigEndian.Uint64(val[1:]))
	e.leaderEpoch = int32(binary.BigEndian.Uint32(val[9:]))
	e.commitTime = time.UnixMilli(int64(binary.BigEndian.Uint64(val[13:])))
	n := int32(binary.BigEndian.Uint32(val[minLen-4:]))
	rest := val[minLen:]
	switch {
	case n == -1:
	case n < 0 || int(n) != len(rest):
		return "", 0, e, corrupt("bad metadata length")
	default:
		md := string(rest)
		e.metadata = &md
	}
	return topic, partition, e, nil
}

// load restores groups and offsets. A group with members comes back Stable
// in its stored generation; one without, Empty. Groups that only have
// offsets (simple consumers) come back Empty without a protocol type.
func (c *Coordinator) load() error {
	if !c.db.created() {
		return nil // nothing stored yet
	}
	if c.cfg.Log != nil {
		return nil // each partition's groups are loaded with it
	}
	return c.loadLocked(nil)
}

// loadLocked restores the groups for which keep is true (all if nil).
//
// Lock should be held (or the coordinator not yet shared).
func (c *Coordinator) loadLocked(keep func(id string) bool) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		gb, err := tx.CreateBucketIfNotExists(bucketGroups)
		if err != nil {
			return err
		}
		ob, err := tx.CreateBucketIfNotExists(bucketOffsets)
		if err != nil {
			return err
		}
		err = gb.ForEach(func(k, v []byte) error {
			var rec groupRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return &CorruptError{Bucket: "groups", Key: k, Reason: err.Error()}
			}
			if keep != nil && !keep(string(k)) {
				return nil
			}
			if rec.Version != groupRecordVersion {
				return &CorruptError{Bucket: "groups", Key: k, Reason: fmt.Sprintf("unknown version %d", rec.Version)}
			}
			c.groups[string(k)] = restoreGroup(string(k), rec)
			return nil
		})
		if err != nil {
			return err
		}
		if err := c.loadPendingTx(tx, keep); err != nil {
			return err
		}
		err = ob.ForEach(func(k, v []byte) error {
			if v != nil {
				return &CorruptError{Bucket: "offsets", Key: k, Reason: "not a bucket"}
			}
			id := string(k)
			if keep != nil && !keep(id) {
				return nil
			}
			g := c.groups[id]
			if g == nil {
				g = newGroup(id, c.cfg.Now())
			}
			err := ob.Bucket(k).ForEach(func(k, v []byte) error {
				topic, p, e, err := decodeOffset(k, v)
				if err != nil {
					return err
				}
				if g.offsets[topic] == nil {
					g.offsets[topic] = make(map[int32]offsetEntry)
				}
				g.offsets[topic][p] = e
				return nil
			})
			if err != nil {
				return err
			}
			if len(g.offsets) > 0 {
				c.groups[id] = g
			}
			return nil
		})
		if err != nil {
			return err
		}
		return c.restoreModernLocked(tx, keep)
	})
}

func restoreGroup(id string, rec groupRecord) *group {
	g := newGroup(id, time.UnixMilli(rec.StateTimeMs))
	g.protocolType = rec.ProtocolType
	g.generation = rec.Generation
	for _, mr := range rec.Members {
		m := &member{
			id:               mr.ID,
			instanceID:       mr.InstanceID,
			clientID:         mr.ClientID,
			clientHost:       mr.ClientHost,
			sessionTimeout:   time.Duration(mr.SessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(mr.RebalanceTimeoutMs) * time.Millisecond,
			protocolType:     rec.ProtocolType,
			assignment:       mr.Assignment,
		}
		for _, p := range mr.Protocols {
			m.protocols = append(m.protocols, protocol{p.Name, p.Metadata})
		}
		g.add(m)
	}
	g.leader = rec.Leader
	if _, ok := g.members[g.leader]; !ok && len(g.order) > 0 {
		g.leader = g.order[0]
	}
	if len(g.members) > 0 {
		g.protocol = rec.Protocol
		g.state = stateStable
		g.prevState = stateStable
	}
	g.computeSubscribed()
	return g
}
