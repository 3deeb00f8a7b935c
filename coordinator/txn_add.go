package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn handles an AddPartitionsToTxn request: the v0-3 form
// for one transaction (from producers) and the v4-5 batched form (from
// partition leaders, each transaction possibly VerifyOnly).
//
// Adding moves the transaction to Ongoing (starting it, and its timeout,
// if it was Empty, CompleteCommit or CompleteAbort), persisted. If any
// partition of a transaction is unknown, nothing of it is added: those
// partitions answer UNKNOWN_TOPIC_OR_PARTITION and the others
// OPERATION_NOT_ATTEMPTED (KafkaApis.handleAddPartitionsToTxnRequest).
// Otherwise every partition answers the transaction's result: an unknown
// transactional id or another producer id INVALID_PRODUCER_ID_MAPPING,
// another epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2),
// PrepareCommit or PrepareAbort CONCURRENT_TRANSACTIONS, an empty
// transactional id INVALID_REQUEST.
//
// VerifyOnly adds nothing: partitions in the Ongoing transaction answer
// success, others TRANSACTION_ABORTABLE (Kafka's
// handleVerifyPartitionsInTransaction).
func (c *TxnCoordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	r := kmsg.NewPtrAddPartitionsToTxnResponse()
	if req.Version < 4 {
		topics := make([]addTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, addTopic{t.Topic, t.Partitions})
		}
		codes := c.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, topics, false, req.Version)
		for i, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for j, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	for _, txn := range req.Transactions {
		topics := make([]addTopic, 0, len(txn.Topics))
		for _, t := range txn.Topics {
			topics = append(topics, addTopic{t.Topic, t.Partitions})
		}
		codes := c.addPartitions(txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch, topics, txn.VerifyOnly, req.Version)
		rtxn := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtxn.TransactionalID = txn.TransactionalID
		for i, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.topic
			for j, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtxn.Topics = append(rtxn.Topics, rt)
		}
		r.Transactions = append(r.Transactions, rtxn)
	}
	return r
}

// addPartitions adds (or verifies) one transaction's partitions and returns
// an error code per partition, parallel to topics.
func (c *TxnCoordinator) addPartitions(id string, pid int64, epoch int16, topics []addTopic, verifyOnly bool, version int16) [][]int16 {
	codes := make([][]int16, len(topics))
	setAll := func(code int16) [][]int16 {
		for i, t := range topics {
			codes[i] = make([]int16, len(t.partitions))
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	var partitionSet []topicPartition
	unknown := false
	for i, t := range topics {
		codes[i] = make([]int16, len(t.partitions))
		for j, p := range t.partitions {
			if !c.partitionExists(t.topic, p) {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				unknown = true
				continue
			}
			partitionSet = append(partitionSet, topicPartition{t.topic, p})
		}
	}
	if unknown {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = kerr.OperationNotAttempted.Code
				}
			}
		}
		return codes
	}
	if id == "" {
		return setAll(kerr.InvalidRequest.Code)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return setAll(kerr.CoordinatorNotAvailable.Code)
	}
	e := c.txns[id]
	if verifyOnly {
		if err := c.checkProducerLocked(e, pid, epoch); err != nil {
			return setAll(err.Code)
		}
		if e.ending() || e.meta.state.preparing() {
			return setAll(kerr.ConcurrentTransactions.Code)
		}
		k := 0
		for i, t := range topics {
			for j := range t.partitions {
				if _, ok := e.meta.partitions[partitionSet[k]]; !ok || e.meta.state != txnOngoing {
					codes[i][j] = kerr.TransactionAbortable.Code
				}
				k++
			}
		}
		return codes
	}
	err := c.addLocked(e, pid, epoch, partitionSet, nil)
	return setAll(errCode(fencedFor(err, version, 2)))
}

// partitionExists reports whether TopicPartitions knows the partition.
func (c *TxnCoordinator) partitionExists(topic string, partition int32) bool {
	if c.cfg.TopicPartitions == nil {
		return partition >= 0
	}
	n, ok := c.cfg.TopicPartitions(topic)
	return ok && partition >= 0 && partition < n
}

// checkProducerLocked is the identity check every transactional request
// starts with: the transactional id must be known and hold pid
// (INVALID_PRODUCER_ID_MAPPING) at epoch (PRODUCER_FENCED).
//
// Lock should be held.
func (c *TxnCoordinator) checkProducerLocked(e *txnEntry, pid int64, epoch int16) *kerr.Error {
	if e == nil || e.meta.producerID != pid {
		return kerr.InvalidProducerIDMapping
	}
	if e.meta.epoch != epoch {
		return kerr.ProducerFenced
	}
	return nil
}

