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
	if req, ok := msg.(*kmsg.OffsetFetchRequest); ok {
		return b.offsetFetchNotCoordinator(req)
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
// for the older Produce versions), as Kafka's partition leaders do. It
// returns the coordinator's error, or NOT_COORDINATOR and the like when no
// coordinator is known and NETWORK_EXCEPTION when it did not answer; the
// caller converts them with coordinator.ProduceTxnError.
//
// An implicit add answered CONCURRENT_TRANSACTIONS (the producer's previous
// transaction still ending, or another partition's add being logged) is
// retried here every add.partitions.to.txn.retry.backoff.ms for up to
// add.partitions.to.txn.retry.backoff.max.ms, as Kafka's partition leaders
// do (KAFKA-18654): a client retries only after its own backoff (franz-go:
// seconds), which made transactions over several leaders crawl.
func (b *Broker) checkTxnProduce(txnID string, producerID int64, epoch int16, p *partition, implicitAdd bool) int16 {
	code := b.checkTxnProduceOnce(txnID, producerID, epoch, p, implicitAdd)
	if code != kerr.ConcurrentTransactions.Code || !implicitAdd {
		return code
	}
	backoff := time.Duration(b.cfg.int64Prop("add.partitions.to.txn.retry.backoff.ms")) * time.Millisecond
	deadline := time.Now().Add(time.Duration(b.cfg.int64Prop("add.partitions.to.txn.retry.backoff.max.ms")) * time.Millisecond)
	for code == kerr.ConcurrentTransactions.Code && time.Now().Add(backoff).Before(deadline) {
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-b.ctx.Done():
			t.Stop()
			return code
		}
		code = b.checkTxnProduceOnce(txnID, producerID, epoch, p, implicitAdd)
	}
	return code
}

// checkTxnProduceOnce is one check of checkTxnProduce.
func (b *Broker) checkTxnProduceOnce(txnID string, producerID int64, epoch int16, p *partition, implicitAdd bool) int16 {
	if b.cluster == nil || b.txns.TxnError(txnID) == 0 {
		return b.txns.CheckProduce(producerID, epoch, p.topic.name, p.index, implicitAdd)
	}
	c, code := b.txnCoordinator(txnID)
	if code != 0 {
		return code // NOT_COORDINATOR or the like: ProduceTxnError makes it retriable
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
		return kerr.NetworkException.Code // ProduceTxnError makes it NOT_ENOUGH_REPLICAS
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

// offsetFetchNotCoordinator answers an OffsetFetch for groups this broker
// does not serve (yet) as Kafka 4.4's GroupCoordinatorService does
// (OffsetFetchResponse.groupError): v8+ gives each such group its error
// (COORDINATOR_LOAD_IN_PROGRESS while its partition loads, NOT_COORDINATOR)
// with no topics, and answers the other groups of the request as usual;
// v2-7 carry the error in the top-level ErrorCode alone; only v1, which has
// no top-level error, repeats it on every partition asked for. The Java
// consumer retries those errors at the group and top level but treats them
// as fatal on a partition, so a consumer started with the cluster must not
// see them per partition. nil when every group is served here.
func (b *Broker) offsetFetchNotCoordinator(req *kmsg.OffsetFetchRequest) kmsg.Response {
	if req.Version < 8 {
		code := b.groupCoordinatorCode(req.Group)
		if code == 0 {
			return nil
		}
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.SetVersion(req.Version)
		if req.Version >= 2 {
			resp.ErrorCode = code
			return resp
		}
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, kmsg.StringPtr(""), code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	codes := make([]int16, len(req.Groups))
	var served []kmsg.OffsetFetchRequestGroup
	failed := false
	for i, g := range req.Groups {
		if codes[i] = b.groupCoordinatorCode(g.Group); codes[i] != 0 {
			failed = true
		} else {
			served = append(served, g)
		}
	}
	if !failed {
		return nil
	}
	var answered []kmsg.OffsetFetchResponseGroup
	if len(served) > 0 {
		sub := *req
		sub.Groups = served
		answered = b.groups.OffsetFetch(&sub).Groups
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(req.Version)
	for i, g := range req.Groups {
		if codes[i] == 0 && len(answered) > 0 {
			resp.Groups = append(resp.Groups, answered[0])
			answered = answered[1:]
			continue
		}
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, codes[i]
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
