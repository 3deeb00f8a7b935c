package broker

// __consumer_offsets: the group coordinator's replicated log.
//
// The topic is created on first use (a FindCoordinator for a group, or any
// group request), on a single node too (replication factor 1), with
// offsets.topic.num.partitions partitions and
// offsets.topic.replication.factor replicas capped at the live brokers. It
// is internal (is_internal in Metadata, so regex consumers skip it) and
// compacted; until log compaction exists it is created with retention.ms
// and retention.bytes -1, so that retention never deletes live state.
//
// Group G is coordinated by the leader of partition
// coordinator.PartitionFor(G, partitions). When this broker becomes leader
// of a partition (a new leader epoch), the coordinator loads it
// (COORDINATOR_LOAD_IN_PROGRESS meanwhile); when it stops leading, the
// coordinator unloads it (NOT_COORDINATOR). groupLog is the coordinator's
// access to the partitions: appends wait for the high watermark as an
// acks=all produce does.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const offsetsTopicName = "__consumer_offsets"

// offsetsInternalTopic describes __consumer_offsets: without a min ISR
// config, its partitions unloaded as soon as this broker stops leading
// them.
func (b *Broker) offsetsInternalTopic() *internalTopic {
	return &internalTopic{
		b:              b,
		name:           offsetsTopicName,
		partitionsKey:  "offsets.topic.num.partitions",
		replicationKey: "offsets.topic.replication.factor",
		coordinator:    "group coordinator",
		coord: func() partitionLoader {
			if b.groups == nil {
				return nil
			}
			return b.groups
		},
		unloadInline: true,
	}
}

// leadsGroupPartition reports whether this broker leads p, and in which
// leader epoch (0 on a single node).
func (b *Broker) leadsGroupPartition(p *partition) (bool, int32) {
	if p.log == nil {
		return false, 0
	}
	if b.cluster == nil {
		return true, 0
	}
	ldr := p.leader.Load()
	if ldr == nil || b.cluster.node.Fenced() {
		return false, 0
	}
	return true, ldr.LeaderEpoch()
}

// groupCoordinator returns the broker coordinating group: the leader of
// its partition of __consumer_offsets.
func (b *Broker) groupCoordinator(group string) (brokerInfo, int16) {
	return b.keyCoordinator(b.offsets.ensure(), group)
}

// groupCoordinatorCode is what a request for group gets here: 0 if this
// broker serves it, else NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE.
func (b *Broker) groupCoordinatorCode(group string) int16 {
	return b.keyCoordinatorCode(b.offsets.ensure(), group, b.groups.GroupError)
}

// keyCoordinator returns the broker coordinating key through the internal
// topic t (__consumer_offsets for groups, __transaction_state for
// transactional ids): the leader of partition abs(hash(key)) % partitions.
func (b *Broker) keyCoordinator(t *topic, key string) (brokerInfo, int16) {
	if t == nil {
		return brokerInfo{}, kerr.CoordinatorNotAvailable.Code
	}
	parts := b.partitionsOf(t)
	if len(parts) == 0 {
		return brokerInfo{}, kerr.CoordinatorNotAvailable.Code
	}
	p := parts[coordinator.PartitionFor(key, int32(len(parts)))]
	leader := b.nodeID
	if b.cluster != nil {
		mp := p.meta.Load()
		if mp == nil || mp.Leader < 0 {
			return brokerInfo{}, kerr.CoordinatorNotAvailable.Code
		}
		leader = mp.Leader
	}
	brokers, _ := b.brokersView()
	for _, br := range brokers {
		if br.id == leader {
			return br, 0
		}
	}
	return brokerInfo{}, kerr.CoordinatorNotAvailable.Code
}

// keyCoordinatorCode is what a request for key gets here, given the
// coordinator's own answer (ownership) for it: NOT_COORDINATOR becomes
// COORDINATOR_LOAD_IN_PROGRESS when this broker leads the key's partition
// of t but has not loaded it yet.
func (b *Broker) keyCoordinatorCode(t *topic, key string, ownership func(string) int16) int16 {
	if t == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if b.cluster != nil && b.cluster.node.Fenced() {
		// Cut off from the metadata quorum, this broker may no longer
		// coordinate key: a successor may have taken commits this one's
		// memory lacks, so it answers no reads either.
		return kerr.NotCoordinator.Code
	}
	code := ownership(key)
	if code == kerr.NotCoordinator.Code {
		if p := b.keyPartition(t, key); p != nil {
			if leads, _ := b.leadsGroupPartition(p); leads {
				code = kerr.CoordinatorLoadInProgress.Code // elected, not loaded yet
			}
		}
	}
	return code
}

