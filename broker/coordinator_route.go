package broker

// Which broker coordinates groups and transactional ids. A group is
// coordinated by the leader of its partition of __consumer_offsets, on a
// single node too (offsets_topic.go); elsewhere its requests answer
// NOT_COORDINATOR, and COORDINATOR_LOAD_IN_PROGRESS while the partition
// loads. A transactional id likewise by the leader of its partition of
// __transaction_state (txn_topic.go). A transaction's offsets are
// kept pending by the group's coordinator and completed there by a
// WriteTxnMarkers for the group's __consumer_offsets partition.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// notCoordinator answers a coordinated request that reached a broker that
// is not the coordinator with NOT_COORDINATOR (COORDINATOR_NOT_AVAILABLE
// when there is none), and returns nil for every other request.
func (b *Broker) notCoordinator(h handler, msg kmsg.Request) kmsg.Response {
	if !h.coordinated {
		return nil
	}
	if groups, ok := requestGroups(msg); ok {
		for _, g := range groups {
			if code := b.groupCoordinatorCode(g); code != 0 {
				return errorResponse(msg, code, b.topicNameByID)
			}
		}
		return nil
	}
	if ids, ok := requestTxnIDs(msg); ok {
		for _, id := range ids {
			if code := b.txnCoordinatorCode(id); code != 0 {
				return errorResponse(msg, code, b.topicNameByID)
			}
		}
	}
	return nil
}

// checkTxnProduce checks that a transactional batch belongs to its
// producer's ongoing transaction (adding the partition to it with Produce
// v12, KIP-890 part 2), asking the transaction coordinator: in-process when
// it is this broker, else with an inter-broker AddPartitionsToTxn (VerifyOnly
// for the older Produce versions), as Kafka's partition leaders do.
func (b *Broker) checkTxnProduce(txnID string, producerID int64, epoch int16, p *partition, implicitAdd bool) int16 {
	if b.cl == nil || b.txns.TxnError(txnID) == 0 {
		return b.txns.CheckProduce(producerID, epoch, p.topic.name, p.index, implicitAdd)
	}
	c, code := b.txnCoordinator(txnID)
	if code != 0 {
		return kerr.NotEnoughReplicas.Code // retriable: the producer tries again
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = txnID, producerID, epoch, !implicitAdd
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = p.topic.name, []int32{p.index}
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	kresp, err := b.peerRequest(ctx, c.id, req)
	if err != nil {
		b.log.Warn("verifying a transactional produce with the coordinator", "coordinator", c.id, "err", err)
		return kerr.NotEnoughReplicas.Code // retriable: the producer tries again
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, rp := range t.Partitions {
				if rp.ErrorCode != 0 {
					if rp.ErrorCode == kerr.ProducerFenced.Code {
						return kerr.InvalidProducerEpoch.Code
					}
					return rp.ErrorCode
				}
			}
		}
	}
	return 0
}
