package cluster

import (
	"context"
	"fmt"
	"github.com/gregor-broker/gregor/metadata"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxAttempts bounds the retries of a read-check-write cycle that keeps
// losing to concurrent writers.
const maxAttempts = 16

func validTopicName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\x00") && name != "." && name != ".."
}

// liveBrokers reads the registrations from etcd (not the snapshot), so that
// a transaction can be conditioned on them.
func (n *Node) liveBrokers(ctx context.Context) (map[int32]Broker, error) {
	resp, err := n.cli.Get(ctx, keyBrokers, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	live := make(map[int32]Broker, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if b, err := parseBroker(kv); err == nil {
			live[b.ID] = b
		}
	}
	return live, nil
}

func brokerCmps(live map[int32]Broker, ids ...[]int32) []clientv3.Cmp {
	seen := map[int32]bool{}
	var cmps []clientv3.Cmp
	for _, list := range ids {
		for _, id := range list {
			if !seen[id] {
				seen[id] = true
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(brokerKey(id)), "=", live[id].Epoch))
			}
		}
	}
	return cmps
}

// assignReplicas places partitions [first, first+count) with rf replicas
// each over the live brokers, as Kafka does: brokers are listed alternating
// between racks; partition i's first replica (its preferred leader) is
// broker (i+start) mod n of that list, so leaders spread evenly; the other
// replicas follow at a distance that shifts every n partitions, skipping
// brokers on racks that already hold a replica until every rack has one.
func assignReplicas(live map[int32]Broker, first, count int32, rf int) [][]int32 {
	byRack := map[string][]int32{}
	for id, b := range live {
		byRack[b.Rack] = append(byRack[b.Rack], id)
	}
	racks := slices.Sorted(maps.Keys(byRack))
	for _, r := range racks {
		slices.Sort(byRack[r])
	}
	var list []int32
	for i := 0; len(list) < len(live); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				list = append(list, byRack[r][i])
			}
		}
	}
	n := len(list)
	rackOf := func(id int32) string { return live[id].Rack }
	start, shift := mrand.IntN(n), mrand.IntN(n)
	out := make([][]int32, 0, count)
	for i := first; i < first+count; i++ {
		s := shift + int(i)/n
		lead := (int(i) + start) % n
		replicas := []int32{list[lead]}
		racksUsed := map[string]bool{rackOf(list[lead]): true}
		for k := 0; len(replicas) < rf && k < 4*n; k++ {
			b := list[(lead+1+(s+k)%(n-1))%n]
			if slices.Contains(replicas, b) {
				continue
			}
			if racksUsed[rackOf(b)] && len(racksUsed) < len(racks) {
				continue
			}
			replicas = append(replicas, b)
			racksUsed[rackOf(b)] = true
		}
		out = append(out, replicas)
	}
	return out
}

// checkAssignment validates manual replica lists against the live brokers.
func checkAssignment(live map[int32]Broker, lists [][]int32) error {
	for i, rs := range lists {
		if len(rs) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, i)
		}
		for j, r := range rs {
			if _, ok := live[r]; !ok {
				return fmt.Errorf("%w: broker %d is not live", ErrInvalidReplicaAssignment, r)
			}
			if slices.Contains(rs[:j], r) {
				return fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, r)
			}
		}
	}
	return nil
}

func newPartition(index int32, replicas []int32, live map[int32]Broker) Partition {
	return Partition{
		Index: index, Replicas: replicas, ISR: slices.Clone(replicas),
		Leader: replicas[0], LeaderBrokerEpoch: live[replicas[0]].Epoch,
	}
}

