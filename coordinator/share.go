package coordinator

// Share groups (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe, and
// the share-group side of DescribeGroups, ListGroups and DeleteGroups.
//
// A share group's members heartbeat like KIP-848 consumers, but nothing is
// revoked: partitions may be shared by several members (the share-partition
// leader hands each record to one of them, sharepart.go), so a member's
// assignment changes in one step. The group epoch is bumped by every change
// of membership or of the subscribed topics' partitions; each heartbeat
// brings the member to the group epoch with its new target assignment,
// computed by the "simple" assignor: per topic, with at least as many
// partitions as subscribers each partition goes to one subscriber (round
// robin over the subscribers sorted by member id); with fewer, each
// subscriber gets one partition and partitions are shared.
//
// A heartbeat with another epoch than the member's is FENCED_MEMBER_EPOCH;
// epoch 0 (re)joins, -1 leaves; a member not heard from within the session
// timeout (group.share.session.timeout.ms, or the group's
// share.session.timeout.ms) is removed. Share groups live in a map of their
// own and in __consumer_offsets with Kafka's record types (modernlog.go); a
// ShareGroupHeartbeat to a group id used by a classic or consumer group
// answers GROUP_ID_NOT_FOUND ("not a share group", as Kafka 4.4 measured by
// make conformance), and so does a ConsumerGroupHeartbeat to a share group.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of the share group settings, Kafka's.
const (
	DefaultShareSessionTimeout    = 45 * time.Second // group.share.session.timeout.ms
	DefaultShareHeartbeatInterval = 5 * time.Second  // group.share.heartbeat.interval.ms
)

// shareGroupType is the group type and protocol type of share groups.
const shareGroupType = "share"

// shareAssignor is the name of the share assignor.
const shareAssignor = "simple"

type shareMember struct {
	id, rackID, clientID, clientHost string
	epoch, prevEpoch                 int32
	topics                           []string
	assigned                         partitionSet
	hb                               timerSlot
}

type shareGroup struct {
	id              string
	epoch           int32
	assignmentEpoch int32
	members         map[string]*shareMember
	subscription    string
	target          map[string]partitionSet
	logged          map[string][]byte // the records last written (modernlog.go), by key
}

func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return cgEmpty
	}
	return cgStable
}

// GroupTimeouts returns a group's own session timeout and heartbeat
// interval (its group configs); zero values take the coordinator's.
type GroupTimeouts func(group string) (session, heartbeat time.Duration)

// ShareTimeouts is GroupTimeouts for share groups.
type ShareTimeouts = GroupTimeouts

func (c *Coordinator) shareTimeouts(group string) (time.Duration, time.Duration) {
	s, h := c.cfg.ShareSessionTimeout, c.cfg.ShareHeartbeatInterval
	if c.cfg.ShareGroupTimeouts != nil {
		gs, gh := c.cfg.ShareGroupTimeouts(group)
		if gs > 0 {
			s = gs
		}
		if gh > 0 {
			h = gh
		}
	}
	return s, h
}

// ShareGroupHeartbeat handles a ShareGroupHeartbeat request (v1);
// clientID and clientHost describe the caller for ShareGroupDescribe.
func (c *Coordinator) ShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ShareGroupHeartbeatResponse {
	c.mu.Lock()
	r := c.shareGroupHeartbeatLocked(req, clientID, clientHost)
	var committed func() *kerr.Error
	if !c.closed && req.GroupID != "" {
		committed = c.persistShareLocked(c.shares[req.GroupID])
	}
	c.mu.Unlock()
	if err := waitCommitted(committed); err != nil && r.ErrorCode == 0 {
		r = kmsg.NewPtrShareGroupHeartbeatResponse()
		r.ErrorCode = err.Code
	}
	return r
}

