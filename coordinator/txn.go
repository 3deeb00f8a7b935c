package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Defaults applied by OpenTxn to zero fields of TxnConfig. They are Kafka's
// broker defaults of the same names.
const (
	DefaultTxnMaxTimeout            = 15 * time.Minute // transaction.max.timeout.ms
	DefaultAbortTimedOutInterval    = 10 * time.Second // transaction.abort.timed.out.transaction.cleanup.interval.ms
	DefaultTxnIDExpiration          = week             // transactional.id.expiration.ms
	DefaultRemoveExpiredTxnInterval = time.Hour        // transaction.remove.expired.transaction.cleanup.interval.ms
	DefaultMarkerRetryBackoff       = time.Second
)

// DefaultTxnLogPartitions is transaction.state.log.num.partitions.
const DefaultTxnLogPartitions = 50

// ErrTxnConfig is returned by OpenTxn when a required TxnConfig function
// (AllocateProducerID, WriteMarkers) is missing.
var ErrTxnConfig = errors.New("coordinator: TxnConfig needs AllocateProducerID and WriteMarkers")

// TxnConfig configures a TxnCoordinator. Zero durations take the Default*
// values.
type TxnConfig struct {
	// Dir holds the bbolt file txns.db; it is created on the first write
	// if missing.
	Dir string
	// Now and AfterFunc are the clock, as in Config. AfterFunc must not
	// call f synchronously.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) Timer

	// MaxTimeout is transaction.max.timeout.ms: InitProducerId with a
	// larger transaction timeout answers INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// AbortTimedOutInterval is the period of the loop that aborts
	// transactions Ongoing for longer than their timeout.
	AbortTimedOutInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms: an id without a
	// transaction (Empty, CompleteCommit, CompleteAbort) that was not used
	// for this long is forgotten.
	IDExpiration time.Duration
	// RemoveExpiredInterval is the period of the expiry loop.
	RemoveExpiredInterval time.Duration
	// MarkerRetryBackoff is the pause before WriteMarkers is called again
	// after it failed.
	MarkerRetryBackoff time.Duration

	// AllocateProducerID hands out a new producer id, durably: an id is
	// never handed out twice, across restarts. Required.
	AllocateProducerID func() (int64, error)
	// WriteMarkers appends a COMMIT (commit) or ABORT control batch for
	// producerID at epoch to every listed partition, and returns once they
	// are all in the logs. transactionalID names the transaction: the
	// caller stamps the markers with its coordinator epoch for that id, and
	// refuses to write them once it no longer coordinates it. bumped says
	// that epoch is newer than that of the transaction's batches
	// (transaction version 2, or a fenced producer), so that a partition
	// can refuse the late marker of an earlier transaction at that epoch. It is called without the
	// coordinator's lock, at most once at a time per transaction, to move
	// PrepareCommit/PrepareAbort to CompleteCommit/CompleteAbort. On error
	// it is called again later with the same arguments, so a partition
	// that already got its marker may get a second one (as after a crash):
	// the log must accept a marker for a producer without an ongoing
	// transaction. Required.
	WriteMarkers func(ctx context.Context, transactionalID string, producerID int64, epoch int16, commit, bumped bool, partitions map[string][]int32) error
	// Groups keeps TxnOffsetCommit offsets pending until the transaction
	// ends. Nil answers TxnOffsetCommit with COORDINATOR_NOT_AVAILABLE.
	Groups *Coordinator
	// CompleteOffsets, if set, replaces Groups.CompleteTxnOffsets when a
	// transaction ends: the broker sends the outcome to the group's
	// coordinator, which may be another broker.
	CompleteOffsets func(group string, producerID int64, commit bool) error
	// TopicPartitions reports a topic's partition count; AddPartitionsToTxn
	// and TxnOffsetCommit answer UNKNOWN_TOPIC_OR_PARTITION for others. Nil
	// accepts all.
	TopicPartitions func(topic string) (partitions int32, ok bool)

	// Log, if set, is __transaction_state (txnlog.go): ids are served only
	// for the partitions loaded with LoadPartition, and every transition
	// is appended there before it is answered. LogPartitions is its
	// partition count.
	Log           GroupLog
	LogPartitions int32
	// LogReplicated: as Config.LogReplicated, for __transaction_state.
	LogReplicated bool

	Logger *slog.Logger
}

