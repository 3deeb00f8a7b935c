// Package metadata is the model of a Gregor cluster's metadata, shared by
// the broker that reads it and the store that keeps it: an Image (Kafka's
// MetadataImage) of the live brokers, the controller, topics with their
// partitions' replica assignment, leadership and ISR, and the stored ACLs,
// quotas and dynamic configs, as of one revision of the store; the changes
// a broker proposes (ISRChange), reassignments, the errors the store
// returns, JoinConfig, what a broker gives the controller quorum it
// joins, and NewUUID, the rule for new topic and cluster ids.
//
// It holds data and rules over data only: no store, no I/O (NewUUID
// reads the system's random source), and it imports
// nothing of Gregor's nor anything outside the standard library, so that a
// broker that is the single node of its own cluster links none of the
// cluster's machinery. Package cluster keeps this metadata in etcd; package
// broker defines the interface it needs of such a store (broker.Cluster)
// and is given one (broker.Config.JoinCluster) by whoever wires the
// program, cmd/gregor.
package metadata
