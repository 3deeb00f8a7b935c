package cluster

import (
	"context"
	"slices"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// runController reconciles every partition with the live brokers each time
// the metadata changes (and every half second, to retry failed writes),
// until the incarnation ends, the node is fenced, or the election key is
// gone. Its first pass re-checks every partition, finishing whatever a
// previous controller left half done.
func (n *Node) runController(inc *incarnation, el *concurrency.Election) {
	guard := clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev())
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for inc.ctx.Err() == nil && !n.Fenced() {
		m, ch := n.Subscribe()
		if lost := n.reconcile(inc.ctx, guard, el.Key(), m); lost {
			n.log.Warn("controller lost its election key")
			return
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-inc.ctx.Done():
		}
	}
}

// reconcile writes the partition changes m calls for, each in a transaction
// conditioned on the election key (guard), the partition's mod revision and
// the new leader's registration. It reports whether the election key is
// gone.
func (n *Node) reconcile(ctx context.Context, guard clientv3.Cmp, elKey string, m *Metadata) (lost bool) {
	live := make(map[int32]int64, len(m.Brokers))
	for id, b := range m.Brokers {
		if b.LogDirOffline {
			continue // as a dead broker: no leadership, out of the ISR
		}
		live[id] = b.Epoch
	}
	names := make([]string, 0, len(m.Topics))
	for name := range m.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		unclean := m.uncleanLeaderElection(name, n.cfg.NodeID, n.cfg.UncleanLeaderElection)
		for _, p := range m.Topics[name].Partitions {
			np, changed := decide(p, live, unclean)
			if !changed {
				continue
			}
			cmps := []clientv3.Cmp{guard, clientv3.Compare(clientv3.ModRevision(partitionKey(name, p.Index)), "=", p.modRev)}
			if np.Leader >= 0 && np.LeaderBrokerEpoch != p.LeaderBrokerEpoch {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(brokerKey(np.Leader)), "=", np.LeaderBrokerEpoch))
			}
			resp, err := n.cli.Txn(ctx).If(cmps...).
				Then(clientv3.OpPut(partitionKey(name, p.Index), string(np.toJSON()))).
				Else(clientv3.OpGet(elKey)).Commit()
			if err != nil {
				n.log.Warn("controller write", "topic", name, "partition", p.Index, "err", err)
				return false
			}
			if !resp.Succeeded {
				kvs := resp.Responses[0].GetResponseRange().Kvs
				if len(kvs) == 0 {
					return true
				}
				continue // the partition or the broker changed: next snapshot
			}
			n.log.Info("partition change", "topic", name, "partition", p.Index,
				"leader", np.Leader, "leaderEpoch", np.LeaderEpoch, "partitionEpoch", np.PartitionEpoch,
				"isr", np.ISR, "replicas", np.Replicas, "prevLeader", p.Leader, "rev", resp.Header.Revision)
		}
	}
	return false
}

// decide returns the state partition p should have given the live brokers
// (id → broker epoch), and whether it differs from p:
//   - a live leader keeps leading; dead brokers leave the ISR;
//   - a dead leader (or one that registered anew since its election) is
//     replaced by the first replica in assignment order that is live and in
//     the ISR; dead brokers leave the ISR;
//   - if no ISR member is live the partition becomes leaderless (Leader -1)
//     and its ISR keeps the last leader, so that only it can be elected when
//     it returns — unless unclean election is on, which elects the first
//     live replica with an ISR of itself alone;
//   - every leader change bumps LeaderEpoch and PartitionEpoch, every ISR
//     change PartitionEpoch.
//   - a reassignment in progress completes once its ISR allows (see
//     completeReassignment), in the same change as any of the above, each
//     epoch growing by one at most.
func decide(p Partition, live map[int32]int64, unclean bool) (Partition, bool) {
	np, changed := decideLeadership(p, live, unclean)
	cp, done := completeReassignment(np, live)
	if !done {
		return np, changed
	}
	leaderChanged := cp.Leader != p.Leader || np.LeaderEpoch != p.LeaderEpoch
	if cp.Leader != np.Leader {
		cp.LeaderBrokerEpoch = live[cp.Leader]
	}
	cp.PartitionEpoch = p.PartitionEpoch + 1
	cp.LeaderEpoch = p.LeaderEpoch
	if leaderChanged {
		cp.LeaderEpoch++
	}
	return cp, true
}

// decideLeadership is decide without reassignments.
func decideLeadership(p Partition, live map[int32]int64, unclean bool) (Partition, bool) {
	isLive := func(id int32) bool { _, ok := live[id]; return ok }
	liveISR := make([]int32, 0, len(p.ISR))
	for _, r := range p.ISR {
		if isLive(r) {
			liveISR = append(liveISR, r)
		}
	}
	np := p
	leaderAlive := p.Leader >= 0 && isLive(p.Leader) &&
		(p.LeaderBrokerEpoch == 0 || live[p.Leader] == p.LeaderBrokerEpoch)
	if leaderAlive {
		if slices.Equal(liveISR, p.ISR) {
			return p, false
		}
		np.ISR = liveISR
		np.PartitionEpoch++
		return np, true
	}
	elect := func(leader int32, isr []int32) (Partition, bool) {
		np.Leader, np.ISR, np.LeaderBrokerEpoch = leader, isr, live[leader]
		np.LeaderEpoch++
		np.PartitionEpoch++
		return np, true
	}
	for _, r := range p.Replicas {
		if slices.Contains(liveISR, r) {
			return elect(r, liveISR)
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if isLive(r) {
				return elect(r, []int32{r})
			}
		}
	}
	if p.Leader < 0 {
		return p, false // already leaderless; wait for an ISR member
	}
	np.Leader, np.LeaderBrokerEpoch = -1, 0
	if slices.Contains(p.ISR, p.Leader) {
		np.ISR = []int32{p.Leader}
	}
	np.LeaderEpoch++
	np.PartitionEpoch++
	return np, true
}
