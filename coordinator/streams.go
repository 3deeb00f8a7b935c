package coordinator

// Streams groups (KIP-1071): StreamsGroupHeartbeat and StreamsGroupDescribe.
//
// A streams group runs one topology (streams_topology.go), sent by the
// members when they join; a member joining with a higher topology epoch
// replaces it. The group has a group epoch, bumped whenever its membership
// changes (a member joins or leaves, changes its process id, rack, client
// tags or topology epoch), its topology changes or the partition counts of
// the topics the topology reads change; a target assignment of tasks,
// recomputed by the sticky assignor (streams_assign.go) when the group epoch
// is ahead of the assignment epoch; and per member a member epoch and a
// current assignment of active, standby and warm-up tasks, which converges
// on the target through the heartbeats as in consumer groups: a member
// first revokes the tasks it must give up (UNREVOKED_TASKS: its epoch stays
// put until a heartbeat shows it no longer owns them), then gets the target
// epoch and those of its new tasks no other member still owns as active
// (UNRELEASED_TASKS until the previous owners revoked them). An active task
// is never in two members' current assignments.
//
// Group states (Kafka's StreamsGroupState): Empty (no members), NotReady
// (members, but the topology is missing or cannot be configured: missing
// source topics, internal topics being created, wrong partition counts),
// Assigning (group epoch ahead of the assignment epoch), Reconciling (a
// member not yet at the assignment epoch) and Stable.
//
// A heartbeat's Status lists what keeps the group from running: those of
// the configured topology (MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS,
// INCORRECTLY_PARTITIONED_TOPICS), STALE_TOPOLOGY for a member behind the
// group's topology epoch, SHUTDOWN_APPLICATION once a member asked for it.
// The internal topics to create are returned to the caller (the broker
// creates them, as Kafka's KafkaApis does after the heartbeat).
//
// Members with a user endpoint (interactive queries) are listed with the
// partitions of their active and standby tasks (PartitionsByUserEndpoint)
// to every member whose endpoint information epoch is behind the group's,
// which moves whenever a current assignment or an endpoint changes.
//
// Static members (instance id) leaving with epoch -2 keep their assignment
// for a member with the same instance id rejoining within the session
// timeout, as in consumer groups.
//
// Streams groups share the group map and committed offsets with the other
// kinds: OffsetCommit and TxnOffsetCommit check the member epoch exactly
// (STALE_MEMBER_EPOCH); ListGroups reports type and protocol type
// "streams", DescribeGroups answers as Kafka 4.4 does (Dead, and
// GROUP_ID_NOT_FOUND from v6); DeleteGroups deletes Empty ones; OffsetDelete
// refuses a source topic of a group with members (GROUP_SUBSCRIBED_TO_TOPIC). They are kept in
// __consumer_offsets with Kafka's record types (streams_records.go).

