package metadata

import "errors"

// Errors returned by the metadata store's methods; each maps to the Kafka error code of
// the same name.
var (
	// ErrTopicExists is returned by CreateTopic when the topic exists.
	ErrTopicExists = errors.New("cluster: topic already exists")
	// ErrUnknownTopicOrPartition is returned when the topic or partition
	// does not exist.
	ErrUnknownTopicOrPartition = errors.New("cluster: unknown topic or partition")
	// ErrInvalidTopic is returned for an empty topic name or one with a '/'.
	ErrInvalidTopic = errors.New("cluster: invalid topic name")
	// ErrInvalidPartitions is returned when a partition count is not
	// positive, or CreatePartitions would not add partitions.
	ErrInvalidPartitions = errors.New("cluster: invalid number of partitions")
	// ErrInvalidReplicationFactor is returned when the replication factor
	// is not positive or exceeds the number of live brokers.
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor")
	// ErrInvalidReplicaAssignment is returned when a manual assignment
	// names a broker that is not live, names one twice, or does not match
	// the partition count.
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment")
	// ErrNotLeader is returned by AlterPartition when this node is not the
	// partition's leader (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("cluster: not the leader")
	// ErrFencedLeaderEpoch is returned by AlterPartition when the leader
	// epoch given is not the current one.
	ErrFencedLeaderEpoch = errors.New("cluster: fenced leader epoch")
	// ErrInvalidUpdateVersion is returned by AlterPartition when the
	// partition epoch given is not the current one.
	ErrInvalidUpdateVersion = errors.New("cluster: invalid update version")
	// ErrInvalidRequest is returned by AlterPartition when the new ISR is
	// not a subset of the replicas or lacks the leader.
	ErrInvalidRequest = errors.New("cluster: invalid request")
	// ErrIneligibleReplica is returned by AlterPartition when the new ISR
	// adds a broker that is not live.
	ErrIneligibleReplica = errors.New("cluster: ineligible replica")
	// ErrElectionNotNeeded is returned by ElectLeaders when the partition
	// already has the leader the election would choose.
	ErrElectionNotNeeded = errors.New("cluster: election not needed")
	// ErrPreferredLeaderNotAvailable is returned by ElectLeaders when the
	// preferred replica is not live or not in the ISR.
	ErrPreferredLeaderNotAvailable = errors.New("cluster: preferred leader not available")
	// ErrEligibleLeadersNotAvailable is returned by an unclean ElectLeaders
	// when no replica is live.
	ErrEligibleLeadersNotAvailable = errors.New("cluster: eligible leaders not available")
	// ErrNoReassignmentInProgress is returned by AlterPartitionReassignments
	// when asked to cancel the reassignment of a partition that has none.
	ErrNoReassignmentInProgress = errors.New("cluster: no partition reassignment in progress")
	// ErrReassignmentUnclean is returned by AlterPartitionReassignments when
	// cancelling would leave the ISR empty (every member was being added)
	// and unclean leader election is off.
	ErrReassignmentUnclean = errors.New("cluster: cancelling the reassignment would need an unclean leader election")
	// ErrFenced is returned by writes made while this node's lease is not
	// known to be alive.
	ErrFenced = errors.New("cluster: broker is fenced")
	// ErrConflict is returned when a transaction kept losing to concurrent
	// writers.
	ErrConflict = errors.New("cluster: too many concurrent updates")
	// ErrBrokerNotRegistered is returned by UnregisterBroker when the
	// broker id has no registration, live or ended.
	ErrBrokerNotRegistered = errors.New("cluster: broker id is not registered")
	// ErrBrokerAlive is returned by UnregisterBroker when the broker's
	// session (its lease) has not ended: its registration is dropped only
	// once nobody can mistake it for a live broker.
	ErrBrokerAlive = errors.New("cluster: broker is alive")
)
