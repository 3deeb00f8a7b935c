package coordinator

// The transaction coordinator (TxnCoordinator, txn*.go) keeps one entry per
// transactional id: its producer id and epoch, the transaction timeout, the
// state below, and the partitions and consumer groups of the current
// transaction. Every transition is written to txns.db (fsynced) before the
// request that caused it is answered, and memory is only changed once the
// write succeeded.
//
// # Transaction states
//
// The names are Kafka's (TransactionState); DescribeTransactions and
// ListTransactions report them.
//
// Empty: the id has a producer id and epoch but no transaction (after
// InitProducerId). AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit v5
// and an implicit add by a Produce v12 (CheckProduce) start one: →
// Ongoing, and the transaction timeout starts. InitProducerId bumps the
// epoch and stays Empty. An EndTxn v5 abort bumps the epoch through
// PrepareAbort → CompleteAbort; other EndTxn answer INVALID_TXN_STATE.
//
// Ongoing: partitions and groups are being added and written. EndTxn →
// PrepareCommit or PrepareAbort (v5: with the epoch bumped). InitProducerId
// from a new producer, or the transaction timeout expiring (checked every
// AbortTimedOutInterval), fences the producer: → PrepareEpochFence →
// PrepareAbort with the epoch bumped, so the old producer's requests answer
// PRODUCER_FENCED / INVALID_PRODUCER_EPOCH.
//
// PrepareEpochFence: Kafka's in-memory step of a fence, between Ongoing
// and PrepareAbort. Here the fence and PrepareAbort are one persisted
// transition under the lock, so the state is never stored or reported.
//
// PrepareCommit, PrepareAbort: the outcome is decided and durable. The
// coordinator writes the COMMIT or ABORT markers to every partition of the
// transaction (WriteMarkers, without the lock; retried every
// MarkerRetryBackoff until it succeeds, and again by OpenTxn after a
// restart), then commits or drops the groups' pending offsets
// (Coordinator.CompleteTxnOffsets): → CompleteCommit or CompleteAbort.
// Meanwhile every request for the id answers CONCURRENT_TRANSACTIONS,
// except EndTxn with the other outcome (INVALID_TXN_STATE).
//
// CompleteCommit, CompleteAbort: the transaction ended and its partitions
// were cleared. A retried EndTxn with the same outcome answers success.
// Adding partitions or groups starts the next transaction (→ Ongoing);
// InitProducerId → Empty with a bumped epoch. An EndTxn v5 abort at the
// current epoch bumps the epoch as Empty's does.
//
// Dead: the id expired: it was Empty, CompleteCommit or CompleteAbort and
// unused for IDExpiration. It is deleted from txns.db and memory, and is
// unknown from then on (DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND).
//
// # Epochs and producer ids
//
// InitProducerId bumps the epoch; EndTxn v5 (transaction version 2,
// KIP-890 part 2) bumps it on every EndTxn; a fence bumps it once. When the
// epoch reaches 32766 the next bump hands out a new producer id at epoch 0
// (Kafka keeps 32767 so a fence is always possible). The markers of a
// transaction carry the epoch after its Prepare transition, so they fence
// the epoch they close.
