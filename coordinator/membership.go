package coordinator

// The membership core of the KIP-848 consumer protocol (consumer.go) and
// of the KIP-1071 streams protocol (streams.go): a member's epochs,
// session and revocation timers and static instance id (memberCore), and
// a group's epochs, members, static instances and target assignment
// (membership), with the rules the two protocols share: joining with
// epoch 0 (a restarted static instance replaces its old member, a known
// member starts over, a new one is made while the group has room), the
// epoch check of a heartbeat (FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH, the previous epoch after a lost response), leaving
// with epoch -1 or -2, and the session and revocation timers that fence a
// member. What each member holds (partitions, or active, standby and
// warm-up tasks), how a target is computed and how a member is reconciled
// with it stay with each protocol.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memberStable is the state of a member that holds what it was given at
// its epoch: STABLE in both protocols (msStable, smStable).
const memberStable = "STABLE"

// memberCore is what a consumer-protocol and a streams member have alike.
type memberCore struct {
	id, instanceID, rackID, clientID, clientHost string

	epoch, prevEpoch int32
	state            string // memberStable or the protocol's others
	// epochs is the assignment epoch of each partition (consumer) or
	// active task (streams) the member holds or must still revoke: the
	// target epoch at which it was given (KIP-1251; commitfence.go).
	epochs partEpochs

	rebalanceTimeout time.Duration

	hb        timerSlot // session expiry
	revokeDue timerSlot // rebalance timeout while revoking
}

// core returns m; it makes *consumerMember and *streamsMember members.
func (m *memberCore) core() *memberCore { return m }

// modernMember is a pointer to a consumer-protocol or streams member.
type modernMember interface {
	comparable
	core() *memberCore
}

// setEpoch records e as the assignment epoch of t/p (a partition, or an
// active task of subtopology t).
func (m *memberCore) setEpoch(t string, p, e int32) {
	if m.epochs == nil {
		m.epochs = partEpochs{}
	}
	ps := m.epochs[t]
	if ps == nil {
		ps = map[int32]int32{}
		m.epochs[t] = ps
	}
	ps[p] = e
}

// epochAt returns the assignment epoch of t/p, which m holds or must
// revoke. One without a recorded epoch (there should be none) has
// max(member epoch, 0), as a record without epochs gives it.
func (m *memberCore) epochAt(t string, p int32) int32 {
	if e, ok := m.epochs[t][p]; ok {
		return e
	}
	return max(m.epoch, 0)
}

// pruneEpochs drops the epochs of what m no longer holds nor revokes.
func (m *memberCore) pruneEpochs(holds func(t string, p int32) bool) {
	for t, ps := range m.epochs {
		for p := range ps {
			if !holds(t, p) {
				delete(ps, p)
			}
		}
		if len(ps) == 0 {
			delete(m.epochs, t)
		}
	}
}

// startOverLocked is a known member's rejoin with epoch 0: it lost its
// state and starts over at epoch 0, stable; the caller empties what it
// holds.
//
// Lock should be held.
func (c *Coordinator) startOverLocked(m *memberCore) {
	c.timers.cancelLocked(&m.revokeDue)
	m.state, m.epoch = memberStable, 0
	m.epochs = nil
}

// staticLeaveLocked is a leave with epoch -2: the member is kept,
// assignment and all, for its instance's next member, which takes over
// the epoch it had before.
//
// Lock should be held.
func (c *Coordinator) staticLeaveLocked(m *memberCore) {
	c.timers.cancelLocked(&m.revokeDue)
	if m.epoch != staticLeaveEpoch {
		m.prevEpoch = m.epoch
	}
	m.epoch = staticLeaveEpoch
}

// cancelMemberTimersLocked stops m's session and revocation timers.
//
// Lock should be held.
func (c *Coordinator) cancelMemberTimersLocked(m *memberCore) {
	c.timers.cancelLocked(&m.hb)
	c.timers.cancelLocked(&m.revokeDue)
}

