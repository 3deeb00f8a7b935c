package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// readPartition reads one partition's state from etcd.
func (n *Node) readPartition(ctx context.Context, topic string, index int32) (Partition, error) {
	resp, err := n.cli.Get(ctx, partitionKey(topic, index))
	if err != nil {
		return Partition{}, err
	}
	if len(resp.Kvs) == 0 {
		return Partition{}, ErrUnknownTopicOrPartition
	}
	return parsePartition(index, resp.Kvs[0])
}

// AlterPartition is the leader's request to change the ISR of a partition
// it leads (Kafka's AlterPartition). It succeeds only if this node is the
// leader of record (elected in its current registration), leaderEpoch and
// partitionEpoch are the current ones, and newISR is a subset of the
// replicas that contains the leader and adds only live brokers; the write
// is conditioned on all of it, so it cannot overwrite a newer decision. It
// returns the new state, which has PartitionEpoch+1 (or the current state
// when newISR is the ISR already).
//
// It returns ErrFenced, ErrUnknownTopicOrPartition, ErrNotLeader,
// ErrFencedLeaderEpoch, ErrInvalidUpdateVersion, ErrInvalidRequest or
// ErrIneligibleReplica.
func (n *Node) AlterPartition(ctx context.Context, topic string, partition int32, leaderEpoch, partitionEpoch int32, newISR []int32) (Partition, error) {
	self := n.cfg.NodeID
	for range maxAttempts {
		inc := n.inc.Load()
		if n.Fenced() || inc == nil {
			return Partition{}, ErrFenced
		}
		p, err := n.readPartition(ctx, topic, partition)
		if err != nil {
			return Partition{}, err
		}
		switch {
		case p.Leader != self || (p.LeaderBrokerEpoch != 0 && p.LeaderBrokerEpoch != inc.epoch):
			return p, ErrNotLeader
		case leaderEpoch != p.LeaderEpoch:
			return p, ErrFencedLeaderEpoch
		case partitionEpoch != p.PartitionEpoch:
			return p, ErrInvalidUpdateVersion
		}
		// The new ISR, in assignment order.
		var isr []int32
		for _, r := range p.Replicas {
			if slices.Contains(newISR, r) {
				isr = append(isr, r)
			}
		}
		if len(isr) != len(newISR) || !slices.Contains(isr, self) {
			return p, fmt.Errorf("%w: ISR %v is not a set of replicas %v containing the leader %d", ErrInvalidRequest, newISR, p.Replicas, self)
		}
		if slices.Equal(isr, p.ISR) {
			return p, nil
		}
		live, err := n.liveBrokers(ctx)
		if err != nil {
			return p, err
		}
		var added []int32
		for _, r := range isr {
			if !slices.Contains(p.ISR, r) {
				if _, ok := live[r]; !ok {
					return p, fmt.Errorf("%w: broker %d is not live", ErrIneligibleReplica, r)
				}
				added = append(added, r)
			}
		}
		np := p
		np.ISR = isr
		np.PartitionEpoch++
		cmps := append(brokerCmps(live, added),
			clientv3.Compare(clientv3.ModRevision(partitionKey(topic, partition)), "=", p.modRev),
			clientv3.Compare(clientv3.CreateRevision(brokerKey(self)), "=", inc.epoch))
		resp, err := n.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(partitionKey(topic, partition), string(np.toJSON()))).Commit()
		if err != nil {
			return p, err
		}
		if resp.Succeeded {
			np.modRev = resp.Header.Revision
			n.log.Info("ISR change", "topic", topic, "partition", partition, "isr", isr, "partitionEpoch", np.PartitionEpoch)
			return np, nil
		}
		// Something changed under us: read again; the checks above say what.
	}
	return Partition{}, ErrConflict
}

