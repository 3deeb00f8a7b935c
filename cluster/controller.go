package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// runController reconciles every partition with the live brokers each time
// the metadata changes, until the incarnation ends, the node is fenced, or
// the election key is gone. Its first pass re-checks every partition,
// finishing whatever a previous controller left half done. A pass that
// decided changes is followed by another half a second later if the
// metadata has not changed by then (to retry a failed write); a pass that
// found nothing to change waits for the next change of the metadata, the
// only input of its decisions: an idle cluster costs the controller no
// pass over its partitions (at 90,000 partitions two passes a second were
// a large part of an idle cluster's CPU, issue #22).
func (n *Node) runController(inc *incarnation, el *concurrency.Election) {
	guard := clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev())
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for inc.ctx.Err() == nil && !n.Fenced() {
		m, ch := n.Subscribe()
		lost, decided := n.reconcile(inc.ctx, guard, el.Key(), m)
		n.controllerPasses.Add(1)
		if lost {
			n.log.Warn("controller lost its election key")
			return
		}
		var retry <-chan time.Time
		if decided > 0 {
			retry = tick.C
		}
		select {
		case <-ch:
		case <-retry:
		case <-inc.ctx.Done():
		}
	}
}

// reconcile writes the partition changes m calls for and reports whether
// the election key is gone. It decides every partition in one pass (a
// broker's death changes the partitions it led and those whose ISR it
// was in) and writes the decisions in batches of up to
// reconcileBatch(), one etcd transaction each, conditioned on the
// election key (guard), every partition's mod revision and each new
// leader's registration, as the per-partition writes were: a stale
// controller can never overwrite a newer decision. A batch whose
// conditions fail (a leader changed an ISR meanwhile) is written again in
// halves (writeHalving), so the rest of it still lands now. One log line
// per batch; the partitions at debug level.
//
// decided is the number of partitions the pass decided to change.
func (n *Node) reconcile(ctx context.Context, guard clientv3.Cmp, elKey string, m *Metadata) (lost bool, decided int) {
	live := make(map[int32]int64, len(m.Brokers))
	for id, b := range m.Brokers {
		if !b.Eligible() {
			continue // as a dead broker: no leadership, out of the ISR
		}
		live[id] = b.Epoch
	}
	names := make([]string, 0, len(m.Topics))
	for name := range m.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	uncleanDefault, set := dynamicUnclean(m, n.cfg.NodeID)
	if !set {
		uncleanDefault = n.cfg.UncleanLeaderElection
	}
	var changes []partitionChange
	for _, name := range names {
		unclean := uncleanLeaderElection(m, name, uncleanDefault)
		for _, p := range m.Topics[name].Partitions {
			if np, changed := decide(p, live, unclean); changed {
				changes = append(changes, partitionChange{topic: name, old: p, new: np})
			}
		}
	}
	// The batches go to etcd reconcileInFlight at a time, which commits
	// them in the same raft rounds: each is conditioned on its own
	// partitions, the election key and the new leaders' registrations,
	// as it would be alone, and no two hold the same partition.
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		stopped bool // lost the election, or a write failed
	)
	sem := make(chan struct{}, reconcileInFlight)
	for batch := range slices.Chunk(changes, n.reconcileBatch()) {
		sem <- struct{}{}
		mu.Lock()
		stop := stopped
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			l, err := n.writeHalving(ctx, guard, elKey, batch)
			if err != nil {
				n.log.Warn("controller write", "partitions", len(batch), "err", err)
			}
			mu.Lock()
			lost = lost || l
			stopped = stopped || l || err != nil
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lost, len(changes)
}

// reconcileInFlight is how many of a pass's transactions are written at
// once.
const reconcileInFlight = 4

