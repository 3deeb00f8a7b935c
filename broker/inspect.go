package broker

// Read-only introspection for the admin HTTP listener, the CLI and
// embedders: topics with their partitions' offsets, groups with their lag,
// and the records of a partition (decoded by records.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicInfo describes a topic for the console and tools.
type TopicInfo struct {
	Name string
	ID   string
	// Configs are the topic's overrides (the rest are defaults).
	Configs map[string]string
	// RetentionMs and RetentionBytes are the effective retention.ms and
	// retention.bytes (-1: unlimited).
	RetentionMs, RetentionBytes int64
	CleanupPolicy               string
	Partitions                  []PartitionInfo
}

// PartitionInfo is one partition's offsets and size, and (from
// ClusterTopics) its leadership.
type PartitionInfo struct {
	Partition int32
	// LogStartOffset and HighWatermark are this broker's replica's, or the
	// leader's when it has none (ClusterTopics); -1 when unknown (no
	// leader, or the leader could not be reached).
	LogStartOffset int64
	HighWatermark  int64
	// LogEndOffset and SizeBytes are this broker's replica's; -1 and 0
	// when it has none.
	LogEndOffset int64
	SizeBytes    int64
	// Local reports whether this broker holds a replica of the partition.
	Local bool
	// Leader (-1: none), Replicas, ISR and Offline (the replicas whose
	// brokers are not live) are set by ClusterTopics; Topics leaves them
	// zero.
	Leader                 int32
	Replicas, ISR, Offline []int32
	// DirtyRatio is, for a compacted topic, the share of the cleanable
	// bytes not yet cleaned (the log cleaner's min.cleanable.dirty.ratio
	// compares with it); 0 otherwise.
	DirtyRatio float64
}

// UnderReplicated reports whether the ISR is smaller than the replica set
// (ClusterTopics).
func (p PartitionInfo) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// OfflinePartition reports whether the partition has no live leader
// (ClusterTopics).
func (p PartitionInfo) OfflinePartition() bool {
	return p.Leader < 0 || slices.Contains(p.Offline, p.Leader)
}

// Topics returns every topic sorted by name, with the offsets of the
// partitions it has a replica of here (every partition on a single node);
// ClusterTopics shows every partition.
func (b *Broker) Topics() []TopicInfo { return b.topicInfos(false) }

// topicInfos returns every topic sorted by name, with the partitions this
// broker has a replica of, and, when all, the others too (Local false,
// offsets unknown).
func (b *Broker) topicInfos(all bool) []TopicInfo {
	b.mu.RLock()
	ts := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		ts = append(ts, t)
	}
	b.mu.RUnlock()
	slices.SortFunc(ts, func(x, y *topic) int {
		switch {
		case x.name < y.name:
			return -1
		case x.name > y.name:
			return 1
		}
		return 0
	})
	out := make([]TopicInfo, 0, len(ts))
	for _, t := range ts {
		configs, parts := b.topicSnapshot(t)
		ti := TopicInfo{Name: t.name, ID: t.id.String(), Configs: configs,
			RetentionMs: b.topicInt(configs, "retention.ms"), RetentionBytes: b.topicInt(configs, "retention.bytes")}
		ti.CleanupPolicy, _ = b.topicConfigValue(configs, "cleanup.policy")
		for _, p := range parts {
			if p.log == nil { // a cluster partition with no replica here
				if all {
					ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: p.index, LogStartOffset: -1, HighWatermark: -1, LogEndOffset: -1})
				}
				continue
			}
			ti.Partitions = append(ti.Partitions, PartitionInfo{
				Partition: p.index, LogStartOffset: p.log.LogStartOffset(), HighWatermark: p.log.HighWatermark(),
				LogEndOffset: p.log.LogEndOffset(), SizeBytes: p.log.Size(), Local: true,
			})
			if isCompacted(ti.CleanupPolicy) {
				pi := &ti.Partitions[len(ti.Partitions)-1]
				pi.DirtyRatio = p.log.Cleanable(b.topicInt(configs, "min.compaction.lag.ms"), 0).DirtyRatio
			}
		}
		out = append(out, ti)
	}
	return out
}

