package coordinator

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID handles an InitProducerId request, as Kafka's
// TransactionCoordinator.handleInitProducerId:
//
//   - a null transactional id gets a fresh producer id at epoch 0 (the
//     broker may handle idempotent producers itself instead); an empty one
//     answers INVALID_REQUEST;
//   - a timeout outside (0, MaxTimeout] answers INVALID_TRANSACTION_TIMEOUT;
//   - a new transactional id gets a new producer id at epoch 0; a known one
//     is bumped to the next epoch, which fences producers holding older
//     epochs; an exhausted epoch (32766) rotates to a new producer id;
//   - an Ongoing transaction is aborted first, at a bumped epoch (Ongoing →
//     PrepareEpochFence → PrepareAbort → CompleteAbort), and the request
//     answers CONCURRENT_TRANSACTIONS so the client retries and gets the
//     epoch after that; PrepareCommit/PrepareAbort answer
//     CONCURRENT_TRANSACTIONS too;
//   - from v3 a producer id and epoch (KIP-360) keep the producer: they must
//     name the current producer id (or the previous one with an exhausted
//     epoch) and the current epoch, or the last epoch for a retry of a bump
//     whose answer was lost; otherwise PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
//     before v4). Only one of the two set answers INVALID_REQUEST.
//
// Errors answer producer id -1 and epoch -1.
func (c *TxnCoordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	r := kmsg.NewPtrInitProducerIDResponse()
	r.ProducerID, r.ProducerEpoch = noProducerID, noProducerEpoch
	fail := func(err *kerr.Error) *kmsg.InitProducerIDResponse {
		r.ErrorCode = fencedFor(err, req.Version, 4).Code
		return r
	}
	if req.TransactionalID == nil {
		pid, err := c.cfg.AllocateProducerID()
		if err != nil {
			c.log.Warn("allocating producer id failed", "err", err)
			return fail(kerr.CoordinatorNotAvailable)
		}
		r.ProducerID, r.ProducerEpoch = pid, 0
		return r
	}
	id := *req.TransactionalID
	if id == "" {
		return fail(kerr.InvalidRequest)
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	if req.TransactionTimeoutMillis <= 0 || timeout > c.cfg.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout)
	}
	expPID, expEpoch := noProducerID, noProducerEpoch
	if req.Version >= 3 {
		expPID, expEpoch = req.ProducerID, req.ProducerEpoch
	}
	expected := expPID != noProducerID || expEpoch != noProducerEpoch
	if expected && (expPID == noProducerID || expEpoch == noProducerEpoch) {
		return fail(kerr.InvalidRequest)
	}

	next, abort, errCode := c.initTransactionalID(id, timeout, expected, expPID, expEpoch)
	if abort {
		// Abort right away; the client retries after the abort is done.
		c.finish(ctx, id)
	}
	if errCode != nil {
		return fail(errCode)
	}
	c.log.Info("initialized transactional id", "transactional_id", id, "producer_id", next.producerID, "epoch", next.epoch)
	r.ProducerID, r.ProducerEpoch = next.producerID, next.epoch
	return r
}

// initTransactionalID is the part of InitProducerID done under the lock: it
// bumps (or creates) id's producer id and epoch and persists the new state,
// which it returns. An Ongoing transaction is fenced instead: abort reports
// that its abort must now be driven (by finish, outside the lock) and the
// request answers CONCURRENT_TRANSACTIONS. A non-nil error is the request's
// answer.
func (c *TxnCoordinator) initTransactionalID(id string, timeout time.Duration, expected bool, expPID int64, expEpoch int16) (next txnMeta, abort bool, _ *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return next, false, kerr.CoordinatorNotAvailable
	}
	now := c.cfg.Now()
	e := c.txns[id]
	if e == nil {
		pid, err := c.cfg.AllocateProducerID()
		if err != nil {
			c.log.Warn("allocating producer id failed", "err", err)
			return next, false, kerr.CoordinatorNotAvailable
		}
		// Not in c.txns until its first transition is persisted.
		e = &txnEntry{id: id, meta: txnMeta{
			producerID: pid, prevProducerID: noProducerID, nextProducerID: noProducerID,
			epoch: noProducerEpoch, lastEpoch: noProducerEpoch,
			timeout: timeout, state: txnEmpty, updated: now,
		}}
	}
	m := e.meta
	validPID := m.epoch == noProducerEpoch || expPID == m.producerID ||
		(expPID == m.prevProducerID && epochExhausted(expEpoch))
	switch {
	case e.pending:
		// Kafka checks a pending transition first
		// (prepareInitProducerIdTransit).
		return next, false, kerr.ConcurrentTransactions
	case expected && !validPID:
		return next, false, kerr.ProducerFenced
	case e.writing || m.state.preparing():
		return next, false, kerr.ConcurrentTransactions
	case m.state == txnOngoing:
		if err := c.fenceLocked(e); err != nil {
			return next, false, err
		}
		return next, true, kerr.ConcurrentTransactions
	}

	next = m.clone()
	next.state = txnEmpty
	next.timeout = timeout
	next.partitions = make(map[topicPartition]struct{})
	next.groups = make(map[string]struct{})
	next.start = time.Time{}
	next.updated = now
	next.nextProducerID = noProducerID
	if epochExhausted(m.epoch) && (!expected || expEpoch == m.epoch) {
		pid, err := c.cfg.AllocateProducerID()
		if err != nil {
			c.log.Warn("allocating producer id failed", "err", err)
			return next, false, kerr.CoordinatorNotAvailable
		}
		next.prevProducerID, next.producerID, next.epoch = m.producerID, pid, 0
		next.lastEpoch = noProducerEpoch
		if expected {
			next.lastEpoch = m.epoch
		}
	} else {
		switch {
		case !expected:
			next.epoch, next.lastEpoch = m.epoch+1, noProducerEpoch
		case m.epoch == noProducerEpoch || expEpoch == m.epoch:
			next.epoch, next.lastEpoch = m.epoch+1, m.epoch
		case expEpoch == m.lastEpoch:
			// A retry of a bump whose answer was lost: same epoch again.
		default:
			return next, false, kerr.ProducerFenced
		}
	}
	if err := c.transitionLocked(e, next); err != nil {
		return next, false, err
	}
	return next, false, nil
}
