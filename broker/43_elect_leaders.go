package broker

// ElectLeaders: v0-2
//
// Preferred election (type 0, the only one before v1) makes each named
// partition's first replica its leader if it is live and in the ISR;
// unclean election (type 1) gives a partition without a live leader one,
// from outside the ISR if need be. A null topic list means every partition.
// Each partition answers ELECTION_NOT_NEEDED when its leader is already the
// one asked for, PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE
// when no replica qualifies, UNKNOWN_TOPIC_OR_PARTITION. v1 adds the
// top-level error code, v2 is flexible. On a single node every partition
// already has its only possible leader: ELECTION_NOT_NEEDED.

import (
	"context"
	"errors"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ElectLeaders, 0, 2, (*Broker).handleElectLeaders) }

func (b *Broker) handleElectLeaders(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	preferred := req.Version == 0 || req.ElectionType == 0
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	var parts []metadata.TopicPartition
	if req.Topics == nil {
		for _, t := range b.topicList() {
			for i := range b.partitionsOf(t) {
				parts = append(parts, metadata.TopicPartition{Topic: t.name, Partition: int32(i)})
			}
		}
	} else {
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, metadata.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
	}
	var results map[metadata.TopicPartition]error
	if b.cluster != nil {
		timeout := time.Duration(max(req.TimeoutMillis, 1000)) * time.Millisecond
		ctx, cancel := context.WithTimeout(r.ctx, timeout)
		results = b.cluster.node.ElectLeaders(ctx, preferred, parts)
		cancel()
	}
	byTopic := map[string]int{}
	for _, tp := range parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		var err error
		if b.cluster == nil {
			err = metadata.ErrElectionNotNeeded
			if partitionAt(b.topicPartitions(tp.Topic), tp.Partition) == nil {
				err = metadata.ErrUnknownTopicOrPartition
			}
		} else {
			err = results[tp]
		}
		if err != nil {
			rp.ErrorCode = electionErrorCode(err)
			rp.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	if b.cluster != nil {
		b.awaitMetadata(time.Second, func() bool { return true })
	}
	return resp, nil
}

func electionErrorCode(err error) int16 {
	switch {
	case errors.Is(err, metadata.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, metadata.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, metadata.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, metadata.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, metadata.ErrFenced):
		return kerr.NotController.Code
	}
	return kerr.UnknownServerError.Code
}
