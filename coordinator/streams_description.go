package coordinator

// Streams group topology descriptions (KIP-1331, Kafka 4.4).
//
// A Kafka Streams 4.4 member pushes a description of its topology (its
// processors, sources, sinks, stores and global stores) with
// StreamsGroupTopologyDescriptionUpdate when a heartbeat answer asks for
// it (TopologyDescriptionRequired), and StreamsGroupDescribe v1 with
// IncludeTopologyDescription returns it (kafka-streams-groups --describe
// --topology). Kafka keeps the descriptions through a broker plugin
// (group.streams.topology.description.plugin.class); without one the
// push is UNSUPPORTED_VERSION, heartbeats never ask for it and a describe
// reports NOT_STORED. Gregor has the one plugin Kafka ships,
// org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin, under
// that name (Config.StreamsTopologyDescriptions): the coordinator keeps
// the last description of each group, for the group's topology epoch, in
// memory. Like Kafka's in-memory plugin it is lost when the coordinator
// moves or restarts; the group's members are then asked for it again.
//
// The checks of a push, in Kafka's order: no plugin (UNSUPPORTED_VERSION),
// an empty group or member id (INVALID_REQUEST), the coordinator's own
// errors, an unknown group or one of another type (GROUP_ID_NOT_FOUND), an
// unknown member (UNKNOWN_MEMBER_ID), a topology epoch other than the
// group's (INVALID_REQUEST).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The TopologyDescriptionStatus values of StreamsGroupDescribe v1 (0,
// NOT_REQUESTED, is a describe that did not ask).
const (
	topologyDescriptionNotStored int8 = 1
	topologyDescriptionAvailable int8 = 3
)

// StreamsGroupTopologyDescriptionUpdate stores a member's topology
// description (see above).
func (c *Coordinator) StreamsGroupTopologyDescriptionUpdate(req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	r := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	fail := func(err *kerr.Error, msg string) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		r.ErrorCode = err.Code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r
	}
	if !c.cfg.StreamsTopologyDescriptions {
		return fail(kerr.UnsupportedVersion, "The broker has no streams group topology description plugin configured.")
	}
	if req.Group == "" {
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	}
	if req.MemberID == "" {
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.coordinatorErrLocked(req.Group); err != nil {
		return fail(err, "")
	}
	g := c.groups[req.Group]
	if g == nil || g.st == nil {
		return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", req.Group))
	}
	sg := g.st
	if sg.members[req.MemberID] == nil {
		return fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group))
	}
	if sg.topology == nil || req.TopologyEpoch != sg.topology.epoch {
		current := int32(-1)
		if sg.topology != nil {
			current = sg.topology.epoch
		}
		return fail(kerr.InvalidRequest, fmt.Sprintf("Topology epoch %d does not match the group's current topology epoch %d.", req.TopologyEpoch, current))
	}
	d := req.TopologyDescription
	sg.description, sg.descriptionEpoch = &d, req.TopologyEpoch
	c.log.Info("streams group topology description stored", "group", req.Group, "topology_epoch", req.TopologyEpoch, "subtopologies", len(d.Subtopologies))
	return r
}

// describeTopologyWantedLocked reports whether a heartbeat answer of sg
// asks for the topology description: descriptions are kept, the group has
// a topology, and none is stored for its epoch.
//
// Lock should be held.
func (c *Coordinator) describeTopologyWantedLocked(sg *streamsGroup) bool {
	return c.cfg.StreamsTopologyDescriptions && sg.topology != nil &&
		(sg.description == nil || sg.descriptionEpoch != sg.topology.epoch)
}

// storedTopologyDescriptionLocked is StreamsGroupDescribe's description of
// sg when asked for: AVAILABLE with the description stored for the current
// topology epoch, NOT_STORED otherwise.
//
// Lock should be held.
func (c *Coordinator) storedTopologyDescriptionLocked(sg *streamsGroup) (*kmsg.StreamsGroupDescribeResponseGroupTopologyDescription, int8) {
	if sg.description == nil || sg.topology == nil || sg.descriptionEpoch != sg.topology.epoch {
		return nil, topologyDescriptionNotStored
	}
	return &kmsg.StreamsGroupDescribeResponseGroupTopologyDescription{
		Subtopologies: sg.description.Subtopologies,
		GlobalStores:  sg.description.GlobalStores,
	}, topologyDescriptionAvailable
}
