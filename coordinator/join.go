package coordinator

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinParams is a JoinGroup request reduced to what the state machine uses.
type joinParams struct {
	group            string
	version          int16
	memberID         string
	instanceID       string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []protocol
}

// JoinGroup handles a JoinGroup request. It blocks while the group prepares
// a rebalance, until the join phase completes or ctx ends (then it answers
// REBALANCE_IN_PROGRESS, which makes clients rejoin).
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	if req.Group == "" {
		return joinError(req.MemberID, kerr.InvalidGroupID)
	}
	p := joinParams{
		group:            req.Group,
		version:          req.Version,
		memberID:         req.MemberID,
		instanceID:       deref(req.InstanceID),
		clientID:         clientID,
		clientHost:       clientHost,
		sessionTimeout:   millis(req.SessionTimeoutMillis),
		rebalanceTimeout: millis(req.RebalanceTimeoutMillis),
		protocolType:     req.ProtocolType,
	}
	if req.Version == 0 {
		p.rebalanceTimeout = p.sessionTimeout
	}
	if p.sessionTimeout < c.cfg.MinSessionTimeout || p.sessionTimeout > c.cfg.MaxSessionTimeout {
		return joinError(req.MemberID, kerr.InvalidSessionTimeout)
	}
	for _, rp := range req.Protocols {
		p.protocols = append(p.protocols, protocol{name: rp.Name, metadata: rp.Metadata})
	}

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return joinError(req.MemberID, kerr.CoordinatorNotAvailable)
	}
	if c.isShareGroupLocked(req.Group) {
		c.mu.Unlock()
		return joinError(req.MemberID, kerr.InconsistentGroupProtocol)
	}
	if g := c.groups[req.Group]; g != nil && g.st != nil {
		c.mu.Unlock()
		return joinError(req.MemberID, kerr.InconsistentGroupProtocol)
	}
	if g := c.groups[req.Group]; g != nil && g.cg != nil {
		if len(g.cg.members) > 0 {
			// The member joins the consumer group using the classic
			// protocol (migrate.go).
			r, committed := c.classicJoinToConsumerLocked(g, p)
			c.mu.Unlock()
			if err := waitCommitted(committed); err != nil && r.ErrorCode == 0 {
				return joinError(r.MemberID, err)
			}
			return r
		}
		c.persistRecordsLocked(g.id, &g.cg.logged, nil) // its records go
		g.cg = nil                                      // an Empty consumer group becomes classic
		g.transition(stateEmpty, c.cfg.Now())
	}
	w, resp := c.joinLocked(p)
	c.mu.Unlock()
	if w == nil {
		return resp
	}
	return wait(c, ctx.Done(), w, joinError(req.MemberID, kerr.RebalanceInProgress))
}

func joinError(memberID string, err *kerr.Error) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID = memberID
	r.ErrorCode = err.Code
	return r
}

// joinResponse is the successful answer for member id of the current
// generation; withMembers gives it the member list (the leader's).
func (g *group) joinResponse(id, leader string, withMembers bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID = id
	r.Generation = g.generation
	r.ProtocolType = strPtr(g.protocolType)
	r.Protocol = strPtr(g.protocol)
	r.LeaderID = leader
	if withMembers {
		r.Members = g.currentMembers()
	}
	return r
}

// joinLocked returns either an immediate response or a waiter to block on.
//
// Lock should be held.
func (c *Coordinator) joinLocked(p joinParams) (*waiter[*kmsg.JoinGroupResponse], *kmsg.JoinGroupResponse) {
	g := c.groups[p.group]
	if g == nil {
		if p.memberID != "" {
			return nil, joinError(p.memberID, kerr.UnknownMemberID)
		}
		g = newGroup(p.group, c.cfg.Now())
		c.groups[p.group] = g
	}
	if !c.acceptJoiningMember(g, p.memberID) {
		if m, ok := g.members[p.memberID]; ok {
			c.removeMemberLocked(g, m, kerr.GroupMaxSizeReached)
		}
		return nil, joinError("", kerr.GroupMaxSizeReached)
	}
	if p.memberID == "" {
		return c.joinNewMemberLocked(g, p)
	}
	return c.joinExistingMemberLocked(g, p)
}

