package coordinator

import (
	"errors"
	"fmt"
)

// ErrUnknownGroup is returned by ForceRebalance when no group has that id.
var ErrUnknownGroup = errors.New("coordinator: unknown group")

// ErrGroupEmpty is returned by ForceRebalance when the group has no members
// to rebalance.
var ErrGroupEmpty = errors.New("coordinator: group has no members")

// ForceRebalance moves a Stable or CompletingRebalance group to
// PreparingRebalance, as a joining member would: members learn it from
// their next heartbeat (REBALANCE_IN_PROGRESS) and rejoin. A group already
// preparing a rebalance is left alone. It is a testing aid (fault
// injection), not a Kafka API.
//
// It returns ErrClosed after Close, ErrUnknownGroup and ErrGroupEmpty.
func (c *Coordinator) ForceRebalance(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	g := c.groups[id]
	switch {
	case g == nil:
		return fmt.Errorf("%w %q", ErrUnknownGroup, id)
	case len(g.members) == 0:
		return fmt.Errorf("%w: %q", ErrGroupEmpty, id)
	case g.state == statePreparingRebalance:
		return nil
	}
	c.prepareRebalanceLocked(g, "forced by fault injection")
	return nil
}
