package coordinator

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// On-disk format of TxnConfig.Dir/txns.db (bbolt; every transition is one
// transaction, fsynced when it commits, before the request is answered):
//
//	bucket "txns": transactional id → JSON txnRecord (format version "v": 1),
//	               the id's state as of its last transition. An expired id is
//	               deleted. PrepareEpochFence and Dead are never stored.
//
// A record in PrepareCommit or PrepareAbort means the outcome was decided
// but its markers may not all be in the logs: OpenTxn writes them again and
// completes the transaction.
var bucketTxns = []byte("txns")

const (
	txnDBFileName    = "txns.db"
	txnRecordVersion = 1
)

type txnRecord struct {
	Version        int                `json:"v"`
	ProducerID     int64              `json:"producer_id"`
	PrevProducerID int64              `json:"prev_producer_id"`
	NextProducerID int64              `json:"next_producer_id"`
	Epoch          int16              `json:"epoch"`
	LastEpoch      int16              `json:"last_epoch"`
	Bumped         bool               `json:"bumped,omitempty"`
	TimeoutMs      int64              `json:"timeout_ms"`
	State          string             `json:"state"`
	Partitions     map[string][]int32 `json:"partitions,omitempty"`
	Groups         []string           `json:"groups,omitempty"`
	StartMs        int64              `json:"start_ms"` // -1: no transaction started
	UpdateMs       int64              `json:"update_ms"`
	// LogOffset is the offset of the __transaction_state record this
	// state came from, when Logged (txnlog.go).
	LogOffset int64 `json:"log_offset,omitempty"`
	Logged    bool  `json:"logged,omitempty"`
}

// encodeTxn encodes m; logOffset is its __transaction_state record's
// offset, or -1.
func encodeTxn(m txnMeta, logOffset int64) ([]byte, error) {
	return json.Marshal(txnRecord{
		LogOffset:      max(logOffset, 0),
		Logged:         logOffset >= 0,
		Version:        txnRecordVersion,
		ProducerID:     m.producerID,
		PrevProducerID: m.prevProducerID,
		NextProducerID: m.nextProducerID,
		Epoch:          m.epoch,
		LastEpoch:      m.lastEpoch,
		Bumped:         m.bumped,
		TimeoutMs:      m.timeout.Milliseconds(),
		State:          m.state.String(),
		Partitions:     m.partitionsByTopic(),
		Groups:         m.sortedGroups(),
		StartMs:        m.startMillis(),
		UpdateMs:       m.updated.UnixMilli(),
	})
}

func decodeTxn(key, val []byte) (txnMeta, error) {
	corrupt := func(reason string) error { return &CorruptError{Bucket: "txns", Key: key, Reason: reason} }
	var rec txnRecord
	if err := json.Unmarshal(val, &rec); err != nil {
		return txnMeta{}, corrupt(err.Error())
	}
	if rec.Version != txnRecordVersion {
		return txnMeta{}, corrupt(fmt.Sprintf("unknown version %d", rec.Version))
	}
	st, ok := parseTxnState(rec.State)
	if !ok || st == txnDead || st == txnPrepareEpochFence {
		return txnMeta{}, corrupt(fmt.Sprintf("bad state %q", rec.State))
	}
	m := txnMeta{
		producerID:     rec.ProducerID,
		prevProducerID: rec.PrevProducerID,
		nextProducerID: rec.NextProducerID,
		epoch:          rec.Epoch,
		lastEpoch:      rec.LastEpoch,
		bumped:         rec.Bumped,
		timeout:        time.Duration(rec.TimeoutMs) * time.Millisecond,
		state:          st,
		partitions:     make(map[topicPartition]struct{}),
		groups:         make(map[string]struct{}),
		updated:        time.UnixMilli(rec.UpdateMs),
	}
	if rec.StartMs >= 0 {
		m.start = time.UnixMilli(rec.StartMs)
	}
	for t, ps := range rec.Partitions {
		for _, p := range ps {
			m.partitions[topicPartition{t, p}] = struct{}{}
		}
	}
	for _, g := range rec.Groups {
		m.groups[g] = struct{}{}
	}
	return m, nil
}

// putTxn persists one transactional id's state; logOffset is the offset
// of its record in partition p of __transaction_state (then the partition's
// checkpoint advances too, unless another append to p is awaited: its
// record may lie below logNext and must be replayed after a crash), or -1
// without a log.
func (c *TxnCoordinator) putTxn(p int32, id string, m txnMeta, logOffset int64) error {
	val, err := encodeTxn(m, logOffset)
	if err != nil {
		return err
	}
	return c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTxns)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(id), val); err != nil {
			return err
		}
		if logOffset >= 0 {
			return c.checkpointLocked(tx, p)
		}
		return nil
	})
}

// deleteTxns removes expired transactional ids in one transaction; with a
// log, their tombstones were appended up to the partitions' logNext.
func (c *TxnCoordinator) deleteTxns(ids []string) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		if c.cfg.Log != nil {
			for _, id := range ids {
				if err := c.checkpointLocked(tx, c.partitionOf(id)); err != nil {
					return err
				}
			}
		}
		b := tx.Bucket(bucketTxns)
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// loadTxns reads the stored transactional ids keep accepts (nil: all),
// sorted by id.
func (c *TxnCoordinator) loadTxns(keep func(id string) bool) ([]string, map[string]txnMeta, error) {
	out := make(map[string]txnMeta)
	var ids []string
	if !c.db.created() {
		return nil, out, nil // nothing stored yet
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTxns)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			if keep != nil && !keep(string(k)) {
				return nil
			}
			m, err := decodeTxn(k, v)
			if err != nil {
				return err
			}
			out[string(k)] = m
			ids = append(ids, string(k))
			return nil
		})
	})
	slices.Sort(ids)
	return ids, out, err
}
