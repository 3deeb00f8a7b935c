package cluster

import "github.com/gregor-broker/gregor/metadata"

// The errors are package metadata's, so that a broker tells them apart
// without linking this package.
var (
	ErrTopicExists                 = metadata.ErrTopicExists
	ErrUnknownTopicOrPartition     = metadata.ErrUnknownTopicOrPartition
	ErrInvalidTopic                = metadata.ErrInvalidTopic
	ErrInvalidPartitions           = metadata.ErrInvalidPartitions
	ErrInvalidReplicationFactor    = metadata.ErrInvalidReplicationFactor
	ErrInvalidReplicaAssignment    = metadata.ErrInvalidReplicaAssignment
	ErrNotLeader                   = metadata.ErrNotLeader
	ErrFencedLeaderEpoch           = metadata.ErrFencedLeaderEpoch
	ErrInvalidUpdateVersion        = metadata.ErrInvalidUpdateVersion
	ErrInvalidRequest              = metadata.ErrInvalidRequest
	ErrIneligibleReplica           = metadata.ErrIneligibleReplica
	ErrElectionNotNeeded           = metadata.ErrElectionNotNeeded
	ErrPreferredLeaderNotAvailable = metadata.ErrPreferredLeaderNotAvailable
	ErrEligibleLeadersNotAvailable = metadata.ErrEligibleLeadersNotAvailable
	ErrNoReassignmentInProgress    = metadata.ErrNoReassignmentInProgress
	ErrReassignmentUnclean         = metadata.ErrReassignmentUnclean
	ErrFenced                      = metadata.ErrFenced
	ErrConflict                    = metadata.ErrConflict
	ErrBrokerNotRegistered         = metadata.ErrBrokerNotRegistered
	ErrBrokerAlive                 = metadata.ErrBrokerAlive
)

// The model is package metadata's; these names keep this package's code
// and its callers reading as they did.
type (
	Metadata       = metadata.Image
	Broker         = metadata.Broker
	Partition      = metadata.Partition
	Topic          = metadata.Topic
	Endpoint       = metadata.Endpoint
	TopicPartition = metadata.TopicPartition
	Reassignment   = metadata.Reassignment
	ISRChange      = metadata.ISRChange
	ISRResult      = metadata.ISRResult
	Voter          = metadata.Voter
	QuorumState    = metadata.QuorumState
	ReplicaState   = metadata.ReplicaState
	Config         = metadata.JoinConfig
)

// DefaultSessionTimeout: see metadata.DefaultSessionTimeout.
const DefaultSessionTimeout = metadata.DefaultSessionTimeout
