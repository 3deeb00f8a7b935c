// Package coordinator is Gregor's consumer group coordinator: the classic
// JoinGroup / SyncGroup / Heartbeat / LeaveGroup membership protocol, the
// KIP-848 consumer protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe;
// see consumer.go), the KIP-1071 streams protocol of Kafka Streams
// (StreamsGroupHeartbeat, StreamsGroupDescribe: streams.go, with the
// topology's configuration in streams_topology.go, the sticky task assignor
// in streams_assign.go, the records in streams_records.go and the KIP-1331
// topology descriptions, StreamsGroupTopologyDescriptionUpdate, in
// streams_description.go); the two share their membership core
// (membership.go: member epochs and sessions, static membership, leaving,
// reconciliation with revocation before reassignment), each keeping what
// its members hold and how a target is computed; offset
// commits and fetches, and the group admin APIs,
// with groups and committed offsets kept in one bbolt file; and its
// transaction coordinator
// (TxnCoordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit, EndTxn, DescribeTransactions, ListTransactions), with
// transactional ids kept in another (txns.db); and its share coordinator
// (ShareCoordinator, sharecoord.go: the share-partition state of KIP-932
// share groups, in __share_group_state).
//
// It knows nothing of connections: the broker decodes a request, calls the
// method of the same name with the kmsg request and encodes the kmsg
// response it gets back (setting its Version). Kafka-visible failures are
// error codes in the response; a method never panics on request content.
// JoinGroup and SyncGroup block while a rebalance is under way, until it
// completes or the caller's context ends. Which versions of each API are
// served, and what each version changes, is noted beside its registration
// in package broker (groups.go, txns.go, 22_init_producer_id.go); the
// methods here handle exactly those versions.
//
// # Runtime
//
// The three coordinators sit on one partitioned-coordinator runtime,
// coordinatorRuntime (runtime.go, runtimelog.go), as Kafka's
// coordinator-common sits under its group and share coordinators; each
// embeds it. The runtime owns the coordinator's lock and closed flag, its
// timers (timers.go), the mapping of a key to its partition of the
// internal topic (PartitionFor), the load state of each partition and the
// error a request for a key gets (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE once closed:
// GroupError, TxnError and KeyError ask it), the load protocol (the
// partition is marked loading, the coordinator's replay runs without the
// lock, then its state is installed under it, or the partition is
// forgotten if either fails), the unload, and the log writer: GroupLog,
// the batches in flight, the checkpoint of a bbolt view, and what a
// request answers once the batch it waited for has its fate.
//
// Each coordinator keeps its own state machine and store: Coordinator its
// groups (classic, consumer, share) and offsets with groups.db as the view
// of __consumer_offsets; TxnCoordinator its transactional ids with txns.db
// as the view of __transaction_state; ShareCoordinator the share-partition
// states, in memory, replayed from __share_group_state.
//
// # Group states
//
// These are the states of classic groups; consumer-protocol groups have
// Kafka's ConsumerGroupState (Empty, Assigning, Reconciling, Stable),
// described in consumer.go, and streams groups Kafka's StreamsGroupState
// (Empty, NotReady, Assigning, Reconciling, Stable), in streams.go. The state names are Kafka's (ClassicGroupState); DescribeGroups and
// ListGroups report them.
//
// Empty: the group has no members, but may have committed offsets (also the
// state of "simple" groups created by a commit with generation -1, which
// never have members). A join moves it to PreparingRebalance. Its offsets
// expire OffsetsRetention after it became Empty; then the group is deleted.
// DeleteGroups deletes it at once (→ Dead).
//
// PreparingRebalance: the coordinator collects JoinGroup requests. Members
// are parked until every known member has rejoined, or the rebalance timeout
// (the members' largest) expires, which drops the dynamic members that did
// not rejoin. A group coming from Empty waits InitialRebalanceDelay instead,
// extended by that much (within the rebalance timeout) each time a member
// arrives during the delay. Heartbeats answer REBALANCE_IN_PROGRESS. When the
// join phase completes, the generation is incremented and the protocol most
// members prefer among those all support is selected: → CompletingRebalance,
// or → Empty if no member is left.
//
// CompletingRebalance: every joined member has its JoinGroup answer, the
// leader's with the member list; members are parked in SyncGroup until the
// leader's SyncGroup brings the assignment, which is persisted and handed
// out: → Stable. A join by a new member, a join with changed metadata, a
// leave or a session expiry → PreparingRebalance (parked syncs answer
// REBALANCE_IN_PROGRESS). Offset commits answer REBALANCE_IN_PROGRESS.
// Members that do not sync within the rebalance timeout are removed.
//
// Stable: members heartbeat and commit. A rejoin by the leader, by a member
// with changed protocols, or by a new member, a leave, or a session expiry
// → PreparingRebalance. A follower rejoining with unchanged protocols (as
// cooperative clients do) gets the current generation back without a
// rebalance, and a static member restarting with its group.instance.id takes
// over its old member id and assignment without one, if the selected
// protocol stays the same (the old member id is fenced: FENCED_INSTANCE_ID).
//
// Dead: the group was deleted (DeleteGroups, or expiry of an Empty group
// without offsets) and is gone from the coordinator; DescribeGroups reports
// unknown groups as Dead.
//
// # Sessions
//
// Every member has a session timer, restarted by heartbeats and at the end
// of each phase. When it fires the member is removed and the group
// rebalances, except for members parked in JoinGroup or SyncGroup. A new
// member's timer is NewMemberJoinTimeout until its first join phase
// completes; member ids handed out with MEMBER_ID_REQUIRED expire after the
// session timeout if they are not used.
//
// # Persistence
//
// With Config.Log (the broker's), groups and offsets are records of
// __consumer_offsets and groups.db is the materialised view of the
// partitions this coordinator has loaded; see grouplog.go. Committed
// offsets are written to bbolt (and fsynced) before OffsetCommit returns. Group metadata is written when the leader's SyncGroup completes a
// rebalance, when the group becomes Empty, and when a static member is
// replaced, as Kafka writes its GroupMetadata records. Open restores groups
// with members as Stable in their stored generation with fresh session
// timers, so members whose clients are gone expire and the group rebalances;
// membership changes after the last write (a leave, an unfinished rebalance)
// are redone by the clients. The file format is described in store.go.
//
// # Transaction coordinator
//
// The transaction coordinator (TxnCoordinator, txn*.go) keeps one entry per
// transactional id: its producer id and epoch, the transaction timeout, the
// state below, and the partitions and consumer groups of the current
// transaction. Every transition is written to txns.db (fsynced) before the
// request that caused it is answered, and memory is only changed once the
// write succeeded. With TxnConfig.Log (the broker's __transaction_state)
// the transition is first appended to the id's partition and waited for,
// and the coordinator serves only the ids of the partitions it has loaded;
// see txnlog.go.
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
// transition, so the state is never stored or reported.
//
// Pending transitions: with __transaction_state (TxnConfig.Log) a
// transition is installed only once its record is committed, and the lock
// is not held meanwhile: the id is pending (Kafka's pendingState) and every
// request for it answers CONCURRENT_TRANSACTIONS (clients retry), except
// that partitions already in an Ongoing transaction still verify while an
// add is pending; other ids proceed. A failed append rolls the transition
// back (txnlog.go).
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
//
// # Transactions and groups
//
// Offsets committed by TxnOffsetCommit are pending in the group
// coordinator, per group and producer id, and persisted like commits; they
// are invisible to OffsetFetch (require_stable answers
// UNSTABLE_OFFSET_COMMIT) until the transaction coordinator, after writing
// the transaction's markers, calls CompleteTxnOffsets to commit or drop
// them. A transaction found in PrepareCommit or PrepareAbort by OpenTxn is
// completed then, so nothing stays half-visible after a crash. The broker
// calls CheckProduce for every transactional produce.
//
// # Locks
//
// Each coordinator has one mutex, its runtime's, released while a record
// of its log replicates (see above and grouplog.go); the share coordinator
// also serialises the writes of each partition with a mutex of its own,
// held across the append. Where they and the callbacks they are given sit
// in the program's lock order is written in docs/LOCK_ORDER.md.
package coordinator