import (
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of the streams group settings, Kafka's.
const (
	DefaultStreamsSessionTimeout    = 45 * time.Second // group.streams.session.timeout.ms
	DefaultStreamsHeartbeatInterval = 5 * time.Second  // group.streams.heartbeat.interval.ms
	// DefaultStreamsInitialRebalanceDelay is group.streams.initial.rebalance.delay.ms.
	DefaultStreamsInitialRebalanceDelay = 3 * time.Second
	// streamsAcceptableRecoveryLag and streamsTaskOffsetInterval are
	// Kafka's defaults of the values a heartbeat answers.
	streamsAcceptableRecoveryLag = 10000
	streamsTaskOffsetInterval    = 60000
	// streamsStatusAssignmentDelayed is the status of a heartbeat whose
	// group's first assignment is held back.
	streamsStatusAssignmentDelayed int8 = 5
)

// streamsGroupType is the group type and protocol type of streams groups,
// as ListGroups reports them.
const streamsGroupType = "streams"

// streamsAssignorName is the name of the task assignor.
const streamsAssignorName = "sticky"

// Streams group states (StreamsGroupState).
const (
	sgEmpty       = "Empty"
	sgNotReady    = "NotReady"
	sgAssigning   = "Assigning"
	sgReconciling = "Reconciling"
	sgStable      = "Stable"
)

// Member reconciliation states of streams group members.
const (
	smStable     = memberStable
	smUnrevoked  = "UNREVOKED_TASKS"
	smUnreleased = "UNRELEASED_TASKS"
)

// StreamsSettings are a streams group's own settings, its group configs
// (streams.session.timeout.ms, streams.heartbeat.interval.ms,
// streams.num.standby.replicas, streams.initial.rebalance.delay.ms). Zero
// values take the coordinator's; a negative InitialRebalanceDelay is none.
type StreamsSettings struct {
	SessionTimeout, HeartbeatInterval, InitialRebalanceDelay time.Duration
	NumStandbyReplicas                                       int
}

// streamsSettings returns group's settings, the coordinator's where the
// group sets none.
func (c *Coordinator) streamsSettings(group string) StreamsSettings {
	s := StreamsSettings{SessionTimeout: c.cfg.StreamsSessionTimeout, HeartbeatInterval: c.cfg.StreamsHeartbeatInterval,
		InitialRebalanceDelay: c.cfg.StreamsInitialRebalanceDelay, NumStandbyReplicas: c.cfg.StreamsNumStandbyReplicas}
	if c.cfg.StreamsGroupSettings == nil {
		return s
	}
	g := c.cfg.StreamsGroupSettings(group)
	if g.SessionTimeout > 0 {
		s.SessionTimeout = g.SessionTimeout
	}
	if g.HeartbeatInterval > 0 {
		s.HeartbeatInterval = g.HeartbeatInterval
	}
	if g.InitialRebalanceDelay > 0 {
		s.InitialRebalanceDelay = g.InitialRebalanceDelay
	} else if g.InitialRebalanceDelay < 0 {
		s.InitialRebalanceDelay = 0
	}
	if g.NumStandbyReplicas > 0 {
		s.NumStandbyReplicas = g.NumStandbyReplicas
	}
	return s
}

type streamsEndpoint struct {
	host string
	port uint16
}

// streamsMember is a member of a streams group; its epochs are those of
// the active tasks in assigned and revoking.
type streamsMember struct {
	memberCore
	processID string

	topologyEpoch int32
	endpoint      *streamsEndpoint
	clientTags    [][2]string

	assigned streamsAssignment // current assignment
	revoking streamsAssignment // tasks it must still revoke

	taskOffsets, taskEndOffsets []kmsg.TaskOffset // as last reported, for describe
}

// streamsGroup is a streams group; its logged records are
// streams_records.go's.
type streamsGroup struct {
	membership[*streamsMember, streamsAssignment]
	topology      *streamsTopology
	metadata      string // the topics the configured topology read, at epoch
	standbys      int    // num.standby.replicas the target was computed with
	endpointEpoch int32
	shutdown      bool      // a member asked the application to shut down
	delaying      bool      // the initial rebalance delay runs (not persisted)
	delay         timerSlot // its end
	// description is the topology description a member pushed for the
	// topology epoch descriptionEpoch (streams_description.go; not
	// persisted).
	description      *kmsg.TopologyDescription
	descriptionEpoch int32
	askedEpoch       int32         // the topology epoch last asked for
	askedUntil       time.Time     // no asking again for askedEpoch before
	askDelay         time.Duration // the back-off after the next ask
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{membership: newMembership[*streamsMember, streamsAssignment]()}
}

// state reports the group's state; ct is its configured topology.
func (sg *streamsGroup) state(ct *configuredTopology) string {
	if len(sg.members) == 0 {
		return sgEmpty
	}
	if !ct.ready() {
		return sgNotReady
	}
	if sg.assignmentEpoch != sg.epoch {
		return sgAssigning
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != smStable {
			return sgReconciling
		}
	}
	return sgStable
}

func (sg *streamsGroup) configured(topics map[string]ConsumerTopic) *configuredTopology {
	if sg.topology == nil {
		return nil
	}
	return sg.topology.configure(topics)
}

// activeOwnedByOther reports whether a member other than self still owns
// (assigned or revoking) the active task sub/p.
func (sg *streamsGroup) activeOwnedByOther(self, sub string, p int32) bool {
	for id, m := range sg.members {
		if id != self && (m.assigned.active.has(sub, p) || m.revoking.active.has(sub, p)) {
			return true
		}
	}
	return false
}

// StreamsGroupHeartbeat handles a StreamsGroupHeartbeat request (v0-1);
// clientID and clientHost describe the caller for StreamsGroupDescribe. It
// answers once the records of the change it made are committed, and
// returns the internal topics the broker is to create.
func (c *Coordinator) StreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopic) {
	c.mu.Lock()
	r, create := c.streamsGroupHeartbeatLocked(req, clientID, clientHost)
	var committed func() *kerr.Error
	if !c.closed && req.Group != "" {
		committed = c.persistStreamsLocked(c.groups[req.Group])
	}
	c.mu.Unlock()
	if err := waitCommitted(committed); err != nil && r.ErrorCode == 0 {
		r = kmsg.NewPtrStreamsGroupHeartbeatResponse()
		r.ErrorCode = err.Code
		r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
		return r, nil
	}
	return r, create
}

