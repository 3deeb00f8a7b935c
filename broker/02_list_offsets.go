package broker

// ListOffsets: v1-10 (v0 was removed in Kafka 4)
//
// Special timestamps: -1 latest (the high watermark, or the last stable
// offset for read_committed), -2 earliest (log start offset), -3 the record
// with the largest timestamp (v7+), -4 earliest local (v8+; the log start
// offset: Gregor has no tiered storage), -5 latest tiered (v9+; -1 without
// tiered storage). A timestamp >= 0 finds the first record whose timestamp
// is at least that, through the time index; none gives offset -1. A
// partition named twice is INVALID_REQUEST; a stale current leader epoch is
// FENCED_LEADER_EPOCH.

import (
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListOffsets, 1, 10, (*Broker).handleListOffsets) }

const (
	listLatest         = -1
	listEarliest       = -2
	listMaxTimestamp   = -3
	listEarliestLocal  = -4
	listLatestTiered   = -5
	isolationCommitted = 1
)

func (b *Broker) handleListOffsets(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		parts := b.topicPartitions(rt.Topic)
		denied := b.topicDenied(r, acl.Describe, rt.Topic)
		seen := map[int32]int{}
		for _, rp := range rt.Partitions {
			seen[rp.Partition]++
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			switch {
			case denied != 0:
				sp.ErrorCode = denied
			case seen[rp.Partition] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case partitionAt(parts, rp.Partition) == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				p := parts[rp.Partition]
				epoch, code := b.servedEpoch(p)
				if sp.ErrorCode = code; code != 0 {
					break
				}
				if sp.ErrorCode = checkLeaderEpoch(rp.CurrentLeaderEpoch, epoch); sp.ErrorCode == 0 {
					b.listOffset(req, p, epoch, rp.Timestamp, &sp)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// listOffset answers one partition for the leader serving epoch (servedEpoch).
func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, p *partition, epoch int32, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) {
	l := p.log
	// The upper bound a consumer may see.
	upper := l.HighWatermark()
	if req.IsolationLevel == isolationCommitted {
		upper = l.LastStableOffset()
	}
	found := func(offset, timestamp int64) {
		sp.Offset, sp.Timestamp, sp.LeaderEpoch = offset, timestamp, epoch
	}
	if ldr := p.leader.Load(); ldr != nil && req.ReplicaID < 0 && upper < ldr.EpochStartOffset() && (ts == listLatest || ts == listMaxTimestamp || ts >= 0) {
		// A new leader's high watermark may still be below the previous
		// leader's until its followers catch up: answering it would move
		// a consumer's view of the end backwards (KIP-207).
		sp.ErrorCode = kerr.OffsetNotAvailable.Code
		return
	}
	switch {
	case ts == listLatest:
		found(upper, -1)
	case ts == listEarliest, ts == listEarliestLocal && req.Version >= 8:
		found(l.LogStartOffset(), -1)
	case ts == listMaxTimestamp && req.Version >= 7:
		if mts, off, ok := l.MaxTimestamp(); ok && off < upper {
			found(off, mts)
		}
	case ts == listLatestTiered && req.Version >= 9:
		// No tiered storage: nothing is tiered.
	case ts >= 0:
		if off, fts, ok := l.OffsetForTimestamp(ts); ok && off < upper {
			found(off, fts)
		}
	default:
		sp.ErrorCode = kerr.InvalidRequest.Code
	}
}
