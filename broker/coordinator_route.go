package broker

// Which broker coordinates groups and transactional ids. On a single node:
// this one. In a cluster, until the coordinators keep their state in
// replicated internal topics, every group and transactional id is
// coordinated by one broker, the live broker with the lowest node id, so
// that a group's offsets and the transactions that commit offsets for it
// are in the same place; the others answer NOT_COORDINATOR. When that
// broker dies, the next one takes over with the state it has (none, at
// first); that is the limit the replicated-coordinator work removes.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinatorNode returns the coordinator of every group and transactional
// id, and false when there is none (no live broker).
func (b *Broker) coordinatorNode() (brokerInfo, bool) {
	brokers, _ := b.brokersView()
	if len(brokers) == 0 {
		return brokerInfo{}, false
	}
	return brokers[0], true // sorted by node id
}

// notCoordinator answers a coordinated request that reached a broker that
// is not the coordinator with NOT_COORDINATOR (COORDINATOR_NOT_AVAILABLE
// when there is none), and returns nil for every other request.
func (b *Broker) notCoordinator(h handler, msg kmsg.Request) kmsg.Response {
	if !h.coordinated || b.cl == nil {
		return nil
	}
	c, ok := b.coordinatorNode()
	if ok && c.id == b.nodeID {
		return nil
	}
	code := kerr.NotCoordinator.Code
	if !ok {
		code = kerr.CoordinatorNotAvailable.Code
	}
	return errorResponse(msg, code, b.topicNameByID)
}
