// Package link mirrors topics of another Kafka cluster (Apache Kafka, or
// any broker speaking its protocol) into this one byte for byte, at the
// same offsets, so that consumers move between the clusters without
// noticing: a cluster link, as Confluent's cluster linking and Redpanda's
// shadowing call it.
//
// A Link names its source (bootstrap servers and a Kafka client's
// properties), a pattern of topics and one of consumer groups. Links,
// their mirror topics and the group offsets they copied are records of a
// metastore collection ("links": a file under __meta on one node, etcd in
// a cluster), kept by Store.
//
// Every broker runs a Manager, and the Manager one runner per link:
//
//   - Each mirror partition is fetched from the source's leader by the
//     partition's leader here (read_uncommitted: aborted records and
//     transaction markers come along), one Fetch per source broker for all
//     the partitions led there, and its batches are appended as a
//     follower appends them (Host's Log.AppendMirrored): at their own
//     offsets, with their timestamps, producer ids, epochs, sequences,
//     compression and headers, only the partition leader epoch stamped
//     anew, so producer state and transactions are rebuilt as on the
//     source. Followers here replicate them as any other batches. The
//     source's log start offset is followed (DeleteRecords, retention).
//     A source broker that fails (killed, unreachable) holds back only the
//     partitions it leads, with a backoff of its own (100ms doubling to
//     5s); the link's status shows its error, and the source's metadata is
//     read every second meanwhile (first from the broker that answered
//     last), so that the partitions are fetched from the leaders the source
//     elects in its place as soon as it has. A source broker that does not
//     answer (stopped, its host gone) has one fetch out at a time, its
//     partitions with it; the others are fetched on, and the fetch is cut
//     short once the source elected another leader for one of them. Only
//     the source's high watermark is ever fetched (a consumer's Fetch), so
//     what a source leader loses in a failover was never mirrored.
//   - On the controller (Host.Controller), every sync interval, in a
//     goroutine of its own beside the fetching, the source topics
//     matching the pattern become mirror topics, created with the
//     source's partition count and the configs in SyncedConfigs, and keep
//     following partitions added and configs changed; the committed
//     offsets of the matching groups are copied verbatim for the mirror
//     topics while the group does not commit here itself (once it does,
//     its consumers have moved and the link leaves it alone), and the
//     source's literal ACLs on those topics and groups, and its prefixed ones
//     that cover one of them, are added here. Every source request of a
//     sync is bounded in time (sourceRequestTimeout; one that any broker
//     answers goes first to the broker that answered a fetch last), so a
//     stopped source broker delays a sync, never the fetching, and a hung
//     fetch never delays a sync. Its errors are the link's sync error
//     until the next sync.
//   - Until promoted, a mirror topic refuses produce (the broker asks
//     Store.ReadOnly). Promote mirrors each partition up to the source's
//     high watermark as of the promotion, aborts the transactions still
//     open there (Log.AbortOpenTransactions: their producers cannot end
//     them here, and they would hold the last stable offset), then, once
//     every partition's last stable offset reached the target, marks the
//     topic promoted: an ordinary topic from then on.
//
// A link's status (Manager.Status) is asked of any broker and gathers
// every broker's share (Manager.NodeStatus: the mirror partitions it
// fetches, with the source's end it saw and why one is held back, its
// fetching's error, and the sync's on the controller), the others' asked
// over the inter-broker connections (Host.PeerLinkStatus; the links API's
// node_status in package broker).
//
// Mirrored batches keep the source's producer ids, so the highest one seen
// is recorded (State.ProducerIDFloor) and the broker hands out producer
// ids above it: a producer moved here never shares one with a mirrored
// producer.
//
// # Locks
//
// runner.mu and Manager.mu are leaves; nothing is called under them but
// a mirror Log's offset getters.
package link
