package broker

// Cluster links (package link): topics of another Kafka cluster mirrored
// here at the same offsets. The links are a metastore collection: on a
// single node <data-dir>/__meta/links.json, in a cluster etcd's keys under
// /gregor/links/. Every broker runs a link.Manager (started once the
// broker serves, stopped first at Close) and is its link.Host: the mirror
// partitions it leads are its to fetch, and the controller's manager
// creates mirror topics and copies group offsets through Execute (so a
// commit reaches the group's coordinator, an offset the partition's
// leader). A mirror topic refuses produce until promoted
// (POLICY_VIOLATION; produceReadOnly). `gregor link` reaches the manager
// with Gregor's own API (protocol.LinksKey, 32000_links.go).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/metastore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// linksFileName is the single-node link store under __meta.
const linksFileName = "links.json"

// initLinks opens the single node's link store; a cluster's is its
// collection, once joined (startCluster).
func (b *Broker) initLinks() error {
	if b.cfg.clusterConfigured() {
		return nil
	}
	f, err := metastore.OpenFile(metastore.FileConfig{
		Path: filepath.Join(b.cfg.DataDir, metaDirName, linksFileName),
		Decode: func(data []byte) (metastore.Records, error) {
			var f struct {
				Records map[string]json.RawMessage `json:"records"`
			}
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, err
			}
			recs := metastore.Records{}
			for k, v := range f.Records {
				recs[k] = v
			}
			return recs, nil
		},
		Encode: func(recs metastore.Records) ([]byte, error) {
			out := map[string]json.RawMessage{}
			for k, v := range recs {
				out[k] = v
			}
			return json.MarshalIndent(map[string]any{"records": out}, "", "  ")
		},
		Write: storage.WriteFileAtomic,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", linksFileName, err)
	}
	b.useLinkStore(link.NewStore(f))
	return nil
}

func (b *Broker) useLinkStore(s *link.Store) {
	b.linkStore = s
	b.pids.mu.Lock()
	b.pids.floor = func() int64 { return s.State().ProducerIDFloor }
	b.pids.mu.Unlock()
}

// startLinks starts the link manager once the broker serves.
func (b *Broker) startLinks() {
	m := link.NewManager(link.Config{
		NodeID: b.nodeID,
		Store:  b.linkStore,
		Host:   linkHost{b},
		Log:    b.log.With("component", "link"),
	})
	m.Start()
	b.links.Store(m)
}

// kickLinks tells the link manager that leadership or the links changed.
func (b *Broker) kickLinks() {
	if m := b.links.Load(); m != nil {
		m.Kick()
	}
}

// produceReadOnly refuses a produce to a mirror topic: POLICY_VIOLATION,
// the closest of Kafka's codes (not retriable; "the request parameters do
// not satisfy the configured policy"), with a message naming the link.
func (b *Broker) produceReadOnly(topic string) (int16, string) {
	if b.linkStore == nil {
		return 0, ""
	}
	if l := b.linkStore.ReadOnly(topic); l != "" {
		return kerr.PolicyViolation.Code, fmt.Sprintf("topic %s is a mirror of cluster link %s: it takes records from its source until promoted (gregor link promote %s)", topic, l, l)
	}
	return 0, ""
}

// linkHost is the broker as link.Host.
type linkHost struct{ b *Broker }

// linkCaller is the links' identity in Execute: the broker itself, allowed
// everything (a forwarded request runs as the inter-broker listener's
// principal, which a secured cluster makes a super user, as Kafka's).
var linkCaller = Caller{Principal: "User:gregor-link", Host: "localhost", internal: true}

func (h linkHost) Controller() bool {
	_, controller := h.b.brokersView()
	return controller == h.b.nodeID
}

func (h linkHost) Partitions(topic string) (int32, bool) {
	t := h.b.lookupTopic(topic)
	if t == nil {
		return 0, false
	}
	return int32(len(h.b.partitionsOf(t))), true
}

func (h linkHost) TopicConfigs(topic string) map[string]string {
	t := h.b.lookupTopic(topic)
	if t == nil {
		return nil
	}
	cfgs, _ := h.b.topicSnapshot(t)
	return cfgs
}

func (h linkHost) execute(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return h.b.Execute(ctx, linkCaller, req)
}

