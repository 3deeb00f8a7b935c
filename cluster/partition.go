package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

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
	r := n.AlterPartitions(ctx, []ISRChange{{Topic: topic, Partition: partition, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, ISR: newISR}})[0]
	return r.Partition, r.Err
}

// AlterPartitions is AlterPartition for many partitions at once, as a
// leader whose follower came back expands the ISR of every partition it
// shares with it: the registrations are read once, a partition's state is
// read from etcd only when this node's mirror does not call for the write
// asked (or a write conditioned on it failed), and the changes are written
// in batches of one transaction each, every change conditioned as
// AlterPartition's is (a batch whose conditions fail is written again in
// halves, and only the changes whose partition changed meanwhile are read
// again and retried). One log line per batch. out[i] is changes[i]'s
// result.
func (n *Node) AlterPartitions(ctx context.Context, changes []ISRChange) []ISRResult {
	out := make([]ISRResult, len(changes))
	todo := make([]int, len(changes))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt == maxAttempts {
			for _, i := range todo {
				out[i] = ISRResult{Err: ErrConflict}
			}
			break
		}
		inc := n.inc.Load()
		if n.Fenced() || inc == nil {
			for _, i := range todo {
				out[i] = ISRResult{Err: ErrFenced}
			}
			break
		}
		live, err := n.liveBrokers(ctx)
		if err != nil {
			for _, i := range todo {
				out[i] = ISRResult{Err: err}
			}
			break
		}
		// Check each against its state. The first time this node's mirror
		// of etcd is asked first, so that a leader's many changes cost no
		// etcd read each: its state is used only when it calls for a
		// write, which is conditioned on it (a stale one fails the batch,
		// read again); any other answer (an error, nothing to change) is
		// given from etcd's state, as the mirror may be behind this
		// leader's own last change. Those that need a write go in batches.
		var mirror *Metadata
		if attempt == 0 {
			mirror = n.Metadata()
		}
		// Those the mirror does not settle are read from etcd: one by one
		// when few, else a prefix read per topic (a failed batch of 1,000
		// re-read one partition at a time was 1,000 sequential reads).
		var writes []isrWrite
		var unread []int
		for _, i := range todo {
			c := changes[i]
			if mirror != nil {
				if p, ok := mirror.Partition(c.Topic, c.Partition); ok {
					np, added, err := checkISRChange(p, n.cfg.NodeID, inc.epoch, c, live)
					if err == nil && np.PartitionEpoch != p.PartitionEpoch {
						writes = append(writes, isrWrite{i: i, topic: c.Topic, old: p, new: np, added: added})
						continue
					}
				}
			}
			unread = append(unread, i)
		}
		var fresh map[TopicPartition]Partition
		if len(unread) > isrReadOneByOne {
			var topics []string
			for _, i := range unread {
				if !slices.Contains(topics, changes[i].Topic) {
					topics = append(topics, changes[i].Topic)
				}
			}
			if fresh, err = n.readTopicPartitions(ctx, topics); err != nil {
				for _, i := range unread {
					out[i] = ISRResult{Err: err}
				}
				unread = nil
			}
		}
		for _, i := range unread {
			c := changes[i]
			var p Partition
			if fresh != nil {
				var ok bool
				if p, ok = fresh[TopicPartition{Topic: c.Topic, Partition: c.Partition}]; !ok {
					out[i] = ISRResult{Err: ErrUnknownTopicOrPartition}
					continue
				}
			} else if p, err = n.readPartition(ctx, c.Topic, c.Partition); err != nil {
				out[i] = ISRResult{Err: err}
				continue
			}
			np, added, err := checkISRChange(p, n.cfg.NodeID, inc.epoch, c, live)
			if err != nil || np.PartitionEpoch == p.PartitionEpoch {
				out[i] = ISRResult{Partition: p, Err: err}
				continue
			}
			writes = append(writes, isrWrite{i: i, topic: c.Topic, old: p, new: np, added: added})
		}
		slices.SortFunc(writes, func(a, b isrWrite) int { return a.i - b.i })
		todo = todo[:0]
		var stalled error // a batch etcd did not commit in time: the rest are not tried
		for batch := range slices.Chunk(writes, n.reconcileBatch()) {
			if stalled != nil {
				for _, w := range batch {
					out[w.i] = ISRResult{Partition: w.old, Err: stalled}
				}
				continue
			}
			bctx, cancel := context.WithTimeout(ctx, isrBatchTimeout)
			todo = n.writeISRsHalving(bctx, inc.epoch, live, changes, batch, out, todo)
			stalled = bctx.Err()
			cancel()
		}
		slices.Sort(todo)
	}
	return out
}

