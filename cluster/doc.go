// Package cluster keeps a Gregor cluster's metadata in etcd: broker
// registrations, the controller, topics, partition leadership and ISR,
// topic configs and producer-id blocks. It is Kafka's ZooKeeper design with
// etcd in ZooKeeper's place; partition data is replicated elsewhere, with
// Kafka's follower-fetch protocol. The model it keeps (Metadata, Partition,
// Topic, the errors, Config) is package metadata's, under the names this
// package has always used, and it imports no other Gregor package. A broker
// uses a Node through its own interface, broker.Cluster, and cmd/gregor
// hands it one; the broker itself does not link this package.
//
// Each broker runs a Node. The nodes listed in controller.quorum.voters run
// an embedded etcd member (peer URL http://host:port as listed, data under
// DataDir/__etcd) and reach it in-process; with etcd.endpoints a node joins
// an external etcd cluster instead. A member advertises its voter address
// and binds it too, unless Config.PeerListen names another address to bind
// (the broker's CONTROLLER listener), as a KRaft controller binds its
// controller listener while the voters list the address its peers dial:
// a proxy or NAT may stand between the two.
//
// # Keys
//
// Everything lives under /gregor/; values are JSON unless said otherwise.
//
//	/gregor/cluster-id                the cluster id (plain text), set once by compare-and-set
//	/gregor/brokers/<id>              {"id","host","port","rack","listeners","log_dir_offline",
//	                                  "controlled_shutdown","schema_registry"}, attached to the broker's lease;
//	                                  its create revision is the broker epoch
//	/gregor/registered-brokers/<id>   the same JSON as /gregor/brokers/<id>, written with it but with no
//	                                  lease: the id stays registered (fenced while not live) until
//	                                  UnregisterBroker (unregister.go)
//	/gregor/controller/<lease hex>    etcd's election recipe (concurrency.Election); the key with
//	                                  the lowest create revision is the controller, its value the node id
//	/gregor/topics/<name>             {"id": 32 hex digits, "configs": {...}}
//	/gregor/partitions/<topic>/<p>    {"replicas","isr","leader","leaderEpoch","partitionEpoch",
//	                                  "addingReplicas","removingReplicas","leaderBrokerEpoch"}
//	/gregor/producer-ids              the first producer id of the next block (decimal text)
//	/gregor/acls/<id>                 one ACL binding (the broker's JSON, opaque here)
//	/gregor/quotas/<entity>           one client quota entity (the broker's JSON, opaque here)
//	/gregor/group-configs/<group>     a group's dynamic configs, {"name": "value", ...}
//	/gregor/broker-configs/<res>      dynamic broker configs, {"name": "value", ...}: res "" the
//	                                  cluster-wide defaults, a node id that broker's own
//	/gregor/users/<name>              a SASL user's SCRAM credentials (the broker's JSON, opaque here)
//	/gregor/client-metrics/<name>     a KIP-714 client metrics subscription (the broker's JSON, opaque here)
//	/gregor/features/finalized        the finalized feature levels UpdateFeatures changed and their epoch
//
// The ACLs, quotas, users, links, broker configs and group configs are
// collections (collections.go): Node.Collection
// gives each to the broker as a metastore.Collection, whose revision moves
// only with the collection's own changes.
//
// As in KRaft's PartitionRecord, a partition's replica assignment lives
// with its leadership, in one key, so one compare on that key's mod
// revision guards every change to it. Every write is a transaction
// conditioned on what it read: the mod revision of the partition or topic
// key, the create revision (broker epoch) of each broker the write relies
// on being live, and, for the controller, the create revision of its own
// election key. A stale controller or leader therefore can never overwrite
// a newer decision: its compare fails.
//
// Each Node mirrors /gregor/ with a watch and publishes immutable Metadata
// snapshots; Changes is closed at each new one. A snapshot re-parses only
// the keys its events touched and shares every other topic, the brokers
// and the untouched collections with the snapshot before (Kafka's image
// deltas), so a change costs the same at any partition count.
//
// # Controller
//
// Every node campaigns; the winner runs the controller until its lease is
// lost, it is fenced, or it closes. On taking office and at every metadata
// change (and half a second after a pass that decided changes, to retry a
// failed write; never on a timer alone, so an idle cluster costs it no
// pass) it re-checks every partition against the live brokers (a broker
// whose registration says its log dir is offline, SetLogDirOffline, or
// that it is stopping, SetControlledShutdown, counts as not live):
//
//   - a partition whose leader is not live (its registration is gone, or
//     it registered anew since it was elected: a restart) gets as leader
//     the first replica, in assignment order, that is live and in the ISR;
//     dead brokers leave the ISR;
//   - if no ISR member is live the partition becomes leaderless (leader
//     -1) and its ISR keeps the last leader, as KRaft does with
//     unclean.leader.election.enable=false; when that broker registers
//     again it is elected. With UncleanLeaderElection the first live
//     replica is elected instead, with an ISR of itself alone;
//   - a live leader keeps leading; dead followers leave the ISR;
//   - LeaderEpoch and PartitionEpoch grow with every leader change,
//     PartitionEpoch with every ISR change.
//   - a partition reassignment in progress (AddingReplicas and
//     RemovingReplicas set by AlterPartitionReassignments, KIP-455)
//     completes once the ISR holds every adding replica: the removing
//     replicas leave Replicas and ISR and, if the leader was one of them,
//     the first live target replica in the ISR leads (see reassign.go).
//
// Leaders change the ISR themselves with AlterPartition (shrink a lagging
// follower, expand a caught-up one), conditioned on their leadership,
// leader epoch and partition epoch; AlterPartitions writes many such
// changes in one transaction per batch, each with the same conditions.
// Topic operations, ElectLeaders and producer-id blocks are written
// directly by the node that serves the request; their compares make that
// as safe as routing them to the controller. ElectLeaders decides every
// partition from one read and writes the elections in batches too. A batch
// whose conditions fail (a partition changed since it was read) is written
// again in halves, by the controller and by AlterPartitions, so that only
// the changed partitions wait for a fresh read.
//
// # Fencing
//
// A broker renews its lease every TTL/4 (TTL = SessionTimeout, 3 s by
// default) and records the send time of each renewal that etcd
// acknowledged. Fenced reports true once now > send time of the last
// acknowledged renewal + TTL - TTL/8; a fenced broker must stop accepting
// writes. Why nobody else can lead before then:
//
//   - etcd's leader sets a lease's expiry to (time it processed the
//     renewal) + TTL, and the renewal was processed after it was sent, so
//     the expiry is at least send time + TTL; a new etcd leader extends
//     every lease by one election timeout on taking office, so expiry
//     only moves later. A raft leader that lost its quorum may still
//     acknowledge renewals until it steps down (etcd skips the quorum check
//     while the leader is ticking), at most two election timeouts after its
//     last contact; the new raft leader is elected at least one election
//     timeout after that contact and adds one more on promotion, so its
//     expiry is still later than any renewal the old one acknowledged.
//   - The controller elects a new leader for the broker's partitions only
//     after seeing the broker's key deleted, which happens only when the
//     lease has expired (or was revoked by the broker itself).
//   - So the new leader is chosen after send time + TTL, while the old one
//     stopped at send time + TTL - TTL/8 by its own monotonic clock. The
//     margin (375 ms by default) covers clock rate differences and writes
//     already in flight when the deadline passes.
//
// A fenced broker also stops answering as a group or transaction
// coordinator (reads too: a new coordinator may already have accepted
// commits its memory lacks). A broker whose lease was lost registers
// again, and is unfenced only once its metadata is at its new
// registration's revision, so it has seen every leadership the controller
// moved away meanwhile; renewals before that do not unfence it.
//
// Failover time is bounded by the TTL: a broker that dies expires at most
// TTL after its last renewal (between TTL - TTL/4 and TTL after its death),
// etcd revokes expired leases every 500 ms, and the controller's write and
// the watches take milliseconds. When the dead broker also hosted etcd's
// raft leader, the members first elect a new one (election timeout 500 ms,
// randomized up to 1 s, with the embedded member's 50 ms heartbeat), and
// the new raft leader extends every lease by one election timeout: with
// the default TTL of 3 s that is 4-5.5 s from death to new leader.
package cluster