// CreateTopic creates a topic with partitions partitions of
// replicationFactor replicas placed by assignReplicas, or with the manual
// assignment (partition index → replicas, indexes 0..n-1) when it is not
// nil, in which case partitions and replicationFactor are ignored. Every
// replica starts in the ISR and the first one leads. It returns
// ErrTopicExists, ErrInvalidTopic, ErrInvalidPartitions,
// ErrInvalidReplicationFactor (more replicas than live brokers) or
// ErrInvalidReplicaAssignment.
func (n *Node) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16,
	assignment map[int32][]int32, configs map[string]string) (*Topic, error) {
	if !validTopicName(name) {
		return nil, ErrInvalidTopic
	}
	var manual [][]int32
	if assignment != nil {
		if len(assignment) == 0 {
			return nil, ErrInvalidReplicaAssignment
		}
		manual = make([][]int32, len(assignment))
		for p, rs := range assignment {
			if p < 0 || int(p) >= len(assignment) {
				return nil, fmt.Errorf("%w: partition indexes must be 0..%d", ErrInvalidReplicaAssignment, len(assignment)-1)
			}
			manual[p] = slices.Clone(rs)
		}
	} else if partitions <= 0 {
		return nil, ErrInvalidPartitions
	}
	if configs == nil {
		configs = map[string]string{}
	}
	for range maxAttempts {
		live, err := n.liveBrokers(ctx)
		if err != nil {
			return nil, err
		}
		lists := manual
		if lists == nil {
			if replicationFactor <= 0 || int(replicationFactor) > len(live) {
				return nil, fmt.Errorf("%w: %d replicas, %d live brokers", ErrInvalidReplicationFactor, replicationFactor, len(live))
			}
			lists = assignReplicas(live, 0, partitions, int(replicationFactor))
		} else if err := checkAssignment(live, lists); err != nil {
			return nil, err
		}
		id := metadata.NewUUID()
		t := &Topic{Name: name, ID: id, Configs: maps.Clone(configs)}
		cmps := append(brokerCmps(live, lists...), clientv3.Compare(clientv3.CreateRevision(topicKey(name)), "=", 0))
		ops := []clientv3.Op{clientv3.OpPut(topicKey(name), string(topicToJSON(id, t.Configs)))}
		for i, rs := range lists {
			p := newPartition(int32(i), rs, live)
			ops = append(ops, clientv3.OpPut(partitionKey(name, p.Index), string(partitionToJSON(&p))))
			t.Partitions = append(t.Partitions, p)
		}
		resp, err := n.cli.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(topicKey(name))).Commit()
		if err != nil {
			return nil, fmt.Errorf("cluster: create topic %s: %w", name, err)
		}
		if resp.Succeeded {
			t.Version = resp.Header.Revision
			for i := range t.Partitions {
				t.Partitions[i].Version = resp.Header.Revision
			}
			n.log.Info("created topic", "topic", name, "partitions", len(lists), "assignment", lists)
			return t, nil
		}
		if len(resp.Responses[0].GetResponseRange().Kvs) > 0 {
			return nil, ErrTopicExists
		}
		// A broker came or went between the read and the write: place again.
	}
	return nil, ErrConflict
}

// DeleteTopic removes a topic and its partitions. It returns
// ErrUnknownTopicOrPartition if there is no such topic.
func (n *Node) DeleteTopic(ctx context.Context, name string) error {
	for range maxAttempts {
		resp, err := n.cli.Get(ctx, topicKey(name))
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return ErrUnknownTopicOrPartition
		}
		tr, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(topicKey(name)), "=", resp.Kvs[0].ModRevision)).
			Then(clientv3.OpDelete(topicKey(name)), clientv3.OpDelete(partitionsPrefix(name), clientv3.WithPrefix())).
			Commit()
		if err != nil {
			return err
		}
		if tr.Succeeded {
			n.log.Info("deleted topic", "topic", name)
			return nil
		}
	}
	return ErrConflict
}

