package coordinator

// Online migration between classic and consumer-protocol groups (KIP-848),
// as Kafka 4.x does it, subject to group.consumer.migration.policy
// (Config.ConsumerMigrationPolicy; empty groups convert either way
// whatever the policy):
//
//   - Upgrade: a ConsumerGroupHeartbeat joining (epoch 0) a non-empty
//     classic group of protocol type "consumer" converts it into a
//     consumer group. Every classic member becomes a consumer-group
//     member "using the classic protocol": its epoch is the classic
//     generation, its subscription and rack come from its metadata for
//     the selected protocol, and its current and target assignments are
//     its last classic assignment. Parked JoinGroup and SyncGroup calls
//     are answered REBALANCE_IN_PROGRESS. The heartbeat then joins as
//     usual, bumping the group epoch.
//   - Classic members in a consumer group keep speaking JoinGroup,
//     SyncGroup, Heartbeat, LeaveGroup and OffsetCommit. A Heartbeat
//     answers REBALANCE_IN_PROGRESS when the group epoch is ahead of the
//     member's, when the member must revoke partitions, or when the
//     partitions it waits for were released. A JoinGroup reconciles the
//     member with its target assignment (its owned partitions are those of
//     its subscription metadata) and answers at once, with the member
//     epoch as generation, no leader and the member's first protocol; the
//     following SyncGroup gets the member's current assignment, encoded
//     with the consumer protocol. A member that does not rejoin within its
//     rebalance timeout after being told to, or does not sync within it
//     after joining, or whose classic session timeout passes, is removed.
//   - Downgrade: when the last member using the consumer protocol leaves
//     (or is fenced) while classic members remain, the group becomes a
//     classic group again: Stable, generation = group epoch, each member's
//     assignment its target assignment, then a rebalance is started.
//
// Kafka's records are used: the ClassicMemberMetadata tagged field of
// ConsumerGroupMemberMetadataValue keeps a classic member's session
// timeout and protocols. A conversion tombstones the consumer-group
// records (downgrade) or writes the classic group as empty (upgrade; a
// GroupMetadata tombstone would drop the group's offsets on replay here).

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Values of Config.ConsumerMigrationPolicy (group.consumer.migration.policy).
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// classicMember is what a consumer-group member using the classic protocol
// has in addition (Kafka's ClassicMemberMetadata and its timers).
type classicMember struct {
	sessionTimeout time.Duration
	protocols      []protocol

	joinDue timerSlot // after REBALANCE_IN_PROGRESS: rejoin within the rebalance timeout
	syncDue timerSlot // after a join: sync within the rebalance timeout
}

// normalizePolicy maps a configured policy to one of the Migration*
// values: empty is Kafka's default (bidirectional), an unknown value
// disables migration (Kafka's parse).
func normalizePolicy(p string) string {
	switch p = strings.ToLower(p); p {
	case "":
		return MigrationBidirectional
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
		return p
	}
	return MigrationDisabled
}

func (c *Coordinator) upgradeEnabled() bool {
	p := c.cfg.ConsumerMigrationPolicy
	return p == MigrationBidirectional || p == MigrationUpgrade
}

func (c *Coordinator) downgradeEnabled() bool {
	p := c.cfg.ConsumerMigrationPolicy
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// parseAssignment decodes a consumer-protocol assignment, keeping the
// partitions of known topics.
func parseAssignment(b []byte, topics map[string]ConsumerTopic) (partitionSet, error) {
	out := partitionSet{}
	if len(b) == 0 {
		return out, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, err
	}
	for _, t := range a.Topics {
		ct, ok := topics[t.Topic]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if p >= 0 && p < ct.Partitions {
				out.add(t.Topic, p)
			}
		}
	}
	return out, nil
}

// encodeAssignment encodes a as a consumer-protocol assignment of the
// version of the member's subscription metadata md (at most 3).
func encodeAssignment(a partitionSet, md []byte) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	if len(md) >= 2 {
		out.Version = min(max(int16(md[0])<<8|int16(md[1]), 0), 3)
	}
	for _, t := range sortedKeys(a) {
		if len(a[t]) == 0 {
			continue
		}
		out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t, Partitions: slices.Clone(a[t])})
	}
	return out.AppendTo(nil)
}