// isrBatchTimeout bounds each transaction of AlterPartitions rather than
// the whole call: a follower back after a restart rejoins the ISR of
// thousands of partitions, written 1,000 to a transaction, which on a
// loaded machine takes longer than any bound fixed for the whole list;
// so each batch gets this long, and once one is not committed in time the
// batches after it fail at once (etcd is not keeping up; the caller asks
// again later). Those committed before stand.
const isrBatchTimeout = 5 * time.Second

// isrReadOneByOne is how many partitions AlterPartitions reads from etcd
// one Get each; more are read with one prefix Get per topic.
const isrReadOneByOne = 8

// readTopicPartitions reads every partition of topics from etcd.
func (n *Node) readTopicPartitions(ctx context.Context, topics []string) (map[TopicPartition]Partition, error) {
	out := map[TopicPartition]Partition{}
	for _, topic := range topics {
		resp, err := n.cli.Get(ctx, partitionsPrefix(topic), clientv3.WithPrefix())
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			tp, ok := parsePartitionKey(string(kv.Key))
			if !ok || tp.Topic != topic {
				continue
			}
			p, err := parsePartition(tp.Partition, kv)
			if err != nil {
				return nil, err
			}
			out[tp] = p
		}
	}
	return out, nil
}

// writeISRsHalving writes ws in one transaction (writeISRs) and records
// the results in out; if a condition failed, it writes each half the same
// way, so that only the changes whose partition changed meanwhile are
// appended to todo (to be read again), not the whole batch. One log line
// per transaction written.
func (n *Node) writeISRsHalving(ctx context.Context, epoch int64, live map[int32]Broker, changes []ISRChange, ws []isrWrite, out []ISRResult, todo []int) []int {
	rev, ok, brokersChanged, err := n.writeISRs(ctx, epoch, live, ws)
	switch {
	case err != nil:
		for _, w := range ws {
			out[w.i] = ISRResult{Partition: w.old, Err: err}
		}
	case ok:
		for _, w := range ws {
			w.new.Version = rev
			out[w.i] = ISRResult{Partition: w.new}
		}
		if len(ws) == 1 {
			c := changes[ws[0].i]
			n.log.Info("ISR change", "topic", c.Topic, "partition", c.Partition, "isr", ws[0].new.ISR, "partitionEpoch", ws[0].new.PartitionEpoch)
		} else {
			n.log.Info("ISR changes", "partitions", len(ws), "first", changes[ws[0].i].Topic+"-"+strconv.Itoa(int(changes[ws[0].i].Partition)))
		}
	case len(ws) == 1 || brokersChanged:
		// Its partition changed, or a registration it was conditioned on
		// (which fails every half too): read again.
		for _, w := range ws {
			todo = append(todo, w.i)
		}
	default:
		h := len(ws) / 2
		todo = n.writeISRsHalving(ctx, epoch, live, changes, ws[:h], out, todo)
		todo = n.writeISRsHalving(ctx, epoch, live, changes, ws[h:], out, todo)
	}
	return todo
}

// isrWrite is one checked ISR change waiting to be written.
type isrWrite struct {
	i        int // index in the caller's changes
	topic    string
	old, new Partition
	added    []int32
}

// checkISRChange applies AlterPartition's rules to change c of partition p
// (self is the leader's id, epoch its registration): the new state, with
// the ISR in assignment order and PartitionEpoch+1 (p itself when the ISR
// is already that), and the brokers it adds.
func checkISRChange(p Partition, self int32, epoch int64, c ISRChange, live map[int32]Broker) (Partition, []int32, error) {
	switch {
	case p.Leader != self || (p.LeaderBrokerEpoch != 0 && p.LeaderBrokerEpoch != epoch):
		return p, nil, ErrNotLeader
	case c.LeaderEpoch != p.LeaderEpoch:
		return p, nil, ErrFencedLeaderEpoch
	case c.PartitionEpoch != p.PartitionEpoch:
		return p, nil, ErrInvalidUpdateVersion
	}
	var isr []int32
	for _, r := range p.Replicas {
		if slices.Contains(c.ISR, r) {
			isr = append(isr, r)
		}
	}
	if len(isr) != len(c.ISR) || !slices.Contains(isr, self) {
		return p, nil, fmt.Errorf("%w: ISR %v is not a set of replicas %v containing the leader %d", ErrInvalidRequest, c.ISR, p.Replicas, self)
	}
	if slices.Equal(isr, p.ISR) {
		return p, nil, nil
	}
	var added []int32
	for _, r := range isr {
		if !slices.Contains(p.ISR, r) {
			if _, ok := live[r]; !ok {
				return p, nil, fmt.Errorf("%w: broker %d is not live", ErrIneligibleReplica, r)
			}
			added = append(added, r)
		}
	}
	np := p
	np.ISR = isr
	np.PartitionEpoch++
	return np, added, nil
}