// ElectLeaders runs a leader election on each partition (all partitions
// when parts is nil). A preferred election makes the first replica the
// leader if it is live and in the ISR; an unclean one (preferred false)
// gives a partition without a live leader the first live ISR member, or
// failing that the first live replica with an ISR of itself alone. Each
// change bumps LeaderEpoch and PartitionEpoch. The result has an entry per
// partition: nil, ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
// ErrEligibleLeadersNotAvailable, ErrUnknownTopicOrPartition or a transport
// error.
func (n *Node) ElectLeaders(ctx context.Context, preferred bool, parts []TopicPartition) map[TopicPartition]error {
	out := map[TopicPartition]error{}
	if parts == nil {
		resp, err := n.cli.Get(ctx, keyPartitions, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return out
		}
		for _, kv := range resp.Kvs {
			k := string(kv.Key[len(keyPartitions):])
			for i := len(k) - 1; i >= 0; i-- {
				if k[i] == '/' {
					if idx, err := strconv.ParseInt(k[i+1:], 10, 32); err == nil {
						parts = append(parts, TopicPartition{k[:i], int32(idx)})
					}
					break
				}
			}
		}
	}
	for _, tp := range parts {
		out[tp] = n.electLeader(ctx, preferred, tp)
	}
	return out
}

func (n *Node) electLeader(ctx context.Context, preferred bool, tp TopicPartition) error {
	for range maxAttempts {
		p, err := n.readPartition(ctx, tp.Topic, tp.Partition)
		if err != nil {
			return err
		}
		live, err := n.liveBrokers(ctx)
		if err != nil {
			return err
		}
		leaderAlive := p.Leader >= 0 && live[p.Leader].Epoch != 0 &&
			(p.LeaderBrokerEpoch == 0 || live[p.Leader].Epoch == p.LeaderBrokerEpoch)
		np := p
		if preferred {
			pref := p.Replicas[0]
			if p.Leader == pref && leaderAlive {
				return ErrElectionNotNeeded
			}
			if _, ok := live[pref]; !ok || !slices.Contains(p.ISR, pref) {
				return ErrPreferredLeaderNotAvailable
			}
			np.Leader = pref
		} else {
			if leaderAlive {
				return ErrElectionNotNeeded
			}
			np.Leader = -1
			for _, r := range p.Replicas {
				if _, ok := live[r]; ok && slices.Contains(p.ISR, r) {
					np.Leader = r
					break
				}
			}
			if np.Leader < 0 {
				for _, r := range p.Replicas {
					if _, ok := live[r]; ok {
						np.Leader, np.ISR = r, []int32{r}
						break
					}
				}
			}
			if np.Leader < 0 {
				return ErrEligibleLeadersNotAvailable
			}
		}
		np.LeaderBrokerEpoch = live[np.Leader].Epoch
		np.LeaderEpoch++
		np.PartitionEpoch++
		resp, err := n.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(partitionKey(tp.Topic, tp.Partition)), "=", p.modRev),
			clientv3.Compare(clientv3.CreateRevision(brokerKey(np.Leader)), "=", np.LeaderBrokerEpoch),
		).Then(clientv3.OpPut(partitionKey(tp.Topic, tp.Partition), string(np.toJSON()))).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			n.log.Info("leader election", "topic", tp.Topic, "partition", tp.Partition, "preferred", preferred,
				"leader", np.Leader, "leaderEpoch", np.LeaderEpoch)
			return nil
		}
	}
	return ErrConflict
}

// ProducerIDBlockSize is the number of producer ids AllocateProducerIDBlock
// hands out at a time.
const ProducerIDBlockSize = 1000

// AllocateProducerIDBlock reserves the next ProducerIDBlockSize producer
// ids, cluster-wide, with a compare-and-set on /gregor/producer-ids (the
// first id of the next block, in decimal).
func (n *Node) AllocateProducerIDBlock(ctx context.Context) (first, size int64, err error) {
	for range maxAttempts {
		resp, err := n.cli.Get(ctx, keyProducerIDs)
		if err != nil {
			return 0, 0, err
		}
		var next, rev int64
		if len(resp.Kvs) == 1 {
			rev = resp.Kvs[0].ModRevision
			if next, err = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err != nil {
				return 0, 0, fmt.Errorf("cluster: %s holds %q: %w", keyProducerIDs, resp.Kvs[0].Value, err)
			}
		}
		tr, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(keyProducerIDs), "=", rev)).
			Then(clientv3.OpPut(keyProducerIDs, strconv.FormatInt(next+ProducerIDBlockSize, 10))).Commit()
		if err != nil {
			return 0, 0, err
		}
		if tr.Succeeded {
			return next, ProducerIDBlockSize, nil
		}
	}
	return 0, 0, ErrConflict
}
