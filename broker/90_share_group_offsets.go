package broker

// DescribeShareGroupOffsets: v0-1 (v1 adds Lag, KIP-1226)
// AlterShareGroupOffsets: v0
// DeleteShareGroupOffsets: v0
//
// The share-partition start offsets (SPSO) of a share group, from the
// share-partition state on this broker (shares.go; in a cluster only the
// partitions whose state is on the coordinator). Describe reports -1 for
// partitions without state; null topics describe every partition with
// state. Alter and Delete need the group to have no members
// (NON_EMPTY_GROUP); Alter creates an unknown group, as a share group, and
// the partitions' state at the given offsets. A classic or consumer group
// id is GROUP_ID_NOT_FOUND. Lag is the high watermark minus the SPSO.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeShareGroupOffsets, 0, 1, (*Broker).handleDescribeShareGroupOffsets)
	register(kmsg.AlterShareGroupOffsets, 0, 0, (*Broker).handleAlterShareGroupOffsets)
	register(kmsg.DeleteShareGroupOffsets, 0, 0, (*Broker).handleDeleteShareGroupOffsets)
	coordinated(kmsg.DescribeShareGroupOffsets, kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets)
}

func (b *Broker) handleDescribeShareGroupOffsets(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if err := b.groups.ShareGroupStatus(rg.GroupID, false, false); err != nil {
			g.ErrorCode = err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		states := b.shareStates(rg.GroupID)
		describe := func(t *topic, partition int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
			p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = partition, -1, -1, -1
			sp := states[tidp{t.id, partition}]
			part := partitionAt(b.partitionsOf(t), partition)
			if sp == nil || part == nil {
				return p
			}
			p.StartOffset = sp.StartOffset()
			p.LeaderEpoch = part.epoch.Load()
			if part.log != nil {
				p.Lag = max(part.log.HighWatermark()-p.StartOffset, 0)
			}
			return p
		}
		if rg.Topics == nil {
			byTopic := map[uuid][]int32{}
			for k := range states {
				byTopic[k.topic] = append(byTopic[k.topic], k.partition)
			}
			for id, ps := range byTopic {
				t := b.lookupTopicID(id)
				if t == nil {
					continue
				}
				gt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				gt.Topic, gt.TopicID = t.name, t.id
				for _, p := range ps {
					gt.Partitions = append(gt.Partitions, describe(t, p))
				}
				g.Topics = append(g.Topics, gt)
			}
		}
		for _, rt := range rg.Topics {
			gt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			gt.Topic = rt.Topic
			t := b.lookupTopic(rt.Topic)
			for _, pi := range rt.Partitions {
				if t == nil {
					p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					p.Partition, p.StartOffset, p.LeaderEpoch = pi, -1, -1
					p.ErrorCode = kerr.UnknownTopicOrPartition.Code
					gt.Partitions = append(gt.Partitions, p)
					continue
				}
				gt.TopicID = t.id
				gt.Partitions = append(gt.Partitions, describe(t, pi))
			}
			g.Topics = append(g.Topics, gt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func (b *Broker) handleAlterShareGroupOffsets(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if err := b.groups.ShareGroupStatus(req.GroupID, true, true); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		if t != nil {
			st.TopicID = t.id
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			var part *partition
			if t != nil {
				part = partitionAt(b.partitionsOf(t), rp.Partition)
			}
			switch {
			case part == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				sp.ErrorCode = kerr.InvalidRequest.Code
			default:
				b.setShareStart(req.GroupID, t.id, rp.Partition, rp.StartOffset)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) handleDeleteShareGroupOffsets(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if err := b.groups.ShareGroupStatus(req.GroupID, false, true); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		if t := b.lookupTopic(rt.Topic); t == nil {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		} else {
			st.TopicID = t.id
			b.deleteShareStates(req.GroupID, t.id)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
