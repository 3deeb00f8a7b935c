package broker

// The cluster-wide view the admin console shows from any node. In a
// cluster each broker's own state covers only the groups it coordinates
// and the partitions it replicates, so ClusterGroups asks the others over
// the inter-broker client pool (peerRequest):
//
//	ListGroups      every live broker: the groups it coordinates
//	DescribeGroups  each coordinator, for its groups, in one request
//	OffsetFetch     each coordinator, for its groups (v8+), in one request
//	ListOffsets     each partition leader, for the high watermarks (and,
//	                for ClusterTopics, log start offsets) of the
//	                partitions it leads that have no replica here, in one
//	                request (per timestamp) per leader
//
// This broker's share is read locally. What could not be reached is
// reported beside the answer rather than failing it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Clustered reports whether the broker is a node of a cluster (etcd
// metadata) rather than a single node.
func (b *Broker) Clustered() bool { return b.cluster != nil }

// ClusterGroups returns every group of the cluster sorted by name, and a
// line for each thing that could not be asked ("broker 2: ListGroups: …").
// A group whose coordinator cannot be reached is missing from the list
// (its name is known only there); an offset whose partition leader cannot
// be reached has HighWatermark and Lag -1. On a single node it is Groups()
// with no problems. ctx bounds the requests to the other brokers.
func (b *Broker) ClusterGroups(ctx context.Context) ([]GroupInfo, []string) {
	if b.cluster == nil {
		return b.Groups(), nil
	}
	brokers, _ := b.brokersView()
	var (
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// Which broker coordinates which groups.
	byBroker := map[int32][]string{}
	for _, br := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names, err := b.listGroupsAt(ctx, br.id)
			if err != nil {
				problem("broker %d: ListGroups: %v", br.id, err)
				return
			}
			mu.Lock()
			byBroker[br.id] = names
			mu.Unlock()
		}()
	}
	wg.Wait()
	return b.describeGroupsAcross(ctx, byBroker, problems)
}

// ClusterGroup returns one group of the cluster, asked of its coordinator,
// and false when it does not exist (or its coordinator could not be
// reached: the problems say so).
func (b *Broker) ClusterGroup(ctx context.Context, name string) (GroupInfo, bool, []string) {
	if b.cluster == nil {
		for _, g := range b.Groups() {
			if g.Name == name {
				return g, true, nil
			}
		}
		return GroupInfo{}, false, nil
	}
	c, code := b.groupCoordinator(name)
	if code != 0 {
		return GroupInfo{}, false, []string{fmt.Sprintf("group %s: no coordinator: %v", name, kerr.ErrorForCode(code))}
	}
	gs, problems := b.describeGroupsAcross(ctx, map[int32][]string{c.id: {name}}, nil)
	for _, g := range gs {
		if g.Name == name && g.State != "Dead" {
			return g, true, problems
		}
	}
	return GroupInfo{}, false, problems
}

