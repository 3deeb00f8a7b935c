package broker

// ShareGroupHeartbeat: v1 (KIP-932; v0 was Kafka 4.0's early access)
// ShareGroupDescribe: v1
//
// Share group membership is the coordinator's (coordinator/share.go); a
// member leaving or expiring releases the records it acquired on this
// broker (shares.go). v1 requires a client-generated member id.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(kmsg.ShareGroupHeartbeat, 1, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		clientID, host := r.memberClient()
		return b.groups.ShareGroupHeartbeat(r.msg.(*kmsg.ShareGroupHeartbeatRequest), clientID, host), nil
	})
	register(kmsg.ShareGroupDescribe, 1, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.ShareGroupDescribe(r.msg.(*kmsg.ShareGroupDescribeRequest)), nil
	})
	coordinated(kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe)
}