// writeISRs writes ws in one transaction conditioned on each partition's
// mod revision, the registration of every broker added to an ISR and this
// leader's own registration (epoch). ok is false, and nothing written,
// when a condition failed; brokersChanged then tells whether one of the
// registrations did.
func (n *Node) writeISRs(ctx context.Context, epoch int64, live map[int32]Broker, ws []isrWrite) (rev int64, ok, brokersChanged bool, err error) {
	var added [][]int32
	cmps := make([]clientv3.Cmp, 0, len(ws)+2)
	ops := make([]clientv3.Op, 0, len(ws))
	for _, w := range ws {
		added = append(added, w.added)
		key := partitionKey(w.topic, w.new.Index)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", w.old.Version))
		ops = append(ops, clientv3.OpPut(key, string(partitionToJSON(&w.new))))
	}
	cmps = append(cmps, brokerCmps(live, added...)...)
	cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(brokerKey(n.cfg.NodeID)), "=", epoch))
	// On failure, the registrations compared are read back: when one of
	// them changed, every part of the batch would fail too.
	want := map[int32]int64{n.cfg.NodeID: epoch}
	for _, ids := range added {
		for _, id := range ids {
			want[id] = live[id].Epoch
		}
	}
	ids := make([]int32, 0, len(want))
	var gets []clientv3.Op
	for id := range want {
		ids = append(ids, id)
		gets = append(gets, clientv3.OpGet(brokerKey(id)))
	}
	resp, err := n.cli.Txn(ctx).If(cmps...).Then(ops...).Else(gets...).Commit()
	if err != nil {
		return 0, false, false, err
	}
	if !resp.Succeeded {
		for j, id := range ids {
			kvs := resp.Responses[j].GetResponseRange().Kvs
			if len(kvs) == 0 || kvs[0].CreateRevision != want[id] {
				brokersChanged = true
			}
		}
	}
	return resp.Header.Revision, resp.Succeeded, brokersChanged, nil
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
//
// Every partition is decided from one read of the live brokers and of its
// topic's partitions, and the elections are written in batches of
// reconcileBatch(), one etcd transaction each, conditioned as a single
// election is (each partition's mod revision, each new leader's
// registration): moving a thousand leaders back to their preferred
// replicas after a restart is a few writes, not a thousand sequential ones
// (which outlasted the request's timeout, issue #22). A batch whose
// conditions fail (a partition changed meanwhile) is elected again one
// partition at a time, each read anew.
func (n *Node) ElectLeaders(ctx context.Context, preferred bool, parts []TopicPartition) map[TopicPartition]error {
	out := map[TopicPartition]error{}
	current := map[TopicPartition]Partition{}
	read := func(prefix string) error {
		resp, err := n.cli.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			tp, ok := parsePartitionKey(string(kv.Key))
			if !ok || prefix != keyPartitions && partitionsPrefix(tp.Topic) != prefix {
				continue
			}
			if p, err := parsePartition(tp.Partition, kv); err == nil {
				current[tp] = p
			}
		}
		return nil
	}
	if parts == nil {
		if err := read(keyPartitions); err != nil {
			return out
		}
		for tp := range current {
			parts = append(parts, tp)
		}
		slices.SortFunc(parts, func(a, b TopicPartition) int {
			if a.Topic != b.Topic {
				return strings.Compare(a.Topic, b.Topic)
			}
			return int(a.Partition - b.Partition)
		})
	} else {
		seen := map[string]bool{}
		for _, tp := range parts {
			if seen[tp.Topic] {
				continue
			}
			seen[tp.Topic] = true
			if err := read(partitionsPrefix(tp.Topic)); err != nil {
				for _, tp := range parts {
					out[tp] = err
				}
				return out
			}
		}
	}
	live, err := n.liveBrokers(ctx)
	if err != nil {
		for _, tp := range parts {
			out[tp] = err
		}
		return out
	}
	var changes []partitionChange
	for _, tp := range parts {
		if _, dup := out[tp]; dup {
			continue // named twice: one election
		}
		p, ok := current[tp]
		if !ok {
			out[tp] = ErrUnknownTopicOrPartition
			continue
		}
		np, err := election(p, live, preferred)
		out[tp] = err
		if err == nil {
			changes = append(changes, partitionChange{topic: tp.Topic, old: p, new: np})
		}
	}
	for batch := range slices.Chunk(changes, n.reconcileBatch()) {
		written, err := n.writeElections(ctx, batch)
		for _, c := range batch {
			tp := TopicPartition{Topic: c.topic, Partition: c.old.Index}
			switch {
			case err != nil:
				out[tp] = err
			case !written:
				out[tp] = n.electLeader(ctx, preferred, tp)
			}
		}
		if written && err == nil {
			c := batch[0]
			n.log.Info("leader elections", "partitions", len(batch), "preferred", preferred,
				"first", fmt.Sprintf("%s-%d", c.topic, c.old.Index), "leader", c.new.Leader, "leaderEpoch", c.new.LeaderEpoch)
		}
	}
	return out
}