// acceptJoiningMember applies group.max.size: while preparing a rebalance
// the members already rejoined count, otherwise all members do.
func (c *Coordinator) acceptJoiningMember(g *group, memberID string) bool {
	switch g.state {
	case stateEmpty, stateDead:
		return true
	case statePreparingRebalance:
		if m, ok := g.members[memberID]; ok && m.awaitingJoin() {
			return true
		}
		return g.numAwaitingJoin() < c.cfg.MaxGroupSize
	default:
		_, ok := g.members[memberID]
		return ok || len(g.members) < c.cfg.MaxGroupSize
	}
}

// Lock should be held.
func (c *Coordinator) joinNewMemberLocked(g *group, p joinParams) (*waiter[*kmsg.JoinGroupResponse], *kmsg.JoinGroupResponse) {
	if !g.supportsProtocols(p.protocolType, p.protocols) {
		return nil, joinError("", kerr.InconsistentGroupProtocol)
	}
	if p.instanceID != "" {
		newID := p.instanceID + "-" + c.newUUID()
		if old, ok := g.static[p.instanceID]; ok {
			return c.updateStaticMemberLocked(g, p, old, newID)
		}
		return c.addMemberThenRebalanceLocked(g, p, newID)
	}
	newID := p.clientID + "-" + c.newUUID()
	if p.version >= 4 {
		// KIP-394: remember the id and make the client come back with it,
		// so clients that never finish joining cannot grow the group.
		slot := &timerSlot{}
		g.pending[newID] = slot
		c.scheduleLocked(slot, p.sessionTimeout, func() { c.expireHeartbeatLocked(g, newID) })
		r := joinError(newID, kerr.MemberIDRequired)
		return nil, r
	}
	return c.addMemberThenRebalanceLocked(g, p, newID)
}

// Lock should be held.
func (c *Coordinator) joinExistingMemberLocked(g *group, p joinParams) (*waiter[*kmsg.JoinGroupResponse], *kmsg.JoinGroupResponse) {
	if !g.supportsProtocols(p.protocolType, p.protocols) {
		return nil, joinError(p.memberID, kerr.InconsistentGroupProtocol)
	}
	if slot, ok := g.pending[p.memberID]; ok {
		c.timers.cancelLocked(slot)
		return c.addMemberThenRebalanceLocked(g, p, p.memberID)
	}
	if err := g.validateMember(p.memberID, p.instanceID); err != nil {
		return nil, joinError(p.memberID, err)
	}
	m := g.members[p.memberID]
	switch g.state {
	case statePreparingRebalance:
		w := c.updateMemberLocked(m, p)
		c.maybePrepareRebalanceOrCompleteJoinLocked(g, "member rejoined during PreparingRebalance")
		return w, nil
	case stateCompletingRebalance:
		if m.matches(p.protocols) {
			// The member lost its join response: answer it again.
			return nil, g.joinResponse(m.id, g.leader, m.id == g.leader)
		}
		w := c.updateMemberLocked(m, p)
		c.maybePrepareRebalanceOrCompleteJoinLocked(g, "member changed metadata during CompletingRebalance")
		return w, nil
	case stateStable:
		if m.id == g.leader || !m.matches(p.protocols) {
			// The leader rejoins to trigger a rebalance (e.g. on topic
			// metadata changes); a follower with new metadata needs one.
			w := c.updateMemberLocked(m, p)
			c.maybePrepareRebalanceOrCompleteJoinLocked(g, "leader rejoined or member metadata changed")
			return w, nil
		}
		// A follower rejoining with unchanged metadata (e.g. a cooperative
		// client) gets the current generation and syncs without a rebalance.
		return nil, g.joinResponse(m.id, g.leader, false)
	default:
		return nil, joinError(p.memberID, kerr.UnknownMemberID)
	}
}

// updateMemberLocked records a rejoin's protocols and timeouts and parks it.
// A previous parked join of the same member is answered
// REBALANCE_IN_PROGRESS: its client has given up on it.
//
// Lock should be held.
func (c *Coordinator) updateMemberLocked(m *member, p joinParams) *waiter[*kmsg.JoinGroupResponse] {
	m.protocols = p.protocols
	m.sessionTimeout = p.sessionTimeout
	m.rebalanceTimeout = p.rebalanceTimeout
	c.completeJoinLocked(m, joinError(m.id, kerr.RebalanceInProgress))
	m.join = newWaiterLocked[*kmsg.JoinGroupResponse](c)
	return m.join
}