// streamsGroupHeartbeatLocked is StreamsGroupHeartbeat's state change.
//
// Lock should be held.
func (c *Coordinator) streamsGroupHeartbeatLocked(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopic) {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{} // Kafka's answers, errors too, have an empty list
	fail := func(err *kerr.Error, msg string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopic) {
		r.ErrorCode = err.Code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r, nil
	}
	instanceID := deref(req.InstanceID)
	switch {
	case req.Group == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.MemberID == "":
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.InstanceID != nil && instanceID == "":
		return fail(kerr.InvalidRequest, "InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return fail(kerr.InvalidRequest, "RackId can't be empty.")
	case req.MemberEpoch < staticLeaveEpoch:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
	case req.MemberEpoch == staticLeaveEpoch && instanceID == "":
		return fail(kerr.InvalidRequest, "InstanceId can't be null.")
	case req.MemberEpoch == 0 && req.RebalanceTimeoutMillis <= 0:
		return fail(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
	case req.MemberEpoch == 0 && req.Topology == nil:
		return fail(kerr.InvalidRequest, "Topology must be non-null when (re-)joining.")
	case req.MemberEpoch == 0 && (req.ProcessID == nil || *req.ProcessID == ""):
		return fail(kerr.InvalidRequest, "ProcessId can't be empty.")
	case req.MemberEpoch == 0 && (len(req.ActiveTasks) > 0 || len(req.StandbyTasks) > 0 || len(req.WarmupTasks) > 0):
		return fail(kerr.InvalidRequest, "ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.")
	}
	if req.Topology != nil {
		if msg := validateTopology(req.Topology); msg != "" {
			return fail(kerr.InvalidRequest, msg)
		}
	}
	if err := c.coordinatorErrLocked(req.Group); err != nil {
		return fail(err, "")
	}
	if c.isShareGroupLocked(req.Group) {
		return fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a streams group.")
	}
	g := c.groups[req.Group]
	if g != nil && g.st == nil {
		if g.cg != nil || len(g.members) > 0 || req.MemberEpoch != 0 {
			return fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a streams group.")
		}
		// An empty classic group (offsets only) becomes a streams group.
		c.cancelGroupTimersLocked(g)
		g.st = newStreamsGroup()
		g.protocolType = streamsGroupType
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return fail(kerr.GroupIDNotFound, "Streams group "+req.Group+" not found.")
		}
		g = newGroup(req.Group, c.cfg.Now())
		g.st = newStreamsGroup()
		g.protocolType = streamsGroupType
		c.groups[g.id] = g
	}
	sg := g.st

	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.streamsLeaveLocked(g, req, r), nil
	}
	settings := c.streamsSettings(g.id)
	if len(sg.members) == 0 && req.MemberEpoch == 0 && settings.InitialRebalanceDelay > 0 {
		// The first member of an empty group: its first assignment
		// waits for more members, as Kafka's initial rebalance delay.
		sg.delaying = true
		c.scheduleLocked(&sg.delay, settings.InitialRebalanceDelay, func() {
			if c.groups[g.id] != g || g.st != sg || !sg.delaying {
				return
			}
			sg.delaying = false
			if len(sg.members) > 0 && sg.assignmentEpoch < sg.epoch {
				c.computeStreamsTargetLocked(g.id, sg, sg.configured(c.topicsByName()))
				c.persistStreamsLocked(g)
			}
		})
	}

	m, isNew, err := c.streamsMemberLocked(g, req, instanceID)
	if err != nil {
		msg := ""
		if err == kerr.UnknownMemberID {
			msg = "Member " + req.MemberID + " is not a member of group " + req.Group + "."
		}
		return fail(err, msg)
	}
	if isNew {
		m.clientID, m.clientHost = clientID, clientHost
	}
	before := struct {
		epoch    int32
		assigned streamsAssignment
	}{m.epoch, m.assigned.clone()}

	// Update the member; changes that matter to the assignment bump the
	// group epoch.
	bump := isNew
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = millis(req.RebalanceTimeoutMillis)
	}
	if req.RackID != nil && *req.RackID != m.rackID {
		m.rackID, bump = *req.RackID, true
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID, bump = *req.ProcessID, true
	}
	if req.ClientTags != nil {
		tags := make([][2]string, 0, len(req.ClientTags))
		for _, t := range req.ClientTags {
			tags = append(tags, [2]string{t.Key, t.Value})
		}
		if !slices.Equal(tags, m.clientTags) {
			m.clientTags, bump = tags, true
		}
	}
	if req.UserEndpoint != nil {
		ep := &streamsEndpoint{req.UserEndpoint.Host, req.UserEndpoint.Port}
		if m.endpoint == nil || *m.endpoint != *ep {
			m.endpoint = ep
			sg.endpointEpoch++
		}
	}
	if req.TaskOffsets != nil {
		m.taskOffsets = slices.Clone(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		m.taskEndOffsets = slices.Clone(req.TaskEndOffsets)
	}
	if req.Topology != nil {
		if req.Topology.Epoch != m.topologyEpoch {
			m.topologyEpoch, bump = req.Topology.Epoch, true
		}
		if sg.topology == nil || req.Topology.Epoch > sg.topology.epoch {
			sg.topology = &streamsTopology{epoch: req.Topology.Epoch, subtopologies: slices.Clone(req.Topology.Subtopologies)}
			bump = true
		}
	}
	if req.ShutdownApplication {
		sg.shutdown = true
	}

	topics := c.topicsByName()
	ct := sg.configured(topics)
	if bump {
		sg.epoch++
	}
	if ct != nil && ct.metadata != sg.metadata {
		// A bump of its own, as Kafka's: a first member makes two (its
		// membership, then the metadata of the topics it brought).
		sg.metadata = ct.metadata
		sg.epoch++
	}
	// The target: computed for the group epoch, or, while the initial
	// rebalance delay runs, an empty one at epoch 1 (Kafka's).
	targetEpoch, delayed := sg.assignmentEpoch, false
	if sg.assignmentEpoch < sg.epoch {
		if sg.delaying {
			// Kafka records the empty target's epoch as the assignment
			// epoch.
			sg.assignmentEpoch = max(1, sg.assignmentEpoch)
			targetEpoch, delayed = sg.assignmentEpoch, true
		} else {
			c.computeStreamsTargetLocked(g.id, sg, ct)
			targetEpoch = sg.assignmentEpoch
		}
	}

	// Reconcile the member with its target.
	var ownedNow *streamsAssignment
	if req.ActiveTasks != nil && req.StandbyTasks != nil && req.WarmupTasks != nil {
		o := streamsAssignment{fromTaskIDs(req.ActiveTasks), fromTaskIDs(req.StandbyTasks), fromTaskIDs(req.WarmupTasks)}
		ownedNow = &o
	}
	if delayed {
		c.reconcileStreamsLocked(g, m, ownedNow, targetEpoch, newStreamsAssignment())
	} else {
		target, ok := sg.target[m.id]
		if !ok {
			target = newStreamsAssignment()
		}
		c.reconcileStreamsLocked(g, m, ownedNow, targetEpoch, target)
	}
	if m.endpoint != nil && !before.assigned.equal(m.assigned) {
		sg.endpointEpoch++
	}
	c.scheduleStreamsSessionLocked(g, m)
	if g.state != stateStable {
		g.transition(stateStable, c.cfg.Now())
	}

	r.MemberID = m.id
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = int32(settings.HeartbeatInterval.Milliseconds())
	r.AcceptableRecoveryLagLegacy = streamsAcceptableRecoveryLag
	r.AcceptableRecoveryLag = streamsAcceptableRecoveryLag
	r.TaskOffsetIntervalMillis = streamsTaskOffsetInterval
	if delayed {
		r.Status = append(r.Status, streamsStatus(streamsStatusAssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay."))
	}
	if sg.topology != nil && m.topologyEpoch < sg.topology.epoch {
		r.Status = append(r.Status, streamsStatus(streamsStatusStaleTopology,
			"The member's topology epoch "+strconv.Itoa(int(m.topologyEpoch))+" is behind the group's topology epoch "+strconv.Itoa(int(sg.topology.epoch))+"."))
	}
	var create []StreamsTopic
	if ct != nil {
		r.Status = append(r.Status, ct.statuses...)
		create = ct.create
	}
	if sg.shutdown {
		r.Status = append(r.Status, streamsStatus(streamsStatusShutdownApplication,
			"A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application."))
	}
	if req.MemberEpoch == 0 || req.MemberEpoch != m.epoch || before.epoch != m.epoch || !before.assigned.equal(m.assigned) ||
		(ownedNow != nil && !ownedNow.equal(m.assigned)) {
		r.ActiveTasks = toTaskIDs(m.assigned.active)
		r.StandbyTasks = toTaskIDs(m.assigned.standby)
		r.WarmupTasks = toTaskIDs(m.assigned.warmup)
	}
	r.TopologyDescriptionRequired = req.Version >= 1 && req.MemberEpoch >= 0 && c.askTopologyDescriptionLocked(sg, r)
	r.EndpointInformationEpoch = sg.endpointEpoch
	if m.endpoint != nil && req.EndpointInformationEpoch != sg.endpointEpoch {
		r.PartitionsByUserEndpoint = c.streamsEndpointsLocked(sg, ct)
	}
	return r, create
}

// streamsMemberLocked finds or creates the heartbeat's member, checking
// its epoch.
//
// Lock should be held.
func (c *Coordinator) streamsMemberLocked(g *group, req *kmsg.StreamsGroupHeartbeatRequest, instanceID string) (*streamsMember, bool, *kerr.Error) {
	sg := g.st
	if req.MemberEpoch != 0 {
		// A lost response: the previous epoch is accepted if the member
		// owns no active task it was not given.
		m, err := sg.checkMember(req.MemberID, instanceID, req.MemberEpoch, func(m *streamsMember) bool {
			return req.ActiveTasks != nil && fromTaskIDs(req.ActiveTasks).minus(m.assigned.active).size() == 0
		})
		return m, false, err
	}
	if instanceID != "" {
		// The restarted instance takes over the old member's assignment
		// and epoch, without a rebalance.
		nm, err := staticJoinLocked(c, &sg.membership, instanceID, req.MemberID, func(old *streamsMember, _ string) *streamsMember {
			nm := *old
			return &nm
		})
		if err != nil || nm != nil {
			return nm, false, err
		}
	}
	if m := sg.members[req.MemberID]; m != nil {
		// A rejoin with epoch 0 of a known member: it lost its state
		// and starts over owning nothing.
		c.startOverLocked(&m.memberCore)
		m.assigned, m.revoking = newStreamsAssignment(), newStreamsAssignment()
		return m, false, nil
	}
	if len(sg.members) >= c.cfg.MaxGroupSize {
		return nil, false, kerr.GroupMaxSizeReached
	}
	m := &streamsMember{memberCore: memberCore{id: req.MemberID, instanceID: instanceID, state: smStable},
		assigned: newStreamsAssignment(), revoking: newStreamsAssignment()}
	sg.add(m)
	return m, true, nil
}

// streamsLeaveLocked handles epochs -1 and -2.
//
// Lock should be held.
func (c *Coordinator) streamsLeaveLocked(g *group, req *kmsg.StreamsGroupHeartbeatRequest, r *kmsg.StreamsGroupHeartbeatResponse) *kmsg.StreamsGroupHeartbeatResponse {
	m, err := g.st.leaving(req.MemberID, deref(req.InstanceID))
	if err != nil {
		r.ErrorCode = err.Code
		if err == kerr.UnknownMemberID {
			msg := "Member " + req.MemberID + " is not a member of group " + g.id + "."
			r.ErrorMessage = &msg
		}
		return r
	}
	r.MemberID, r.MemberEpoch = m.id, req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch {
		// Kept, assignment and all, for the instance's next member.
		c.staticLeaveLocked(&m.memberCore)
		c.scheduleStreamsSessionLocked(g, m)
		return r
	}
	c.removeStreamsMemberLocked(g, m)
	return r
}

// removeStreamsMemberLocked removes m, bumping the group epoch.
//
// Lock should be held.
func (c *Coordinator) removeStreamsMemberLocked(g *group, m *streamsMember) {
	sg := g.st
	c.cancelMemberTimersLocked(&m.memberCore)
	sg.forget(m.id)
	sg.epoch++
	if m.endpoint != nil {
		sg.endpointEpoch++
	}
	if len(sg.members) == 0 {
		sg.shutdown = false
		g.transition(stateEmpty, c.cfg.Now())
	}
}

// scheduleStreamsSessionLocked restarts m's session timer.
//
// Lock should be held.
func (c *Coordinator) scheduleStreamsSessionLocked(g *group, m *streamsMember) {
	c.scheduleStreamsFenceLocked(g, m, &m.hb, c.streamsSettings(g.id).SessionTimeout, "streams group member session expired", nil)
}

// scheduleStreamsRevokeLocked starts m's rebalance timeout for revoking
// its tasks; a member still revoking when it fires is removed.
//
// Lock should be held.
func (c *Coordinator) scheduleStreamsRevokeLocked(g *group, m *streamsMember) {
	c.scheduleStreamsFenceLocked(g, m, &m.revokeDue, max(m.rebalanceTimeout, time.Millisecond),
		"streams group member did not revoke its tasks within the rebalance timeout",
		func() bool { return m.state == smUnrevoked })
}

// scheduleStreamsFenceLocked (re)arms slot to remove m after d, if it is
// still a member of g then (and still is true, unless nil).
//
// Lock should be held.
func (c *Coordinator) scheduleStreamsFenceLocked(g *group, m *streamsMember, slot *timerSlot, d time.Duration, why string, still func() bool) {
	scheduleMemberFenceLocked(c, g, m, slot, d, why, func() *membership[*streamsMember, streamsAssignment] {
		if g.st == nil {
			return nil
		}
		return &g.st.membership
	}, still, func() {
		c.removeStreamsMemberLocked(g, m)
		c.persistStreamsLocked(g)
	})
}

// computeStreamsTargetLocked computes the target assignment for the group
// epoch.
//
// Lock should be held.
func (c *Coordinator) computeStreamsTargetLocked(group string, sg *streamsGroup, ct *configuredTopology) {
	procs := map[string]string{}
	for id, m := range sg.members {
		procs[id] = m.processID
	}
	var tasks map[string]int32
	if ct.ready() {
		tasks = ct.tasks
	}
	sg.standbys = c.streamsSettings(group).NumStandbyReplicas
	sg.target = assignStreamsTasks(procs, tasks, sg.standbys, sg.target)
	sg.assignmentEpoch = sg.epoch
}

// reconcileStreamsLocked moves m's current assignment toward its target.
// ownedNow is what the heartbeat says the member owns, nil if it did not
// say.
//
// Lock should be held.
func (c *Coordinator) reconcileStreamsLocked(g *group, m *streamsMember, ownedNow *streamsAssignment, targetEpoch int32, target streamsAssignment) {
	sg := g.st
	reconcileLocked(&m.memberCore, &m.assigned, &m.revoking, ownedNow, target, targetEpoch, reconciliation[streamsAssignment]{
		unrevoked: smUnrevoked, unreleased: smUnreleased,
		empty:       newStreamsAssignment,
		revoked:     func() { c.timers.cancelLocked(&m.revokeDue) },
		revokeLater: func() { c.scheduleStreamsRevokeLocked(g, m) },
		prune:       m.pruneTaskEpochs,
		grant: func(keep streamsAssignment) (streamsAssignment, bool) {
			unreleased := false
			for sub, ps := range target.active.minus(keep.active) {
				for _, p := range ps {
					if sg.activeOwnedByOther(m.id, sub, p) {
						unreleased = true
						continue
					}
					keep.active.add(sub, p)
					m.setEpoch(sub, p, targetEpoch)
				}
			}
			// Standby and warm-up tasks are not exclusive.
			keep.standby, keep.warmup = target.standby.clone(), target.warmup.clone()
			return keep, unreleased
		},
	})
}

// streamsEndpointsLocked lists the members' user endpoints with the
// partitions of their active and standby tasks.
//
// Lock should be held.
func (c *Coordinator) streamsEndpointsLocked(sg *streamsGroup, ct *configuredTopology) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if !ct.ready() {
		return out
	}
	topics := c.topicsByName()
	partsOf := func(tasks partitionSet) partitionSet {
		ps := partitionSet{}
		for sub, parts := range tasks {
			for _, topic := range ct.inputs[sub] {
				for _, p := range parts {
					if t, ok := topics[topic]; ok && p < t.Partitions {
						ps.add(topic, p)
					}
				}
			}
		}
		return ps
	}
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.endpoint.host, m.endpoint.port
		active, standby := partsOf(m.assigned.active), partsOf(m.assigned.standby)
		for _, t := range sortedKeys(active) {
			ap := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			ap.Topic, ap.Partitions = t, slices.Clone(active[t])
			e.ActivePartitions = append(e.ActivePartitions, ap)
		}
		for _, t := range sortedKeys(standby) {
			sp := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			sp.Topic, sp.Partitions = t, slices.Clone(standby[t])
			e.StandbyPartitions = append(e.StandbyPartitions, sp)
		}
		if e.ActivePartitions == nil {
			e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		}
		if e.StandbyPartitions == nil {
			e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		}
		out = append(out, e)
	}
	return out
}

