package broker

// ListPartitionReassignments: v0
//
// KIP-455. The reassignments in progress: of every partition when Topics is
// null, else of the named partitions (those that do not exist or are not
// being reassigned are left out, as in Kafka). Each lists the full replica
// set (the target, then the replicas being removed) and the adding and
// removing replicas. In a cluster it reads etcd, so a reassignment written
// through any broker is seen at once; on a single node there are none.

import (
	"context"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ListPartitionReassignments, 0, 0, (*Broker).handleListPartitionReassignments)
}

func (b *Broker) handleListPartitionReassignments(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if b.cluster == nil {
		return resp, nil
	}
	var parts []metadata.TopicPartition
	if req.Topics != nil {
		parts = []metadata.TopicPartition{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, metadata.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
	}
	timeout := time.Duration(max(req.TimeoutMillis, 1000)) * time.Millisecond
	ctx, cancel := context.WithTimeout(r.ctx, timeout)
	rs, err := b.cluster.node.ListPartitionReassignments(ctx, parts)
	cancel()
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		if ctx.Err() != nil {
			resp.ErrorCode = kerr.RequestTimedOut.Code
		}
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp, nil
	}
	for _, ra := range rs { // sorted by topic, then partition
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != ra.Topic {
			st := kmsg.NewListPartitionReassignmentsResponseTopic()
			st.Topic = ra.Topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		sp.Partition = ra.Partition
		sp.Replicas = nonNil(ra.Replicas)
		sp.AddingReplicas = nonNil(ra.AddingReplicas)
		sp.RemovingReplicas = nonNil(ra.RemovingReplicas)
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, sp)
	}
	return resp, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
