package broker

// StreamsGroupDescribe: v0-1 (KIP-1071, coordinator/streams.go). v1 adds
// the assignor's name ("sticky") and, when IncludeTopologyDescription
// asks, the topology description a member pushed
// (93_streams_group_topology_description_update.go): AVAILABLE (3) with
// it, NOT_STORED (1) without (or with no plugin configured, as in Kafka);
// not asked, NOT_REQUESTED (0).
// With streams.version finalized at 0 every group answers
// UNSUPPORTED_VERSION, as Kafka does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.StreamsGroupDescribe, 0, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		req := r.msg.(*kmsg.StreamsGroupDescribeRequest)
		if b.streamsGroupsOff() {
			resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
			for _, g := range req.Groups {
				rg := kmsg.NewStreamsGroupDescribeResponseGroup()
				rg.Group, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp, nil
		}
		return b.groups.StreamsGroupDescribe(req), nil
	})
	coordinated(kmsg.StreamsGroupDescribe)
}