func fromTaskIDs(ts []kmsg.TaskIDs) partitionSet {
	out := partitionSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out.add(t.SubtopologyID, p)
		}
	}
	return out
}

func toTaskIDs(a partitionSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, sub := range sortedKeys(a) {
		if len(a[sub]) == 0 {
			continue
		}
		t := kmsg.NewTaskIDs()
		t.SubtopologyID, t.Partitions = sub, slices.Clone(a[sub])
		out = append(out, t)
	}
	return out
}

// StreamsGroupDescribe handles a StreamsGroupDescribe request (v0-1).
func (c *Coordinator) StreamsGroupDescribe(req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	r := kmsg.NewPtrStreamsGroupDescribeResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	topics := c.topicsByName()
	assignment := func(a streamsAssignment) kmsg.StreamsAssignment {
		out := kmsg.NewStreamsAssignment()
		out.ActiveTasks, out.StandbyTasks, out.WarmupTasks = toTaskIDs(a.active), toTaskIDs(a.standby), toTaskIDs(a.warmup)
		return out
	}
	for _, id := range req.Groups {
		d := kmsg.NewStreamsGroupDescribeResponseGroup()
		d.Group = id
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupAuthorizedOperations
		}
		g := c.groups[id]
		switch {
		case id == "":
			d.ErrorCode = kerr.InvalidGroupID.Code
		case c.coordinatorErrLocked(id) != nil:
			d.ErrorCode = c.coordinatorErrLocked(id).Code
		case g == nil || g.st == nil:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			if g != nil || c.isShareGroupLocked(id) {
				msg = "Group " + id + " is not a streams group."
			}
			d.ErrorMessage = &msg
		default:
			sg := g.st
			ct := sg.configured(topics)
			d.State = sg.state(ct)
			d.Epoch, d.AssignmentEpoch = sg.epoch, sg.assignmentEpoch
			if req.Version >= 1 {
				d.AssignorName = kmsg.StringPtr(streamsAssignorName)
			}
			if req.Version >= 1 && req.IncludeTopologyDescription {
				d.TopologyDescription, d.TopologyDescriptionStatus = c.storedTopologyDescriptionLocked(sg)
			}
			if sg.topology != nil {
				tp := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
				tp.Epoch = sg.topology.epoch
				tp.Subtopologies = describeSubtopologies(sg.topology, ct, topics)
				d.Topology = &tp
			}
			for _, mid := range sortedKeys(sg.members) {
				m := sg.members[mid]
				dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch = mid, m.epoch
				dm.InstanceID, dm.RackID = strPtr(m.instanceID), strPtr(m.rackID)
				dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
				dm.TopologyEpoch, dm.ProcessID = m.topologyEpoch, m.processID
				if m.endpoint != nil {
					dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.host, Port: m.endpoint.port}
				}
				dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
				for _, kv := range m.clientTags {
					dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: kv[0], Value: kv[1]})
				}
				dm.TaskOffsets, dm.TaskEndOffsets = slices.Clone(m.taskOffsets), slices.Clone(m.taskEndOffsets)
				if dm.TaskOffsets == nil {
					dm.TaskOffsets = []kmsg.TaskOffset{}
				}
				if dm.TaskEndOffsets == nil {
					dm.TaskEndOffsets = []kmsg.TaskOffset{}
				}
				dm.Assignment = assignment(m.assigned)
				t, ok := sg.target[mid]
				if !ok {
					t = newStreamsAssignment()
				}
				dm.TargetAssignment = assignment(t)
				d.Members = append(d.Members, dm)
			}
			if d.Members == nil {
				d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
			}
		}
		r.Groups = append(r.Groups, d)
	}
	return r
}