// keyPartition is key's partition of the internal topic t, nil if t has
// none (yet).
func (b *Broker) keyPartition(t *topic, key string) *partition {
	parts := b.partitionsOf(t)
	return partitionAt(parts, coordinator.PartitionFor(key, int32(len(parts))))
}

// requestGroups returns the groups a group request is for; false for the
// requests that are not for groups.
func requestGroups(msg kmsg.Request) ([]string, bool) {
	switch m := msg.(type) {
	case *kmsg.JoinGroupRequest:
		return []string{m.Group}, true
	case *kmsg.SyncGroupRequest:
		return []string{m.Group}, true
	case *kmsg.HeartbeatRequest:
		return []string{m.Group}, true
	case *kmsg.LeaveGroupRequest:
		return []string{m.Group}, true
	case *kmsg.OffsetCommitRequest:
		return []string{m.Group}, true
	case *kmsg.TxnOffsetCommitRequest:
		return []string{m.Group}, true
	case *kmsg.OffsetDeleteRequest:
		return []string{m.Group}, true
	case *kmsg.OffsetFetchRequest:
		if m.Version >= 8 {
			gs := make([]string, 0, len(m.Groups))
			for _, g := range m.Groups {
				gs = append(gs, g.Group)
			}
			return gs, true
		}
		return []string{m.Group}, true
	case *kmsg.DescribeGroupsRequest:
		return m.Groups, true
	case *kmsg.DeleteGroupsRequest:
		return m.Groups, true
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return []string{m.Group}, true
	case *kmsg.ConsumerGroupDescribeRequest:
		return m.Groups, true
	case *kmsg.ShareGroupHeartbeatRequest:
		return []string{m.GroupID}, true
	case *kmsg.StreamsGroupHeartbeatRequest:
		return []string{m.Group}, true
	case *kmsg.StreamsGroupDescribeRequest:
		return m.Groups, true
	case *kmsg.ShareGroupDescribeRequest:
		return m.GroupIDs, true
	case *kmsg.DescribeShareGroupOffsetsRequest:
		gs := make([]string, 0, len(m.Groups))
		for _, g := range m.Groups {
			gs = append(gs, g.GroupID)
		}
		return gs, true
	case *kmsg.AlterShareGroupOffsetsRequest:
		return []string{m.GroupID}, true
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return []string{m.GroupID}, true
	}
	return nil, false
}

// groupLog implements coordinator.GroupLog on topic: __consumer_offsets,
// or __transaction_state (appends then wait for minISR replicas).
type groupLog struct {
	b      *Broker
	topic  string
	minISR func() int // nil: 1
}

// commitTimeout bounds how long an offset commit waits for the ISR.
const commitTimeout = 30 * time.Second

func (g groupLog) partition(pi int32) (*partition, error) {
	t := g.b.lookupTopic(g.topic)
	if t == nil {
		return nil, errors.New(g.topic + " does not exist")
	}
	p := partitionAt(g.b.partitionsOf(t), pi)
	if p == nil || p.log == nil {
		return nil, fmt.Errorf("%s-%d is not here", g.topic, pi)
	}
	return p, nil
}

func (g groupLog) Append(pi int32, recs []coordinator.LogRecord) (int64, func() error, error) {
	return g.appendBatch(pi, func(p *partition) (int64, error) {
		res, err := p.log.Append(buildBatch(recs, g.b.cfg.Now().UnixMilli()), storage.AppendOptions{LeaderEpoch: p.epoch.Load(), LogAppendTime: -1})
		return res.LastOffset, err
	})
}

// AppendTxn appends recs as a transactional batch of producerID, as
// Kafka's group coordinator does for TxnOffsetCommit (coordinator origin:
// no sequence check).
func (g groupLog) AppendTxn(pi int32, producerID int64, producerEpoch int16, recs []coordinator.LogRecord) (int64, func() error, error) {
	return g.appendBatch(pi, func(p *partition) (int64, error) {
		batch := buildBatchOf(recs, g.b.cfg.Now().UnixMilli(), producerID, producerEpoch, true)
		res, err := p.log.Append(batch, storage.AppendOptions{LeaderEpoch: p.epoch.Load(), LogAppendTime: -1, Coordinator: true})
		return res.LastOffset, err
	})
}

