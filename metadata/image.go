package metadata

import "slices"

// Broker is a live broker: one whose leased registration is in etcd.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string
	// Listeners are the broker's advertised addresses by listener name;
	// empty for a broker that registered none (Host and Port then serve
	// every listener).
	Listeners map[string]Endpoint
	// Epoch is the etcd create revision of the registration; it grows each
	// time the broker registers anew (Kafka's broker epoch).
	Epoch int64
	// LogDirOffline is set while the broker's log dir is offline (a write
	// failed: a full disk): the controller then treats it as it treats a
	// dead broker for leadership and the ISR (Kafka's offline log dirs),
	// while it stays registered and serves reads.
	LogDirOffline bool
	// ControlledShutdown is set by a broker that is stopping (Kafka's
	// controlled shutdown): the controller moves the leadership of its
	// partitions to other in-sync replicas and takes it out of the ISRs,
	// as for LogDirOffline, while it still serves.
	ControlledShutdown bool
	// SchemaRegistry is the URL of the broker's schema registry listener,
	// empty without one: the others forward registry requests to the
	// leader of _schemas-0's.
	SchemaRegistry string
}

// Eligible reports whether b may lead partitions and be in their ISRs: it
// is neither stopping nor without its log dir. The controller counts an
// ineligible broker as dead; a leader does not add it to an ISR (KIP-841).
func (b Broker) Eligible() bool { return !b.LogDirOffline && !b.ControlledShutdown }

// Partition is the replica assignment and leadership of one partition.
type Partition struct {
	Index    int32
	Replicas []int32
	ISR      []int32
	// Leader is the leader's node id, or -1 while the partition has none.
	Leader int32
	// LeaderEpoch grows with every leader change (including to -1).
	LeaderEpoch int32
	// PartitionEpoch grows with every change of the partition's state.
	PartitionEpoch   int32
	AddingReplicas   []int32
	RemovingReplicas []int32

	// LeaderBrokerEpoch is the Broker.Epoch the leader had when it was
	// elected: a leader that registered anew since (a restart) lost its
	// in-memory state and is treated as dead by the controller.
	LeaderBrokerEpoch int64

	// Version is the store's version of the partition's record (its
	// etcd mod revision): a write conditioned on it cannot overwrite a
	// newer decision.
	Version int64
}

// Topic is a topic's id, configs and partitions.
type Topic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []Partition // indexed by partition index

	// Version is the store's version of the topic's record (its etcd mod
	// revision).
	Version int64
}

// Image is an immutable snapshot of the cluster metadata as of the
// store's revision Revision (Kafka's MetadataImage). Callers must not
// modify it. Images of successive revisions may share a Topic (the same
// pointer) that did not change between them, as Kafka's image deltas
// share what they do not touch: a reader may skip a shared Topic it has
// already applied.
type Image struct {
	Revision  int64
	ClusterID string
	// ControllerID is the node id of the elected controller, or -1.
	ControllerID int32
	Brokers      map[int32]Broker
	Topics       map[string]*Topic
	// Collections are the record collections the broker keeps as cluster
	// metadata (ACL bindings under "acls", client quotas under "quotas",
	// dynamic broker and group configs under "broker-configs" and
	// "group-configs", …), by name.
	Collections map[string]RecordSet
}

// RecordSet is one collection of records: opaque values by key (their
// owner's JSON), and the store's revision of the collection's last change
// (it moves with every change, and only then, but for a reload of the
// store, which moves it too).
type RecordSet struct {
	Records  map[string][]byte
	Revision int64
}

// BrokerIDs returns the ids of the live brokers, sorted.
func (m *Image) BrokerIDs() []int32 {
	ids := make([]int32, 0, len(m.Brokers))
	for id := range m.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Partition returns the state of one partition.
func (m *Image) Partition(topic string, p int32) (Partition, bool) {
	t := m.Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[p], true
}

// TopicByID returns the topic with the given id, or nil.
func (m *Image) TopicByID(id [16]byte) *Topic {
	for _, t := range m.Topics {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Endpoint is a host and port a broker advertises.
type Endpoint struct {
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Reassignment is a partition reassignment in progress.
type Reassignment struct {
	TopicPartition
	// Replicas is the full replica set: the target first, then the
	// replicas being removed.
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// Reassigning reports whether a reassignment of p is in progress.
func (p *Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// OriginalReplicas is the replica set before the reassignment in progress
// (Replicas minus AddingReplicas): what a cancel reverts to.
func (p *Partition) OriginalReplicas() []int32 {
	return Without(p.Replicas, p.AddingReplicas)
}

// Without returns the members of a not in b, in a's order.
func Without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// ISRChange is one partition's AlterPartition in AlterPartitions.
type ISRChange struct {
	Topic                       string
	Partition                   int32
	LeaderEpoch, PartitionEpoch int32
	ISR                         []int32
}

// ISRResult is what AlterPartitions did for one ISRChange: the partition's
// new state (or its current one) and AlterPartition's error.
type ISRResult struct {
	Partition Partition
	Err       error
}