// shareGroupHeartbeatLocked is ShareGroupHeartbeat's state change.
//
// Lock should be held.
func (c *Coordinator) shareGroupHeartbeatLocked(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatResponse()
	fail := func(err *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		r.ErrorCode = err.Code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r
	}
	switch {
	case req.GroupID == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.MemberID == "":
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.MemberEpoch < leaveEpoch:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	}

	if err := c.coordinatorErrLocked(req.GroupID); err != nil {
		return fail(err, "")
	}
	if c.groups[req.GroupID] != nil {
		return fail(kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
	}
	sg := c.shares[req.GroupID]
	if sg == nil {
		if req.MemberEpoch != 0 {
			return fail(kerr.GroupIDNotFound, "Share group "+req.GroupID+" not found.")
		}
		sg = c.newShareGroupLocked(req.GroupID)
	}
	m := sg.members[req.MemberID]
	if req.MemberEpoch == leaveEpoch {
		if m == nil {
			return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
		}
		c.removeShareMemberLocked(sg, m)
		r.MemberID, r.MemberEpoch = kmsg.StringPtr(m.id), leaveEpoch
		return r
	}
	switch {
	case m == nil && req.MemberEpoch != 0:
		return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
	case m != nil && req.MemberEpoch != 0 && req.MemberEpoch != m.epoch:
		return fail(kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has an epoch %d, not %d.", m.epoch, req.MemberEpoch))
	}
	if m == nil {
		if len(sg.members) >= c.cfg.MaxGroupSize {
			return fail(kerr.GroupMaxSizeReached, "")
		}
		m = &shareMember{id: req.MemberID, assigned: partitionSet{}}
		sg.members[m.id] = m
	}
	m.clientID, m.clientHost = clientID, clientHost
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.topics = slices.Clone(req.SubscribedTopicNames)
		slices.Sort(m.topics)
		m.topics = slices.Compact(m.topics)
	}
	before := struct {
		epoch    int32
		assigned partitionSet
	}{m.epoch, m.assigned.clone()}

	topics := c.topicsByName()
	if sub := sg.subscriptionOf(topics); sub != sg.subscription {
		sg.subscription = sub
		sg.epoch++
	}
	if sg.assignmentEpoch < sg.epoch {
		sg.target = assignShare(sg, topics)
		sg.assignmentEpoch = sg.epoch
	}
	if m.epoch != sg.epoch {
		m.prevEpoch, m.epoch = m.epoch, sg.epoch
	}
	m.assigned = sg.target[m.id].clone()
	if m.assigned == nil {
		m.assigned = partitionSet{}
	}
	c.scheduleShareSessionLocked(sg, m)

	_, interval := c.shareTimeouts(sg.id)
	r.MemberID = kmsg.StringPtr(m.id)
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = int32(interval.Milliseconds())
	if req.MemberEpoch == 0 || before.epoch != m.epoch || !before.assigned.equal(m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, t := range sortedKeys(m.assigned) {
			if len(m.assigned[t]) == 0 {
				continue
			}
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID = topics[t].ID
			at.Partitions = slices.Clone(m.assigned[t])
			a.TopicPartitions = append(a.TopicPartitions, at)
		}
		r.Assignment = &a
	}
	return r
}

// newShareGroupLocked creates an empty share group.
//
// Lock should be held.
func (c *Coordinator) newShareGroupLocked(id string) *shareGroup {
	sg := &shareGroup{id: id, members: map[string]*shareMember{}, target: map[string]partitionSet{}, logged: map[string][]byte{}}
	c.shares[id] = sg
	return sg
}

// subscriptionOf describes the members' subscribed topics and their
// partition counts; a change bumps the group epoch.
func (sg *shareGroup) subscriptionOf(topics map[string]ConsumerTopic) string {
	var b strings.Builder
	for _, id := range sortedKeys(sg.members) {
		fmt.Fprintf(&b, "%s[", id)
		for _, t := range sg.members[id].topics {
			if ct, ok := topics[t]; ok {
				fmt.Fprintf(&b, "%s:%d,", t, ct.Partitions)
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

// assignShare is the simple share assignor; see the file comment.
func assignShare(sg *shareGroup, topics map[string]ConsumerTopic) map[string]partitionSet {
	out := map[string]partitionSet{}
	subs := map[string][]string{} // topic → subscribers sorted by id
	for _, id := range sortedKeys(sg.members) {
		out[id] = partitionSet{}
		for _, t := range sg.members[id].topics {
			if _, ok := topics[t]; ok {
				subs[t] = append(subs[t], id)
			}
		}
	}
	for t, ids := range subs {
		n := topics[t].Partitions
		if n <= 0 {
			continue
		}
		if int(n) >= len(ids) {
			for p := range n {
				out[ids[int(p)%len(ids)]].add(t, p)
			}
			continue
		}
		for i, id := range ids {
			out[id].add(t, int32(i)%n)
		}
	}
	return out
}

// removeShareMemberLocked removes m and bumps the group epoch.
//
// Lock should be held.
func (c *Coordinator) removeShareMemberLocked(sg *shareGroup, m *shareMember) {
	c.timers.cancelLocked(&m.hb)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	sg.epoch++
	sg.subscription = sg.subscriptionOf(c.topicsByName())
	if cb := c.cfg.OnShareMemberLeave; cb != nil {
		cb(sg.id, m.id)
	}
}

// scheduleShareSessionLocked restarts m's session timer.
//
// Lock should be held.
func (c *Coordinator) scheduleShareSessionLocked(sg *shareGroup, m *shareMember) {
	session, _ := c.shareTimeouts(sg.id)
	c.scheduleLocked(&m.hb, session, func() {
		if c.shares[sg.id] != sg || sg.members[m.id] != m {
			return
		}
		c.log.Info("share group member session expired", "group", sg.id, "member", m.id)
		c.removeShareMemberLocked(sg, m)
		c.persistShareLocked(sg)
	})
}

// ShareGroupDescribe handles a ShareGroupDescribe request (v1).
func (c *Coordinator) ShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	r := kmsg.NewPtrShareGroupDescribeResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	topics := c.topicsByName()
	for _, id := range req.GroupIDs {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupAuthorizedOperations
		}
		sg := c.shares[id]
		fail := func(e *kerr.Error, msg string) {
			d.ErrorCode = e.Code
			if msg != "" {
				d.ErrorMessage = &msg
			}
		}
		switch {
		case id == "":
			fail(kerr.InvalidGroupID, "")
		case c.coordinatorErrLocked(id) != nil:
			fail(c.coordinatorErrLocked(id), "")
		case c.groups[id] != nil:
			fail(kerr.GroupIDNotFound, "Group "+id+" is not a share group.")
		case sg == nil:
			fail(kerr.GroupIDNotFound, "Group "+id+" not found.")
		default:
			d.GroupState = sg.state()
			d.GroupEpoch, d.AssignmentEpoch = sg.epoch, sg.assignmentEpoch
			d.Assignor = shareAssignor
			for _, mid := range sortedKeys(sg.members) {
				m := sg.members[mid]
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.RackID, dm.MemberEpoch = mid, strPtr(m.rackID), m.epoch
				dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
				dm.SubscribedTopicNames = slices.Clone(m.topics)
				if dm.SubscribedTopicNames == nil {
					dm.SubscribedTopicNames = []string{}
				}
				for _, t := range sortedKeys(m.assigned) {
					if len(m.assigned[t]) == 0 {
						continue
					}
					at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					at.TopicID, at.Topic, at.Partitions = topics[t].ID, t, slices.Clone(m.assigned[t])
					dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, at)
				}
				d.Members = append(d.Members, dm)
			}
		}
		r.Groups = append(r.Groups, d)
	}
	return r
}

// ShareGroupStatus reports what group is for the share-group offset APIs:
// GROUP_ID_NOT_FOUND for a classic or consumer group (and for an unknown
// one unless create, which creates an empty share group), NON_EMPTY_GROUP
// when mustBeEmpty and it has members, and the coordinator's own errors.
func (c *Coordinator) ShareGroupStatus(group string, create, mustBeEmpty bool) (err *kerr.Error) {
	var committed func() *kerr.Error
	defer func() {
		if werr := waitCommitted(committed); werr != nil && err == nil {
			err = werr
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if group == "" {
		return kerr.InvalidGroupID
	}
	if err := c.coordinatorErrLocked(group); err != nil {
		return err
	}
	if c.groups[group] != nil {
		return kerr.GroupIDNotFound
	}
	sg := c.shares[group]
	if sg == nil {
		if !create {
			return kerr.GroupIDNotFound
		}
		sg = c.newShareGroupLocked(group)
		committed = c.persistShareLocked(sg)
	}
	if mustBeEmpty && len(sg.members) > 0 {
		return kerr.NonEmptyGroup
	}
	return nil
}

// IsShareGroup reports whether group is a share group.
func (c *Coordinator) IsShareGroup(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shares[group] != nil
}

// isShareGroupLocked reports whether id is taken by a share group, for the
// classic and consumer APIs.
//
// Lock should be held.
func (c *Coordinator) isShareGroupLocked(id string) bool { return c.shares[id] != nil }

// deleteShareGroupLocked deletes an empty share group and appends its
// tombstones; committed waits for them (appendAsyncLocked).
//
// Lock should be held.
func (c *Coordinator) deleteShareGroupLocked(sg *shareGroup) (committed func() *kerr.Error, _ *kerr.Error) {
	if len(sg.members) > 0 {
		return nil, kerr.NonEmptyGroup
	}
	delete(c.shares, sg.id)
	committed = c.persistShareLocked(sg)
	if cb := c.cfg.OnShareGroupDeleted; cb != nil {
		cb(sg.id)
	}
	return committed, nil
}

// cancelShareTimersLocked stops every share member's session timer.
//
// Lock should be held.
func (c *Coordinator) cancelShareTimersLocked() {
	for _, sg := range c.shares {
		for _, m := range sg.members {
			c.timers.cancelLocked(&m.hb)
		}
	}
}
