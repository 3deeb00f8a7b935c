package cluster

// Partition reassignment, as KIP-455 and KRaft's ReplicationControlManager
// define it. A reassignment to target replicas writes, in one compare-and-set
// on the partition key:
//
//	Replicas         = target + (current - target)   target order first
//	AddingReplicas   = target - current
//	RemovingReplicas = current - target
//
// The leader of the partition sees the adding replicas among its replicas,
// its followers fetch, and it proposes each for the ISR once caught up
// (AlterPartition). The reassignment completes, in the same write that
// makes the last adding replica an ISR member or in a later controller
// pass, when the ISR minus the removing replicas is not empty and holds
// every adding replica: Replicas and ISR lose the removing replicas, the
// adding and removing lists are cleared and, if the leader was removed,
// the first target replica that is live and in the new ISR leads. A
// reassignment that adds nothing completes at once.
//
// Cancelling reverts: Replicas and ISR lose the adding replicas (the
// removing ones never left). A cancel that would leave the ISR empty is
// refused unless unclean leader election is on.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/metadata"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// checkTarget validates a reassignment target: not empty, no broker twice,
// every broker live.
func checkTarget(target []int32, live map[int32]int64) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the target replica list is empty", ErrInvalidReplicaAssignment)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, r)
		}
		if _, ok := live[r]; !ok {
			return fmt.Errorf("%w: broker %d is not a live broker", ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// startReassignment returns p with a reassignment to target written (and
// completed at once if nothing needs to catch up), and whether that is a
// change. target must have passed checkTarget. A reassignment already in
// progress is replaced, its full replica set taken as the current one, as
// KRaft does.
func startReassignment(p Partition, target []int32, live map[int32]int64) (Partition, bool) {
	adding := metadata.Without(target, p.Replicas)
	removing := metadata.Without(p.Replicas, target)
	np := p
	np.Replicas = append(slices.Clone(target), removing...)
	np.AddingReplicas, np.RemovingReplicas = nilIfEmpty(adding), nilIfEmpty(removing)
	if cp, ok := completeReassignment(np, live); ok {
		np = cp
	}
	if slices.Equal(np.Replicas, p.Replicas) && slices.Equal(np.ISR, p.ISR) && np.Leader == p.Leader &&
		slices.Equal(np.AddingReplicas, p.AddingReplicas) && slices.Equal(np.RemovingReplicas, p.RemovingReplicas) {
		return p, false
	}
	return bumpEpochs(p, np, live), true
}

// cancelReassignment returns p with its reassignment reverted: the adding
// replicas leave Replicas and ISR. If the leader was an adding replica, the
// first original replica that is live and in the remaining ISR leads; if
// none is, the partition is leaderless. An ISR left empty (every member was
// being added) is ErrReassignmentUnclean unless unclean is set, in which case
// the first live original replica leads with an ISR of itself alone. It
// returns ErrNoReassignmentInProgress when there is nothing to cancel.
func cancelReassignment(p Partition, live map[int32]int64, unclean bool) (Partition, error) {
	if !p.Reassigning() {
		return p, ErrNoReassignmentInProgress
	}
	np := p
	np.Replicas = p.OriginalReplicas()
	np.ISR = metadata.Without(p.ISR, p.AddingReplicas)
	np.AddingReplicas, np.RemovingReplicas = nil, nil
	if len(np.ISR) == 0 {
		if !unclean {
			return p, fmt.Errorf("%w: every ISR member of the partition is a replica being added", ErrReassignmentUnclean)
		}
		np.Leader = -1
		for _, r := range np.Replicas {
			if _, ok := live[r]; ok {
				np.Leader, np.ISR = r, []int32{r}
				break
			}
		}
		if np.Leader < 0 {
			return p, fmt.Errorf("%w: no original replica is live", ErrReassignmentUnclean)
		}
	} else if !slices.Contains(np.ISR, np.Leader) || !isLiveLeader(np, live) {
		np.Leader = firstLiveIn(np.Replicas, np.ISR, live)
	}
	return bumpEpochs(p, np, live), nil
}

// completeReassignment returns p with its reassignment completed, if its ISR
// allows: the ISR without the removing replicas is not empty and contains
// every adding replica, and one of its members is live to lead. The leader
// stays unless it is being removed (or is not live); then the first
// replica of the new set that is live and in the new ISR leads. The epochs
// and the new leader's broker epoch are left to the caller.
func completeReassignment(p Partition, live map[int32]int64) (Partition, bool) {
	if !p.Reassigning() {
		return p, false
	}
	isr := metadata.Without(p.ISR, p.RemovingReplicas)
	if len(isr) == 0 {
		return p, false
	}
	for _, r := range p.AddingReplicas {
		if !slices.Contains(isr, r) {
			return p, false
		}
	}
	np := p
	np.Replicas = metadata.Without(p.Replicas, p.RemovingReplicas)
	np.ISR = isr
	np.AddingReplicas, np.RemovingReplicas = nil, nil
	if !slices.Contains(isr, p.Leader) || !isLiveLeader(p, live) {
		np.Leader = firstLiveIn(np.Replicas, isr, live)
		if np.Leader < 0 {
			return p, false // wait for a member of the new ISR to be live
		}
	}
	return np, true
}

// isLiveLeader reports whether p's leader is live in the registration it
// was elected in.
func isLiveLeader(p Partition, live map[int32]int64) bool {
	e, ok := live[p.Leader]
	return p.Leader >= 0 && ok && (p.LeaderBrokerEpoch == 0 || e == p.LeaderBrokerEpoch)
}

// firstLiveIn returns the first of replicas that is in isr and live, or -1.
func firstLiveIn(replicas, isr []int32, live map[int32]int64) int32 {
	for _, r := range replicas {
		if _, ok := live[r]; ok && slices.Contains(isr, r) {
			return r
		}
	}
	return -1
}

// bumpEpochs gives np, a successor of p, its epochs: PartitionEpoch+1, and
// if the leader changed LeaderEpoch+1 and the new leader's broker epoch.
func bumpEpochs(p, np Partition, live map[int32]int64) Partition {
	np.PartitionEpoch = p.PartitionEpoch + 1
	np.LeaderEpoch = p.LeaderEpoch
	if np.Leader != p.Leader {
		np.LeaderEpoch = p.LeaderEpoch + 1
		np.LeaderBrokerEpoch = 0
		if np.Leader >= 0 {
			np.LeaderBrokerEpoch = live[np.Leader]
		}
	}
	return np
}

func nilIfEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return s
}

func liveEpochs(live map[int32]Broker) map[int32]int64 {
	out := make(map[int32]int64, len(live))
	for id, b := range live {
		out[id] = b.Epoch
	}
	return out
}

// AlterPartitionReassignments starts, replaces or (with a nil target)
// cancels the reassignment of each partition, each with a compare-and-set
// on its key. A target must be a non-empty list of distinct live brokers;
// its first replica is the preferred leader once the reassignment is done.
// The result has an entry per partition: nil, ErrUnknownTopicOrPartition,
// ErrInvalidReplicaAssignment, ErrNoReassignmentInProgress (cancel of
// none), ErrReassignmentUnclean, ErrConflict or a transport error.
func (n *Node) AlterPartitionReassignments(ctx context.Context, targets map[TopicPartition][]int32) map[TopicPartition]error {
	out := make(map[TopicPartition]error, len(targets))
	for tp, target := range targets {
		out[tp] = n.alterReassignment(ctx, tp, target)
	}
	return out
}

func (n *Node) alterReassignment(ctx context.Context, tp TopicPartition, target []int32) error {
	for range maxAttempts {
		p, err := n.readPartition(ctx, tp.Topic, tp.Partition)
		if err != nil {
			return err
		}
		brokers, err := n.liveBrokers(ctx)
		if err != nil {
			return err
		}
		live := liveEpochs(brokers)
		var np Partition
		if target == nil {
			if np, err = cancelReassignment(p, live, n.cfg.UncleanLeaderElection); err != nil {
				return err
			}
		} else {
			if err := checkTarget(target, live); err != nil {
				return err
			}
			var changed bool
			if np, changed = startReassignment(p, target, live); !changed {
				return nil
			}
		}
		cmps := append(brokerCmps(brokers, np.AddingReplicas),
			clientv3.Compare(clientv3.ModRevision(partitionKey(tp.Topic, tp.Partition)), "=", p.Version))
		if np.Leader >= 0 && np.Leader != p.Leader {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(brokerKey(np.Leader)), "=", np.LeaderBrokerEpoch))
		}
		resp, err := n.cli.Txn(ctx).If(cmps...).
			Then(clientv3.OpPut(partitionKey(tp.Topic, tp.Partition), string(partitionToJSON(&np)))).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			n.log.Info("partition reassignment", "topic", tp.Topic, "partition", tp.Partition, "cancel", target == nil,
				"target", target, "replicas", np.Replicas, "adding", np.AddingReplicas, "removing", np.RemovingReplicas,
				"isr", np.ISR, "leader", np.Leader, "leaderEpoch", np.LeaderEpoch, "partitionEpoch", np.PartitionEpoch)
			return nil
		}
	}
	return ErrConflict
}