// membership is what a consumer-protocol and a streams group have alike;
// M is the member (a pointer) and A what a member is assigned.
type membership[M modernMember, A any] struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	members         map[string]M
	static          map[string]string // instance id → member id
	target          map[string]A      // member id → target assignment
	logged          map[string][]byte // the records last written, by key
}

func newMembership[M modernMember, A any]() membership[M, A] {
	return membership[M, A]{members: map[string]M{}, static: map[string]string{}, target: map[string]A{}, logged: map[string][]byte{}}
}

// forget drops member id, its target and its instance (if it is still
// the instance's member), without bumping the group epoch.
func (s *membership[M, A]) forget(id string) {
	m, ok := s.members[id]
	if !ok {
		return
	}
	delete(s.members, id)
	delete(s.target, id)
	if in := m.core().instanceID; in != "" && s.static[in] == id {
		delete(s.static, in)
	}
}

// add makes m a member, its instance's member if it has one.
func (s *membership[M, A]) add(m M) {
	mc := m.core()
	s.members[mc.id] = m
	if mc.instanceID != "" {
		s.static[mc.instanceID] = mc.id
	}
}

// replaceStatic puts nm, the new member of the instance of oldID (a copy
// of it under its new id, the caller's timers stopped), in oldID's place,
// with oldID's target assignment: a static member's restart is no
// membership change, and the group epoch stays.
func (s *membership[M, A]) replaceStatic(oldID string, nm M) {
	target, hasTarget := s.target[oldID]
	s.forget(oldID)
	s.add(nm)
	if hasTarget {
		s.target[nm.core().id] = target
	}
}

// staticJoinLocked is a heartbeat with epoch 0 from static instance
// instanceID under a member id that is not the instance's: nil if the
// instance has no member, UNRELEASED_INSTANCE_ID unless its member left
// with epoch -2, else that member's successor, made by takeOver from a
// copy of it (the copy's id, timers and epoch already set: the id is
// memberID, the epoch the one it had before it left) and put in its place
// (replaceStatic).
//
// Lock should be held.
func staticJoinLocked[M modernMember, A any](c *Coordinator, s *membership[M, A], instanceID, memberID string, takeOver func(old M, id string) M) (M, *kerr.Error) {
	var none M
	oldID, ok := s.static[instanceID]
	if !ok || oldID == memberID {
		return none, nil
	}
	old := s.members[oldID]
	oc := old.core()
	if oc.epoch != staticLeaveEpoch {
		return none, kerr.UnreleasedInstanceID
	}
	c.cancelMemberTimersLocked(oc)
	nm := takeOver(old, memberID)
	nc := nm.core()
	nc.id = memberID
	nc.hb, nc.revokeDue = timerSlot{}, timerSlot{}
	nc.epoch = oc.prevEpoch
	s.replaceStatic(oldID, nm)
	return nm, nil
}

// checkMember is the check of a heartbeat with epoch > 0 from memberID
// (of static instance instanceID, unless ""): the instance's member must
// be memberID (UNKNOWN_MEMBER_ID if it has none, FENCED_INSTANCE_ID), the
// member must exist (UNKNOWN_MEMBER_ID), and epoch must be its epoch
// (FENCED_MEMBER_EPOCH if newer), or its previous one when lostResponse
// accepts it: the answer that moved it on was lost.
func (s *membership[M, A]) checkMember(memberID, instanceID string, epoch int32, lostResponse func(M) bool) (M, *kerr.Error) {
	var none M
	if instanceID != "" {
		if mid, ok := s.static[instanceID]; !ok {
			return none, kerr.UnknownMemberID
		} else if mid != memberID {
			return none, kerr.FencedInstanceID
		}
	}
	m, ok := s.members[memberID]
	if !ok {
		return none, kerr.UnknownMemberID
	}
	mc := m.core()
	if epoch > mc.epoch {
		return none, kerr.FencedMemberEpoch
	}
	if epoch < mc.epoch && (epoch != mc.prevEpoch || !lostResponse(m)) {
		return none, kerr.FencedMemberEpoch
	}
	return m, nil
}