// writeElections writes cs in one transaction, conditioned on each
// partition's mod revision and each new leader's registration; written is
// false when a condition failed (nothing is written then).
func (n *Node) writeElections(ctx context.Context, cs []partitionChange) (written bool, err error) {
	cmps := make([]clientv3.Cmp, 0, len(cs)+3)
	ops := make([]clientv3.Op, 0, len(cs))
	leaders := map[int32]bool{}
	for _, c := range cs {
		key := partitionKey(c.topic, c.old.Index)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", c.old.Version))
		if !leaders[c.new.Leader] {
			leaders[c.new.Leader] = true
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(brokerKey(c.new.Leader)), "=", c.new.LeaderBrokerEpoch))
		}
		ops = append(ops, clientv3.OpPut(key, string(partitionToJSON(&c.new))))
	}
	resp, err := n.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
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
		np, err := election(p, live, preferred)
		if err != nil {
			return err
		}
		resp, err := n.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(partitionKey(tp.Topic, tp.Partition)), "=", p.Version),
			clientv3.Compare(clientv3.CreateRevision(brokerKey(np.Leader)), "=", np.LeaderBrokerEpoch),
		).Then(clientv3.OpPut(partitionKey(tp.Topic, tp.Partition), string(partitionToJSON(&np)))).Commit()
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

// election decides one partition's election (see ElectLeaders) given the
// live brokers: its new state, or why there is none.
func election(p Partition, live map[int32]Broker, preferred bool) (Partition, error) {
	leaderAlive := p.Leader >= 0 && live[p.Leader].Epoch != 0 &&
		(p.LeaderBrokerEpoch == 0 || live[p.Leader].Epoch == p.LeaderBrokerEpoch)
	np := p
	if preferred {
		pref := p.Replicas[0]
		if p.Leader == pref && leaderAlive {
			return p, ErrElectionNotNeeded
		}
		if _, ok := live[pref]; !ok || !slices.Contains(p.ISR, pref) {
			return p, ErrPreferredLeaderNotAvailable
		}
		np.Leader = pref
	} else {
		if leaderAlive {
			return p, ErrElectionNotNeeded
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
			return p, ErrEligibleLeadersNotAvailable
		}
	}
	np.LeaderBrokerEpoch = live[np.Leader].Epoch
	np.LeaderEpoch++
	np.PartitionEpoch++
	return np, nil
}

// ProducerIDBlockSize is the number of producer ids AllocateProducerIDBlock
// hands out at a time.
const ProducerIDBlockSize = 1000

// AllocateProducerIDBlock reserves the next ProducerIDBlockSize producer
// ids, cluster-wide, with a compare-and-set on /gregor/producer-ids (the
// first id of the next block, in decimal). Every id of the block is above
// floor (-1: no floor): a cluster link keeps the ids of the producers it
// mirrored out of reach.
func (n *Node) AllocateProducerIDBlock(ctx context.Context, floor int64) (first, size int64, err error) {
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
		next = max(next, floor+1)
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
