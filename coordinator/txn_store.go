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
	TimeoutMs      int64              `json:"timeout_ms"`
	State          string             `json:"state"`
	Partitions     map[string][]int32 `json:"partitions,omitempty"`
	Groups         []string           `json:"groups,omitempty"`
	StartMs        int64              `json:"start_ms"` // -1: no transaction started
	UpdateMs       int64              `json:"update_ms"`
}

func encodeTxn(m txnMeta) ([]byte, error) {
	return json.Marshal(txnRecord{
		Version:        txnRecordVersion,
		ProducerID:     m.producerID,
		PrevProducerID: m.prevProducerID,
		NextProducerID: m.nextProducerID,
		Epoch:          m.epoch,
		LastEpoch:      m.lastEpoch,
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

// putTxn persists one transactional id's state.
func (c *TxnCoordinator) putTxn(id string, m txnMeta) error {
	val, err := encodeTxn(m)
	if err != nil {
		return err
	}
	return c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTxns)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), val)
	})
}

// deleteTxns removes expired transactional ids in one transaction.
func (c *TxnCoordinator) deleteTxns(ids []string) error {
	return c.db.Update(func(tx *bolt.Tx) error {
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

// loadTxns reads every stored transactional id, sorted by id.
func (c *TxnCoordinator) loadTxns() ([]string, map[string]txnMeta, error) {
	out := make(map[string]txnMeta)
	var ids []string
	err := c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTxns)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
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