// leaving finds the member of a heartbeat with epoch -1 or -2:
// FENCED_INSTANCE_ID if instanceID has another member, UNKNOWN_MEMBER_ID
// if there is no memberID.
func (s *membership[M, A]) leaving(memberID, instanceID string) (M, *kerr.Error) {
	var none M
	if instanceID != "" {
		if mid, ok := s.static[instanceID]; ok && mid != memberID {
			return none, kerr.FencedInstanceID
		}
	}
	m, ok := s.members[memberID]
	if !ok {
		return none, kerr.UnknownMemberID
	}
	return m, nil
}

// scheduleMemberFenceLocked (re)arms slot to fence m after d: when it
// fires, if m is still the member of its id in the group current returns
// (nil once g is gone or no longer of m's protocol), and still reports
// true (unless nil), why is logged and fence runs. A member's session and
// revocation timers (and a classic member's join and sync timers) are
// such timers.
//
// Lock should be held.
func scheduleMemberFenceLocked[M modernMember, A any](c *Coordinator, g *group, m M, slot *timerSlot, d time.Duration, why string,
	current func() *membership[M, A], still func() bool, fence func()) {
	c.scheduleLocked(slot, d, func() {
		id := m.core().id
		if c.groups[g.id] != g {
			return
		}
		s := current()
		if s == nil || s.members[id] != m || (still != nil && !still()) {
			return
		}
		c.log.Info(why, "group", g.id, "member", id)
		fence()
	})
}

// assignmentOf is what a member is assigned: a partitionSet (consumer), a
// streamsAssignment (streams).
type assignmentOf[A any] interface {
	intersect(A) A
	minus(A) A
	size() int
}

// reconciliation is a protocol's part of reconcileLocked.
type reconciliation[A assignmentOf[A]] struct {
	unrevoked, unreleased string // the member states (msUnrevoked, smUnrevoked, ...)
	empty                 func() A
	// revoked runs once the member reports it revoked what it had to;
	// revokeLater starts its timeout to revoke; prune drops the epochs of
	// what it no longer holds.
	revoked, revokeLater, prune func()
	// grant adds to keep the target's parts the member does not hold yet,
	// except those another member still owns (then it reports true).
	grant func(keep A) (A, bool)
}

// reconcileLocked moves member m toward its target, given at targetEpoch
// (Kafka's CurrentAssignmentBuilder). assigned and revoking are what m
// holds and must still revoke; ownedNow is what the heartbeat says the
// member owns, nil if it did not say. A revoking member stays so until it
// reports owning none of what it revokes. Revocation comes before
// reassignment: a member holding what its target does not keeps the rest
// and must revoke that first; only then is it given the new parts of its
// target that no other member owns any more (UNRELEASED until all are)
// and moved to targetEpoch.
//
// Lock should be held.
func reconcileLocked[A assignmentOf[A]](m *memberCore, assigned, revoking, ownedNow *A, target A, targetEpoch int32, r reconciliation[A]) {
	if m.state == r.unrevoked {
		// Still revoking unless the member reports it owns none of them.
		if ownedNow == nil || (*ownedNow).intersect(*revoking).size() > 0 {
			return
		}
		*revoking = r.empty()
		r.revoked()
	}
	if m.epoch == targetEpoch && m.state == memberStable {
		return
	}
	keep := (*assigned).intersect(target)
	revoke := (*assigned).minus(target)
	if revoke.size() > 0 {
		// What is kept and what is revoked keep their assignment epochs.
		*assigned, *revoking, m.state = keep, revoke, r.unrevoked
		r.revokeLater()
		return
	}
	keep, unreleased := r.grant(keep)
	*assigned = keep
	r.prune()
	if m.epoch != targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, targetEpoch
	}
	m.state = memberStable
	if unreleased {
		m.state = r.unreleased
	}
}