// describeSubtopologies is the topology as StreamsGroupDescribe reports
// it, as Kafka 4.4 does: configured, its internal topics with their
// partition counts; otherwise as the members sent it (0 for changelogs
// and derived repartition topics).
func describeSubtopologies(t *streamsTopology, ct *configuredTopology, topics map[string]ConsumerTopic) []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology {
	counted := func(in []kmsg.TopicInfo) []kmsg.TopicInfo {
		out := slices.Clone(in)
		if ct.ready() {
			for i := range out {
				out[i].NumPartitions = topics[out[i].Topic].Partitions
			}
		}
		return out
	}
	out := []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
	for _, st := range t.subtopologies {
		d := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
		d.SubtopologyID = st.SubtopologyID
		d.SourceTopics = slices.Clone(st.SourceTopics)
		d.RepartitionSinkTopics = slices.Clone(st.RepartitionSinkTopics)
		d.StateChangelogTopics = counted(st.StateChangelogTopics)
		d.RepartitionSourceTopics = counted(st.RepartitionSourceTopics)
		out = append(out, d)
	}
	return out
}

// cancelStreamsTimersLocked stops the members' timers.
//
// Lock should be held.
func (c *Coordinator) cancelStreamsTimersLocked(sg *streamsGroup) {
	c.timers.cancelLocked(&sg.delay)
	for _, m := range sg.members {
		c.cancelMemberTimersLocked(&m.memberCore)
	}
}