// GroupInfo describes a consumer group: its members and, for every
// partition it committed, the committed offset and the lag.
type GroupInfo struct {
	Name         string
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberInfo
	Offsets      []GroupOffset // sorted by topic, partition
}

// MemberInfo is a group member and, for the consumer protocol, its
// assigned partitions.
type MemberInfo struct {
	ID, InstanceID, ClientID, Host string
	Assigned                       map[string][]int32
}

// GroupOffset is a group's position in one partition. Lag is the
// partition's high watermark minus Committed (0 when the commit is ahead),
// or -1 when the topic or partition no longer exists.
type GroupOffset struct {
	Topic         string
	Partition     int32
	Committed     int64
	HighWatermark int64
	Lag           int64
	Member        string // the assigned member's id, if any
}

// Groups returns the groups this broker coordinates (every group on a
// single node) sorted by name; ClusterGroups asks the whole cluster.
func (b *Broker) Groups() []GroupInfo {
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lresp := b.groups.ListGroups(lreq)
	var names []string
	for _, g := range lresp.Groups {
		names = append(names, g.Group)
	}
	slices.Sort(names)
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Version = 5
	dreq.Groups = names
	dresp := b.groups.DescribeGroups(dreq)
	out := make([]GroupInfo, 0, len(dresp.Groups))
	for _, dg := range dresp.Groups {
		out = append(out, groupInfo(dg, b.groups.Committed(dg.Group), b.localHighWatermark))
	}
	return out
}

// groupInfo is a described group with its committed offsets and, from
// highWatermark (false: unknown), their lag.
func groupInfo(dg kmsg.DescribeGroupsResponseGroup, committed map[string]map[int32]int64, highWatermark func(string, int32) (int64, bool)) GroupInfo {
	gi := GroupInfo{Name: dg.Group, State: dg.State, ProtocolType: dg.ProtocolType, Protocol: dg.Protocol}
	owner := map[string]map[int32]string{}
	for _, m := range dg.Members {
		mi := MemberInfo{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mi.InstanceID = *m.InstanceID
		}
		if dg.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(m.MemberAssignment); err == nil {
				mi.Assigned = map[string][]int32{}
				for _, t := range a.Topics {
					mi.Assigned[t.Topic] = append(mi.Assigned[t.Topic], t.Partitions...)
					if owner[t.Topic] == nil {
						owner[t.Topic] = map[int32]string{}
					}
					for _, p := range t.Partitions {
						owner[t.Topic][p] = m.MemberID
					}
				}
			}
		}
		gi.Members = append(gi.Members, mi)
	}
	for topicName, ps := range committed {
		for p, off := range ps {
			o := GroupOffset{Topic: topicName, Partition: p, Committed: off, HighWatermark: -1, Lag: -1, Member: owner[topicName][p]}
			if hw, ok := highWatermark(topicName, p); ok {
				o.HighWatermark = hw
				o.Lag = max(hw-off, 0)
			}
			gi.Offsets = append(gi.Offsets, o)
		}
	}
	slices.SortFunc(gi.Offsets, func(x, y GroupOffset) int {
		if x.Topic != y.Topic {
			if x.Topic < y.Topic {
				return -1
			}
			return 1
		}
		return int(x.Partition) - int(y.Partition)
	})
	return gi
}

// ErrUnknownPartition is returned by ReadRecords for a topic or partition
// that does not exist.
var ErrUnknownPartition = errors.New("unknown topic or partition")

// maxBrowseBytes bounds the bytes ReadRecords reads from the log per call.
const maxBrowseBytes = 4 << 20