// ListPartitionReassignments returns the reassignments in progress, of the
// given partitions or, with parts nil, of every partition, sorted by topic
// and partition. It reads etcd, so a reassignment another node just wrote
// is seen. Partitions that do not exist are left out, as Kafka does.
func (n *Node) ListPartitionReassignments(ctx context.Context, parts []TopicPartition) ([]Reassignment, error) {
	resp, err := n.cli.Get(ctx, keyPartitions, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var want map[TopicPartition]bool
	if parts != nil {
		want = make(map[TopicPartition]bool, len(parts))
		for _, tp := range parts {
			want[tp] = true
		}
	}
	var out []Reassignment
	for _, kv := range resp.Kvs {
		tp, ok := parsePartitionKey(string(kv.Key))
		if !ok || (want != nil && !want[tp]) {
			continue
		}
		p, err := parsePartition(tp.Partition, kv)
		if err != nil || !p.Reassigning() {
			continue
		}
		out = append(out, Reassignment{TopicPartition: tp, Replicas: p.Replicas,
			AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
	}
	slices.SortFunc(out, func(a, b Reassignment) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// parsePartitionKey parses /gregor/partitions/<topic>/<index>.
func parsePartitionKey(key string) (TopicPartition, bool) {
	if len(key) <= len(keyPartitions) || key[:len(keyPartitions)] != keyPartitions {
		return TopicPartition{}, false
	}
	k := key[len(keyPartitions):]
	i := strings.LastIndexByte(k, '/')
	if i <= 0 {
		return TopicPartition{}, false
	}
	idx, err := strconv.ParseInt(k[i+1:], 10, 32)
	if err != nil {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: k[:i], Partition: int32(idx)}, true
}
