package coordinator

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn handles an EndTxn request. An Ongoing transaction moves to
// PrepareCommit or PrepareAbort (persisted: from then on the outcome
// survives a crash), then its markers are written through WriteMarkers, the
// pending offsets of its groups are committed or dropped, and it moves to
// CompleteCommit or CompleteAbort (persisted). The response waits for that
// first attempt; if WriteMarkers fails the response is still a success
// (the outcome is decided, as Kafka answers once Prepare* is in its log)
// and the completion is retried every MarkerRetryBackoff.
//
// Before v5 (Kafka's TransactionCoordinator.endTransactionWithTV1): the
// producer id must be the current one (INVALID_PRODUCER_ID_MAPPING) at the
// current epoch (PRODUCER_FENCED); a retry after completion with the same
// result answers success, the other result INVALID_TXN_STATE; a retry
// while the markers are being written answers CONCURRENT_TRANSACTIONS;
// EndTxn without a transaction (Empty) answers INVALID_TXN_STATE.
//
// From v5 (transaction version 2, Kafka's endTransaction table): the epoch
// is bumped by every EndTxn, the response carrying the new producer id and
// epoch (a new producer id at epoch 0 when the epoch is exhausted). A retry
// is recognised by the epoch before the bump: after completion it answers
// success with the current identity for the same result, and
// INVALID_TXN_STATE for the other; while preparing, CONCURRENT_TRANSACTIONS.
// An abort at the current epoch without a transaction (Empty,
// CompleteCommit, CompleteAbort) succeeds and bumps the epoch; a commit
// answers INVALID_TXN_STATE. Other epochs answer PRODUCER_FENCED.
func (c *TxnCoordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	r := kmsg.NewPtrEndTxnResponse()
	r.ProducerID, r.ProducerEpoch = noProducerID, noProducerEpoch
	if req.TransactionalID == "" {
		r.ErrorCode = kerr.InvalidRequest.Code
		return r
	}
	tv2 := req.Version >= 5
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return r
	}
	e := c.txns[req.TransactionalID]
	var err *kerr.Error
	var prepare bool
	if tv2 {
		prepare, err = c.endTxnV2Locked(e, req.ProducerID, req.ProducerEpoch, req.Commit)
	} else {
		prepare, err = c.endTxnV1Locked(e, req.ProducerID, req.ProducerEpoch, req.Commit)
	}
	if err != nil {
		c.mu.Unlock()
		r.ErrorCode = fencedFor(err, req.Version, 2).Code
		return r
	}
	pid, epoch := e.meta.clientIdentity()
	c.mu.Unlock()
	if prepare {
		if err := c.finish(ctx, e.id); err != nil {
			c.log.Warn("completing transaction failed; will retry", "transactional_id", e.id, "err", err)
		}
	}
	if tv2 {
		r.ProducerID, r.ProducerEpoch = pid, epoch
	}
	return r
}

// endTxnV1Locked decides an EndTxn below v5: true if the transaction was
// moved to Prepare*, false with a nil error for an idempotent retry.
//
// Lock should be held.
func (c *TxnCoordinator) endTxnV1Locked(e *txnEntry, pid int64, epoch int16, commit bool) (bool, *kerr.Error) {
	if e == nil || e.meta.producerID != pid {
		return false, kerr.InvalidProducerIDMapping
	}
	m := e.meta
	if epoch != m.epoch {
		return false, kerr.ProducerFenced
	}
	if e.pending {
		return false, kerr.ConcurrentTransactions
	}
	switch m.state {
	case txnOngoing:
		return true, c.prepareEndLocked(e, commit, false, false)
	case txnCompleteCommit, txnCompleteAbort:
		if commit == (m.state == txnCompleteCommit) {
			return false, nil
		}
	case txnPrepareCommit, txnPrepareAbort:
		if commit == (m.state == txnPrepareCommit) {
			return false, kerr.ConcurrentTransactions
		}
	}
	return false, kerr.InvalidTxnState
}