// Lock should be held.
func (c *Coordinator) addMemberThenRebalanceLocked(g *group, p joinParams, id string) (*waiter[*kmsg.JoinGroupResponse], *kmsg.JoinGroupResponse) {
	m := &member{
		id:               id,
		instanceID:       p.instanceID,
		clientID:         p.clientID,
		clientHost:       p.clientHost,
		sessionTimeout:   p.sessionTimeout,
		rebalanceTimeout: p.rebalanceTimeout,
		protocolType:     p.protocolType,
		protocols:        p.protocols,
		isNew:            true,
	}
	if g.state == statePreparingRebalance && g.prevState == stateEmpty {
		g.newMemberAdded = true
	}
	g.add(m)
	m.join = newWaiterLocked[*kmsg.JoinGroupResponse](c)
	// A new member cannot heartbeat before its join completes; time out its
	// join instead, in case its client disconnected.
	c.scheduleHeartbeatLocked(g, m, c.cfg.NewMemberJoinTimeout)
	c.maybePrepareRebalanceOrCompleteJoinLocked(g, "new member "+id+" joined")
	return m.join, nil
}

// updateStaticMemberLocked replaces the member id of a known static member
// that rejoined without one (a restarted client). In a Stable group whose
// selected protocol stays the same, this needs no rebalance: the new id takes
// over the old member's assignment.
//
// Lock should be held.
func (c *Coordinator) updateStaticMemberLocked(g *group, p joinParams, oldID, newID string) (*waiter[*kmsg.JoinGroupResponse], *kmsg.JoinGroupResponse) {
	currentLeader := g.leader
	m := c.replaceStaticMemberLocked(g, p.instanceID, oldID, newID)
	c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
	oldProtocols, oldSession, oldRebalance := m.protocols, m.sessionTimeout, m.rebalanceTimeout
	w := c.updateMemberLocked(m, p)
	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol {
			c.maybePrepareRebalanceOrCompleteJoinLocked(g, "static member "+newID+" changed the selected protocol")
			return w, nil
		}
		if _, err := c.storeGroupLocked(g); err != nil {
			c.log.Warn("persisting static member replacement failed; reverting", "group", g.id, "instance", p.instanceID, "err", err)
			m.protocols, m.sessionTimeout, m.rebalanceTimeout = oldProtocols, oldSession, oldRebalance
			m.join = nil
			w.done = true
			c.parked--
			old := c.replaceStaticMemberLocked(g, p.instanceID, newID, oldID)
			c.scheduleHeartbeatLocked(g, old, old.sessionTimeout)
			return nil, joinError("", kerr.CoordinatorNotAvailable)
		}
		// The leader id stays the old one if the replaced member led: the
		// restarted client then syncs as a follower and gets its old
		// assignment instead of computing a new one.
		c.completeJoinLocked(m, g.joinResponse(newID, currentLeader, false))
		return w, nil
	case stateCompletingRebalance:
		// The leader may already assign to the old id: start over.
		c.prepareRebalanceLocked(g, "static member "+newID+" replaced "+oldID+" during CompletingRebalance")
		return w, nil
	default:
		c.maybeCompleteJoinPhaseLocked(g)
		return w, nil
	}
}

// replaceStaticMemberLocked moves instanceID's member from oldID to newID,
// fencing whatever the old id still waits for.
//
// Lock should be held.
func (c *Coordinator) replaceStaticMemberLocked(g *group, instanceID, oldID, newID string) *member {
	old := g.members[oldID]
	c.completeJoinLocked(old, joinError(oldID, kerr.FencedInstanceID))
	c.completeSyncLocked(old, syncError(kerr.FencedInstanceID))
	c.timers.cancelLocked(&old.hb)
	m := &member{
		id:               newID,
		instanceID:       old.instanceID,
		clientID:         old.clientID,
		clientHost:       old.clientHost,
		sessionTimeout:   old.sessionTimeout,
		rebalanceTimeout: old.rebalanceTimeout,
		protocolType:     old.protocolType,
		protocols:        old.protocols,
		assignment:       old.assignment,
	}
	delete(g.members, oldID)
	g.members[newID] = m
	for i, id := range g.order {
		if id == oldID {
			g.order[i] = newID
		}
	}
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	g.static[instanceID] = newID
	return m
}