// ReadRecords returns up to limit records of a partition from offset on
// (below the high watermark), decompressing batches as needed; control
// records are skipped. An offset below the log start is moved up to it.
//
// It returns ErrUnknownPartition, or the log's read errors.
func (b *Broker) ReadRecords(topicName string, partitionIndex int32, offset int64, limit int) ([]Record, error) {
	t := b.lookupTopic(topicName)
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPartition, topicName)
	}
	p := partitionAt(b.partitionsOf(t), partitionIndex)
	if p == nil || p.log == nil {
		if b.cluster != nil {
			return b.readRemoteRecords(topicName, partitionIndex, offset, limit)
		}
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topicName, partitionIndex)
	}
	l := p.log
	return collectRecords(max(offset, l.LogStartOffset()), limit, func(offset int64) ([]byte, int64, error) {
		if offset >= l.HighWatermark() {
			return nil, offset, nil
		}
		res, err := l.Read(offset, 1<<20, true)
		if err != nil {
			return nil, offset, err
		}
		buf, err := res.Slice.ReadAll()
		res.Slice.Release()
		return buf, offset, err
	})
}

// collectRecords reads records from offset on, up to limit of them and
// maxBrowseBytes of batches: chunk returns the batches from an offset (none
// at the end) and the offset they start from (moved up to the log start).
func collectRecords(offset int64, limit int, chunk func(offset int64) ([]byte, int64, error)) ([]Record, error) {
	var out []Record
	read := 0
	for len(out) < limit && read < maxBrowseBytes {
		buf, from, err := chunk(offset)
		if err != nil {
			return out, err
		}
		if len(buf) == 0 {
			break
		}
		offset = from
		read += len(buf)
		next, recs, err := parseBatches(buf, offset, limit-len(out))
		out = append(out, recs...)
		if err != nil {
			return out, err
		}
		if next <= offset {
			break
		}
		offset = next
	}
	return out, nil
}

// Done is closed when the broker is closed: background work beside it
// (the admin console's history sampler) stops then.
func (b *Broker) Done() <-chan struct{} { return b.ctx.Done() }

// ClusterInfo is the cluster as this broker sees it: the live brokers, the
// controller and every partition's leader, replicas and ISR. A single
// node is one broker, the controller, leading every partition.
type ClusterInfo struct {
	ControllerID int32
	Brokers      []BrokerInfo       // live brokers, sorted by id
	Partitions   []ClusterPartition // sorted by topic, partition
	// Down lists, sorted, the brokers that are not live but are a replica
	// of some partition or a voter of controller.quorum.voters: stopped or
	// unreachable ones (never any on a single node).
	Down []int32
}

// BrokerInfo is a live broker.
type BrokerInfo struct {
	ID         int32
	Host       string
	Port       int32
	Rack       string // "" when none is set
	Controller bool
	Self       bool // the broker answering
}

