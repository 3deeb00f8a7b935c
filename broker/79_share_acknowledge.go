package broker

// ShareAcknowledge: v1-2 (KIP-932; v2 adds IsRenewAck and the Renew type,
// KIP-1222)
//
// Acknowledges records acquired with ShareFetch, in the member's share
// session: the epoch must be the session's current one (and moves it on);
// 0 cannot open a session (INVALID_SHARE_SESSION_EPOCH); -1 applies the
// acknowledgements, releases the member's other acquired records and
// closes the session. Each partition's batches are applied all or none:
// INVALID_RECORD_STATE for offsets not acquired by this member,
// INVALID_REQUEST for a malformed batch.

import (
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ShareAcknowledge, 1, 2, (*Broker).handleShareAcknowledge) }

func (b *Broker) handleShareAcknowledge(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if b.shareGroupsOff() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	group, member := "", ""
	if req.GroupID != nil {
		group = *req.GroupID
	}
	if req.MemberID != nil {
		member = *req.MemberID
	}
	if group == "" || member == "" || (req.Version < 2 && req.IsRenewAck) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if code := b.shareSessions.Acknowledge(r.shareOwner(), share.SessionKey{Group: group, Member: member}, req.ShareSessionEpoch); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			part, code := b.shareTarget(t.TopicID, p.Partition)
			if code == 0 {
				batches := make([]coordinator.AckBatch, 0, len(p.AcknowledgementBatches))
				for _, ab := range p.AcknowledgementBatches {
					batches = append(batches, coordinator.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
				}
				code, rp.ErrorMessage = b.shareAcknowledge(group, member, part, batches, req.IsRenewAck)
			} else if code == kerr.NotLeaderForPartition.Code && part != nil {
				if br, leader, epoch, ok := b.leaderHint(part); ok {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
					resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: br.id, Host: br.host, Port: br.port, Rack: br.rack})
				}
			}
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == share.FinalEpoch {
		b.shares.ReleaseMember(group, member)
	}
	// Kafka 4.4 answers the lock duration at v2 whether or not the request
	// renews (measured by make conformance).
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(b.shares.LockDuration(group).Milliseconds())
	}
	return resp, nil
}
