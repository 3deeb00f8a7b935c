package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup handles a SyncGroup request. Members of a group in
// CompletingRebalance block until the leader's SyncGroup carries the
// assignment (or ctx ends: REBALANCE_IN_PROGRESS); the leader's assignment is
// persisted before anyone is answered.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	if req.Group == "" {
		return syncError(kerr.InvalidGroupID)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return syncError(kerr.CoordinatorNotAvailable)
	}
	w, resp := c.syncLocked(req)
	c.mu.Unlock()
	if w == nil {
		return resp
	}
	return wait(c, ctx.Done(), w, syncError(kerr.RebalanceInProgress))
}

func syncError(err *kerr.Error) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = err.Code
	return r
}

// protocolInconsistent reports a SyncGroup v5 field that disagrees with the
// group's value.
func protocolInconsistent(req *string, group string) bool {
	return req != nil && group != "" && *req != group
}

// Lock should be held.
func (c *Coordinator) syncLocked(req *kmsg.SyncGroupRequest) (*waiter[*kmsg.SyncGroupResponse], *kmsg.SyncGroupResponse) {
	g := c.groups[req.Group]
	if g == nil {
		return nil, syncError(kerr.UnknownMemberID)
	}
	if g.cg != nil {
		return nil, c.classicSyncToConsumerLocked(g, req)
	}
	if err := g.validateMember(req.MemberID, deref(req.InstanceID)); err != nil {
		return nil, syncError(err)
	}
	if req.Generation != g.generation {
		return nil, syncError(kerr.IllegalGeneration)
	}
	if protocolInconsistent(req.ProtocolType, g.protocolType) || protocolInconsistent(req.Protocol, g.protocol) {
		return nil, syncError(kerr.InconsistentGroupProtocol)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		return nil, syncError(kerr.RebalanceInProgress)
	case stateCompletingRebalance:
		completeWaiterLocked(c, m.sync, syncError(kerr.RebalanceInProgress))
		m.sync = newWaiterLocked[*kmsg.SyncGroupResponse](c)
		w := m.sync
		c.removePendingSyncLocked(g, m.id)
		if m.id != g.leader {
			return w, nil
		}
		assignments := make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			assignments[a.MemberID] = a.MemberAssignment
		}
		old := make(map[string][]byte, len(g.members))
		for id, gm := range g.members {
			old[id] = gm.assignment
			gm.assignment = assignments[id]
		}
		committed, err := c.storeGroupLocked(g)
		if err != nil {
			c.log.Warn("persisting group assignment failed", "group", g.id, "err", err)
			for id, gm := range g.members {
				gm.assignment = old[id]
			}
			c.assignmentStoredLocked(g, g.generation, kerr.CoordinatorNotAvailable)
			return w, nil
		}
		if committed == nil {
			c.assignmentStoredLocked(g, g.generation, nil)
			return w, nil
		}
		// The members are answered once the GroupMetadata record is
		// committed (Kafka's storeGroup callback); the group stays
		// CompletingRebalance meanwhile.
		gen := g.generation
		go func() {
			err := committed()
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.closed && c.groups[g.id] == g {
				c.assignmentStoredLocked(g, gen, err)
			}
		}()
		return w, nil
	case stateStable:
		c.removePendingSyncLocked(g, m.id)
		r := kmsg.NewPtrSyncGroupResponse()
		r.ProtocolType = strPtr(g.protocolType)
		r.Protocol = strPtr(g.protocol)
		r.MemberAssignment = m.assignment
		return nil, r
	default:
		return nil, syncError(kerr.UnknownMemberID)
	}
}

// assignmentStoredLocked finishes the leader's SyncGroup of generation gen
// once its assignment is stored (err nil): every parked member gets its
// assignment and the group becomes Stable. If storing failed, every parked
// member gets err and the group rebalances. Nothing happens if the group
// moved on meanwhile (another generation, or a rebalance began).
//
// Lock should be held.
func (c *Coordinator) assignmentStoredLocked(g *group, gen int32, err *kerr.Error) {
	if g.state != stateCompletingRebalance || g.generation != gen {
		return
	}
	if err != nil {
		c.resetAndPropagateAssignmentLocked(g, err)
		c.maybePrepareRebalanceOrCompleteJoinLocked(g, "storing the assignment failed")
		return
	}
	c.propagateAssignmentLocked(g, nil)
	g.transition(stateStable, c.cfg.Now())
	c.log.Info("group stable", "group", g.id, "generation", g.generation)
}

// Lock should be held.
func (c *Coordinator) removePendingSyncLocked(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		c.timers.cancelLocked(&g.syncTimer)
	}
}

