package broker

// DeleteRecords: v0-2
//
// Moves a partition's log start offset up to the given offset (-1 means the
// high watermark), deleting whole segments below it; the answer is the new
// low watermark. An offset above the high watermark is OFFSET_OUT_OF_RANGE.
// Records below the log start offset are invisible at once, even where
// their segment still holds later records.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteRecords, 0, 2, (*Broker).handleDeleteRecords) }

func (b *Broker) handleDeleteRecords(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		parts := b.topicPartitions(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			if p := partitionAt(parts, rp.Partition); p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if sp.ErrorCode = b.writeLeadership(p); sp.ErrorCode != 0 {
			} else if lw, err := p.log.DeleteRecordsBefore(rp.Offset); err != nil {
				sp.ErrorCode = readErrorCode(err)
				if sp.ErrorCode != kerr.OffsetOutOfRange.Code {
					b.log.Error("delete records", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				}
			} else {
				sp.LowWatermark = lw
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