// TxnCoordinator is the transaction coordinator of one broker: it owns every
// transactional id, its producer id and epoch and its transaction's state,
// and drives commits and aborts by writing markers. All methods are safe for
// concurrent use.
type TxnCoordinator struct {
	cfg TxnConfig
	log *slog.Logger
	db  *boltFile

	// coordinatorRuntime holds the lock (mu), the closed flag, the
	// timers and, with a Log, the load state of each partition of
	// __transaction_state, its batches in flight and checkpoint
	// (runtime.go).
	coordinatorRuntime

	txns   map[string]*txnEntry
	byPID  map[int64]string // producer id (and pending next producer id) → transactional id
	abort  timerSlot
	expire timerSlot
}

// txnEntry is a transactional id: its durable state and what the
// coordinator is doing about it.
type txnEntry struct {
	id   string
	meta txnMeta
	// writing is set while a finish call writes markers (or completes the
	// groups' offsets) outside the lock.
	writing bool
	// pending is set while a transition to pendingState is appended to
	// __transaction_state outside the lock (Kafka's
	// TransactionMetadata.pendingState): other requests for this id answer
	// CONCURRENT_TRANSACTIONS meanwhile, and other ids proceed.
	pending      bool
	pendingState txnState
	// markersDone records that the markers of the current Prepare* state
	// are in the logs and only the completion is left to retry.
	markersDone bool
	retry       timerSlot
}

// OpenTxn opens (creating if needed) Dir/txns.db and restores every
// transactional id. Transactions found in PrepareCommit or PrepareAbort are
// completed before it returns: their markers are written (again) through
// WriteMarkers, so WriteMarkers and Groups must be usable when OpenTxn is
// called. If that fails the transaction stays Prepare* and is retried every
// MarkerRetryBackoff; requests for it answer CONCURRENT_TRANSACTIONS
// meanwhile. Ongoing transactions resume and time out as before the
// restart.
func OpenTxn(cfg TxnConfig) (*TxnCoordinator, error) {
	if cfg.AllocateProducerID == nil || cfg.WriteMarkers == nil {
		return nil, ErrTxnConfig
	}
	cfg = txnWithDefaults(cfg)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	db, err := openBoltFile(filepath.Join(cfg.Dir, txnDBFileName))
	if err != nil {
		return nil, fmt.Errorf("coordinator: open %s: %w", txnDBFileName, err)
	}
	c := &TxnCoordinator{
		cfg:   cfg,
		log:   cfg.Logger,
		db:    db,
		txns:  make(map[string]*txnEntry),
		byPID: make(map[int64]string),
	}
	c.initRuntime("__transaction_state", cfg.Log, cfg.LogPartitions, cfg.AfterFunc)
	keep := func(string) bool { return true }
	if cfg.Log != nil {
		keep = func(string) bool { return false } // loaded by partition
	}
	ids, metas, err := c.loadTxns(keep)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("coordinator: load %s: %w", txnDBFileName, err)
	}
	c.mu.Lock()
	unfinished := c.installLocked(ids, metas)
	c.scheduleAbortLocked()
	c.scheduleExpireLocked()
	c.mu.Unlock()
	c.finishAll(unfinished, "completing transaction after restart failed; will retry")
	return c, nil
}

// installLocked installs the stored state of ids (loadTxns) and returns
// those whose transaction is in PrepareCommit or PrepareAbort, for
// finishAll once the lock is released.
//
// Lock should be held.
func (c *TxnCoordinator) installLocked(ids []string, metas map[string]txnMeta) (unfinished []string) {
	for _, id := range ids {
		e := &txnEntry{id: id}
		c.txns[id] = e
		c.setMetaLocked(e, metas[id])
		if e.meta.state.preparing() {
			unfinished = append(unfinished, id)
		}
	}
	return unfinished
}

// finishAll completes the transactions of ids (finish), logging failed
// completions with msg: they are retried every MarkerRetryBackoff.
func (c *TxnCoordinator) finishAll(ids []string, msg string) {
	for _, id := range ids {
		if err := c.finish(context.Background(), id); err != nil {
			c.log.Warn(msg, "transactional_id", id, "err", err)
		}
	}
}