// validateStreamsOffsetCommit is the check of an OffsetCommit or
// TxnOffsetCommit to a streams group, as Kafka 4.4's
// StreamsGroup.validateOffsetCommit: a commit without member (epoch < 0)
// is accepted while the group has no members (an admin's), a
// transactional one without member, epoch or instance id always; otherwise
// the member must exist (UNKNOWN_MEMBER_ID). OffsetCommit before v9 cannot
// carry a member epoch (UNSUPPORTED_VERSION). The member's epoch commits
// anything; a newer one is STALE_MEMBER_EPOCH; an older one (a commit
// built before the heartbeat that moved the member on was answered, or
// whose answer a coordinator's crash lost) commits only if each of parts
// is an input partition (source or repartition source topic) of an active
// task the member holds or must still revoke, assigned at an epoch not
// after the commit's (KIP-1251, createAssignmentEpochValidator); otherwise
// nothing of the request is written (STALE_MEMBER_EPOCH).
func validateStreamsOffsetCommit(g *group, memberID string, epoch int32, kind commitKind, parts iter.Seq[offsetKey]) *kerr.Error {
	sg := g.st
	if epoch < 0 && memberID == "" && len(sg.members) == 0 {
		return nil
	}
	if kind.txn && epoch == -1 && memberID == "" && !kind.instance {
		return nil
	}
	m := sg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if !kind.txn && kind.version < 9 {
		return kerr.UnsupportedVersion
	}
	if epoch == m.epoch {
		return nil
	}
	if epoch > m.epoch || sg.topology == nil {
		return kerr.StaleMemberEpoch
	}
	for k := range parts {
		sub, ok := sg.topology.subtopologyReading(k.topic)
		if !ok {
			return kerr.StaleMemberEpoch
		}
		if e, ok := m.taskAssignmentEpoch(sub, k.partition); !ok || epoch < e {
			return kerr.StaleMemberEpoch
		}
	}
	return nil
}