func (h linkHost) CreateTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, -1
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := h.execute(ctx, req)
	if err != nil {
		return err
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerrMessage(t.ErrorCode, t.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

func (h linkHost) CreatePartitions(ctx context.Context, topic string, total int32) error {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, total
	req.Topics = append(req.Topics, rt)
	resp, err := h.execute(ctx, req)
	if err != nil {
		return err
	}
	for _, t := range resp.(*kmsg.CreatePartitionsResponse).Topics {
		if err := kerrMessage(t.ErrorCode, t.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

func (h linkHost) AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for _, k := range slices.Sorted(maps.Keys(set)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(set[k])
		rr.Configs = append(rr.Configs, c)
	}
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := h.execute(ctx, req)
	if err != nil {
		return err
	}
	for _, r := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if err := kerrMessage(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

func (h linkHost) Lead(topic string, index int32) link.Log {
	b := h.b
	t := b.lookupTopic(topic)
	if t == nil {
		return nil
	}
	p := partitionAt(b.partitionsOf(t), index)
	if p == nil || p.log == nil {
		return nil
	}
	if b.cluster == nil {
		return mirrorLog{b: b, p: p, epoch: p.epoch.Load()}
	}
	ldr := p.leader.Load()
	if ldr == nil || b.cluster.node.Fenced() {
		return nil
	}
	return mirrorLog{b: b, p: p, ldr: ldr, epoch: ldr.LeaderEpoch()}
}

// HighWatermarks asks ListOffsets (latest) of each partition: in one
// request answered here, then one per partition led elsewhere (Execute
// sends it to the leader).
func (h linkHost) HighWatermarks(ctx context.Context, topic string, partitions int32) (map[int32]int64, error) {
	return h.latestOffsets(ctx, topic, partitions, 0)
}

func (h linkHost) StableOffsets(ctx context.Context, topic string, partitions int32) (map[int32]int64, error) {
	return h.latestOffsets(ctx, topic, partitions, 1)
}

// latestOffsets asks each partition's leader for its latest offset at
// isolation (0 read_uncommitted: the high watermark; 1 read_committed:
// the last stable offset).
func (h linkHost) latestOffsets(ctx context.Context, topic string, partitions int32, isolation int8) (map[int32]int64, error) {
	ask := func(ps []int32) (*kmsg.ListOffsetsResponse, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(7)
		req.IsolationLevel = isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := h.execute(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.ListOffsetsResponse), nil
	}
	all := make([]int32, partitions)
	for i := range all {
		all[i] = int32(i)
	}
	out := map[int32]int64{}
	var elsewhere []int32
	var errs []error
	collect := func(resp *kmsg.ListOffsetsResponse, retry bool) {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				switch {
				case p.ErrorCode == 0:
					out[p.Partition] = p.Offset
				case retry && p.ErrorCode == kerr.NotLeaderForPartition.Code:
					elsewhere = append(elsewhere, p.Partition)
				default:
					errs = append(errs, fmt.Errorf("%s-%d: %w", topic, p.Partition, kerr.ErrorForCode(p.ErrorCode)))
				}
			}
		}
	}
	resp, err := ask(all)
	if err != nil {
		return nil, err
	}
	collect(resp, true)
	for _, p := range elsewhere {
		resp, err := ask([]int32{p})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		collect(resp, false)
	}
	return out, errors.Join(errs...)
}

func (h linkHost) CommittedOffsets(ctx context.Context, group string) (map[string]map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(9) // groups by name, topics by name
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rg.MemberEpoch = -1
	req.Groups = append(req.Groups, rg)
	resp, err := h.execute(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for _, g := range resp.(*kmsg.OffsetFetchResponse).Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, err
		}
		addCommitted(out, g.Topics)
	}
	return out, nil
}

func (h linkHost) CommitOffsets(ctx context.Context, group string, offsets map[string]map[int32]int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(9) // topics by name
	req.Group, req.Generation, req.MemberID = group, -1, ""
	for _, topic := range slices.Sorted(maps.Keys(offsets)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range slices.Sorted(maps.Keys(offsets[topic])) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, offsets[topic][p], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := h.execute(ctx, req)
	if err != nil {
		return err
	}
	for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			switch p.ErrorCode {
			case 0:
			case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code, kerr.RebalanceInProgress.Code, kerr.StaleMemberEpoch.Code:
				return link.ErrGroupActive
			default:
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return nil
}

// kerrMessage is a response's error code and message as an error; nil for
// no error.
func kerrMessage(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// mirrorLog is a mirror partition led here, as link.Log: valid while this
// broker leads the partition in epoch (ldr, in a cluster).
type mirrorLog struct {
	b     *Broker
	p     *partition
	ldr   *replication.Leader // nil on a single node
	epoch int32
}

func (m mirrorLog) LogStartOffset() int64 { return m.p.log.LogStartOffset() }
func (m mirrorLog) LogEndOffset() int64   { return m.p.log.LogEndOffset() }

func (m mirrorLog) leading() bool {
	return m.ldr == nil || (m.p.leader.Load() == m.ldr && !m.b.cluster.node.Fenced())
}

// AppendMirrored appends the source's batches as a follower appends its
// leader's, each stamped with this partition's leader epoch (a field
// outside the batch's CRC, which the leader always sets), then moves the
// high watermark as a produce does.
func (m mirrorLog) AppendMirrored(records []byte) error {
	if !m.leading() {
		return link.ErrNotLeader
	}
	stampLeaderEpoch(records, m.epoch)
	if _, err := m.p.log.AppendAsFollower(records); err != nil {
		if !errors.Is(err, storage.ErrOffsetMismatch) && !errors.Is(err, storage.ErrCorruptBatch) {
			m.b.noteWriteError(err)
		}
		return err
	}
	if m.ldr != nil {
		m.ldr.MaybeAdvanceHighWatermark()
	}
	return nil
}

// AbortOpenTransactions writes an ABORT marker for every producer with a
// transaction open in the log (with the coordinator epoch of the
// producer's last marker, or 0: the source's coordinator is gone for it),
// stamped with this leader's epoch.
func (m mirrorLog) AbortOpenTransactions() ([]link.AbortedTxn, error) {
	if !m.leading() {
		return nil, link.ErrNotLeader
	}
	var out []link.AbortedTxn
	for _, ps := range m.p.log.ProducerStates() {
		if ps.TxnStartOffset < 0 {
			continue
		}
		if _, err := m.p.log.AppendMarker(ps.ProducerID, ps.Epoch, false, max(ps.CoordinatorEpoch, 0), m.epoch); err != nil {
			if !errors.Is(err, storage.ErrInvalidProducerEpoch) {
				m.b.noteWriteError(err)
			}
			return out, err
		}
		out = append(out, link.AbortedTxn{ProducerID: ps.ProducerID, Epoch: ps.Epoch, FirstOffset: ps.TxnStartOffset})
	}
	if len(out) > 0 && m.ldr != nil {
		m.ldr.MaybeAdvanceHighWatermark()
	}
	return out, nil
}

func (m mirrorLog) RestartAt(offset int64) error {
	if !m.leading() {
		return link.ErrNotLeader
	}
	return m.p.log.TruncateFullyAndStartAt(offset)
}

func (m mirrorLog) AdvanceLogStart(offset int64) error {
	if !m.leading() {
		return link.ErrNotLeader
	}
	_, err := m.p.log.DeleteRecordsBefore(offset)
	return err
}

// stampLeaderEpoch sets the partitionLeaderEpoch of each whole batch in
// records.
func stampLeaderEpoch(records []byte, epoch int32) {
	const lengthPos, epochPos, overhead = 8, 12, 12
	for off := 0; len(records)-off >= epochPos+4; {
		size := overhead + int(int32(binary.BigEndian.Uint32(records[off+lengthPos:])))
		if size < epochPos+4 || len(records)-off < size {
			return
		}
		binary.BigEndian.PutUint32(records[off+epochPos:], uint32(epoch))
		off += size
	}
}

func (h linkHost) CreateACLs(ctx context.Context, bindings []kmsg.CreateACLsRequestCreation) error {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = bindings
	resp, err := h.execute(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range resp.(*kmsg.CreateACLsResponse).Results {
		if err := kerrMessage(r.ErrorCode, r.ErrorMessage); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// addCommitted adds an OffsetFetch answer's committed offsets to m, by
// topic and partition; partitions with an error or no commit are left out.
func addCommitted(m map[string]map[int32]int64, topics []kmsg.OffsetFetchResponseGroupTopic) {
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Offset < 0 {
				continue
			}
			if m[t.Topic] == nil {
				m[t.Topic] = map[int32]int64{}
			}
			m[t.Topic][p.Partition] = p.Offset
		}
	}
}

// linkStatusTimeout bounds the requests to the other brokers of a link's
// status.
const linkStatusTimeout = 5 * time.Second

// PeerLinkStatus asks every other live broker for its share of a link's
// status (the links API's node_status) over the inter-broker client pool,
// all at once, as ClusterGroups asks them for their groups; a broker that
// cannot be asked is a line of the second result. Nothing on a single
// node.
func (h linkHost) PeerLinkStatus(ctx context.Context, name string) ([]*link.NodeStatus, []string) {
	b := h.b
	if b.cluster == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, linkStatusTimeout)
	defer cancel()
	body, err := json.Marshal(LinkOp{Op: "node_status", Name: name})
	if err != nil {
		return nil, []string{err.Error()}
	}
	brokers, _ := b.brokersView()
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		out       []*link.NodeStatus
		unreached []string
	)
	for _, br := range brokers {
		if br.id == b.nodeID {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns, err := b.peerLinkStatus(ctx, br.id, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unreached = append(unreached, fmt.Sprintf("node %d: %v", br.id, err))
				return
			}
			out = append(out, ns)
		}()
	}
	wg.Wait()
	slices.Sort(unreached)
	return out, unreached
}

// peerLinkStatus asks broker id for its share of a link's status; body is
// the node_status operation.
func (b *Broker) peerLinkStatus(ctx context.Context, id int32, body []byte) (*link.NodeStatus, error) {
	kr, err := b.peerRequest(ctx, id, &protocol.JSONRequest{APIKey: protocol.LinksKey, Body: body})
	if err != nil {
		return nil, err
	}
	resp, ok := kr.(*protocol.JSONResponse)
	if !ok {
		return nil, fmt.Errorf("answered with %T", kr)
	}
	if resp.ErrorCode != 0 {
		msg := kerr.ErrorForCode(resp.ErrorCode).Error()
		if resp.ErrorMessage != nil {
			msg += ": " + *resp.ErrorMessage
		}
		return nil, errors.New(msg)
	}
	var ns link.NodeStatus
	if err := json.Unmarshal(resp.Body, &ns); err != nil {
		return nil, fmt.Errorf("malformed node_status answer: %w", err)
	}
	return &ns, nil
}
