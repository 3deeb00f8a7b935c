// Package share is the partition leader's side of share groups (KIP-932),
// as Kafka's share module: the share sessions of ShareFetch and
// ShareAcknowledge, and the cache of the share-partitions this broker
// leads over the share coordinator that keeps their state.
//
// # Share-partitions
//
// A share-partition (Key: group, topic id, partition) is what a share
// group has delivered of one partition: a coordinator.SharePartition, the
// state machine of its records (Available, Acquired, Acknowledged,
// Archived). A Cache holds those of the partitions this broker leads,
// each with the leader epoch of the partition it was read or created in
// and the state epoch of the share coordinator's state. Get reads a
// share-partition from the share coordinator through a Persister
// (ReadShareGroupState) when the cache has none, or only one of an
// earlier leader epoch (another leader may have changed it since; the
// read records the new epoch, fencing the old leader's writes), and
// creates one at share.auto.offset.reset (the partition's high watermark,
// its log start offset for earliest, or for by_duration:<duration> its
// first record at most that old, else its high watermark) when the share
// coordinator has none either. After every acknowledgement, release and start offset
// change the state is written back (Persist: WriteShareGroupState) in the
// epochs it was read in; a write fenced by a newer leader or state epoch
// drops the cached share-partition, to be read again when next needed,
// unless this broker has itself moved it on since (SetStart, the offset
// admin APIs, starts the state over in the next state epoch). So
// acknowledged records are not delivered again after a restart or a
// leader change, and records acquired but not acknowledged are delivered
// again with their delivery count.
//
// The cache holds one entry per share-partition a group has used on a
// partition led here (kept when the leadership moves away: a later leader
// epoch reads it again); a group's entries go when the group or its
// state of a topic is deleted (Delete), one entry when a fenced write
// drops it.
//
// # Share sessions
//
// A share consumer fetches from each partition leader in a share session,
// one per (group, member) on each broker (Sessions, Kafka's
// ShareSessionCache), at most group.share.max.share.sessions
// (SHARE_SESSION_LIMIT_REACHED). InitialEpoch (0) opens it, replacing the
// member's session (the member keeps what it acquired, as in Kafka 4.4,
// and may acknowledge it in the new session); FinalEpoch (-1) closes
// it (the caller then releases what the member acquired, after the
// request's acknowledgements: Cache.ReleaseMember); any other epoch must be the session's current one
// (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a
// session) and moves it to the next (NextEpoch, wrapping to 1).
// ShareAcknowledge cannot open a session. A ShareFetch adds its
// partitions to the session and removes the forgotten ones; the session's
// partitions are what it fetches. A session belongs to the connection
// that opened it (an opaque, comparable handle): when that connection
// closes its sessions close and their members' acquired records are
// released (KAFKA-19015), as when the member leaves the group.
//
// # What the package is given
//
// The broker keeps the wire and gives the package what it needs through
// interfaces the package defines: a Persister (the share coordinator,
// local or a remote broker's, __share_group_state), Settings (the group
// configs share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks, share.auto.offset.reset and
// share.renew.acknowledge.enable (Cache.RenewAllowed), each the
// group's within the broker's bounds or else the broker's, and the broker
// property group.share.max.share.sessions, read on every use) and, for
// each call,
// the Leader of the partition (its leader epoch, log start offset and high
// watermark). Reading records from the log and acquiring them stays in
// the broker, which owns the logs.
//
// # Locks
//
// Cache.mu and Sessions.mu are leaves: the Persister and the
// SharePartitions are called without them, and Sessions releases its lock
// before it releases a member's records in the Cache. The program's lock
// order is docs/LOCK_ORDER.md.
//
// The package imports coordinator and kerr only.
package share