// writeHalving writes cs in one transaction; if a partition's or a new
// leader's condition fails (one changed since the snapshot), it writes each
// half the same way, so the changes still valid land now and only the stale
// ones wait for the next snapshot: a batch of 1,000 with one stale
// partition costs about 2·log2(1,000) transactions, where writing the
// batch again one partition at a time cost 1,000 sequential ones (minutes
// on a busy etcd, the controller deaf to everything else meanwhile; seen
// with 3,000 partitions in the Jepsen scale case, issue #22).
func (n *Node) writeHalving(ctx context.Context, guard clientv3.Cmp, elKey string, cs []partitionChange) (lost bool, err error) {
	written, lost, err := n.writeChanges(ctx, guard, elKey, cs)
	if err != nil || lost || written || len(cs) == 1 {
		return lost, err
	}
	h := len(cs) / 2
	if lost, err := n.writeHalving(ctx, guard, elKey, cs[:h]); err != nil || lost {
		return lost, err
	}
	return n.writeHalving(ctx, guard, elKey, cs[h:])
}

// partitionChange is one partition's decided new state.
type partitionChange struct {
	topic    string
	old, new Partition
}

// reconcileBatch is how many partition changes one controller transaction
// carries: the embedded etcd takes 10,240 operations (ec.MaxTxnOps), an
// external one 128 by default (its --max-txn-ops), which a batch's
// conditions (one per partition, one per new leader, the election key)
// must fit in.
func (n *Node) reconcileBatch() int {
	if n.etcd != nil {
		return 1000
	}
	return 60
}

// writeChanges writes cs in one transaction. written is false when a
// condition other than the election key failed (nothing is written then);
// lost when the election key is gone.
func (n *Node) writeChanges(ctx context.Context, guard clientv3.Cmp, elKey string, cs []partitionChange) (written, lost bool, err error) {
	cmps := make([]clientv3.Cmp, 0, 1+len(cs)+4)
	cmps = append(cmps, guard)
	ops := make([]clientv3.Op, 0, len(cs))
	leaders := map[int32]int64{}
	for _, c := range cs {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(partitionKey(c.topic, c.old.Index)), "=", c.old.Version))
		if np := c.new; np.Leader >= 0 && np.LeaderBrokerEpoch != c.old.LeaderBrokerEpoch {
			if _, ok := leaders[np.Leader]; !ok {
				leaders[np.Leader] = np.LeaderBrokerEpoch
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(brokerKey(np.Leader)), "=", np.LeaderBrokerEpoch))
			}
		}
		ops = append(ops, clientv3.OpPut(partitionKey(c.topic, c.old.Index), string(partitionToJSON(&c.new))))
	}
	resp, err := n.cli.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(elKey)).Commit()
	if err != nil {
		return false, false, err
	}
	if !resp.Succeeded {
		if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return false, true, nil
		}
		return false, false, nil // a partition or a broker changed: next snapshot
	}
	elected, leaderless := 0, 0
	for _, c := range cs {
		switch {
		case c.new.Leader < 0 && c.old.Leader >= 0:
			leaderless++
		case c.new.Leader != c.old.Leader:
			elected++
		}
		n.log.Debug("partition change", "topic", c.topic, "partition", c.old.Index,
			"leader", c.new.Leader, "leaderEpoch", c.new.LeaderEpoch, "partitionEpoch", c.new.PartitionEpoch,
			"isr", c.new.ISR, "replicas", c.new.Replicas, "prevLeader", c.old.Leader)
	}
	if len(cs) == 1 {
		c := cs[0]
		n.log.Info("partition change", "topic", c.topic, "partition", c.old.Index,
			"leader", c.new.Leader, "leaderEpoch", c.new.LeaderEpoch, "partitionEpoch", c.new.PartitionEpoch,
			"isr", c.new.ISR, "replicas", c.new.Replicas, "prevLeader", c.old.Leader, "rev", resp.Header.Revision)
	} else {
		n.log.Info("partition changes", "partitions", len(cs), "new_leaders", elected, "leaderless", leaderless,
			"first", fmt.Sprintf("%s-%d", cs[0].topic, cs[0].old.Index), "rev", resp.Header.Revision)
	}
	return true, false, nil
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