// addLocked adds partitions and groups to e's transaction, starting one if
// there is none (Kafka's handleAddPartitionsToTransaction): the state
// becomes Ongoing, persisted. Nothing is written if all are already in an
// Ongoing transaction.
//
// Lock should be held.
func (c *TxnCoordinator) addLocked(e *txnEntry, pid int64, epoch int16, partitionSet []topicPartition, groups []string) *kerr.Error {
	if err := c.checkProducerLocked(e, pid, epoch); err != nil {
		return err
	}
	m := e.meta
	if e.writing || e.pending || m.state.preparing() {
		return kerr.ConcurrentTransactions
	}
	if m.state == txnOngoing {
		missing := false
		for _, tp := range partitionSet {
			if _, ok := m.partitions[tp]; !ok {
				missing = true
			}
		}
		for _, g := range groups {
			if _, ok := m.groups[g]; !ok {
				missing = true
			}
		}
		if !missing {
			return nil
		}
	}
	now := c.cfg.Now()
	next := m.clone()
	if m.state != txnOngoing {
		next.state = txnOngoing
		next.start = now
	}
	next.updated = now
	for _, tp := range partitionSet {
		next.partitions[tp] = struct{}{}
	}
	for _, g := range groups {
		next.groups[g] = struct{}{}
	}
	return c.transitionLocked(e, next)
}

// AddOffsetsToTxn handles an AddOffsetsToTxn request: the group joins the
// transaction (Kafka adds the group's __consumer_offsets partition), so
// that TxnOffsetCommit may store offsets for it and EndTxn commits or drops
// them. Errors are AddPartitionsToTxn's.
func (c *TxnCoordinator) AddOffsetsToTxn(req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	r := kmsg.NewPtrAddOffsetsToTxnResponse()
	if req.TransactionalID == "" {
		r.ErrorCode = kerr.InvalidRequest.Code
		return r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return r
	}
	err := c.addLocked(c.txns[req.TransactionalID], req.ProducerID, req.ProducerEpoch, nil, []string{req.Group})
	r.ErrorCode = errCode(fencedFor(err, req.Version, 2))
	return r
}

// TxnOffsetCommit handles a TxnOffsetCommit request. Unknown partitions
// answer UNKNOWN_TOPIC_OR_PARTITION and an empty group id INVALID_GROUP_ID.
// The transaction is then verified as a partition leader verifies a
// transactional write (KIP-890 part 1): an unknown transactional id or
// another producer id answers INVALID_PRODUCER_ID_MAPPING, another epoch
// INVALID_PRODUCER_EPOCH (Kafka's AddPartitionsToTxnManager turns
// PRODUCER_FENCED into it), a transaction being ended
// CONCURRENT_TRANSACTIONS, and a group not added by AddOffsetsToTxn
// INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v4). From v5 the group is
// added instead, starting a transaction if needed. Then the group checks
// the member and generation (see Coordinator.txnOffsetCommit) and stores
// the offsets as pending until EndTxn.
func (c *TxnCoordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	r, pending := txnOffsetCommitAnswer(req, c.partitionExists)
	setAll := func(err *kerr.Error) *kmsg.TxnOffsetCommitResponse {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if rp := &r.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode = err.Code
				}
			}
		}
		return r
	}
	if pending == 0 {
		return r
	}
	if req.Group == "" {
		return setAll(kerr.InvalidGroupID)
	}
	if req.TransactionalID == "" {
		return setAll(kerr.InvalidRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.cfg.Groups == nil {
		return setAll(kerr.CoordinatorNotAvailable)
	}
	e := c.txns[req.TransactionalID]
	if err := c.checkProducerLocked(e, req.ProducerID, req.ProducerEpoch); err != nil {
		if err == kerr.ProducerFenced {
			err = kerr.InvalidProducerEpoch
		}
		return setAll(err)
	}
	if e.ending() || e.meta.state.preparing() {
		return setAll(kerr.ConcurrentTransactions)
	}
	_, added := e.meta.groups[req.Group]
	switch {
	case added && e.meta.state == txnOngoing:
	case req.Version >= 5:
		if err := c.addLocked(e, req.ProducerID, req.ProducerEpoch, nil, []string{req.Group}); err != nil {
			return setAll(err)
		}
	case req.Version >= 4:
		return setAll(kerr.TransactionAbortable)
	default:
		return setAll(kerr.InvalidTxnState)
	}
	// The lock is held while the group stores the offsets, so the
	// transaction cannot end between the check and the store (lock
	// order: TxnCoordinator, then Coordinator). With a log the group's
	// records replicate without the lock, e marked pending in its state
	// meanwhile (requests for the id answer CONCURRENT_TRANSACTIONS, and
	// it is not timed out), so the transaction cannot end before they
	// are committed and pending in the group.
	finish := c.cfg.Groups.txnOffsetCommit(req, r)
	if finish == nil {
		return r
	}
	e.pending, e.pendingState = true, e.meta.state
	c.mu.Unlock()
	finish()
	c.mu.Lock()
	e.pending = false
	return r
}

// CheckProduce verifies a transactional produce for the broker's Produce
// path (KIP-890 part 1 verification, or part 2's implicit add). It returns
// 0 if partition is in producerID's Ongoing transaction at epoch. With
// implicitAdd (Produce v12+, transaction version 2) a missing partition is
// added, starting a transaction if there is none. Otherwise, as Kafka's
// partition leader answers after asking the coordinator: an unknown
// producer id INVALID_PRODUCER_ID_MAPPING; another epoch
// INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager maps the coordinator's
// PRODUCER_FENCED to it: "Producers expect to handle INVALID_PRODUCER_EPOCH
// in this scenario"); a transaction being ended CONCURRENT_TRANSACTIONS; a
// partition not in the transaction INVALID_TXN_STATE, which the broker must
// answer as TRANSACTION_ABORTABLE to Produce v11+ (see ProduceTxnError).
func (c *TxnCoordinator) CheckProduce(producerID int64, epoch int16, topic string, partition int32, implicitAdd bool) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable.Code
	}
	e := c.txns[c.byPID[producerID]]
	if e == nil {
		return kerr.InvalidProducerIDMapping.Code
	}
	m := e.meta
	if producerID == m.nextProducerID {
		// The producer id a rotating EndTxn handed out, before its
		// markers are written.
		return kerr.ConcurrentTransactions.Code
	}
	if epoch != m.epoch {
		return kerr.InvalidProducerEpoch.Code
	}
	if e.ending() || m.state.preparing() {
		return kerr.ConcurrentTransactions.Code
	}
	tp := topicPartition{topic, partition}
	if _, ok := m.partitions[tp]; ok && m.state == txnOngoing {
		return 0
	}
	if !implicitAdd {
		return kerr.InvalidTxnState.Code
	}
	err := c.addLocked(e, producerID, epoch, []topicPartition{tp}, nil)
	if err == kerr.ProducerFenced {
		err = kerr.InvalidProducerEpoch
	}
	return errCode(err)
}