// Lock should be held.
func (c *Coordinator) maybePrepareRebalanceOrCompleteJoinLocked(g *group, reason string) {
	if g.canRebalance() {
		c.prepareRebalanceLocked(g, reason)
	} else {
		c.maybeCompleteJoinPhaseLocked(g)
	}
}

// maybeCompleteJoinPhaseLocked completes the join phase once every member
// rejoined, except during the initial delay of a new group.
//
// Lock should be held.
func (c *Coordinator) maybeCompleteJoinPhaseLocked(g *group) {
	if g.state != statePreparingRebalance || g.prevState == stateEmpty || !g.hasAllMembersJoined() {
		return
	}
	c.completeJoinPhaseLocked(g)
}

// prepareRebalanceLocked enters PreparingRebalance: members awaiting sync
// are told REBALANCE_IN_PROGRESS; an Empty group waits the initial delay,
// others wait for all members up to the rebalance timeout.
//
// Lock should be held.
func (c *Coordinator) prepareRebalanceLocked(g *group, reason string) {
	if g.state == stateCompletingRebalance {
		c.resetAndPropagateAssignmentLocked(g, kerr.RebalanceInProgress)
	}
	c.timers.cancelLocked(&g.syncTimer)
	g.pendingSync = nil
	initial := g.state == stateEmpty
	g.transition(statePreparingRebalance, c.cfg.Now())
	c.log.Info("preparing rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	if initial {
		delay := c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		c.scheduleLocked(&g.joinTimer, delay, func() { c.tryCompleteInitialRebalanceLocked(g, delay, remaining) })
		return
	}
	if g.hasAllMembersJoined() {
		c.completeJoinPhaseLocked(g)
		return
	}
	c.scheduleLocked(&g.joinTimer, g.rebalanceTimeout(), func() { c.completeJoinPhaseLocked(g) })
}

// tryCompleteInitialRebalanceLocked ends the initial delay, or extends it
// (by at most the delay, within the rebalance timeout) when members are
// still arriving.
//
// Lock should be held.
func (c *Coordinator) tryCompleteInitialRebalanceLocked(g *group, delay, remaining time.Duration) {
	if g.newMemberAdded && remaining != 0 {
		g.newMemberAdded = false
		newDelay := min(c.cfg.InitialRebalanceDelay, remaining)
		newRemaining := max(remaining-delay, 0)
		c.scheduleLocked(&g.joinTimer, newDelay, func() { c.tryCompleteInitialRebalanceLocked(g, newDelay, newRemaining) })
		return
	}
	c.completeJoinPhaseLocked(g)
}