// resetAndPropagateAssignmentLocked clears all assignments and answers every
// parked SyncGroup with err.
//
// Lock should be held.
func (c *Coordinator) resetAndPropagateAssignmentLocked(g *group, err *kerr.Error) {
	for _, m := range g.members {
		m.assignment = nil
	}
	c.propagateAssignmentLocked(g, err)
}

// propagateAssignmentLocked answers every parked SyncGroup with its member's
// assignment (or err) and restarts their session timers.
//
// Lock should be held.
func (c *Coordinator) propagateAssignmentLocked(g *group, err *kerr.Error) {
	for _, id := range g.order {
		m := g.members[id]
		if m.sync == nil {
			continue
		}
		r := kmsg.NewPtrSyncGroupResponse()
		if err != nil {
			r.ErrorCode = err.Code
		} else {
			r.ProtocolType = strPtr(g.protocolType)
			r.Protocol = strPtr(g.protocol)
		}
		r.MemberAssignment = m.assignment
		c.completeSyncLocked(m, r)
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
	}
}

// completeSyncLocked answers m's parked SyncGroup, if any.
//
// Lock should be held.
func (c *Coordinator) completeSyncLocked(m *member, r *kmsg.SyncGroupResponse) {
	if m.sync != nil {
		completeWaiterLocked(c, m.sync, r)
		m.sync = nil
	}
}

// Heartbeat handles a Heartbeat request: it keeps a member's session alive
// and tells it (REBALANCE_IN_PROGRESS) when it must rejoin.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	r := kmsg.NewPtrHeartbeatResponse()
	r.ErrorCode = c.heartbeat(req).Code
	return r
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable
	}
	g := c.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID
	}
	if g.cg != nil {
		return c.classicHeartbeatToConsumerLocked(g, req)
	}
	if err := g.validateMember(req.MemberID, deref(req.InstanceID)); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		return kerr.RebalanceInProgress
	case stateCompletingRebalance, stateStable:
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		return noError
	default:
		return kerr.UnknownMemberID
	}
}

// noError is the zero error code, so handlers can return *kerr.Error uniformly.
var noError = &kerr.Error{Message: "NONE", Code: 0}

// LeaveGroup handles a LeaveGroup request. From v3 members are named by
// member id or, for static members, by group.instance.id alone; each gets
// its own error. v0-2 carry the member's error at the top level.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	r := kmsg.NewPtrLeaveGroupResponse()
	members := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{lm}
	}
	top := c.leave(req.Group, members, r)
	if req.Version < 3 && top == noError && len(r.Members) == 1 {
		r.ErrorCode = r.Members[0].ErrorCode
		r.Members = nil
		return r
	}
	r.ErrorCode = top.Code
	return r
}

func (c *Coordinator) leave(groupID string, members []kmsg.LeaveGroupRequestMember, r *kmsg.LeaveGroupResponse) *kerr.Error {
	if groupID == "" {
		return kerr.InvalidGroupID
	}
	c.mu.Lock()
	if g := c.groups[groupID]; !c.closed && g != nil && g.cg != nil {
		// Classic members of a consumer group (migrate.go).
		committed := c.classicLeaveToConsumerLocked(g, members, r)
		c.mu.Unlock()
		if err := waitCommitted(committed); err != nil {
			return err
		}
		return noError
	}
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable
	}
	g := c.groups[groupID]
	if g == nil {
		return kerr.UnknownMemberID
	}
	left := 0
	for _, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = lm.MemberID
		rm.InstanceID = lm.InstanceID
		instance := deref(lm.InstanceID)
		switch {
		case lm.MemberID == "":
			// Administrative removal of a static member by instance id.
			if id, ok := g.static[instance]; ok && instance != "" {
				c.removeMemberLocked(g, g.members[id], kerr.UnknownMemberID)
				left++
			} else {
				rm.ErrorCode = kerr.UnknownMemberID.Code
			}
		case g.pending[lm.MemberID] != nil:
			c.timers.cancelLocked(g.pending[lm.MemberID])
			delete(g.pending, lm.MemberID)
			left++
		default:
			if err := g.validateMember(lm.MemberID, instance); err != nil {
				rm.ErrorCode = err.Code
			} else {
				c.removeMemberLocked(g, g.members[lm.MemberID], kerr.UnknownMemberID)
				left++
			}
		}
		r.Members = append(r.Members, rm)
	}
	if left > 0 {
		c.log.Info("members left", "group", g.id, "count", left)
		switch g.state {
		case stateStable, stateCompletingRebalance:
			c.maybePrepareRebalanceOrCompleteJoinLocked(g, "members left the group")
		case statePreparingRebalance:
			c.maybeCompleteJoinPhaseLocked(g)
		}
	}
	return noError
}
