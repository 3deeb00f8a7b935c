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
	"slices"
	"time"

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
	d, err := normaliseTopologyDescription(req.TopologyDescription)
	if err != "" {
		return fail(kerr.InvalidRequest, err)
	}
	sg.description, sg.descriptionEpoch = &d, req.TopologyEpoch
	sg.askDelay = 0
	c.log.Info("streams group topology description stored", "group", req.Group, "topology_epoch", req.TopologyEpoch, "subtopologies", len(d.Subtopologies))
	return r
}

// The back-off between two asks for the same topology epoch, as Kafka's
// StreamsGroupTopologyDescriptionBackoff: 30 s, doubling up to an hour.
const (
	topologyAskInitialDelay = 30 * time.Second
	topologyAskMaxDelay     = time.Hour
)

// askTopologyDescriptionLocked reports whether heartbeat answer r of sg
// asks for the topology description, as Kafka 4.4 decides: descriptions
// are kept, r is no error and reports no stale topology, the group has a
// topology with no description stored for its epoch, and the group was
// not asked for that epoch within the back-off (a member answers the ask
// at once; the back-off keeps every member's next heartbeats from asking
// again while it does, and retries later if it never does).
//
// Lock should be held.
func (c *Coordinator) askTopologyDescriptionLocked(sg *streamsGroup, r *kmsg.StreamsGroupHeartbeatResponse) bool {
	if !c.cfg.StreamsTopologyDescriptions || r.ErrorCode != 0 || sg.topology == nil ||
		(sg.description != nil && sg.descriptionEpoch == sg.topology.epoch) {
		return false
	}
	for _, st := range r.Status {
		if st.StatusCode == streamsStatusStaleTopology {
			return false
		}
	}
	now, epoch := c.cfg.Now(), sg.topology.epoch
	switch {
	case sg.askDelay == 0 || sg.askedEpoch != epoch:
		sg.askDelay = topologyAskInitialDelay
	case now.Before(sg.askedUntil):
		return false
	default:
		sg.askDelay = min(2*sg.askDelay, topologyAskMaxDelay)
	}
	sg.askedEpoch, sg.askedUntil = epoch, now.Add(sg.askDelay)
	c.log.Info("streams group: asking for the topology description", "group_epoch", sg.epoch, "topology_epoch", epoch)
	return true
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

// The node types of a topology description.
const (
	topologyNodeSource    int8 = 1
	topologyNodeProcessor int8 = 2
	topologyNodeSink      int8 = 3
)

// normaliseTopologyDescription keeps of each node what Kafka's plugin
// model keeps, as StreamsGroupDescribe returns it: its name and
// successors, and a source's topics, a processor's stores, a sink's topic;
// lists without repeats. A node of another type, or a global store that is
// not a source and a processor, is refused with Kafka's message.
func normaliseTopologyDescription(d kmsg.TopologyDescription) (kmsg.TopologyDescription, string) {
	node := func(n kmsg.TopologyDescriptionNode) (kmsg.TopologyDescriptionNode, string) {
		out := kmsg.NewTopologyDescriptionNode()
		out.Name, out.NodeType, out.Successors = n.Name, n.NodeType, uniqueStrings(n.Successors)
		out.SourceTopics, out.Stores = []string{}, []string{}
		switch n.NodeType {
		case topologyNodeSource:
			out.SourceTopics = uniqueStrings(n.SourceTopics)
		case topologyNodeProcessor:
			out.Stores = uniqueStrings(n.Stores)
		case topologyNodeSink:
			out.SinkTopic = n.SinkTopic
		default:
			return out, fmt.Sprintf("Unknown topology node type: %d", n.NodeType)
		}
		return out, ""
	}
	out := kmsg.NewTopologyDescription()
	out.Subtopologies, out.GlobalStores = []kmsg.TopologyDescriptionSubtopology{}, []kmsg.TopologyDescriptionGlobalStore{}
	for _, st := range d.Subtopologies {
		ns := kmsg.NewTopologyDescriptionSubtopology()
		ns.SubtopologyID, ns.Nodes = st.SubtopologyID, []kmsg.TopologyDescriptionNode{}
		for _, n := range st.Nodes {
			nn, err := node(n)
			if err != "" {
				return out, err
			}
			ns.Nodes = append(ns.Nodes, nn)
		}
		out.Subtopologies = append(out.Subtopologies, ns)
	}
	for _, gs := range d.GlobalStores {
		src, err := node(gs.Source)
		if err != "" {
			return out, err
		}
		proc, err := node(gs.Processor)
		if err != "" {
			return out, err
		}
		if src.NodeType != topologyNodeSource || proc.NodeType != topologyNodeProcessor {
			return out, "Global store must be composed of a source and a processor node."
		}
		ng := kmsg.NewTopologyDescriptionGlobalStore()
		ng.Source, ng.Processor = src, proc
		out.GlobalStores = append(out.GlobalStores, ng)
	}
	return out, ""
}

// uniqueStrings is ss without repeats, in first-seen order (never nil).
func uniqueStrings(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
