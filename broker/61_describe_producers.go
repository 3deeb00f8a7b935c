package broker

// DescribeProducers: v0
//
// The idempotent and transactional producers each partition's log knows:
// producer id and epoch, last sequence and timestamp, and the first offset
// of the producer's open transaction (-1 when none). As in Kafka any
// replica answers from its own copy of the log (a follower tracks the
// producers of the batches it copies), so kafka-transactions find-hanging
// --broker-id can ask each broker; a broker holding no replica answers
// NOT_LEADER_OR_FOLLOWER. Unknown topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeProducers, 0, 0, (*Broker).handleDescribeProducers) }

func (b *Broker) handleDescribeProducers(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		parts := b.topicPartitions(rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			part := partitionAt(parts, p)
			if part == nil || part.log == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if part != nil {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, ps := range part.log.ProducerStates() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.Epoch)
				ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.TxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
