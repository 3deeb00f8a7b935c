// Package coordinator is Gregor's classic consumer group coordinator: the
// JoinGroup / SyncGroup / Heartbeat / LeaveGroup membership protocol, offset
// commits and fetches, and the group admin APIs, with groups and committed
// offsets kept in one bbolt file; and its transaction coordinator
// (TxnCoordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit, EndTxn, DescribeTransactions, ListTransactions), with
// transactional ids kept in another (txns.db).
//
// It knows nothing of connections: the broker decodes a request, calls the
// method of the same name with the kmsg request and encodes the kmsg
// response it gets back (setting its Version). Kafka-visible failures are
// error codes in the response; a method never panics on request content.
// JoinGroup and SyncGroup block while a rebalance is under way, until it
// completes or the caller's context ends.
//
// # Group states
//
// The state names are Kafka's (ClassicGroupState); DescribeGroups and
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
// Committed offsets are written to bbolt (and fsynced) before OffsetCommit
// returns. Group metadata is written when the leader's SyncGroup completes a
// rebalance, when the group becomes Empty, and when a static member is
// replaced, as Kafka writes its GroupMetadata records. Open restores groups
// with members as Stable in their stored generation with fresh session
// timers, so members whose clients are gone expire and the group rebalances;
// membership changes after the last write (a leave, an unfinished rebalance)
// are redone by the clients. The file format is described in store.go.
//
// # Transactions
//
// The transaction states and their transitions are described in
// txn_doc.go. Offsets committed by TxnOffsetCommit are pending in the group
// coordinator, per group and producer id, and persisted like commits; they
// are invisible to OffsetFetch (require_stable answers
// UNSTABLE_OFFSET_COMMIT) until the transaction coordinator, after writing
// the transaction's markers, calls CompleteTxnOffsets to commit or drop
// them. A transaction found in PrepareCommit or PrepareAbort by OpenTxn is
// completed then, so nothing stays half-visible after a crash. The broker
// calls CheckProduce for every transactional produce.
package coordinator