// completeJoinPhaseLocked ends the join phase: dynamic members that did not
// rejoin are dropped, a new generation starts and every parked join is
// answered (the leader's with the member list). The group then awaits
// SyncGroup in CompletingRebalance, or is Empty if nobody is left.
//
// Lock should be held.
func (c *Coordinator) completeJoinPhaseLocked(g *group) {
	c.timers.cancelLocked(&g.joinTimer)
	g.newMemberAdded = false
	for _, id := range append([]string(nil), g.order...) {
		m := g.members[id]
		if !m.awaitingJoin() && m.instanceID == "" {
			c.removeMemberLocked(g, m, kerr.UnknownMemberID)
		}
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		// Only static members that have not rejoined are left: wait for
		// them (or for their sessions to expire).
		c.scheduleLocked(&g.joinTimer, g.rebalanceTimeout(), func() { c.completeJoinPhaseLocked(g) })
		return
	}
	g.generation++
	now := c.cfg.Now()
	g.pendingSync = make(map[string]bool)
	if len(g.members) == 0 {
		g.protocol = ""
		g.computeSubscribed()
		g.transition(stateEmpty, now)
		c.log.Info("group is empty", "group", g.id, "generation", g.generation)
		if _, err := c.storeGroupLocked(g); err != nil {
			c.log.Warn("persisting empty group failed", "group", g.id, "err", err)
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(stateCompletingRebalance, now)
	c.log.Info("join phase complete", "group", g.id, "generation", g.generation, "protocol", g.protocol, "leader", g.leader, "members", len(g.members))
	for _, id := range g.order {
		m := g.members[id]
		c.completeJoinLocked(m, g.joinResponse(id, g.leader, id == g.leader))
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[id] = true
	}
	gen := g.generation
	c.scheduleLocked(&g.syncTimer, g.rebalanceTimeout(), func() { c.expirePendingSyncLocked(g, gen) })
}

// completeJoinLocked answers m's parked JoinGroup, if any.
//
// Lock should be held.
func (c *Coordinator) completeJoinLocked(m *member, r *kmsg.JoinGroupResponse) {
	if m.join != nil {
		completeWaiterLocked(c, m.join, r)
		m.join = nil
	}
}

// scheduleHeartbeatLocked (re)arms m's session expiry.
//
// Lock should be held.
func (c *Coordinator) scheduleHeartbeatLocked(g *group, m *member, d time.Duration) {
	id := m.id
	c.scheduleLocked(&m.hb, d, func() { c.expireHeartbeatLocked(g, id) })
}

// expireHeartbeatLocked handles an expired session of a pending or current
// member.
//
// Lock should be held.
func (c *Coordinator) expireHeartbeatLocked(g *group, id string) {
	if c.groups[g.id] != g {
		return
	}
	if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		if g.state == statePreparingRebalance && g.hasAllMembersJoined() {
			c.completeJoinPhaseLocked(g)
		}
		return
	}
	m, ok := g.members[id]
	if !ok || m.hasSatisfiedHeartbeat() {
		return
	}
	c.log.Info("member session expired", "group", g.id, "member", id)
	c.removeMemberAndUpdateGroupLocked(g, m)
}

// removeMemberAndUpdateGroupLocked removes m and rebalances (or finishes the
// join phase) as the remaining membership requires.
//
// Lock should be held.
func (c *Coordinator) removeMemberAndUpdateGroupLocked(g *group, m *member) {
	c.removeMemberLocked(g, m, kerr.UnknownMemberID)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.maybePrepareRebalanceOrCompleteJoinLocked(g, "member "+m.id+" removed")
	case statePreparingRebalance:
		if g.hasAllMembersJoined() {
			c.completeJoinPhaseLocked(g)
		}
	}
}

// removeMemberLocked drops m, answering its parked calls with err so no
// caller stays blocked.
//
// Lock should be held.
func (c *Coordinator) removeMemberLocked(g *group, m *member, err *kerr.Error) {
	c.completeJoinLocked(m, joinError("", err))
	c.completeSyncLocked(m, syncError(err))
	c.timers.cancelLocked(&m.hb)
	g.remove(m.id)
}

// expirePendingSyncLocked removes members that did not sync within the
// rebalance timeout after the join phase of generation gen, and rebalances.
//
// Lock should be held.
func (c *Coordinator) expirePendingSyncLocked(g *group, gen int32) {
	if c.groups[g.id] != g || g.generation != gen {
		return
	}
	if g.state != stateCompletingRebalance && g.state != stateStable {
		return
	}
	if len(g.pendingSync) == 0 {
		return
	}
	for _, id := range append([]string(nil), g.order...) {
		if g.pendingSync[id] {
			c.removeMemberLocked(g, g.members[id], kerr.UnknownMemberID)
		}
	}
	c.prepareRebalanceLocked(g, "members did not sync in time")
}

// cancelGroupTimersLocked stops every timer of g and its members.
//
// Lock should be held.
func (c *Coordinator) cancelGroupTimersLocked(g *group) {
	c.timers.cancelLocked(&g.joinTimer)
	c.timers.cancelLocked(&g.syncTimer)
	for _, m := range g.members {
		c.timers.cancelLocked(&m.hb)
	}
	for _, s := range g.pending {
		c.timers.cancelLocked(s)
	}
	if g.cg != nil {
		c.cancelConsumerTimersLocked(g.cg)
	}
	if g.st != nil {
		c.cancelStreamsTimersLocked(g.st)
	}
}