// endTxnV2Locked decides an EndTxn of v5 or later, as endTxnV1Locked.
//
// Lock should be held.
func (c *TxnCoordinator) endTxnV2Locked(e *txnEntry, pid int64, epoch int16, commit bool) (bool, *kerr.Error) {
	if e == nil {
		return false, kerr.InvalidProducerIDMapping
	}
	m := e.meta
	retryOnOverflow := m.prevProducerID == pid && pid != noProducerID && epoch == maxEpochBeforeOverflow && m.epoch == 0
	if m.producerID != pid && !retryOnOverflow {
		return false, kerr.InvalidProducerIDMapping
	}
	retryOnBump := m.producerID == pid && int32(m.epoch) == int32(epoch)+1
	retry := retryOnBump || retryOnOverflow
	current := m.producerID == pid && epoch == m.epoch
	var valid bool
	switch {
	case m.state == txnOngoing || m.state == txnEmpty:
		valid = current
	case m.state.preparing():
		valid = retryOnBump
	default: // CompleteCommit, CompleteAbort
		valid = retry || current
	}
	if !valid {
		return false, kerr.ProducerFenced
	}
	if e.pending {
		return false, kerr.ConcurrentTransactions
	}
	switch m.state {
	case txnOngoing:
		return true, c.prepareEndLocked(e, commit, true, false)
	case txnPrepareCommit, txnPrepareAbort:
		if commit == (m.state == txnPrepareCommit) {
			return false, kerr.ConcurrentTransactions
		}
		return false, kerr.InvalidTxnState
	case txnEmpty:
		if commit {
			return false, kerr.InvalidTxnState
		}
		return true, c.prepareEndLocked(e, false, true, true)
	}
	// CompleteCommit or CompleteAbort.
	sameResult := commit == (m.state == txnCompleteCommit)
	switch {
	case retry && sameResult:
		return false, nil
	case retry || commit:
		return false, kerr.InvalidTxnState
	}
	return true, c.prepareEndLocked(e, false, true, true)
}

// maxEpochBeforeOverflow is the last epoch a client holds before a
// transaction-version-2 EndTxn rotates its producer id.
const maxEpochBeforeOverflow = 32766

// prepareEndLocked moves e to PrepareCommit or PrepareAbort, persisted. With
// bump (transaction version 2) the epoch is bumped, and a new producer id
// is allocated for after the markers if the epoch is exhausted. empty is an
// abort without a transaction: it starts now and has nothing to mark.
//
// Lock should be held.
func (c *TxnCoordinator) prepareEndLocked(e *txnEntry, commit, bump, empty bool) *kerr.Error {
	now := c.cfg.Now()
	next := e.meta.clone()
	next.state = txnPrepareAbort
	if commit {
		next.state = txnPrepareCommit
	}
	next.updated = now
	next.bumped = bump
	if empty {
		next.start = now
		next.partitions = make(map[topicPartition]struct{})
		next.groups = make(map[string]struct{})
	}
	if bump {
		if epochExhausted(next.epoch) {
			pid, err := c.cfg.AllocateProducerID()
			if err != nil {
				c.log.Warn("allocating producer id failed", "err", err)
				return kerr.CoordinatorNotAvailable
			}
			next.nextProducerID = pid
		}
		next.lastEpoch = next.epoch
		next.epoch++
	}
	if err := c.transitionLocked(e, next); err != nil {
		return err
	}
	c.log.Debug("ending transaction", "transactional_id", e.id, "state", next.state, "producer_id", next.producerID, "epoch", next.epoch)
	return nil
}

// fenceLocked aborts e's Ongoing transaction on the coordinator's own
// initiative (a timeout, or InitProducerId from a new producer): the epoch
// is bumped, which fences the current producer, and the transaction moves
// through PrepareEpochFence to PrepareAbort in one persisted transition. The
// caller then calls finish.
//
// Lock should be held.
func (c *TxnCoordinator) fenceLocked(e *txnEntry) *kerr.Error {
	next := e.meta.clone()
	next.state = txnPrepareEpochFence
	next.epoch++
	next.lastEpoch = noProducerEpoch
	next.bumped = true
	next.state = txnPrepareAbort
	next.updated = c.cfg.Now()
	if err := c.transitionLocked(e, next); err != nil {
		return err
	}
	c.log.Info("fencing producer and aborting its transaction", "transactional_id", e.id, "producer_id", next.producerID, "epoch", next.epoch)
	return nil
}