// ownedOf returns the partitions a subscription says its member owns.
func ownedOf(sub *kmsg.ConsumerMemberMetadata, topics map[string]ConsumerTopic) partitionSet {
	out := partitionSet{}
	for _, o := range sub.OwnedPartitions {
		if _, ok := topics[o.Topic]; !ok {
			continue
		}
		for _, p := range o.Partitions {
			out.add(o.Topic, p)
		}
	}
	return out
}

func sortedTopics(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return slices.Compact(out)
}

// upgradeLocked converts the non-empty classic group g into a consumer
// group; it returns GROUP_ID_NOT_FOUND, leaving g as it was, when the
// policy or the group forbids it.
//
// Lock should be held.
func (c *Coordinator) upgradeLocked(g *group) *kerr.Error {
	switch {
	case !c.upgradeEnabled():
		c.log.Info("not upgrading classic group: online upgrade is disabled", "group", g.id)
		return kerr.GroupIDNotFound
	case g.protocolType != consumerProtocolType:
		c.log.Info("not upgrading classic group: it does not use the consumer protocol", "group", g.id, "protocol_type", g.protocolType)
		return kerr.GroupIDNotFound
	case len(g.members) > c.cfg.MaxGroupSize:
		return kerr.GroupIDNotFound
	}
	topics := c.topicsByName()
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch = g.generation, g.generation
	for _, id := range g.order {
		m := g.members[id]
		md := m.metadataFor(g.protocol)
		if g.protocol == "" && len(m.protocols) > 0 {
			md = m.protocols[0].metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(md); err != nil {
			c.log.Warn("not upgrading classic group: malformed consumer protocol metadata", "group", g.id, "member", id, "err", err)
			return kerr.GroupIDNotFound
		}
		assigned, err := parseAssignment(m.assignment, topics)
		if err != nil {
			c.log.Warn("not upgrading classic group: malformed consumer protocol assignment", "group", g.id, "member", id, "err", err)
			return kerr.GroupIDNotFound
		}
		cm := &consumerMember{
			memberCore: memberCore{id: id, instanceID: m.instanceID, rackID: deref(sub.Rack),
				clientID: m.clientID, clientHost: m.clientHost,
				epoch: g.generation, prevEpoch: g.generation, state: msStable,
				rebalanceTimeout: m.rebalanceTimeout},
			assigned: assigned, revoking: partitionSet{},
			topics:  sortedTopics(sub.Topics),
			classic: &classicMember{sessionTimeout: m.sessionTimeout, protocols: slices.Clone(m.protocols)},
		}
		// The classic assignment was given at the generation.
		cm.resetAssignmentEpochs(max(g.generation, 0))
		cg.add(cm)
		cg.order = append(cg.order, id)
		cg.target[id] = assigned.clone()
	}

	c.log.Info("upgrading classic group to a consumer group", "group", g.id, "generation", g.generation, "members", len(g.members))
	for _, id := range g.order {
		m := g.members[id]
		c.completeJoinLocked(m, joinError(id, kerr.RebalanceInProgress))
		c.completeSyncLocked(m, syncError(kerr.RebalanceInProgress))
	}
	c.cancelGroupTimersLocked(g)
	g.members, g.order, g.static = map[string]*member{}, nil, map[string]string{}
	g.pending, g.pendingSync = map[string]*timerSlot{}, nil
	g.leader, g.protocol, g.protocolType = "", "", consumerProtocolType
	g.computeSubscribed()
	// The classic group is written as empty: the consumer-group records
	// that follow supersede it on load.
	if _, err := c.storeGroupLocked(g); err != nil {
		c.log.Warn("storing the upgraded classic group as empty failed", "group", g.id, "err", err)
	}
	g.cg = cg
	g.transition(stateStable, c.cfg.Now())
	for _, id := range cg.order {
		c.scheduleConsumerSessionLocked(g, cg.members[id])
	}
	return nil
}

// fenceConsumerMemberLocked removes m from its consumer group, converting
// the group to a classic group instead when m is its last member using the
// consumer protocol and the policy allows. committed waits for the
// conversion's records (nil if there was none).
//
// Lock should be held.
func (c *Coordinator) fenceConsumerMemberLocked(g *group, m *consumerMember) (committed func() *kerr.Error) {
	if c.canDowngradeLocked(g, m) {
		return c.downgradeLocked(g, m)
	}
	c.removeConsumerMemberLocked(g, m)
	return nil
}

// canDowngradeLocked reports whether removing m converts g to classic.
//
// Lock should be held.
func (c *Coordinator) canDowngradeLocked(g *group, m *consumerMember) bool {
	cg := g.cg
	if m.classic != nil || len(cg.members) <= 1 {
		return false
	}
	for id, o := range cg.members {
		if id != m.id && o.classic == nil {
			return false
		}
	}
	if !c.downgradeEnabled() {
		c.log.Info("not downgrading consumer group: online downgrade is disabled", "group", g.id)
		return false
	}
	if len(cg.members)-1 > c.cfg.MaxGroupSize {
		return false
	}
	return true
}

// downgradeLocked converts the consumer group g, without leaving, into a
// Stable classic group and starts a rebalance.
//
// Lock should be held.
func (c *Coordinator) downgradeLocked(g *group, leaving *consumerMember) func() *kerr.Error {
	cg := g.cg
	c.log.Info("downgrading consumer group to a classic group", "group", g.id, "epoch", cg.epoch, "leaving", leaving.id)
	c.cancelConsumerTimersLocked(cg)
	tombstoned := c.persistRecordsLocked(g.id, &cg.logged, nil)

	g.cg = nil
	g.members, g.order, g.static = map[string]*member{}, nil, map[string]string{}
	g.pending, g.pendingSync, g.leader = map[string]*timerSlot{}, nil, ""
	g.generation, g.protocolType = cg.epoch, consumerProtocolType
	g.state = stateStable
	for _, id := range cg.order {
		cm := cg.members[id]
		if id == leaving.id {
			continue
		}
		g.add(&member{
			id: id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			sessionTimeout: cm.classic.sessionTimeout, rebalanceTimeout: cm.rebalanceTimeout,
			protocolType: consumerProtocolType, protocols: cm.classic.protocols,
		})
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	for _, id := range g.order {
		m := g.members[id]
		m.assignment = encodeAssignment(cg.target[id], m.metadataFor(g.protocol))
	}
	g.transition(stateStable, c.cfg.Now())
	stored, err := c.storeGroupLocked(g)
	if err != nil {
		c.log.Warn("storing the downgraded group failed", "group", g.id, "err", err)
	}
	for _, id := range g.order {
		c.scheduleHeartbeatLocked(g, g.members[id], g.members[id].sessionTimeout)
	}
	c.prepareRebalanceLocked(g, "downgrade from a consumer group to a classic group")
	return func() *kerr.Error { return waitCommitted(tombstoned, stored) }
}

// scheduleClassicTimeoutLocked (re)arms a classic member's join or sync
// timeout (slot): the member is fenced if it does not rejoin or sync
// within its rebalance timeout.
//
// Lock should be held.
func (c *Coordinator) scheduleClassicTimeoutLocked(g *group, m *consumerMember, slot *timerSlot, why string) {
	c.scheduleFenceLocked(g, m, slot, max(m.rebalanceTimeout, time.Millisecond), "classic member of a consumer group removed: "+why, nil)
}

// validateClassicMemberLocked finds the classic member a JoinGroup,
// SyncGroup, Heartbeat or LeaveGroup names in a consumer group.
func validateClassicMember(cg *consumerGroup, memberID, instanceID string) (*consumerMember, *kerr.Error) {
	var m *consumerMember
	if instanceID == "" {
		m = cg.members[memberID]
	} else {
		id, ok := cg.static[instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID
		}
		if memberID != "" && id != memberID {
			return nil, kerr.FencedInstanceID
		}
		m = cg.members[id]
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// supportsClassicProtocols reports whether a classic member with these
// protocols may join cg: of type "consumer", with a protocol every classic
// member supports.
func (cg *consumerGroup) supportsClassicProtocols(protocolType string, ps []protocol) bool {
	if protocolType != consumerProtocolType || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range cg.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(q protocol) bool { return q.name == p.name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicJoinToConsumerLocked handles a JoinGroup to a non-empty consumer
// group: the member joins (or rejoins) as a member using the classic
// protocol and is answered at once.
//
// Lock should be held.
func (c *Coordinator) classicJoinToConsumerLocked(g *group, p joinParams) (*kmsg.JoinGroupResponse, func() *kerr.Error) {
	cg := g.cg
	if _, ok := cg.members[p.memberID]; !ok && len(cg.members) >= c.cfg.MaxGroupSize {
		return joinError(p.memberID, kerr.GroupMaxSizeReached), nil
	}
	if !cg.supportsClassicProtocols(p.protocolType, p.protocols) {
		return joinError(p.memberID, kerr.InconsistentGroupProtocol), nil
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(p.protocols[0].metadata); err != nil {
		return joinError(p.memberID, kerr.InconsistentGroupProtocol), nil
	}
	id := p.memberID
	if id == "" {
		id = p.clientID + "-" + c.newUUID()
		if p.instanceID == "" && p.version >= 4 {
			return joinError(id, kerr.MemberIDRequired), nil
		}
	}
	topics := c.topicsByName()

	m := cg.members[id]
	isNew := false
	if p.instanceID != "" {
		if oldID, ok := cg.static[p.instanceID]; ok && oldID != id {
			if p.memberID != "" {
				return joinError(p.memberID, kerr.FencedInstanceID), nil
			}
			// A restarted static member takes over the old member's
			// assignment under its new id.
			old := cg.members[oldID]
			c.cancelCMemberTimersLocked(old)
			nm := *old
			nm.id, nm.hb, nm.revokeDue = id, timerSlot{}, timerSlot{}
			nm.epoch, nm.prevEpoch, nm.assigned, nm.revoking, nm.state = 0, 0, partitionSet{}, partitionSet{}, msStable
			nm.epochs = nil
			nm.classic = &classicMember{}
			m = &nm
			cg.replaceStatic(oldID, m)
			cg.order = append(slices.DeleteFunc(cg.order, func(o string) bool { return o == oldID }), id)
		}
	}
	if m == nil {
		m = &consumerMember{memberCore: memberCore{id: id, instanceID: p.instanceID, state: msStable}, assigned: partitionSet{}, revoking: partitionSet{}}
		cg.add(m)
		cg.order = append(cg.order, id)
		isNew = true
	}
	if m.classic == nil {
		// A member of the consumer protocol rejoining with the classic
		// one: its rebalance timeout no longer applies.
		c.timers.cancelLocked(&m.revokeDue)
		m.classic = &classicMember{}
	}
	m.instanceID, m.rackID = p.instanceID, deref(sub.Rack)
	m.clientID, m.clientHost = p.clientID, p.clientHost
	m.rebalanceTimeout, m.serverAssignor = p.rebalanceTimeout, ""
	m.topics, m.regex, m.re = sortedTopics(sub.Topics), "", nil
	m.classic.sessionTimeout, m.classic.protocols = p.sessionTimeout, slices.Clone(p.protocols)

	if s := cg.subscriptionOf(topics); isNew || s != cg.subscription {
		cg.subscription = s
		cg.epoch++
	}
	if cg.assignmentEpoch < cg.epoch {
		c.computeTargetLocked(cg, topics)
	}
	c.reconcileLocked(g, m, ownedOf(&sub, topics))

	c.timers.cancelLocked(&m.classic.joinDue)
	c.scheduleConsumerSessionLocked(g, m)
	c.scheduleClassicTimeoutLocked(g, m, &m.classic.syncDue, "it did not sync within its rebalance timeout")
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID = id
	r.Generation = m.epoch
	r.ProtocolType = kmsg.StringPtr(consumerProtocolType)
	r.Protocol = kmsg.StringPtr(m.classic.protocols[0].name)
	return r, c.persistConsumerLocked(g)
}

// cancelCMemberTimersLocked stops every timer of a consumer-group member.
//
// Lock should be held.
func (c *Coordinator) cancelCMemberTimersLocked(m *consumerMember) {
	c.cancelMemberTimersLocked(&m.memberCore)
	if m.classic != nil {
		c.timers.cancelLocked(&m.classic.joinDue)
		c.timers.cancelLocked(&m.classic.syncDue)
	}
}

// rebalanceSignalledLocked reports whether a classic member must rejoin,
// and then gives it its rebalance timeout to do so.
//
// Lock should be held.
func (c *Coordinator) rebalanceSignalledLocked(g *group, m *consumerMember) bool {
	cg := g.cg
	rejoin := m.epoch < cg.epoch || m.state == msUnrevoked
	if !rejoin && m.state == msUnreleased {
		// Rejoin once every partition it waits for is free.
		rejoin = true
		for t, ps := range cg.target[m.id].minus(m.assigned) {
			for _, p := range ps {
				if cg.ownedByOther(m.id, t, p) {
					rejoin = false
				}
			}
		}
	}
	if rejoin && !c.timers.pendingLocked(&m.classic.joinDue) {
		c.scheduleClassicTimeoutLocked(g, m, &m.classic.joinDue, "it did not rejoin within its rebalance timeout")
	}
	return rejoin
}

// classicSyncToConsumerLocked handles a SyncGroup of a classic member of
// a consumer group.
//
// Lock should be held.
func (c *Coordinator) classicSyncToConsumerLocked(g *group, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	cg := g.cg
	m, err := validateClassicMember(cg, req.MemberID, deref(req.InstanceID))
	if err != nil {
		return syncError(err)
	}
	if req.Generation != m.epoch {
		return syncError(kerr.IllegalGeneration)
	}
	if len(m.classic.protocols) == 0 {
		return syncError(kerr.InconsistentGroupProtocol)
	}
	proto := m.classic.protocols[0]
	if (req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType) || (req.Protocol != nil && *req.Protocol != proto.name) {
		return syncError(kerr.InconsistentGroupProtocol)
	}
	if cg.epoch > m.epoch && m.state != msUnrevoked {
		c.rebalanceSignalledLocked(g, m)
		return syncError(kerr.RebalanceInProgress)
	}
	c.timers.cancelLocked(&m.classic.syncDue)
	c.scheduleConsumerSessionLocked(g, m)
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType, r.Protocol = req.ProtocolType, req.Protocol
	r.MemberAssignment = encodeAssignment(m.assigned, proto.metadata)
	return r
}

// classicHeartbeatToConsumerLocked handles a Heartbeat of a classic member
// of a consumer group.
//
// Lock should be held.
func (c *Coordinator) classicHeartbeatToConsumerLocked(g *group, req *kmsg.HeartbeatRequest) *kerr.Error {
	m, err := validateClassicMember(g.cg, req.MemberID, deref(req.InstanceID))
	if err != nil {
		return err
	}
	if req.Generation != m.epoch {
		return kerr.IllegalGeneration
	}
	c.scheduleConsumerSessionLocked(g, m)
	if c.rebalanceSignalledLocked(g, m) {
		return kerr.RebalanceInProgress
	}
	return noError
}

// classicLeaveToConsumerLocked handles a LeaveGroup to a consumer group:
// only members using the classic protocol may leave this way.
//
// Lock should be held.
func (c *Coordinator) classicLeaveToConsumerLocked(g *group, members []kmsg.LeaveGroupRequestMember, r *kmsg.LeaveGroupResponse) func() *kerr.Error {
	cg := g.cg
	left := 0
	for _, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		m, err := validateClassicMember(cg, lm.MemberID, deref(lm.InstanceID))
		if err != nil {
			rm.ErrorCode = err.Code
		} else {
			rm.MemberID = m.id
			c.cancelCMemberTimersLocked(m)
			cg.remove(m.id)
			left++
		}
		r.Members = append(r.Members, rm)
	}
	if left == 0 {
		return nil
	}
	c.log.Info("classic members left the consumer group", "group", g.id, "count", left)
	cg.epoch++
	cg.subscription = cg.subscriptionOf(c.topicsByName())
	if len(cg.members) == 0 {
		g.transition(stateEmpty, c.cfg.Now())
	}
	return c.persistConsumerLocked(g)
}

// memberType is ConsumerGroupDescribe's MemberType: 0 classic, 1 consumer.
func (m *consumerMember) memberType() int8 {
	if m.classic != nil {
		return 0
	}
	return 1
}