// describeGroupsAcross describes the groups byBroker lists at the broker
// listing them, with their committed offsets and the partitions' high
// watermarks.
func (b *Broker) describeGroupsAcross(ctx context.Context, byBroker map[int32][]string, problems []string) ([]GroupInfo, []string) {
	type described struct {
		groups    []kmsg.DescribeGroupsResponseGroup
		committed map[string]map[string]map[int32]int64 // group → topic → partition
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// A group listed by two brokers (during a coordinator move) is kept
	// at its coordinator.
	seen := map[string]int32{}
	for id, names := range byBroker {
		for _, n := range names {
			if prev, dup := seen[n]; dup {
				if c, code := b.groupCoordinator(n); code == 0 && c.id == prev {
					continue
				}
			}
			seen[n] = id
		}
	}
	asked := map[int32][]string{}
	for n, id := range seen {
		asked[id] = append(asked[id], n)
	}
	results := map[int32]described{}
	for id, names := range asked {
		slices.Sort(names)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d described
			var err error
			if d.groups, err = b.describeGroupsAt(ctx, id, names); err != nil {
				problem("broker %d: DescribeGroups: %v", id, err)
				return
			}
			if d.committed, err = b.committedAt(ctx, id, names); err != nil {
				problem("broker %d: OffsetFetch: %v", id, err)
			}
			mu.Lock()
			results[id] = d
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The high watermarks, asked of each partition's leader.
	need := map[topicPartition]bool{}
	for _, d := range results {
		for _, ps := range d.committed {
			for t, parts := range ps {
				for p := range parts {
					need[topicPartition{t, p}] = true
				}
			}
		}
	}
	hws := b.highWatermarks(ctx, need, problem)
	var out []GroupInfo
	for _, d := range results {
		for _, dg := range d.groups {
			if dg.ErrorCode != 0 {
				problem("group %s: DescribeGroups: %v", dg.Group, kerr.ErrorForCode(dg.ErrorCode))
				continue
			}
			out = append(out, groupInfo(dg, d.committed[dg.Group], func(t string, p int32) (int64, bool) {
				hw, ok := hws[topicPartition{t, p}]
				return hw, ok
			}))
		}
	}
	slices.SortFunc(out, func(x, y GroupInfo) int { return strings.Compare(x.Name, y.Name) })
	slices.Sort(problems)
	return out, problems
}

// topicPartition names a partition.
type topicPartition struct {
	topic     string
	partition int32
}

// listGroupsAt returns the names of the groups broker id coordinates.
func (b *Broker) listGroupsAt(ctx context.Context, id int32) ([]string, error) {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	var resp *kmsg.ListGroupsResponse
	if id == b.nodeID {
		resp = b.groups.ListGroups(req)
	} else {
		kr, err := b.peerRequest(ctx, id, req)
		if err != nil {
			return nil, err
		}
		resp = kr.(*kmsg.ListGroupsResponse)
	}
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	names := make([]string, 0, len(resp.Groups))
	for _, g := range resp.Groups {
		names = append(names, g.Group)
	}
	return names, nil
}

// describeGroupsAt describes groups at broker id.
func (b *Broker) describeGroupsAt(ctx context.Context, id int32, names []string) ([]kmsg.DescribeGroupsResponseGroup, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = names
	if id == b.nodeID {
		return b.groups.DescribeGroups(req).Groups, nil
	}
	kr, err := b.peerRequest(ctx, id, req)
	if err != nil {
		return nil, err
	}
	return kr.(*kmsg.DescribeGroupsResponse).Groups, nil
}

// committedAt returns the committed offsets of groups at broker id, their
// coordinator: group → topic → partition → offset.
func (b *Broker) committedAt(ctx context.Context, id int32, names []string) (map[string]map[string]map[int32]int64, error) {
	out := map[string]map[string]map[int32]int64{}
	if id == b.nodeID {
		for _, n := range names {
			out[n] = b.groups.Committed(n)
		}
		return out, nil
	}
	// One request for every group: v8+ (nil topics: all of them).
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	for _, n := range names {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = n
		req.Groups = append(req.Groups, rg)
	}
	kr, err := b.peerRequest(ctx, id, req)
	if err != nil {
		return nil, err
	}
	resp := kr.(*kmsg.OffsetFetchResponse)
	if resp.GetVersion() < 8 {
		return nil, fmt.Errorf("answered at v%d, without groups", resp.GetVersion())
	}
	var errs []string
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			errs = append(errs, g.Group+": "+kerr.ErrorForCode(g.ErrorCode).Error())
			continue
		}
		m := map[string]map[int32]int64{}
		addCommitted(m, g.Topics)
		out[g.Group] = m
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%v", errs)
	}
	return out, nil
}

// highWatermarks returns the high watermarks of the partitions in need,
// read locally where this broker leads and asked of the other leaders
// (one ListOffsets each) otherwise. A partition with no leader, or whose
// leader could not be reached, is missing.
func (b *Broker) highWatermarks(ctx context.Context, need map[topicPartition]bool, problem func(string, ...any)) map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	if len(need) == 0 {
		return out
	}
	byLeader := map[int32][]topicPartition{}
	for _, p := range b.ClusterInfo().Partitions {
		tp := topicPartition{p.Topic, p.Partition}
		if !need[tp] || p.Leader < 0 {
			continue
		}
		if p.Leader == b.nodeID {
			if hw, ok := b.localHighWatermark(p.Topic, p.Partition); ok {
				out[tp] = hw
				continue
			}
		}
		byLeader[p.Leader] = append(byLeader[p.Leader], tp)
	}
	for tp, o := range b.leadersHighWatermarks(ctx, byLeader, problem) {
		out[tp] = o
	}
	return out
}

// leadersHighWatermarks asks each leader the high watermarks of its
// partitions in byLeader, one ListOffsets each, all at once. Those a
// leader did not answer are missing; problem (nil: none) hears why.
func (b *Broker) leadersHighWatermarks(ctx context.Context, byLeader map[int32][]topicPartition, problem func(string, ...any)) map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for id, tps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := b.listOffsetsAt(ctx, id, tps, -1)
			if err != nil && problem != nil {
				problem("broker %d: ListOffsets: %v", id, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for tp, o := range got {
				out[tp] = o
			}
		}()
	}
	wg.Wait()
	return out
}

// localHighWatermark returns the high watermark of a partition with a
// replica here.
func (b *Broker) localHighWatermark(topicName string, p int32) (int64, bool) {
	t := b.lookupTopic(topicName)
	if t == nil {
		return 0, false
	}
	parts := b.partitionsOf(t)
	if p < 0 || int(p) >= len(parts) || parts[p].log == nil {
		return 0, false
	}
	return parts[p].log.HighWatermark(), true
}