// finish drives the Prepare* transaction of id to Complete*: markers, then
// the groups' pending offsets, then the persisted Complete* state. It is
// called without the lock; WriteMarkers runs without it. It returns nil
// when the transaction is complete or someone else is completing it, and
// otherwise the error that left it in Prepare*, with a retry scheduled.
func (c *TxnCoordinator) finish(ctx context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.txns[id]
	if c.closed || e == nil || e.writing || e.pending || !e.meta.state.preparing() {
		return nil
	}
	c.timers.cancelLocked(&e.retry)
	if !e.markersDone {
		m := e.meta
		parts := m.partitionsByTopic()
		commit := m.state == txnPrepareCommit
		var err error
		if len(parts) > 0 {
			e.writing = true
			c.mu.Unlock()
			err = c.cfg.WriteMarkers(ctx, id, m.producerID, m.epoch, commit, m.bumped, parts)
			c.mu.Lock()
			e.writing = false
		}
		if c.closed {
			return ErrClosed
		}
		if err != nil {
			c.scheduleRetryLocked(e)
			return fmt.Errorf("coordinator: writing markers for %q: %w", id, err)
		}
		e.markersDone = true
	}
	if err := c.completeOffsetsLocked(e); err != nil {
		if c.closed {
			return ErrClosed
		}
		c.scheduleRetryLocked(e)
		return fmt.Errorf("coordinator: completing the offsets of %q: %w", id, err)
	}
	if c.closed {
		return ErrClosed
	}
	if err := c.completeLocked(e); err != nil {
		c.scheduleRetryLocked(e)
		return fmt.Errorf("coordinator: completing %q: %w", id, err)
	}
	return nil
}

// completeOffsetsLocked commits or drops the pending offsets of e's groups
// once its markers are in the logs. The lock is released meanwhile (the
// group coordinator waits for its __consumer_offsets records to commit, and
// may be another broker) with e marked writing, so no request for e's id
// changes it and no TxnOffsetCommit stores offsets for it (they answer
// CONCURRENT_TRANSACTIONS while it is Prepare*). Completing a group twice
// is harmless.
//
// Lock should be held.
func (c *TxnCoordinator) completeOffsetsLocked(e *txnEntry) error {
	m := e.meta
	complete := c.cfg.CompleteOffsets
	if complete == nil && c.cfg.Groups != nil {
		complete = c.cfg.Groups.CompleteTxnOffsets
	}
	if complete == nil || len(m.groups) == 0 {
		return nil
	}
	commit := m.state == txnPrepareCommit
	e.writing = true
	c.mu.Unlock()
	var err error
	for _, group := range m.sortedGroups() {
		if err = complete(group, m.producerID, commit); err != nil {
			break
		}
	}
	c.mu.Lock()
	e.writing = false
	return err
}

// completeLocked ends e's transaction once its markers are in the logs and
// its groups' offsets are completed: Complete* is persisted, with the
// rotated producer id if one is pending.
//
// Lock should be held.
func (c *TxnCoordinator) completeLocked(e *txnEntry) error {
	m := e.meta
	commit := m.state == txnPrepareCommit
	next := m.clone()
	next.state = txnCompleteAbort
	if commit {
		next.state = txnCompleteCommit
	}
	next.partitions = make(map[topicPartition]struct{})
	next.groups = make(map[string]struct{})
	next.updated = c.cfg.Now()
	if m.nextProducerID != noProducerID {
		next.prevProducerID, next.producerID = m.producerID, m.nextProducerID
		next.nextProducerID = noProducerID
		next.epoch, next.lastEpoch = 0, noProducerEpoch
	}
	if err := c.transitionLocked(e, next); err != nil {
		return err
	}
	e.markersDone = false
	c.log.Debug("transaction complete", "transactional_id", e.id, "state", next.state)
	return nil
}

