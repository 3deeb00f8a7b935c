package coordinator

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupAuthorizedOperations is the KIP-430 bitfield of what may be done to a
// group without ACLs: READ (3), DELETE (6) and DESCRIBE (8).
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// classicGroupType is the group type ListGroups v5 reports.
const classicGroupType = "classic"

// consumerGroupType is the group type of KIP-848 groups (consumer.go).
const consumerGroupType = "consumer"

// DescribeGroups handles a DescribeGroups request. An unknown group is
// described as Dead (with GROUP_ID_NOT_FOUND from v6). Member metadata and
// assignments are only shown once the group is Stable, as Kafka does.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	r := kmsg.NewPtrDescribeGroupsResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupAuthorizedOperations
		}
		g := c.groups[id]
		switch {
		case id == "":
			d.ErrorCode = kerr.InvalidGroupID.Code
		case c.closed:
			d.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case g == nil && c.isShareGroupLocked(id):
			// KIP-1043: a share group described with the classic API.
			d.State = c.shares[id].state()
			d.ProtocolType = shareGroupType
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " is not a classic group."
				d.ErrorMessage = &msg
			}
		case g == nil:
			d.State = stateDead.String()
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " not found."
				d.ErrorMessage = &msg
			}
		case g.st != nil:
			// A streams group described with the classic API: Kafka 4.4
			// answers as for an unknown group (Dead, no protocol type).
			d.State = stateDead.String()
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " is not a classic group."
				d.ErrorMessage = &msg
			}
		case g.cg != nil:
			// KIP-1043: a consumer group described with the classic API.
			d.State = g.cg.state()
			d.ProtocolType = consumerProtocolType
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " is not a classic group."
				d.ErrorMessage = &msg
			}
		default:
			d.State = g.state.String()
			d.ProtocolType = g.protocolType
			stable := g.state == stateStable
			if stable {
				d.Protocol = g.protocol
			}
			for _, mid := range g.order {
				m := g.members[mid]
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID = mid
				dm.InstanceID = strPtr(m.instanceID)
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				if stable {
					dm.ProtocolMetadata = m.metadataFor(g.protocol)
					dm.MemberAssignment = m.assignment
				}
				d.Members = append(d.Members, dm)
			}
		}
		r.Groups = append(r.Groups, d)
	}
	return r
}

// ListGroups handles a ListGroups request; both filters compare without
// regard to case, and an empty filter matches everything.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	r := kmsg.NewPtrListGroupsResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return r
	}
	matches := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		state, typ := g.state.String(), classicGroupType
		if g.cg != nil {
			state, typ = g.cg.state(), consumerGroupType
		}
		if g.st != nil {
			state, typ = g.st.state(g.st.configured(c.topicsByName())), streamsGroupType
		}
		if !matches(req.StatesFilter, state) || !matches(req.TypesFilter, typ) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = id
		lg.ProtocolType = g.protocolType
		lg.GroupState = state
		lg.GroupType = typ
		r.Groups = append(r.Groups, lg)
	}
	for _, id := range sortedKeys(c.shares) {
		if c.ownerErrLocked(id) != nil {
			continue
		}
		state := c.shares[id].state()
		if !matches(req.StatesFilter, state) || !matches(req.TypesFilter, shareGroupType) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, shareGroupType, state, shareGroupType
		r.Groups = append(r.Groups, lg)
	}
	return r
}

// DeleteGroups handles a DeleteGroups request: Empty groups are deleted with
// their committed offsets; others answer NON_EMPTY_GROUP.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	r := kmsg.NewPtrDeleteGroupsResponse()
	c.mu.Lock()
	committed := make([]func() *kerr.Error, len(req.Groups))
	defer func() {
		// Each group is answered once its tombstones are committed.
		for i, f := range committed {
			if err := waitCommitted(f); err != nil {
				r.Groups[i].ErrorCode = err.Code
			}
		}
	}()
	defer c.mu.Unlock()
	for i, id := range req.Groups {
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group = id
		g := c.groups[id]
		switch {
		case id == "":
			d.ErrorCode = kerr.InvalidGroupID.Code
		case c.closed:
			d.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case g == nil && c.isShareGroupLocked(id):
			var err *kerr.Error
			if committed[i], err = c.deleteShareGroupLocked(c.shares[id]); err != nil {
				d.ErrorCode = err.Code
			}
		case g == nil:
			d.ErrorCode = kerr.GroupIDNotFound.Code
		case g.state != stateEmpty:
			d.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			var err error
			if committed[i], err = c.deleteGroupLocked(g); err != nil {
				c.log.Warn("deleting group failed", "group", id, "err", err)
				d.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		}
		r.Groups = append(r.Groups, d)
	}
	return r
}

// deleteGroupLocked removes g and its offsets from bbolt and memory; g ends
// Dead, so late timer callbacks ignore it. committed waits for the
// tombstones (appendAsyncLocked).
//
// Lock should be held.
func (c *Coordinator) deleteGroupLocked(g *group) (committed func() *kerr.Error, _ error) {
	committed, err := c.deleteStoredGroup(g)
	if err != nil {
		return committed, err
	}
	c.cancelGroupTimersLocked(g)
	for _, s := range g.pending {
		c.timers.cancelLocked(s)
	}
	g.pending = make(map[string]*timerSlot)
	g.transition(stateDead, c.cfg.Now())
	delete(c.groups, g.id)
	return committed, nil
}
