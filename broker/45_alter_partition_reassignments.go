package broker

// AlterPartitionReassignments: v0-1
//
// KIP-455. Each named partition gets a target replica list, or null to
// cancel the reassignment in progress. In a cluster each change is one
// compare-and-set on the partition's state in etcd
// (Cluster.AlterPartitionReassignments): Replicas becomes the target
// followed by the replicas being removed, with AddingReplicas and
// RemovingReplicas set; the leader's followers grow by the added replicas,
// it adds each to the ISR once caught up, and the controller then
// completes the reassignment (the removed replicas leave; a removed leader
// hands over to the first target replica in the ISR), after which every
// removed broker deletes its copy. The answer does not wait for that:
// ListPartitionReassignments tells when it is done. Any broker answers,
// as the controller would.
//
// Per partition: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT for
// an empty list, a broker listed twice or one that is not live;
// NO_REASSIGNMENT_IN_PROGRESS for a cancel of none; UNKNOWN_SERVER_ERROR
// for a cancel that would leave the ISR empty (as Kafka, unless unclean
// leader election is on). v1 (KIP-860) adds AllowReplicationFactorChange:
// when false, a target whose length differs from the partition's
// replication factor before any reassignment in progress is
// INVALID_REPLICATION_FACTOR (checked against this broker's metadata
// snapshot); the response echoes the flag.
//
// On a single node, as on a one-broker Kafka, the only valid target is
// this broker alone (nothing to do); any other broker is
// INVALID_REPLICA_ASSIGNMENT and a cancel NO_REASSIGNMENT_IN_PROGRESS.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AlterPartitionAssignments, 0, 1, (*Broker).handleAlterPartitionReassignments)
}

func (b *Broker) handleAlterPartitionReassignments(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF

	// First pass: what can be answered here; the rest goes to etcd.
	results := map[metadata.TopicPartition]error{}
	targets := map[metadata.TopicPartition][]int32{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if err := b.precheckReassignment(tp, rp.Replicas, allowRF); err != nil {
				results[tp] = err
				delete(targets, tp)
				continue
			}
			delete(results, tp)
			targets[tp] = rp.Replicas
		}
	}
	if b.cluster != nil && len(targets) > 0 {
		timeout := time.Duration(max(req.TimeoutMillis, 1000)) * time.Millisecond
		ctx, cancel := context.WithTimeout(r.ctx, timeout)
		for tp, err := range b.cluster.node.AlterPartitionReassignments(ctx, targets) {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", errReassignmentTimedOut, err)
			}
			results[tp] = err
		}
		cancel()
		b.awaitMetadata(time.Second, func() bool { return true })
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if err := results[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]; err != nil {
				sp.ErrorCode = reassignmentErrorCode(err)
				sp.ErrorMessage = kmsg.StringPtr(err.Error())
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

var (
	errReassignmentTimedOut = errors.New("the reassignment was not written in time")
	errReplicationFactor    = errors.New("the replication factor may not change")
)

// precheckReassignment answers what does not need etcd: on a single node,
// everything; in a cluster, (v1) the replication factor, from this
// broker's metadata.
func (b *Broker) precheckReassignment(tp metadata.TopicPartition, target []int32, allowRF bool) error {
	if b.cluster == nil {
		if partitionAt(b.topicPartitions(tp.Topic), tp.Partition) == nil {
			return metadata.ErrUnknownTopicOrPartition
		}
		if target == nil {
			return metadata.ErrNoReassignmentInProgress
		}
		if !slices.Equal(target, []int32{b.nodeID}) {
			if len(target) > 1 && !allowRF {
				return fmt.Errorf("%w: from 1 to %d", errReplicationFactor, len(target))
			}
			return fmt.Errorf("%w: the only broker is %d, the target is %v", metadata.ErrInvalidReplicaAssignment, b.nodeID, target)
		}
		return nil
	}
	// A partition missing from the snapshot is left to etcd to answer: it
	// may have just been created through another broker.
	p, ok := b.cluster.node.Metadata().Partition(tp.Topic, tp.Partition)
	if ok && target != nil && !allowRF {
		if rf := len(p.OriginalReplicas()); rf != len(target) {
			return fmt.Errorf("%w: from %d to %d", errReplicationFactor, rf, len(target))
		}
	}
	return nil
}

func reassignmentErrorCode(err error) int16 {
	switch {
	case errors.Is(err, metadata.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, metadata.ErrNoReassignmentInProgress):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, errReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, errReassignmentTimedOut):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
