package broker

// DescribeShareGroupOffsets: v0-1 (v1 adds Lag, KIP-1226)
// AlterShareGroupOffsets: v0
// DeleteShareGroupOffsets: v0
//
// The share-partition start offsets (SPSO) of a share group, from the
// share-partition state (package share, shares.go): on a single node this broker's, in a
// cluster the partition leaders', which this coordinator reads, sets and
// removes with the inter-broker share state requests
// (83_share_group_state.go). Describe reports start offset -1 and leader
// epoch 0 for partitions without state, null topics every partition with
// state. As in Kafka 4.4, a Describe naming its topics does not check the
// group or the topics: an unknown group, a classic or consumer group's id
// and an unknown topic are answered NONE with no state (Kafka reads the
// share-state summaries only); with null topics the group must be a share
// group (GROUP_ID_NOT_FOUND otherwise). Lag needs the
// high watermark: in a cluster it is -1 for partitions without a replica
// on the coordinator (a follower's high watermark may be a little behind
// the leader's). Alter and Delete need the group to have no members
// (NON_EMPTY_GROUP); Alter creates an unknown group, as a share group, and
// the partitions' state at the given offsets. A classic or consumer group
// id is GROUP_ID_NOT_FOUND. Lag is the high watermark minus the SPSO.

import (
	"slices"

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
		if err := b.groups.ShareGroupStatus(rg.GroupID, false, false); err != nil && (rg.Topics == nil || err != kerr.GroupIDNotFound) {
			g.ErrorCode = err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		// The SPSO of the partitions asked for (of all with state for null
		// topics): this broker's state on a single node, the leaders' in a
		// cluster (83_share_group_state.go).
		var ask []topicIDPartition
		if rg.Topics == nil {
			if b.cluster == nil {
				for k := range b.shares.States(rg.GroupID) {
					ask = append(ask, k)
				}
			} else {
				for _, t := range b.topicList() {
					if isInternalTopic(t.name) {
						continue
					}
					for i := range b.partitionsOf(t) {
						ask = append(ask, topicIDPartition{TopicID: t.id, Partition: int32(i)})
					}
				}
			}
		} else {
			for _, rt := range rg.Topics {
				if t := b.lookupTopic(rt.Topic); t != nil {
					for _, pi := range rt.Partitions {
						ask = append(ask, topicIDPartition{TopicID: t.id, Partition: pi})
					}
				}
			}
		}
		found := b.shareStartOffsetsOf(rg.GroupID, ask)
		describe := func(t *topic, partition int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
			p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = partition, -1, 0, -1
			res, ok := found[topicIDPartition{TopicID: t.id, Partition: partition}]
			part := partitionAt(b.partitionsOf(t), partition)
			if !ok || part == nil {
				return p
			}
			if res.code != 0 {
				p.ErrorCode = res.code
				return p
			}
			if res.startOffset < 0 {
				return p // no state: Kafka's summary reads leader epoch 0
			}
			p.StartOffset, p.LeaderEpoch = res.startOffset, res.leaderEpoch
			if p.StartOffset >= 0 && part.log != nil {
				p.Lag = max(part.log.HighWatermark()-p.StartOffset, 0)
			}
			return p
		}
		if rg.Topics == nil {
			byTopic := map[uuid][]int32{}
			for k, res := range found {
				if res.code == 0 && res.startOffset >= 0 {
					byTopic[k.TopicID] = append(byTopic[k.TopicID], k.Partition)
				}
			}
			for id, ps := range byTopic {
				t := b.lookupTopicID(id)
				if t == nil {
					continue
				}
				slices.Sort(ps)
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
					p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = pi, -1, 0, -1
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
	offsets := map[topicIDPartition]int64{}
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
			case b.cluster == nil:
				sp.ErrorCode = b.setShareStart(req.GroupID, t.id, rp.Partition, rp.StartOffset)
			default:
				offsets[topicIDPartition{TopicID: t.id, Partition: rp.Partition}] = rp.StartOffset
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(offsets) > 0 {
		// In a cluster the leaders hold the state (83_share_group_state.go).
		res := b.setShareStartOffsets(req.GroupID, offsets)
		for i := range resp.Topics {
			st := &resp.Topics[i]
			for j := range st.Partitions {
				if r, ok := res[topicIDPartition{TopicID: st.TopicID, Partition: st.Partitions[j].Partition}]; ok && st.Partitions[j].ErrorCode == 0 {
					st.Partitions[j].ErrorCode = r.code
				}
			}
		}
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
			if b.cluster == nil {
				b.deleteShareStates(req.GroupID, t.id)
			} else if err := b.deleteShareStatesEverywhere(r.ctx, req.GroupID, []uuid{t.id}); err != nil {
				b.log.Warn("deleting share-partition state on the brokers", "group", req.GroupID, "topic", t.name, "err", err)
				st.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