// scheduleRetryLocked arms e's completion retry.
//
// Lock should be held.
func (c *TxnCoordinator) scheduleRetryLocked(e *txnEntry) {
	id := e.id
	c.timers.scheduleLocked(&e.retry, c.cfg.MarkerRetryBackoff, func() func() {
		return func() {
			if err := c.finish(context.Background(), id); err != nil {
				c.log.Warn("completing transaction failed; will retry", "transactional_id", id, "err", err)
			}
		}
	})
}

// scheduleAbortLocked arms the next run of the loop that aborts timed-out
// transactions (Kafka's abortTimedOutTransactions).
//
// Lock should be held.
func (c *TxnCoordinator) scheduleAbortLocked() {
	c.timers.scheduleLocked(&c.abort, c.cfg.AbortTimedOutInterval, func() func() {
		ids := c.abortTimedOutLocked()
		c.scheduleAbortLocked()
		if len(ids) == 0 {
			return nil
		}
		return func() {
			for _, id := range ids {
				if err := c.finish(context.Background(), id); err != nil {
					c.log.Warn("aborting timed-out transaction failed; will retry", "transactional_id", id, "err", err)
				}
			}
		}
	})
}

// abortTimedOutLocked fences every transaction Ongoing for longer than its
// timeout and returns their ids, to be finished without the lock.
//
// Lock should be held.
func (c *TxnCoordinator) abortTimedOutLocked() []string {
	now := c.cfg.Now()
	var ids []string
	for _, id := range sortedKeys(c.txns) {
		// fenceLocked releases the lock while its record replicates: the
		// id may be gone or busy by now.
		e := c.txns[id]
		if e == nil || e.pending || e.writing || e.meta.state != txnOngoing || !now.After(e.meta.start.Add(e.meta.timeout)) {
			continue
		}
		if err := c.fenceLocked(e); err != nil {
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// scheduleExpireLocked arms the next run of the transactional id expiry.
//
// Lock should be held.
func (c *TxnCoordinator) scheduleExpireLocked() {
	c.timers.scheduleLocked(&c.expire, c.cfg.RemoveExpiredInterval, func() func() {
		c.expireLocked()
		c.scheduleExpireLocked()
		return nil
	})
}

// expireLocked forgets transactional ids without a transaction that were not
// used for IDExpiration (Kafka's removeExpiredTransactionalIds: they go
// Dead and are removed).
//
// Lock should be held.
func (c *TxnCoordinator) expireLocked() {
	cutoff := c.cfg.Now().Add(-c.cfg.IDExpiration)
	var ids []string
	for _, id := range sortedKeys(c.txns) {
		e := c.txns[id]
		if e.meta.state.completed() && !e.writing && !e.pending && !e.meta.updated.After(cutoff) {
			ids = append(ids, id)
		}
	}
	if c.cfg.Log != nil {
		ids = c.logTombstonesLocked(ids)
	}
	if len(ids) == 0 {
		return
	}
	if err := c.deleteTxns(ids); err != nil {
		c.log.Warn("expiring transactional ids failed", "err", err)
		return
	}
	for _, id := range ids {
		e := c.txns[id]
		c.timers.cancelLocked(&e.retry)
		dead := e.meta
		dead.state = txnDead
		c.setMetaLocked(e, dead)
		for _, pid := range []int64{dead.producerID, dead.nextProducerID} {
			if c.byPID[pid] == id {
				delete(c.byPID, pid)
			}
		}
		delete(c.txns, id)
	}
	c.log.Info("expired transactional ids", "count", len(ids))
}

// stateOf returns a copy of id's state, for tests.
func (c *TxnCoordinator) stateOf(id string) (txnMeta, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.txns[id]
	if e == nil {
		return txnMeta{}, false
	}
	return e.meta.clone(), true
}