// subtopologyReading returns the subtopology that reads topic (a source or
// repartition source topic), and false if none does.
func (t *streamsTopology) subtopologyReading(topic string) (string, bool) {
	for _, st := range t.subtopologies {
		if slices.Contains(st.SourceTopics, topic) || slices.ContainsFunc(st.RepartitionSourceTopics, func(ti kmsg.TopicInfo) bool { return ti.Topic == topic }) {
			return st.SubtopologyID, true
		}
	}
	return "", false
}

// taskAssignmentEpoch returns the epoch at which m was given active task
// sub/p, and false if m neither holds it nor must revoke it. A task
// without a recorded epoch has max(member epoch, 0), as a record without
// epochs gives it.
func (m *streamsMember) taskAssignmentEpoch(sub string, p int32) (int32, bool) {
	if !m.assigned.active.has(sub, p) && !m.revoking.active.has(sub, p) {
		return 0, false
	}
	return m.epochAt(sub, p), true
}

// pruneTaskEpochs drops the epochs of active tasks m neither holds nor
// revokes.
func (m *streamsMember) pruneTaskEpochs() {
	m.pruneEpochs(func(sub string, p int32) bool { return m.assigned.active.has(sub, p) || m.revoking.active.has(sub, p) })
}

// validateStreamsOffsetFetch is OffsetFetch's (v9+) check for streams
// groups, as for consumer groups.
func validateStreamsOffsetFetch(g *group, memberID string, epoch int32) *kerr.Error {
	if epoch < 0 && memberID == "" {
		if len(g.st.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := g.st.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if epoch != m.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

// subscribesTo reports whether the group has members and its topology
// reads topic (a source or repartition source topic), for OffsetDelete.
func (sg *streamsGroup) subscribesTo(topic string) bool {
	if len(sg.members) == 0 || sg.topology == nil {
		return false
	}
	for _, st := range sg.topology.subtopologies {
		if slices.Contains(st.SourceTopics, topic) || slices.ContainsFunc(st.RepartitionSourceTopics, func(t kmsg.TopicInfo) bool { return t.Topic == topic }) {
			return true
		}
	}
	return false
}