// ProduceTxnError converts a transactional produce's verification result
// (CheckProduce's, or the remote coordinator's AddPartitionsToTxn answer)
// into the error and message a Produce request of the given version gets,
// as Kafka 4.4's ReplicaManager (handleProduceAppend) answers them:
//   - INVALID_TXN_STATE: "Partition was not added to the transaction";
//     TRANSACTION_ABORTABLE for Produce v11 and later, where older clients
//     get INVALID_TXN_STATE (genericError handling for apiVersion > 10,
//     KIP-890);
//   - NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR (the coordinator could
//     not answer): NOT_ENOUGH_REPLICAS, which every producer retries,
//     "Unable to verify the partition has been added to the transaction.
//     Underlying error: " and the error's name;
//   - CONCURRENT_TRANSACTIONS: the same for Produce before v12 (no epoch
//     bump, transaction version 1); kept for v12, which retries it;
//   - anything else: the error with its description.
//
// 0 stays 0 with no message.
func ProduceTxnError(code int16, produceVersion int16) (int16, string) {
	switch code {
	case 0:
		return 0, ""
	case kerr.InvalidTxnState.Code:
		if produceVersion >= 11 {
			code = kerr.TransactionAbortable.Code
		}
		return code, "Partition was not added to the transaction"
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code, "Unable to verify the partition has been added to the transaction. Underlying error: " + kerr.ErrorForCode(code).(*kerr.Error).Message
	case kerr.ConcurrentTransactions.Code:
		if produceVersion < 12 {
			return kerr.NotEnoughReplicas.Code, "Unable to verify the partition has been added to the transaction. Underlying error: " + kerr.ConcurrentTransactions.Message
		}
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return code, e.Description
	}
	return code, ""
}

// addTopic is one topic's partitions of an AddPartitionsToTxn transaction.
type addTopic struct {
	topic      string
	partitions []int32
}

// txnOffsetCommitAnswer is the answer to a TxnOffsetCommit with one entry
// per requested partition, UNKNOWN_TOPIC_OR_PARTITION where exists says
// there is no such partition, and how many partitions remain to store.
func txnOffsetCommitAnswer(req *kmsg.TxnOffsetCommitRequest, exists func(topic string, partition int32) bool) (*kmsg.TxnOffsetCommitResponse, int) {
	r := kmsg.NewPtrTxnOffsetCommitResponse()
	pending := 0
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if !exists(t.Topic, p.Partition) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				pending++
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r, pending
}