func txnWithDefaults(cfg TxnConfig) TxnConfig {
	clockDefaults(&cfg.Now, &cfg.AfterFunc, &cfg.Logger)
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultTxnMaxTimeout
	}
	if cfg.AbortTimedOutInterval <= 0 {
		cfg.AbortTimedOutInterval = DefaultAbortTimedOutInterval
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = DefaultTxnIDExpiration
	}
	if cfg.RemoveExpiredInterval <= 0 {
		cfg.RemoveExpiredInterval = DefaultRemoveExpiredTxnInterval
	}
	if cfg.MarkerRetryBackoff <= 0 {
		cfg.MarkerRetryBackoff = DefaultMarkerRetryBackoff
	}
	if cfg.LogPartitions <= 0 {
		cfg.LogPartitions = DefaultTxnLogPartitions
	}
	return cfg
}

// Close stops the timers and closes the bbolt file. Every transition was
// durable when its request was answered; a transaction left in Prepare* is
// completed by the next OpenTxn. A WriteMarkers call in flight may still
// return; its result is then dropped.
func (c *TxnCoordinator) Close() error {
	err := c.close(func() {
		c.timers.cancelLocked(&c.abort)
		c.timers.cancelLocked(&c.expire)
		for _, e := range c.txns {
			c.timers.cancelLocked(&e.retry)
		}
	})
	if err != nil {
		return err
	}
	return c.db.Close()
}

// setMetaLocked installs an already persisted state and keeps the producer
// id index in step.
//
// Lock should be held.
func (c *TxnCoordinator) setMetaLocked(e *txnEntry, m txnMeta) {
	for _, pid := range []int64{e.meta.producerID, e.meta.nextProducerID} {
		if pid != noProducerID && c.byPID[pid] == e.id {
			delete(c.byPID, pid)
		}
	}
	e.meta = m
	for _, pid := range []int64{m.producerID, m.nextProducerID} {
		if pid != noProducerID {
			c.byPID[pid] = e.id
		}
	}
}

// transitionLocked persists m as e's new state and then installs it. With
// a log the record is appended and e is marked pending (a new id enters
// c.txns, as Kafka caches it before its first append); the lock is
// released while the append replicates and taken again before the state is
// installed, so callers must not rely on anything else they read under the
// lock before the call. On error nothing changed; the error is the
// request's answer (Kafka's mapping of a failed append,
// TransactionStateManager.appendTransactionToLog).
//
// Lock should be held.
func (c *TxnCoordinator) transitionLocked(e *txnEntry, m txnMeta) *kerr.Error {
	if e.pending {
		return kerr.ConcurrentTransactions
	}
	off, fresh := int64(-1), false
	if c.cfg.Log != nil {
		var err *kerr.Error
		if off, fresh, err = c.logTransitionLocked(e, m); err != nil {
			c.log.Warn("appending transaction state failed", "transactional_id", e.id, "state", m.state, "err", err)
			return err
		}
	}
	if err := c.putTxn(c.partitionOfOrZero(e.id), e.id, m, off); err != nil {
		c.log.Warn("persisting transaction state failed", "transactional_id", e.id, "state", m.state, "err", err)
		if fresh && c.txns[e.id] == e {
			delete(c.txns, e.id)
		}
		return kerr.CoordinatorNotAvailable
	}
	if _, ok := c.txns[e.id]; !ok {
		c.txns[e.id] = e
	}
	c.setMetaLocked(e, m)
	return nil
}

// fencedFor maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request
// versions older than since, which predate the error (KafkaApis does this
// for InitProducerId < 4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
// < 2).
// partitionOfOrZero is id's partition of __transaction_state, 0 without a
// log.
func (c *TxnCoordinator) partitionOfOrZero(id string) int32 {
	if c.cfg.Log == nil {
		return 0
	}
	return c.partitionOf(id)
}

func fencedFor(err *kerr.Error, version, since int16) *kerr.Error {
	if err == kerr.ProducerFenced && version < since {
		return kerr.InvalidProducerEpoch
	}
	return err
}

func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// ending reports whether e's transaction may be ending: its markers are
// being written, or a transition other than an add (to Ongoing) is being
// appended. Verifying a partition against an Ongoing transaction is still
// answered meanwhile, as Kafka's verification reads the cached state
// without looking at the pending one.
func (e *txnEntry) ending() bool {
	return e.writing || (e.pending && e.pendingState != txnOngoing)
}