// AppendMarker appends the COMMIT or ABORT marker of producerID.
func (g groupLog) AppendMarker(pi int32, producerID int64, producerEpoch int16, commit bool) (int64, func() error, error) {
	return g.appendBatch(pi, func(p *partition) (int64, error) {
		return p.log.AppendMarker(producerID, producerEpoch, commit, 0, p.epoch.Load())
	})
}

// appendBatch appends a batch to partition pi with write, which returns
// the batch's last offset, if this broker leads pi.
func (g groupLog) appendBatch(pi int32, write func(p *partition) (int64, error)) (int64, func() error, error) {
	b := g.b
	p, err := g.partition(pi)
	if err != nil {
		return 0, nil, err
	}
	var ldr *replication.Leader
	if b.cluster != nil {
		if ldr = p.leader.Load(); ldr == nil || b.cluster.node.Fenced() {
			return 0, nil, kerr.NotLeaderForPartition
		}
	}
	last, err := write(p)
	if err != nil {
		return 0, nil, err
	}
	if ldr != nil {
		ldr.MaybeAdvanceHighWatermark()
	}
	target := last + 1
	minISR := int64(1)
	if g.minISR != nil {
		minISR = int64(g.minISR())
	}
	wait := func() error {
		if ldr == nil {
			return awaitHighWatermark(b.ctx, p.log, target, func() bool { return false })
		}
		if code := b.awaitReplica(b.ctx, replicaWait{p: p, ldr: ldr, target: target, minISR: minISR}, time.Now().Add(commitTimeout)); code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	}
	return target, wait, nil
}