// readTopic reads a topic and its partitions from etcd.
func (n *Node) readTopic(ctx context.Context, name string) (*Topic, error) {
	resp, err := n.cli.Txn(ctx).Then(
		clientv3.OpGet(topicKey(name)),
		clientv3.OpGet(partitionsPrefix(name), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, err
	}
	tkvs := resp.Responses[0].GetResponseRange().Kvs
	if len(tkvs) == 0 {
		return nil, ErrUnknownTopicOrPartition
	}
	t, err := parseTopic(name, tkvs[0])
	if err != nil {
		return nil, err
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		idx, err := strconv.ParseInt(string(kv.Key[len(partitionsPrefix(name)):]), 10, 32)
		if err != nil {
			continue
		}
		if p, err := parsePartition(int32(idx), kv); err == nil {
			t.Partitions = append(t.Partitions, p)
		}
	}
	sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].Index < t.Partitions[j].Index })
	return t, nil
}

// CreatePartitions grows a topic to total partitions. The new partitions
// take the replica lists in assignment (one per new partition) or are
// placed like CreateTopic with the replication factor of partition 0. It
// returns ErrUnknownTopicOrPartition, ErrInvalidPartitions (total not above
// the current count), ErrInvalidReplicationFactor or
// ErrInvalidReplicaAssignment.
func (n *Node) CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32) error {
	for range maxAttempts {
		t, err := n.readTopic(ctx, name)
		if err != nil {
			return err
		}
		cur := int32(len(t.Partitions))
		if total <= cur {
			return fmt.Errorf("%w: topic has %d partitions, asked for %d", ErrInvalidPartitions, cur, total)
		}
		live, err := n.liveBrokers(ctx)
		if err != nil {
			return err
		}
		lists := assignment
		if lists != nil {
			if int32(len(lists)) != total-cur {
				return fmt.Errorf("%w: %d lists for %d new partitions", ErrInvalidReplicaAssignment, len(lists), total-cur)
			}
			if err := checkAssignment(live, lists); err != nil {
				return err
			}
		} else {
			rf := 1
			if cur > 0 {
				rf = len(t.Partitions[0].Replicas)
			}
			if rf > len(live) {
				return fmt.Errorf("%w: %d replicas, %d live brokers", ErrInvalidReplicationFactor, rf, len(live))
			}
			lists = assignReplicas(live, cur, total-cur, rf)
		}
		cmps := append(brokerCmps(live, lists...), clientv3.Compare(clientv3.ModRevision(topicKey(name)), "=", t.Version))
		var ops []clientv3.Op
		for i, rs := range lists {
			idx := cur + int32(i)
			p := newPartition(idx, slices.Clone(rs), live)
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(partitionKey(name, idx)), "=", 0))
			ops = append(ops, clientv3.OpPut(partitionKey(name, idx), string(partitionToJSON(&p))))
		}
		resp, err := n.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			n.log.Info("created partitions", "topic", name, "total", total, "assignment", lists)
			return nil
		}
	}
	return ErrConflict
}

// SetTopicConfigs replaces a topic's configs. It returns
// ErrUnknownTopicOrPartition if there is no such topic.
func (n *Node) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	return n.UpdateTopicConfigs(ctx, name, func(map[string]string) (map[string]string, error) { return configs, nil })
}

// UpdateTopicConfigs replaces a topic's config overrides by what update
// makes of the overrides etcd holds, in a transaction conditioned on them:
// an incremental change made through another broker in between is never
// lost (update runs again on the newer overrides). An error from update
// ends it unchanged and is returned.
func (n *Node) UpdateTopicConfigs(ctx context.Context, name string, update func(current map[string]string) (map[string]string, error)) error {
	for range maxAttempts {
		resp, err := n.cli.Get(ctx, topicKey(name))
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return ErrUnknownTopicOrPartition
		}
		t, err := parseTopic(name, resp.Kvs[0])
		if err != nil {
			return err
		}
		current := maps.Clone(t.Configs)
		if current == nil {
			current = map[string]string{}
		}
		configs, err := update(current)
		if err != nil {
			return err
		}
		tr, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(topicKey(name)), "=", t.Version)).
			Then(clientv3.OpPut(topicKey(name), string(topicToJSON(t.ID, configs)))).Commit()
		if err != nil {
			return err
		}
		if tr.Succeeded {
			return nil
		}
	}
	return ErrConflict
}