// ClusterPartition is one partition's leadership. Offline lists the
// replicas whose brokers are not live; AddingReplicas and RemovingReplicas
// are those of a reassignment in progress (AlterPartitionReassignments),
// empty otherwise.
type ClusterPartition struct {
	Topic                            string
	Partition                        int32
	Leader, LeaderEpoch              int32 // -1 when it has none
	Replicas, ISR, Offline           []int32
	AddingReplicas, RemovingReplicas []int32
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (p ClusterPartition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// UnderReplicated reports whether the ISR is smaller than the replica set.
func (p ClusterPartition) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// OfflinePartition reports whether the partition has no live leader.
func (p ClusterPartition) OfflinePartition() bool {
	return p.Leader < 0 || slices.Contains(p.Offline, p.Leader)
}

// ClusterInfo returns the brokers and the leadership of every partition.
func (b *Broker) ClusterInfo() ClusterInfo {
	brokers, controller := b.brokersView()
	ci := ClusterInfo{ControllerID: controller}
	for _, bi := range brokers {
		out := BrokerInfo{ID: bi.id, Host: bi.host, Port: bi.port, Controller: bi.id == controller, Self: bi.id == b.nodeID}
		if bi.rack != nil {
			out.Rack = *bi.rack
		}
		ci.Brokers = append(ci.Brokers, out)
	}
	slices.SortFunc(ci.Brokers, func(x, y BrokerInfo) int { return int(x.ID) - int(y.ID) })
	b.mu.RLock()
	ts := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		ts = append(ts, t)
	}
	b.mu.RUnlock()
	for _, t := range ts {
		for _, p := range b.partitionsOf(t) {
			v := b.partitionView(p)
			ci.Partitions = append(ci.Partitions, ClusterPartition{Topic: t.name, Partition: p.index, Leader: v.leader, LeaderEpoch: v.leaderEpoch,
				Replicas: v.replicas, ISR: v.isr, Offline: v.offline, AddingReplicas: v.adding, RemovingReplicas: v.removing})
		}
	}
	slices.SortFunc(ci.Partitions, func(x, y ClusterPartition) int {
		if x.Topic != y.Topic {
			if x.Topic < y.Topic {
				return -1
			}
			return 1
		}
		return int(x.Partition) - int(y.Partition)
	})
	if b.cluster != nil {
		ci.Down = b.downBrokers(ci)
	}
	return ci
}

// downBrokers returns the replicas and voters of ci that are not live.
func (b *Broker) downBrokers(ci ClusterInfo) []int32 {
	known := map[int32]bool{}
	for _, p := range ci.Partitions {
		for _, ids := range [][]int32{p.Replicas, p.AddingReplicas} {
			for _, id := range ids {
				known[id] = true
			}
		}
	}
	if v := b.cfg.Props["controller.quorum.voters"]; v != "" {
		voters, _ := metadata.ParseVoters(v) // checked at start
		for _, vt := range voters {
			known[vt.NodeID] = true
		}
	}
	for _, br := range ci.Brokers {
		delete(known, br.ID)
	}
	var down []int32
	for id := range known {
		if id >= 0 {
			down = append(down, id)
		}
	}
	slices.Sort(down)
	return down
}

// readRemoteRecords is ReadRecords of a partition with no replica on this
// broker: Fetch requests (read_uncommitted, as the local read) to its
// leader, within the same bounds.
func (b *Broker) readRemoteRecords(topicName string, partitionIndex int32, offset int64, limit int) ([]Record, error) {
	md := b.cluster.node.Metadata()
	mp, ok := md.Partition(topicName, partitionIndex)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topicName, partitionIndex)
	}
	if mp.Leader < 0 {
		return nil, fmt.Errorf("%s-%d has no leader", topicName, partitionIndex)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return collectRecords(offset, limit, func(offset int64) ([]byte, int64, error) {
		for range 2 { // once more from the log start when below it
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topicName // by name up to v12, by id from v13: both set
			if t := md.Topics[topicName]; t != nil {
				rt.TopicID = t.ID
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = partitionIndex, offset, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := b.peerRequest(ctx, mp.Leader, req)
			if err != nil {
				return nil, offset, fmt.Errorf("fetching %s-%d from broker %d: %w", topicName, partitionIndex, mp.Leader, err)
			}
			fr := resp.(*kmsg.FetchResponse)
			if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
				return nil, offset, fmt.Errorf("fetching %s-%d from broker %d: an answer without the partition", topicName, partitionIndex, mp.Leader)
			}
			got := fr.Topics[0].Partitions[0]
			if got.ErrorCode == kerr.OffsetOutOfRange.Code && offset < got.LogStartOffset {
				offset = got.LogStartOffset
				continue
			}
			if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
				return nil, offset, fmt.Errorf("fetching %s-%d from broker %d: %w", topicName, partitionIndex, mp.Leader, err)
			}
			if offset >= got.HighWatermark {
				return nil, offset, nil
			}
			return got.RecordBatches, offset, nil
		}
		return nil, offset, nil
	})
}
