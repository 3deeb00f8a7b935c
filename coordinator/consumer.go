package coordinator

// Consumer-protocol groups (KIP-848): ConsumerGroupHeartbeat and
// ConsumerGroupDescribe.
//
// A consumer group has a group epoch, bumped whenever its membership or
// its members' subscriptions change (including the partitions of the
// subscribed topics: topics created, regexes matching new topics, partitions
// added); a target assignment, recomputed by the server-side assignor
// (uniform or range) when the group epoch is ahead of the assignment epoch;
// and per member a member epoch and a current assignment, which converges
// on the target through the heartbeats: a member first revokes the
// partitions it must give up (UNREVOKED_PARTITIONS: its epoch stays put
// until a heartbeat shows it no longer owns them), then receives the
// target epoch and those of its new partitions that no other member still
// owns (UNRELEASED_PARTITIONS until the previous owners revoked the rest).
// A partition is never in two members' current assignments.
//
// Heartbeats restart the member's session (ConsumerSessionTimeout); a
// member that does not revoke within its rebalance timeout is removed.
// Static members (group.instance.id) leaving with epoch -2 keep their
// assignment for a member with the same instance id rejoining with epoch 0
// within the session timeout; any other member id claiming a live instance
// id answers UNRELEASED_INSTANCE_ID.
//
// Consumer groups share the group map and committed offsets with classic
// groups: OffsetCommit checks the member epoch and, for an older one, the
// assignment epochs of the partitions committed (commitfence.go);
// DescribeGroups/ListGroups report type "consumer". An Empty classic group
// becomes a consumer group on the first heartbeat and back on the first
// JoinGroup; non-empty groups are converted online (migrate.go).
//
// Groups are kept in __consumer_offsets with Kafka's record types
// (modernlog.go): a restart or coordinator move keeps members, epochs and
// assignments, and the members' next heartbeats are accepted.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of the consumer-protocol settings, Kafka's.
const (
	DefaultConsumerSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
	DefaultConsumerHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
)

// Epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// ConsumerTopic is a topic as consumer-protocol groups see it.
type ConsumerTopic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// consumerAssignors are the server-side assignors, Kafka's names.
var consumerAssignors = []string{"uniform", "range"}

// Consumer group states, Kafka's names (ConsumerGroupState).
const (
	cgEmpty       = "Empty"
	cgAssigning   = "Assigning"
	cgReconciling = "Reconciling"
	cgStable      = "Stable"
)

// Member reconciliation states (MemberState).
const (
	msStable     = memberStable
	msUnrevoked  = "UNREVOKED_PARTITIONS"
	msUnreleased = "UNRELEASED_PARTITIONS"
)

// partitionSet is a set of partitions by topic name; slices are sorted.
type partitionSet map[string][]int32

