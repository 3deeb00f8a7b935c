package coordinator

import (
	"math"
	"slices"
	"time"
)

// txnState is a transactional id's state, with Kafka's names
// (TransactionState); DescribeTransactions and ListTransactions report
// them. The transitions are described in the package documentation
// (doc.go, "Transaction states").
type txnState int8

const (
	txnEmpty txnState = iota
	txnOngoing
	txnPrepareCommit
	txnPrepareAbort
	txnCompleteCommit
	txnCompleteAbort
	txnDead
	txnPrepareEpochFence
)

var txnStateNames = [...]string{
	txnEmpty:             "Empty",
	txnOngoing:           "Ongoing",
	txnPrepareCommit:     "PrepareCommit",
	txnPrepareAbort:      "PrepareAbort",
	txnCompleteCommit:    "CompleteCommit",
	txnCompleteAbort:     "CompleteAbort",
	txnDead:              "Dead",
	txnPrepareEpochFence: "PrepareEpochFence",
}

// String returns Kafka's name of the state.
func (s txnState) String() string {
	if s >= 0 && int(s) < len(txnStateNames) {
		return txnStateNames[s]
	}
	return "Unknown"
}

// parseTxnState is the inverse of String; names are case-sensitive, as
// Kafka's TransactionState.fromName.
func parseTxnState(name string) (txnState, bool) {
	for i, n := range txnStateNames {
		if n == name {
			return txnState(i), true
		}
	}
	return 0, false
}

// preparing reports whether markers are being written: the outcome is
// decided and durable, and every request but retries of the same EndTxn
// answers CONCURRENT_TRANSACTIONS.
func (s txnState) preparing() bool { return s == txnPrepareCommit || s == txnPrepareAbort }

// completed reports whether the last transaction has ended and no new one
// started: the states from which a producer may begin again.
func (s txnState) completed() bool {
	return s == txnEmpty || s == txnCompleteCommit || s == txnCompleteAbort
}

// Producer ids and epochs as Kafka's RecordBatch defines their absence.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted reports whether no more epochs may be handed out for a
// producer id: Kafka keeps math.MaxInt16 for the coordinator so that it can
// always fence (TransactionMetadata.isEpochExhausted).
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

type topicPartition struct {
	topic     string
	partition int32
}

// txnMeta is the durable part of a transactional id: exactly what is written
// to txns.db. It is replaced as a whole, and only after the new value was
// persisted, so memory never runs ahead of the disk.
type txnMeta struct {
	producerID int64
	// prevProducerID is the producer id before the last rotation (epoch
	// exhaustion), so a retry naming it can be recognised; -1 if none.
	prevProducerID int64
	// nextProducerID is the producer id a transaction-version-2 EndTxn
	// that exhausted the epoch hands out once its markers are written; -1
	// if none.
	nextProducerID int64
	epoch          int16
	// lastEpoch is the epoch before the last bump that a client may retry
	// with (KIP-360), or -1 when a new producer fenced the old ones.
	lastEpoch int16
	// bumped says that a Prepare* state's epoch was bumped past that of
	// the transaction's batches (an EndTxn of transaction version 2, or a
	// fenced producer): its markers then carry an epoch the partitions
	// can tell from a late marker of the transaction before.
	bumped     bool
	timeout    time.Duration
	state      txnState
	partitions map[topicPartition]struct{}
	groups     map[string]struct{}
	start      time.Time // first partition or group added; zero if none
	updated    time.Time // last transition; the base of transactional id expiry
}

func (m txnMeta) clone() txnMeta {
	out := m
	out.partitions = make(map[topicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		out.partitions[tp] = struct{}{}
	}
	out.groups = make(map[string]struct{}, len(m.groups))
	for g := range m.groups {
		out.groups[g] = struct{}{}
	}
	return out
}

// partitionsByTopic returns the transaction's partitions, each topic's
// sorted, as WriteMarkers and DescribeTransactions take them.
func (m txnMeta) partitionsByTopic() map[string][]int32 {
	if len(m.partitions) == 0 {
		return nil
	}
	out := make(map[string][]int32)
	for tp := range m.partitions {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

func (m txnMeta) sortedGroups() []string {
	out := make([]string, 0, len(m.groups))
	for g := range m.groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// startMillis is the transaction start as DescribeTransactions reports it:
// -1 when no transaction has started.
func (m txnMeta) startMillis() int64 {
	if m.start.IsZero() {
		return -1
	}
	return m.start.UnixMilli()
}

// clientIdentity is the producer id and epoch the client holds after the
// last transition: once a rotation is pending, the new producer id at
// epoch 0.
func (m txnMeta) clientIdentity() (int64, int16) {
	if m.nextProducerID != noProducerID {
		return m.nextProducerID, 0
	}
	return m.producerID, m.epoch
}
