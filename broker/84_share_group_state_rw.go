package broker

// ReadShareGroupState: v0, WriteShareGroupState: v0-1 (inter-broker,
// KIP-932)
//
// The share coordinator's API (share_state_topic.go,
// coordinator/sharecoord.go): a partition leader reads a share-partition's
// state when it first needs it and writes it after every change. Each
// partition answers NOT_COORDINATOR unless this broker is its share
// coordinator (COORDINATOR_LOAD_IN_PROGRESS while loading). A Read of a
// share-partition without state answers StartOffset -1 and no batches, as
// Kafka does for an uninitialized one. They need CLUSTER_ACTION on the
// cluster when ACLs are enabled.

import (
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ReadShareGroupState, 0, 0, (*Broker).handleReadShareGroupState)
	register(kmsg.WriteShareGroupState, 0, 1, (*Broker).handleWriteShareGroupState)
	for _, k := range []kmsg.Key{kmsg.ReadShareGroupState, kmsg.WriteShareGroupState} {
		aclChecks[k] = checkCluster(acl.ClusterAction)
	}
}

func (b *Broker) handleReadShareGroupState(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ReadShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	b.shareLog.ensure()
	for _, rt := range req.Topics {
		st := kmsg.NewReadShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			sp.Partition, sp.StartOffset = rp.Partition, -1
			k := coordinator.ShareStateKey{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}
			code := int16(0)
			if req.GroupID == "" {
				code = kerr.InvalidGroupID.Code
			} else if code = b.shareCoordinatorCode(k); code == 0 {
				var snap coordinator.ShareSnapshot
				var found bool
				snap, found, code = b.shareCoord.Read(k, rp.LeaderEpoch)
				if code == 0 && found {
					sp.StateEpoch, sp.StartOffset = snap.StateEpoch, snap.StartOffset
					for _, sb := range snap.StateBatches {
						rb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
						rb.FirstOffset, rb.LastOffset, rb.DeliveryState, rb.DeliveryCount = sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount
						sp.StateBatches = append(sp.StateBatches, rb)
					}
				}
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) handleWriteShareGroupState(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	b.shareLog.ensure()
	for _, rt := range req.Topics {
		st := kmsg.NewWriteShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			k := coordinator.ShareStateKey{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}
			code := int16(0)
			if req.GroupID == "" {
				code = kerr.InvalidGroupID.Code
			} else if code = b.shareCoordinatorCode(k); code == 0 {
				w := coordinator.ShareWrite{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset,
					DeliveryCompleteCount: -1, StateBatches: make([]coordinator.ShareStateBatch, 0, len(rp.StateBatches))}
				if req.Version >= 1 {
					w.DeliveryCompleteCount = rp.DeliveryCompleteCount
				}
				for _, sb := range rp.StateBatches {
					if sb.LastOffset < sb.FirstOffset {
						code = kerr.InvalidRequest.Code
						break
					}
					w.StateBatches = append(w.StateBatches, coordinator.ShareStateBatch{FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
						DeliveryState: sb.DeliveryState, DeliveryCount: sb.DeliveryCount})
				}
				if code == 0 {
					code = b.shareCoord.Write(k, w)
				}
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
