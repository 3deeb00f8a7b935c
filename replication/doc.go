// Package replication copies partitions from their leaders to their
// followers with Kafka's own protocol, and tracks on each leader what its
// followers have, to move the high watermark and keep the ISR honest.
//
// It knows nothing of etcd or of connections it did not open: the broker
// tells it which partitions it leads and follows (from the cluster
// metadata), hands it the partition logs through the small LeaderLog and
// FollowerLog interfaces, and applies the ISR changes it asks for.
//
// # Leader side
//
// A Leader is one partition this broker leads in one leader epoch. Each
// follower Fetch (a Fetch request carrying the follower's replica id) tells
// the Leader that follower's log end offset, the fetch offset; the high
// watermark is the smallest log end offset over the maximal ISR (the ISR
// in the metadata plus any replica an in-flight AlterPartition is adding,
// KIP-841), so an acks=all produce is answered only when every replica that
// could be elected next has its batch. A follower is caught up at time T
// when its fetch offset reached the leader's log end offset as of its
// previous fetch (Kafka's lastCaughtUpTime); one not caught up for
// replica.lag.time.max.ms is proposed for removal from the ISR, one whose
// log end offset has reached the high watermark and the start of the
// current leader epoch is proposed for addition. Proposals are compare-and-
// set writes done by the broker (cluster.Node.AlterPartition); the Leader
// applies the ISR the metadata then shows.
//
// A follower's fetch in a fetch session visits (Fetched) only the
// partitions whose position or log changed; the Leader keeps the session
// as a FetchClock and counts its fetches in between as fetches at the
// follower's last position, so an idle partition's follower stays caught
// up for as long as its session fetches, and leaves the ISR once it stops.
//
// # Follower side
//
// A Fetcher is one connection to one leader, carrying every partition this
// broker follows there (Kafka's ReplicaFetcherThread). A partition added to
// it first truncates its log to the point where it agrees with the leader
// (KIP-101 / KIP-279: OffsetForLeaderEpoch with the follower's latest epoch,
// repeated with earlier epochs until both agree), then fetches from its log
// end offset with its current leader epoch, appends what arrives at the same
// offsets and takes the leader's high watermark (never beyond its own log
// end). A fetch offset below the leader's log start offset restarts the
// follower's log there. FENCED_LEADER_EPOCH pauses the partition until the
// broker hands it the newer epoch; errors of a leader that has not yet seen
// the new epoch (UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER) and network
// errors are retried after a short backoff.
//
// The Fetcher fetches in one fetch session with its leader (KIP-227, as
// Kafka's fetcher threads do): its first request names every partition and
// asks for a session; then each request names only the partitions whose
// position (log end or log start offset) or assignment changed since it
// last sent them, and forgets those no longer fetched (removed, truncating,
// backing off). The leader answers only the partitions with records, an
// error or a high watermark or log start offset not yet sent. A leader
// that has lost the session (restarted, evicted) answers
// FETCH_SESSION_ID_NOT_FOUND, and any failure ends the session: the next
// request is full again. An idle follower of thousands of partitions so
// sends a request of a few dozen bytes twice a second.
//
// # Locks
//
// Leader.mu and Fetcher.mu are leaves: nothing else is locked while they
// are held, except the log's own locks inside LeaderLog / FollowerLog calls.
// See the lock order in docs/LOCK_ORDER.md.
package replication