// awaitHighWatermark waits until l's high watermark reaches target, or
// lost reports that it never will here.
func awaitHighWatermark(ctx context.Context, l *storage.Log, target int64, lost func() bool) error {
	deadline := time.Now().Add(commitTimeout)
	for {
		ch := l.Notify()
		if l.HighWatermark() >= target {
			return nil
		}
		if lost() {
			return kerr.NotLeaderForPartition
		}
		left := time.Until(deadline)
		if left <= 0 {
			return kerr.RequestTimedOut
		}
		t := time.NewTimer(min(left, 50*time.Millisecond))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

func (g groupLog) Replay(pi int32, from int64, fn func(offset int64, r coordinator.LogRecord) error) (int64, error) {
	b := g.b
	p, err := g.partition(pi)
	if err != nil {
		return 0, err
	}
	ldr := p.leader.Load()
	// What the previous leader appended is committed once the followers
	// have it: wait for the high watermark to reach the log end first.
	end := p.log.LogEndOffset()
	if err := awaitHighWatermark(b.ctx, p.log, end, func() bool { return b.cluster != nil && p.leader.Load() != ldr }); err != nil {
		return 0, err
	}
	if from > end {
		return end, nil // truncated below the view: the caller rebuilds
	}
	off := max(from, p.log.LogStartOffset())
	for off < end {
		rr, err := p.log.Read(off, 1<<20, true)
		if err != nil {
			return off, err
		}
		buf, err := rr.Slice.ReadAll()
		rr.Slice.Release()
		if err != nil {
			return off, err
		}
		if len(buf) == 0 {
			break
		}
		next, err := replayBatches(buf, off, fn)
		if err != nil {
			return off, err
		}
		if next <= off {
			break
		}
		off = next
	}
	return off, nil
}

// replayBatches calls fn with the records at or after from of the whole
// batches in buf, those of transactional batches and the transaction
// markers marked as such (coordinator.LogRecord), and returns the offset
// after the last whole batch.
func replayBatches(buf []byte, from int64, fn func(offset int64, r coordinator.LogRecord) error) (int64, error) {
	next := from
	for len(buf) >= storage.BatchHeaderSize {
		h, err := storage.ParseBatchHeader(buf)
		if err != nil {
			return next, err
		}
		if h.Size() > int64(len(buf)) {
			break
		}
		raw := buf[:h.Size()]
		buf = buf[h.Size():]
		next = h.LastOffset() + 1
		attrs := coordinator.LogRecord{Transactional: h.Transactional(), ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch}
		if h.Control() {
			_, recs, err := parseBatches(controlAsData(raw), from, math.MaxInt)
			if err != nil {
				return next, err
			}
			for _, r := range recs {
				// The control record key: version, type (0 ABORT, 1 COMMIT).
				if len(r.Key) < 4 {
					continue
				}
				m := attrs
				m.Control, m.Commit = true, binary.BigEndian.Uint16(r.Key[2:]) == 1
				if err := fn(r.Offset, m); err != nil {
					return next, err
				}
			}
			continue
		}
		_, recs, err := parseBatches(raw, from, math.MaxInt)
		if err != nil {
			return next, err
		}
		for _, r := range recs {
			m := attrs
			m.Key, m.Value = r.Key, r.Value
			if err := fn(r.Offset, m); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}

// controlAsData returns a copy of control batch raw with the control
// attribute cleared, for parseBatches to decode its records (the CRC is
// not checked there).
func controlAsData(raw []byte) []byte {
	c := slices.Clone(raw)
	attrs := binary.BigEndian.Uint16(c[21:23])
	binary.BigEndian.PutUint16(c[21:23], attrs&^0x20)
	return c
}

var batchCRCTable = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes recs as one uncompressed record batch (magic 2).
func buildBatch(recs []coordinator.LogRecord, nowMs int64) []byte {
	return buildBatchOf(recs, nowMs, -1, -1, false)
}

// buildBatchOf is buildBatch for producerID at producerEpoch (sequence 0),
// transactional if txn.
func buildBatchOf(recs []coordinator.LogRecord, nowMs int64, producerID int64, producerEpoch int16, txn bool) []byte {
	var body []byte
	for i, r := range recs {
		var rec []byte
		rec = append(rec, 0)                              // attributes
		rec = binary.AppendVarint(rec, 0)                 // timestamp delta
		rec = binary.AppendVarint(rec, int64(i))          // offset delta
		rec = binary.AppendVarint(rec, int64(len(r.Key))) // key
		rec = append(rec, r.Key...)
		if r.Value == nil {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(r.Value)))
			rec = append(rec, r.Value...)
		}
		rec = binary.AppendVarint(rec, 0) // headers
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       nowMs,
		MaxTimestamp:         nowMs,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	if producerID >= 0 {
		rb.FirstSequence = 0
	}
	if txn {
		rb.Attributes |= 0x10 // transactional
	}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], batchCRCTable))
	return raw
}

// completeTxnOffsets ends a transaction's pending offsets in group at its
// coordinator: here, or with a WriteTxnMarkers for the group's partition
// of __consumer_offsets sent to its leader, as Kafka's transaction
// coordinator does. Either way the group coordinator appends the marker
// to that partition.
func (b *Broker) completeTxnOffsets(group string, producerID int64, commit bool) error {
	if b.cluster == nil {
		// The marker goes to the group's partition: it must exist and be
		// loaded (a single node loads it when creating the topic).
		if b.offsets.ensure() == nil {
			return kerr.CoordinatorNotAvailable
		}
		return b.groups.CompleteTxnOffsets(group, producerID, commit)
	}
	if b.groups.GroupError(group) == 0 {
		return b.groups.CompleteTxnOffsets(group, producerID, commit)
	}
	c, code := b.groupCoordinator(group)
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	t := b.lookupTopic(offsetsTopicName)
	if t == nil {
		return errors.New(offsetsTopicName + " does not exist")
	}
	pi := coordinator.PartitionFor(group, int32(len(b.partitionsOf(t))))
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return b.sendMarkers(ctx, c.id, producerID, -1, commit, 0, false, map[string][]int32{offsetsTopicName: {pi}})
}

// groupOffsetsMarker is the WriteTxnMarkers of a __consumer_offsets
// partition: the group coordinator commits or drops the transaction's
// pending offsets of the groups of that partition.
func (b *Broker) groupOffsetsMarker(pi int32, producerID int64, commit bool) int16 {
	if err := b.groups.CompleteTxnOffsetsIn(pi, producerID, commit); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke.Code
		}
		b.log.Warn("completing transactional offsets", "partition", pi, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}