func (a partitionSet) clone() partitionSet {
	out := make(partitionSet, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a partitionSet) has(t string, p int32) bool { _, ok := slices.BinarySearch(a[t], p); return ok }

func (a partitionSet) add(t string, p int32) {
	i, ok := slices.BinarySearch(a[t], p)
	if !ok {
		a[t] = slices.Insert(a[t], i, p)
	}
}

func (a partitionSet) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// minus returns the partitions of a not in b.
func (a partitionSet) minus(b partitionSet) partitionSet {
	out := partitionSet{}
	for t, ps := range a {
		for _, p := range ps {
			if !b.has(t, p) {
				out.add(t, p)
			}
		}
	}
	return out
}

func (a partitionSet) intersect(b partitionSet) partitionSet {
	out := partitionSet{}
	for t, ps := range a {
		for _, p := range ps {
			if b.has(t, p) {
				out.add(t, p)
			}
		}
	}
	return out
}

func (a partitionSet) equal(b partitionSet) bool {
	return a.size() == b.size() && a.minus(b).size() == 0
}

func (a partitionSet) String() string {
	var parts []string
	for _, t := range sortedKeys(a) {
		if len(a[t]) == 0 {
			continue
		}
		s := make([]string, len(a[t]))
		for i, p := range a[t] {
			s[i] = fmt.Sprint(p)
		}
		parts = append(parts, t+":"+strings.Join(s, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ";")
}

// consumerMember is a member of a consumer-protocol group; its epochs are
// those of the partitions of assigned and revoking, and its revokeDue is
// armed for consumer-protocol members only.
type consumerMember struct {
	memberCore

	assigned partitionSet // current assignment
	revoking partitionSet // partitions it must still revoke

	topics         []string // subscribed_topic_names
	regex          string   // subscribed_topic_regex, "" for none
	re             *regexp.Regexp
	serverAssignor string

	// classic is set for members using the classic protocol (migrate.go).
	classic *classicMember
}

// consumerGroup is a consumer-protocol group; its logged records are
// modernlog.go's.
type consumerGroup struct {
	membership[*consumerMember, partitionSet]
	order        []string // join order
	subscription string   // subscribed topics and their partition counts, at epoch
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{membership: newMembership[*consumerMember, partitionSet]()}
}

func (cg *consumerGroup) state() string {
	if len(cg.members) == 0 {
		return cgEmpty
	}
	if cg.assignmentEpoch != cg.epoch {
		return cgAssigning
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != msStable {
			return cgReconciling
		}
	}
	return cgStable
}

// assignor is the preferred server assignor of the members, the most
// requested one (ties: the earliest in join order), else the default.
func (cg *consumerGroup) assignor(def string) string {
	votes := map[string]int{}
	best := ""
	for _, id := range cg.order {
		a := cg.members[id].serverAssignor
		if a == "" {
			continue
		}
		votes[a]++
		if best == "" || votes[a] > votes[best] {
			best = a
		}
	}
	if best == "" {
		return def
	}
	return best
}

func (cg *consumerGroup) remove(id string) {
	if cg.members[id] == nil {
		return
	}
	cg.forget(id)
	cg.order = slices.DeleteFunc(cg.order, func(o string) bool { return o == id })
}

// ownerOf reports which member other than self still owns (assigned or
// revoking) t/p.
func (cg *consumerGroup) ownedByOther(self, t string, p int32) bool {
	for id, m := range cg.members {
		if id != self && (m.assigned.has(t, p) || m.revoking.has(t, p)) {
			return true
		}
	}
	return false
}

// topicsByName returns the broker's topics.
//
// Lock should be held.
func (c *Coordinator) topicsByName() map[string]ConsumerTopic {
	out := map[string]ConsumerTopic{}
	if c.cfg.Topics == nil {
		return out
	}
	for _, t := range c.cfg.Topics() {
		out[t.Name] = t
	}
	return out
}

// subscribedTopics resolves m's subscription against topics.
func (m *consumerMember) subscribedTopics(topics map[string]ConsumerTopic) []string {
	var out []string
	for _, t := range m.topics {
		if _, ok := topics[t]; ok {
			out = append(out, t)
		}
	}
	if m.re != nil {
		for name := range topics {
			if m.re.MatchString(name) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// subscriptionOf describes the group's subscribed topics and their
// partition counts; a change bumps the group epoch.
func (cg *consumerGroup) subscriptionOf(topics map[string]ConsumerTopic) string {
	var b strings.Builder
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		if m.instanceID != "" {
			id = "instance:" + m.instanceID // a replaced static member changes nothing
		}
		fmt.Fprintf(&b, "%s[", id)
		for _, t := range m.subscribedTopics(topics) {
			fmt.Fprintf(&b, "%s:%d,", t, topics[t].Partitions)
		}
		b.WriteString("]")
	}
	return b.String()
}

// ConsumerGroupHeartbeat handles a ConsumerGroupHeartbeat request (v0-1);
// clientID and clientHost describe the caller for ConsumerGroupDescribe.
// It answers once the records of the change it made are committed.
func (c *Coordinator) ConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ConsumerGroupHeartbeatResponse {
	c.mu.Lock()
	var converted func() *kerr.Error
	r := c.consumerGroupHeartbeatLocked(req, clientID, clientHost, &converted)
	var committed func() *kerr.Error
	if !c.closed && req.Group != "" {
		committed = c.persistConsumerLocked(c.groups[req.Group])
	}
	c.mu.Unlock()
	if err := waitCommitted(converted, committed); err != nil && r.ErrorCode == 0 {
		r = kmsg.NewPtrConsumerGroupHeartbeatResponse()
		r.ErrorCode = err.Code
	}
	return r
}

// consumerGroupHeartbeatLocked is ConsumerGroupHeartbeat's state change;
// *converted is set to what waits for the records of a group conversion.
//
// Lock should be held.
func (c *Coordinator) consumerGroupHeartbeatLocked(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, converted *func() *kerr.Error) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	fail := func(err *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		r.ErrorCode = err.Code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r
	}
	instanceID := deref(req.InstanceID)
	switch {
	case req.Group == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != 0):
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.MemberEpoch < staticLeaveEpoch:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
	case req.MemberEpoch == staticLeaveEpoch && instanceID == "":
		return fail(kerr.InvalidRequest, "InstanceId can't be null when leaving with epoch -2.")
	case req.MemberEpoch == 0 && req.RebalanceTimeoutMillis <= 0:
		return fail(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return fail(kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
	case req.MemberEpoch == 0 && req.Topics == nil:
		return fail(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
	}
	var re *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		var err error
		if re, err = regexp.Compile("^(?:" + *req.SubscribedTopicRegex + ")$"); err != nil {
			return fail(kerr.InvalidRegularExpression, "SubscribedTopicRegex is not a valid RE2 regular expression: "+err.Error())
		}
	}
	if a := req.ServerAssignor; a != nil && *a != "" && !slices.Contains(c.cfg.ConsumerAssignors, *a) {
		return fail(kerr.UnsupportedAssignor, "ServerAssignor "+*a+" is not supported. Supported assignors: "+strings.Join(c.cfg.ConsumerAssignors, ", ")+".")
	}

	if err := c.coordinatorErrLocked(req.Group); err != nil {
		return fail(err, "")
	}
	if c.isShareGroupLocked(req.Group) {
		return fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
	}
	g := c.groups[req.Group]
	if g != nil && g.st != nil {
		return fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
	}
	if g != nil && g.cg == nil {
		if len(g.members) > 0 {
			// A non-empty classic group is upgraded online, if allowed,
			// by a member joining.
			if req.MemberEpoch != 0 {
				return fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
			}
			if err := c.upgradeLocked(g); err != nil {
				return fail(err, "Group "+req.Group+" is not a consumer group.")
			}
		} else {
			for _, s := range g.pending {
				c.timers.cancelLocked(s)
			}
			g.pending = map[string]*timerSlot{}
			c.cancelGroupTimersLocked(g)
			g.cg = newConsumerGroup() // an Empty classic group converts
			g.protocolType = consumerProtocolType
		}
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return fail(kerr.UnknownMemberID, "Group "+req.Group+" has no member "+req.MemberID+".")
		}
		g = newGroup(req.Group, c.cfg.Now())
		g.cg = newConsumerGroup()
		g.protocolType = consumerProtocolType
		c.groups[g.id] = g
	}
	cg := g.cg

	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.consumerLeaveLocked(g, req, r, converted)
	}

	topics := c.topicsByName()
	m, isNew, err := c.consumerMemberLocked(g, req, instanceID)
	if err != nil {
		return fail(err, "")
	}
	if isNew {
		m.clientID, m.clientHost = clientID, clientHost
	}
	if m.classic != nil {
		// A classic member now speaks the consumer protocol.
		c.timers.cancelLocked(&m.classic.joinDue)
		c.timers.cancelLocked(&m.classic.syncDue)
		m.classic = nil
	}
	before := struct {
		epoch    int32
		assigned partitionSet
	}{m.epoch, m.assigned.clone()}

	// Update the subscription.
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = millis(req.RebalanceTimeoutMillis)
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		m.topics = slices.Clone(req.SubscribedTopicNames)
		slices.Sort(m.topics)
		m.topics = slices.Compact(m.topics)
	}
	if req.SubscribedTopicRegex != nil {
		m.regex, m.re = *req.SubscribedTopicRegex, re
	}
	if !isNew && req.MemberEpoch != 0 && req.SubscribedTopicNames != nil && req.SubscribedTopicRegex == nil && req.Version >= 1 && m.re != nil && len(req.SubscribedTopicNames) > 0 {
		// Names replace a regex only when sent without one (v1 allows both).
		m.regex, m.re = "", nil
	}

	// Bump the group epoch on membership or subscription changes, then
	// compute the target assignment for it.
	if sub := cg.subscriptionOf(topics); isNew || sub != cg.subscription {
		cg.subscription = sub
		cg.epoch++
	}
	if cg.assignmentEpoch < cg.epoch {
		c.computeTargetLocked(cg, topics)
	}

	// Reconcile the member with its target.
	var ownedNow partitionSet
	if req.Topics != nil {
		ownedNow = partitionSet{}
		byID := map[[16]byte]string{}
		for _, t := range topics {
			byID[t.ID] = t.Name
		}
		for _, t := range req.Topics {
			if name, ok := byID[t.TopicID]; ok {
				for _, p := range t.Partitions {
					ownedNow.add(name, p)
				}
			}
		}
	}
	c.reconcileLocked(g, m, ownedNow)
	c.scheduleConsumerSessionLocked(g, m)

	if g.state != stateStable {
		g.transition(stateStable, c.cfg.Now())
	}
	r.MemberID = kmsg.StringPtr(m.id)
	r.MemberEpoch = m.epoch
	_, interval := c.consumerTimeouts(g.id)
	r.HeartbeatIntervalMillis = int32(interval.Milliseconds())
	if req.MemberEpoch == 0 || req.MemberEpoch != m.epoch || before.epoch != m.epoch || !before.assigned.equal(m.assigned) ||
		(ownedNow != nil && !ownedNow.equal(m.assigned)) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range sortedKeys(m.assigned) {
			if len(m.assigned[t]) == 0 {
				continue
			}
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID = topics[t].ID
			at.Partitions = slices.Clone(m.assigned[t])
			a.Topics = append(a.Topics, at)
		}
		r.Assignment = &a
	}
	return r
}

// consumerMemberLocked finds or creates the heartbeat's member, checking
// its epoch.
//
// Lock should be held.
func (c *Coordinator) consumerMemberLocked(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, instanceID string) (*consumerMember, bool, *kerr.Error) {
	cg := g.cg
	if req.MemberEpoch != 0 {
		// A lost response: the previous epoch is accepted if the member
		// owns nothing it was not given.
		m, err := cg.checkMember(req.MemberID, instanceID, req.MemberEpoch, func(m *consumerMember) bool {
			owned := partitionSet{}
			for _, t := range req.Topics {
				for name, ct := range c.topicsByName() {
					if ct.ID == t.TopicID {
						for _, p := range t.Partitions {
							owned.add(name, p)
						}
					}
				}
			}
			return req.Topics != nil && owned.minus(m.assigned).size() == 0
		})
		return m, false, err
	}
	if instanceID != "" {
		// The restarted instance takes over the old member's assignment
		// and epoch, without a rebalance.
		oldID := cg.static[instanceID]
		nm, err := staticJoinLocked(c, &cg.membership, instanceID, req.MemberID, func(old *consumerMember, _ string) *consumerMember {
			nm := *old
			nm.topics, nm.regex, nm.re = nil, "", nil
			return &nm
		})
		if err != nil {
			return nil, false, err
		}
		if nm != nil {
			cg.order = append(slices.DeleteFunc(cg.order, func(o string) bool { return o == oldID }), nm.id)
			return nm, false, nil
		}
	}
	if m := cg.members[req.MemberID]; m != nil {
		// A rejoin with epoch 0 of a known member: it lost its state;
		// it starts over with nothing owned.
		c.startOverLocked(&m.memberCore)
		m.assigned, m.revoking = partitionSet{}, partitionSet{}
		return m, false, nil
	}
	if len(cg.members) >= c.cfg.MaxGroupSize {
		return nil, false, kerr.GroupMaxSizeReached
	}
	id := req.MemberID
	if id == "" {
		id = c.newUUID()
	}
	m := &consumerMember{memberCore: memberCore{id: id, instanceID: instanceID, state: msStable}, assigned: partitionSet{}, revoking: partitionSet{}}
	cg.add(m)
	cg.order = append(cg.order, id)
	return m, true, nil
}

// consumerLeaveLocked handles epochs -1 and -2.
//
// Lock should be held.
func (c *Coordinator) consumerLeaveLocked(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, r *kmsg.ConsumerGroupHeartbeatResponse, converted *func() *kerr.Error) *kmsg.ConsumerGroupHeartbeatResponse {
	m, err := g.cg.leaving(req.MemberID, deref(req.InstanceID))
	if err != nil {
		r.ErrorCode = err.Code
		return r
	}
	r.MemberID = kmsg.StringPtr(m.id)
	r.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch {
		// Kept, assignment and all, for the instance's next member; its
		// partitions' assignment epochs are reset to 0, as Kafka does.
		c.staticLeaveLocked(&m.memberCore)
		m.resetAssignmentEpochs(0)
		c.scheduleConsumerSessionLocked(g, m)
		return r
	}
	*converted = c.fenceConsumerMemberLocked(g, m)
	return r
}

// removeConsumerMemberLocked removes m, bumping the group epoch.
//
// Lock should be held.
func (c *Coordinator) removeConsumerMemberLocked(g *group, m *consumerMember) {
	cg := g.cg
	c.cancelCMemberTimersLocked(m)
	cg.remove(m.id)
	cg.epoch++
	cg.subscription = cg.subscriptionOf(c.topicsByName())
	if len(cg.members) == 0 {
		g.transition(stateEmpty, c.cfg.Now())
	}
}

// consumerTimeouts is a consumer group's session timeout and heartbeat
// interval: its group configs, else the broker's.
func (c *Coordinator) consumerTimeouts(group string) (time.Duration, time.Duration) {
	s, h := c.cfg.ConsumerSessionTimeout, c.cfg.ConsumerHeartbeatInterval
	if c.cfg.ConsumerGroupTimeouts != nil {
		gs, gh := c.cfg.ConsumerGroupTimeouts(group)
		if gs > 0 {
			s = gs
		}
		if gh > 0 {
			h = gh
		}
	}
	return s, h
}

// scheduleConsumerSessionLocked restarts m's session timer (a classic
// member's own session timeout, else the group's).
//
// Lock should be held.
func (c *Coordinator) scheduleConsumerSessionLocked(g *group, m *consumerMember) {
	d, _ := c.consumerTimeouts(g.id)
	if m.classic != nil && m.classic.sessionTimeout > 0 {
		d = m.classic.sessionTimeout
	}
	c.scheduleFenceLocked(g, m, &m.hb, d, "consumer group member session expired", nil)
}

// scheduleFenceLocked (re)arms slot to fence m after d: when it fires, if
// m is still a member of g (and still reports true, unless nil), why is
// logged and m is fenced and the group persisted. The session, revocation
// and classic join and sync timeouts of consumer-group members are such
// timers.
//
// Lock should be held.
func (c *Coordinator) scheduleFenceLocked(g *group, m *consumerMember, slot *timerSlot, d time.Duration, why string, still func() bool) {
	scheduleMemberFenceLocked(c, g, m, slot, d, why, func() *membership[*consumerMember, partitionSet] {
		if g.cg == nil {
			return nil
		}
		return &g.cg.membership
	}, still, func() {
		c.fenceConsumerMemberLocked(g, m)
		c.persistConsumerLocked(g)
	})
}

// computeTargetLocked computes the target assignment for the group epoch.
//
// Lock should be held.
func (c *Coordinator) computeTargetLocked(cg *consumerGroup, topics map[string]ConsumerTopic) {
	subs := map[string][]string{}
	for id, m := range cg.members {
		subs[id] = m.subscribedTopics(topics)
	}
	parts := map[string]int32{}
	for _, t := range topics {
		parts[t.Name] = t.Partitions
	}
	if cg.assignor(c.cfg.ConsumerAssignors[0]) == "range" {
		cg.target = assignRange(subs, parts)
	} else {
		cg.target = assignUniform(subs, parts, cg.target)
	}
	cg.assignmentEpoch = cg.epoch
}

// assignRange gives each topic's partitions to its subscribers sorted by
// member id, in contiguous ranges, the first ones one larger.
func assignRange(subs map[string][]string, parts map[string]int32) map[string]partitionSet {
	out := map[string]partitionSet{}
	bytopic := map[string][]string{}
	for id, ts := range subs {
		out[id] = partitionSet{}
		for _, t := range ts {
			bytopic[t] = append(bytopic[t], id)
		}
	}
	for t, ids := range bytopic {
		slices.Sort(ids)
		n := int(parts[t])
		per, extra := n/len(ids), n%len(ids)
		p := 0
		for i, id := range ids {
			k := per
			if i < extra {
				k++
			}
			for j := 0; j < k; j++ {
				out[id].add(t, int32(p))
				p++
			}
		}
	}
	return out
}

// assignUniform spreads every subscribed partition over its subscribers so
// that counts differ by at most one where subscriptions allow, keeping
// partitions with their previous target owner when that owner stays within
// its share.
func assignUniform(subs map[string][]string, parts map[string]int32, prev map[string]partitionSet) map[string]partitionSet {
	out := map[string]partitionSet{}
	ids := make([]string, 0, len(subs))
	for id := range subs {
		out[id] = partitionSet{}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	type tp struct {
		t string
		p int32
	}
	var all []tp
	subscribers := map[string][]string{}
	for _, id := range ids {
		for _, t := range subs[id] {
			subscribers[t] = append(subscribers[t], id)
		}
	}
	for _, t := range sortedKeys(subscribers) {
		for p := int32(0); p < parts[t]; p++ {
			all = append(all, tp{t, p})
		}
	}
	if len(ids) == 0 {
		return out
	}
	// A balanced assignment gives every member lo partitions and extra
	// of them one more: a member keeps at most lo of its previous ones,
	// and only extra members keep lo+1, so that a joining member finds
	// its share free (with a cap of ceil(n/m) for all, 8 members owning
	// 8 of 64 partitions each would keep them all from a 9th).
	lo, extra := len(all)/len(ids), len(all)%len(ids)
	subscribed := func(id, t string) bool { return slices.Contains(subs[id], t) }
	var rest []tp
	for _, x := range all {
		kept := false
		for _, id := range ids {
			if !prev[id].has(x.t, x.p) || !subscribed(id, x.t) {
				continue
			}
			if n := out[id].size(); n < lo || (n == lo && extra > 0) {
				if n == lo {
					extra--
				}
				out[id].add(x.t, x.p)
				kept = true
			}
			break
		}
		if !kept {
			rest = append(rest, x)
		}
	}
	for _, x := range rest {
		best := ""
		for _, id := range subscribers[x.t] {
			if best == "" || out[id].size() < out[best].size() {
				best = id
			}
		}
		out[best].add(x.t, x.p)
	}
	return out
}

// reconcileLocked moves m's current assignment toward its target (Kafka's
// CurrentAssignmentBuilder). ownedNow is what the heartbeat says the
// member owns, nil if it did not say.
//
// Lock should be held.
func (c *Coordinator) reconcileLocked(g *group, m *consumerMember, ownedNow partitionSet) {
	cg := g.cg
	var owned *partitionSet
	if ownedNow != nil {
		owned = &ownedNow
	}
	target := cg.target[m.id]
	if target == nil {
		target = partitionSet{}
	}
	reconcileLocked(&m.memberCore, &m.assigned, &m.revoking, owned, target, cg.assignmentEpoch, reconciliation[partitionSet]{
		unrevoked: msUnrevoked, unreleased: msUnreleased,
		empty: func() partitionSet { return partitionSet{} },
		revoked: func() {
			m.pruneAssignmentEpochs()
			c.timers.cancelLocked(&m.revokeDue)
		},
		revokeLater: func() {
			if m.classic == nil {
				// Classic members have join and sync timeouts instead.
				c.scheduleRevokeLocked(g, m)
			}
		},
		prune: m.pruneAssignmentEpochs,
		grant: func(keep partitionSet) (partitionSet, bool) {
			unreleased := false
			for t, ps := range target.minus(keep) {
				for _, p := range ps {
					if cg.ownedByOther(m.id, t, p) {
						unreleased = true
						continue
					}
					// A newly assigned partition gets the target's epoch.
					keep.add(t, p)
					m.setAssignmentEpoch(t, p, cg.assignmentEpoch)
				}
			}
			return keep, unreleased
		},
	})
}

// scheduleRevokeLocked starts m's rebalance timeout for revoking its
// partitions; a member still revoking when it fires is removed.
//
// Lock should be held.
func (c *Coordinator) scheduleRevokeLocked(g *group, m *consumerMember) {
	c.scheduleFenceLocked(g, m, &m.revokeDue, max(m.rebalanceTimeout, time.Millisecond),
		"consumer group member did not revoke its partitions within the rebalance timeout",
		func() bool { return m.state == msUnrevoked })
}

// ConsumerGroupDescribe handles a ConsumerGroupDescribe request (v0-1).
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	r := kmsg.NewPtrConsumerGroupDescribeResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	topics := c.topicsByName()
	assignment := func(a partitionSet) kmsg.Assignment {
		out := kmsg.NewAssignment()
		for _, t := range sortedKeys(a) {
			if len(a[t]) == 0 {
				continue
			}
			at := kmsg.NewAssignmentTopicPartition()
			at.TopicID, at.Topic, at.Partitions = topics[t].ID, t, slices.Clone(a[t])
			out.TopicPartitions = append(out.TopicPartitions, at)
		}
		return out
	}
	for _, id := range req.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
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
		case g == nil:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			d.ErrorMessage = &msg
		case g.cg == nil:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " is not a consumer group."
			d.ErrorMessage = &msg
		default:
			cg := g.cg
			d.State = cg.state()
			d.Epoch, d.AssignmentEpoch = cg.epoch, cg.assignmentEpoch
			d.AssignorName = cg.assignor(c.cfg.ConsumerAssignors[0])
			for _, mid := range cg.order {
				m := cg.members[mid]
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID, dm.InstanceID, dm.RackID = mid, strPtr(m.instanceID), strPtr(m.rackID)
				dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.epoch, m.clientID, m.clientHost
				dm.SubscribedTopics = slices.Clone(m.topics)
				if dm.SubscribedTopics == nil {
					dm.SubscribedTopics = []string{}
				}
				// Kafka answers "" for a member without a regex, not null.
				dm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
				dm.Assignment, dm.TargetAssignment = assignment(m.assigned), assignment(cg.target[mid])
				if req.Version >= 1 {
					dm.MemberType = m.memberType()
				}
				d.Members = append(d.Members, dm)
			}
		}
		r.Groups = append(r.Groups, d)
	}
	return r
}

// subscribesTo reports whether a member subscribes to topic, by name or
// regex.
func (cg *consumerGroup) subscribesTo(topic string) bool {
	for _, m := range cg.members {
		if slices.Contains(m.topics, topic) || (m.re != nil && m.re.MatchString(topic)) {
			return true
		}
	}
	return false
}

// cancelConsumerTimersLocked stops the members' timers.
//
// Lock should be held.
func (c *Coordinator) cancelConsumerTimersLocked(cg *consumerGroup) {
	for _, m := range cg.members {
		c.cancelCMemberTimersLocked(m)
	}
}
