package broker

// ShareGroupHeartbeat: v1 (KIP-932; v0 was Kafka 4.0's early access)
// ShareGroupDescribe: v1
//
// Share group membership is the coordinator's (coordinator/share.go); a
// member leaving or expiring releases the records it acquired on this
// broker (share.Sessions.MemberLeft, shares.go). v1 requires a
// client-generated member id.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ShareGroupHeartbeat, 1, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		if b.shareGroupsOff() {
			resp := r.msg.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
		clientID, host := r.memberClient()
		return b.groups.ShareGroupHeartbeat(r.msg.(*kmsg.ShareGroupHeartbeatRequest), clientID, host), nil
	})
	register(kmsg.ShareGroupDescribe, 1, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		req := r.msg.(*kmsg.ShareGroupDescribeRequest)
		if b.shareGroupsOff() {
			resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
			for _, g := range req.GroupIDs {
				rg := kmsg.NewShareGroupDescribeResponseGroup()
				rg.GroupID, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp, nil
		}
		return b.groups.ShareGroupDescribe(req), nil
	})
	coordinated(kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe)
}