// listOffsetsAt asks broker id, their leader, for an offset of each of tps
// (timestamp -1: the high watermark; -2: the log start offset). Partitions
// answered with an error are missing, and the error is returned beside
// what was answered.
func (b *Broker) listOffsetsAt(ctx context.Context, id int32, tps []topicPartition, timestamp int64) (map[topicPartition]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = tp.partition
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = timestamp
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kr, err := b.peerRequest(ctx, id, req)
	if err != nil {
		return nil, err
	}
	out := map[topicPartition]int64{}
	var firstErr error
	for _, t := range kr.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
				continue
			}
			out[topicPartition{t.Topic, p.Partition}] = p.Offset
		}
	}
	return out, firstErr
}

// ClusterTopics returns every topic sorted by name with every partition,
// its leader, replicas, ISR and offline replicas, and its offsets: this
// broker's replica's, or, for a partition with no replica here, the log
// start offset and high watermark asked of its leader (one ListOffsets
// per leader and timestamp). The problems list what could not be asked;
// those partitions' offsets are -1. ctx bounds the requests.
func (b *Broker) ClusterTopics(ctx context.Context) ([]TopicInfo, []string) {
	ts := b.topicInfos(true)
	leadership := map[topicPartition]ClusterPartition{}
	for _, p := range b.ClusterInfo().Partitions {
		leadership[topicPartition{p.Topic, p.Partition}] = p
	}
	byLeader := map[int32][]topicPartition{}
	for i := range ts {
		for j := range ts[i].Partitions {
			pi := &ts[i].Partitions[j]
			tp := topicPartition{ts[i].Name, pi.Partition}
			cp, ok := leadership[tp]
			if !ok {
				pi.Leader = -1
				continue
			}
			pi.Leader, pi.Replicas, pi.ISR, pi.Offline = cp.Leader, cp.Replicas, cp.ISR, cp.Offline
			if !pi.Local && b.cluster != nil && cp.Leader >= 0 && !slices.Contains(cp.Offline, cp.Leader) {
				byLeader[cp.Leader] = append(byLeader[cp.Leader], tp)
			}
		}
	}
	if len(byLeader) == 0 {
		return ts, nil
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		problems []string
	)
	starts, hws := map[topicPartition]int64{}, map[topicPartition]int64{}
	for id, tps := range byLeader {
		for _, q := range []struct {
			timestamp int64
			into      map[topicPartition]int64
		}{{-2, starts}, {-1, hws}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := b.listOffsetsAt(ctx, id, tps, q.timestamp)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					problems = append(problems, fmt.Sprintf("broker %d: ListOffsets (timestamp %d): %v", id, q.timestamp, err))
				}
				for tp, o := range got {
					q.into[tp] = o
				}
			}()
		}
	}
	wg.Wait()
	for i := range ts {
		for j := range ts[i].Partitions {
			pi := &ts[i].Partitions[j]
			tp := topicPartition{ts[i].Name, pi.Partition}
			if o, ok := starts[tp]; ok {
				pi.LogStartOffset = o
			}
			if o, ok := hws[tp]; ok {
				pi.HighWatermark = o
			}
		}
	}
	slices.Sort(problems)
	return ts, problems
}

// ClusterHighWatermarks returns every topic's partitions' high
// watermarks, as ClusterTopics has them (this broker's replica's, or its
// leader's, one ListOffsets per leader), -1 where there is none; without
// building ClusterTopics' view of every partition (sizes, cleanable
// ratios, replicas), which the console's history sampler, asking every
// five seconds, does not need.
func (b *Broker) ClusterHighWatermarks(ctx context.Context) map[string][]int64 {
	out := map[string][]int64{}
	byLeader := map[int32][]topicPartition{}
	live := func(int32) bool { return false }
	if b.cluster != nil {
		if md := b.cluster.node.Metadata(); md != nil {
			live = func(id int32) bool { _, ok := md.Brokers[id]; return ok }
		}
	}
	b.mu.RLock()
	for name, t := range b.topics {
		hws := make([]int64, len(t.partitions))
		for i, p := range t.partitions {
			hws[i] = -1
			switch mp := p.meta.Load(); {
			case p.log != nil:
				hws[i] = p.log.HighWatermark()
			case mp != nil && mp.Leader >= 0 && live(mp.Leader):
				byLeader[mp.Leader] = append(byLeader[mp.Leader], topicPartition{name, int32(i)})
			}
		}
		out[name] = hws
	}
	b.mu.RUnlock()
	for tp, o := range b.leadersHighWatermarks(ctx, byLeader, nil) {
		if hws := out[tp.topic]; int(tp.partition) < len(hws) {
			hws[tp.partition] = o
		}
	}
	return out
}
