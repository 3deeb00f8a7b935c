package broker

// DescribeTopicPartitions (75): v0
//
// What `kafka-topics --describe` asks a Kafka 3.8+ broker for instead of
// Metadata: the named topics (none: every topic the client may DESCRIBE),
// in name order, with each partition's leader, epoch, replicas, ISR and
// offline replicas, paged: at most ResponsePartitionLimit partitions
// (capped at 2000, as Kafka's max.request.partition.size.limit) per answer,
// the rest named by NextCursor, from which the next request starts. A
// named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, one the
// client may not DESCRIBE TOPIC_AUTHORIZATION_FAILED; nothing is created.
//
// EligibleLeaderReplicas and LastKnownELR (KIP-966) are empty: Gregor
// keeps no ELR (its eligible.leader.replicas.version is 0). A leader is
// chosen from the ISR only, and from the other replicas only with
// unclean.leader.election.enable, so no replica outside the ISR is known
// to be eligible.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeTopicPartitions, 0, 0, (*Broker).handleDescribeTopicPartitions)
}

// maxDescribedPartitions is Kafka's max.request.partition.size.limit.
const maxDescribedPartitions = 2000

func (b *Broker) handleDescribeTopicPartitions(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribedPartitions {
		limit = maxDescribedPartitions
	}
	var names []string
	all := len(req.Topics) == 0
	if all {
		b.mu.RLock()
		for name := range b.topics {
			names = append(names, name)
		}
		b.mu.RUnlock()
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	start := int32(0)
	if c := req.Cursor; c != nil {
		i, _ := slices.BinarySearch(names, c.Topic)
		names = names[i:]
		if len(names) > 0 && names[0] == c.Topic {
			start = max(c.Partition, 0)
		}
	}
	for i, name := range names {
		first := int32(0)
		if i == 0 {
			first = start
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		t := b.lookupTopic(name)
		switch {
		case !b.metadataVisible(r, name):
			if all {
				continue
			}
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case t == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			rt.AuthorizedOperations = b.topicAuthorizedOps(r, name) // as Kafka answers
		default:
			rt.TopicID = t.id
			rt.IsInternal = isInternalTopic(name)
			rt.AuthorizedOperations = b.topicAuthorizedOps(r, name)
			parts := b.partitionsOf(t)
			for _, p := range parts {
				if p.index < first {
					continue
				}
				if limit == 0 {
					resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.index}
					break
				}
				limit--
				v := b.partitionView(p)
				rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
				rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.index, v.leader, v.leaderEpoch
				rp.Replicas, rp.ISR, rp.OfflineReplicas = v.replicas, v.isr, v.offline
				rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
				if v.leader < 0 {
					rp.ErrorCode = kerr.LeaderNotAvailable.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if resp.NextCursor != nil {
			if len(rt.Partitions) > 0 {
				resp.Topics = append(resp.Topics, rt)
			}
			break
		}
		resp.Topics = append(resp.Topics, rt)
		if limit == 0 && i+1 < len(names) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
			break
		}
	}
	return resp, nil
}
