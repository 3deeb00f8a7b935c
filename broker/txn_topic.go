package broker

// __transaction_state: the transaction coordinator's replicated log.
//
// Created on first use (a FindCoordinator for a transactional id, an
// InitProducerId, any transactional request), on a single node too, with
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas and
// transaction.state.log.min.isr, both capped at the live brokers; internal
// and compacted, with retention -1 like __consumer_offsets.
//
// Transactional id T is coordinated by the leader of partition
// coordinator.PartitionFor(T, partitions). When this broker becomes leader
// of a partition the transaction coordinator loads it (completing the
// transactions it finds in Prepare*), and unloads it when it stops leading
// (coordinator/txnlog.go). Every transition is appended there and waits
// for the high watermark with min.isr, as an acks=all produce does.

import "github.com/twmb/franz-go/pkg/kmsg"

const txnStateTopicName = "__transaction_state"

// txnInternalTopic describes __transaction_state.
func (b *Broker) txnInternalTopic() *internalTopic {
	return &internalTopic{
		b:              b,
		name:           txnStateTopicName,
		partitionsKey:  "transaction.state.log.num.partitions",
		replicationKey: "transaction.state.log.replication.factor",
		minISRKey:      "transaction.state.log.min.isr",
		coordinator:    "transaction coordinator",
		coord: func() partitionLoader {
			if b.txns == nil {
				return nil
			}
			return b.txns
		},
	}
}

// txnCoordinator returns the broker coordinating transactional id: the
// leader of its partition of __transaction_state.
func (b *Broker) txnCoordinator(id string) (brokerInfo, int16) {
	return b.keyCoordinator(b.txnLog.ensure(), id)
}

// txnCoordinatorCode is what a request for transactional id gets here: 0
// if this broker serves it, else NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE.
func (b *Broker) txnCoordinatorCode(id string) int16 {
	return b.keyCoordinatorCode(b.txnLog.ensure(), id, b.txns.TxnError)
}

// requestTxnIDs returns the transactional ids of a transaction request;
// false for the other requests.
func requestTxnIDs(msg kmsg.Request) ([]string, bool) {
	switch m := msg.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		if m.Version >= 4 {
			ids := make([]string, 0, len(m.Transactions))
			for _, tx := range m.Transactions {
				ids = append(ids, tx.TransactionalID)
			}
			return ids, true
		}
		return []string{m.TransactionalID}, true
	case *kmsg.AddOffsetsToTxnRequest:
		return []string{m.TransactionalID}, true
	case *kmsg.EndTxnRequest:
		return []string{m.TransactionalID}, true
	case *kmsg.DescribeTransactionsRequest:
		return m.TransactionalIDs, true
	}
	return nil, false
}
