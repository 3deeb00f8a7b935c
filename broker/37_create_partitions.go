package broker

// CreatePartitions: v0-3
//
// Grows a topic to count partitions (never shrinks: INVALID_PARTITIONS).
// A manual assignment must give one replica list, naming this broker only,
// per new partition (INVALID_REPLICA_ASSIGNMENT). A topic named twice is
// INVALID_REQUEST; validate_only changes nothing. The controller mutation
// quota (mutation_quota.go) counts the partitions added.

import (
	"fmt"

	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreatePartitions, 0, 3, (*Broker).handleCreatePartitions) }

func (b *Broker) handleCreatePartitions(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	mq := b.mutationQuotaFor(r, 3)
	defer finishMutations(r, mq)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		e, msg := b.createPartitions(rt, seen[rt.Topic] > 1, req.ValidateOnly, mq)
		if e != nil {
			st.ErrorCode = e.Code
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) createPartitions(rt kmsg.CreatePartitionsRequestTopic, duplicate, validateOnly bool, mq *quota.MutationQuota) (*kerr.Error, string) {
	if duplicate {
		return kerr.InvalidRequest, "Duplicate topic in request."
	}
	t := b.lookupTopic(rt.Topic)
	if t == nil {
		return kerr.UnknownTopicOrPartition, "The topic '" + rt.Topic + "' does not exist."
	}
	current := int32(len(b.partitionsOf(t)))
	switch {
	case rt.Count < current:
		return kerr.InvalidPartitions, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, current, rt.Count)
	case rt.Count == current:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic already has %d partition(s).", current)
	}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-current {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", rt.Count-current, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.nodeID {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("Replica assignment %v names brokers other than the only one, %d.", a.Replicas, b.nodeID)
			}
		}
	}
	if !mq.Record(int(rt.Count - current)) {
		return throttledErr, throttledErr.Description
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.addPartitions(t, rt.Count); err != nil {
		b.log.Error("create partitions", "topic", rt.Topic, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}
