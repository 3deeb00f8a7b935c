package broker

// StreamsGroupTopologyDescriptionUpdate: v0 (KIP-1331, Kafka 4.4)
//
// A Kafka Streams member's push of its topology's description, which the
// group coordinator keeps when group.streams.topology.description.plugin.class
// names Kafka's in-memory plugin and StreamsGroupDescribe v1 returns
// (coordinator/streams_description.go; kafka-streams-groups --describe
// --topology). Without the plugin, or with streams.version finalized at 0,
// it is UNSUPPORTED_VERSION, as in Kafka. READ on the group is required
// (GROUP_AUTHORIZATION_FAILED, acl_apis.go): Kafka takes a push, like an
// offset commit, as no change to the group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.StreamsGroupTopologyDescriptionUpdate, 0, 0, func(b *Broker, r *request) (kmsg.Response, error) {
		req := r.msg.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
		if b.streamsGroupsOff() {
			resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
		return b.groups.StreamsGroupTopologyDescriptionUpdate(req), nil
	})
	coordinated(kmsg.StreamsGroupTopologyDescriptionUpdate)
}
