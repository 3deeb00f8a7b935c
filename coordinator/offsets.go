package coordinator

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit handles an OffsetCommit request. Accepted offsets are written
// in one bbolt transaction (fsynced) before the response is returned. The
// request is taken as the broker serves it, v2 or later: a generation of -1
// with no member id is a simple (admin or standalone consumer) commit.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	r := kmsg.NewPtrOffsetCommitResponse()
	gen, memberID, instanceID := req.Generation, req.MemberID, deref(req.InstanceID)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	setAll := func(err *kerr.Error) *kmsg.OffsetCommitResponse {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = err.Code
			}
		}
		return r
	}
	if req.Group == "" {
		return setAll(kerr.InvalidGroupID)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return setAll(kerr.CoordinatorNotAvailable)
	}
	g := c.groups[req.Group]
	created := false
	if g == nil {
		if gen >= 0 {
			if req.Version >= 9 {
				return setAll(kerr.GroupIDNotFound)
			}
			return setAll(kerr.IllegalGeneration)
		}
		// A simple consumer (or admin) commit creates a group that only
		// stores offsets.
		g = newGroup(req.Group, c.cfg.Now())
		created = true
	}
	// The partitions checked are those that would be written.
	parts := func(yield func(offsetKey) bool) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if c.partitionExists(t.Topic, p.Partition) && !c.metadataTooLarge(p.Metadata) && !yield(offsetKey{t.Topic, p.Partition}) {
					return
				}
			}
		}
	}
	if g.st != nil {
		if err := validateStreamsOffsetCommit(g, memberID, gen, commitKind{version: req.Version}, parts); err != nil {
			return setAll(err)
		}
	} else if g.cg != nil {
		if err := validateConsumerOffsetCommit(g, memberID, gen, commitKind{version: req.Version}, parts); err != nil {
			return setAll(err)
		}
	} else if err := validateOffsetCommit(g, memberID, instanceID, gen); err != nil {
		return setAll(err)
	}

	now := c.cfg.Now()
	var writes []offsetWrite
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &r.Topics[i].Partitions[j]
			if !c.partitionExists(t.Topic, p.Partition) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			if c.metadataTooLarge(p.Metadata) {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			writes = append(writes, offsetWrite{
				topic: t.Topic, partition: p.Partition,
				entry: offsetEntry{offset: p.Offset, leaderEpoch: epoch, metadata: p.Metadata, commitTime: now, logOffset: -1},
				resp:  rp,
			})
		}
	}
	if len(writes) == 0 {
		return r
	}
	if c.cfg.Log != nil {
		// Kafka's way: the records go to the group's partition of
		// __consumer_offsets, and the commit is answered and applied only
		// once the partition's ISR has them.
		recs := make([]LogRecord, len(writes))
		for i, w := range writes {
			recs[i] = offsetCommitRecord(g.id, w.topic, w.partition, &w.entry)
		}
		next, wait, done, err := c.appendLocked(g.id, recs)
		if err != nil {
			for _, w := range writes {
				w.resp.ErrorCode = err.Code
			}
			return r
		}
		c.mu.Unlock()
		werr := wait()
		c.mu.Lock()
		done(werr == nil)
		if c.commitErrLocked(g.id, werr) != nil {
			if werr != nil {
				c.log.Warn("offset commit not committed to __consumer_offsets", "group", g.id, "err", werr)
			}
			for _, w := range writes {
				w.resp.ErrorCode = kerr.NotCoordinator.Code
			}
			return r
		}
		base := next - int64(len(writes))
		for i := range writes {
			writes[i].entry.logOffset = base + int64(i)
		}
		if cur := c.groups[g.id]; cur != nil {
			g = cur
			created = false
		} else {
			created = true // deleted meanwhile; the commit re-creates it
		}
		// A later commit of the same partition may have been applied
		// first: keep the newer one.
		kept := writes[:0]
		for _, w := range writes {
			if e, ok := g.offsets[w.topic][w.partition]; !ok || e.logOffset < w.entry.logOffset {
				kept = append(kept, w)
			}
		}
		writes = kept
		if len(writes) == 0 {
			return r
		}
	}
	if err := c.storeOffsetsLocked(g.id, writes); err != nil {
		c.log.Warn("persisting offsets failed", "group", g.id, "err", err)
		for _, w := range writes {
			w.resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		return r
	}
	if created {
		c.groups[g.id] = g
	}
	for _, w := range writes {
		ps := g.offsets[w.topic]
		if ps == nil {
			ps = make(map[int32]offsetEntry)
			g.offsets[w.topic] = ps
		}
		ps[w.partition] = w.entry
	}
	return r
}

type offsetWrite struct {
	topic     string
	partition int32
	entry     offsetEntry
	resp      *kmsg.OffsetCommitResponseTopicPartition
}

// metadataTooLarge reports whether a commit's metadata exceeds
// OffsetMetadataMaxSize.
func (c *Coordinator) metadataTooLarge(md *string) bool {
	return md != nil && len(*md) > c.cfg.OffsetMetadataMaxSize
}

func (c *Coordinator) partitionExists(topic string, partition int32) bool {
	if c.cfg.TopicPartitions == nil {
		return partition >= 0
	}
	n, ok := c.cfg.TopicPartitions(topic)
	return ok && partition >= 0 && partition < n
}

// validateOffsetCommit is Kafka's check of who may commit: anyone while the
// group is Empty with generation -1 (simple consumers, admin tools);
// otherwise a current member of the current generation, except while the
// group awaits its assignment.
func validateOffsetCommit(g *group, memberID, instanceID string, gen int32) *kerr.Error {
	if gen < 0 && g.state == stateEmpty {
		return nil
	}
	if gen >= 0 || memberID != "" || instanceID != "" {
		if err := g.validateMember(memberID, instanceID); err != nil {
			return err
		}
		if gen != g.generation {
			return kerr.IllegalGeneration
		}
	} else if g.state != stateEmpty {
		return kerr.UnknownMemberID
	}
	if g.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// OffsetFetch handles an OffsetFetch request. Partitions without a committed
// offset answer offset -1; unknown groups answer like groups without offsets.
// Offsets of open transactions are not visible; with require_stable (v7+)
// a partition that has one answers offset -1 and UNSTABLE_OFFSET_COMMIT, so
// the consumer waits for the transaction to end.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	r := kmsg.NewPtrOffsetFetchResponse()
	stable := req.RequireStable && req.Version >= 7
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			out := kmsg.NewOffsetFetchResponseGroup()
			out.Group = rg.Group
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = make([]fetchTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.Partitions})
				}
			}
			res, err := c.fetchOffsetsLocked(rg.Group, topics, rg.Topics == nil, stable)
			if g := c.groups[rg.Group]; err == noError && req.Version >= 9 && g != nil && g.st != nil && rg.MemberID != nil {
				if verr := validateStreamsOffsetFetch(g, *rg.MemberID, rg.MemberEpoch); verr != nil {
					err, res = verr, nil
				}
			} else if g := c.groups[rg.Group]; err == noError && req.Version >= 9 && g != nil && g.cg != nil && rg.MemberID != nil {
				// v9: a consumer group member's fetch checks its epoch.
				if verr := validateConsumerOffsetFetch(g, *rg.MemberID, rg.MemberEpoch); verr != nil {
					err, res = verr, nil
				}
			}
			out.ErrorCode = err.Code
			for _, t := range res {
				ot := kmsg.NewOffsetFetchResponseGroupTopic()
				ot.Topic = t.topic
				for _, p := range t.partitions {
					op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.partition, p.offset, p.leaderEpoch, p.metadata, p.errorCode
					ot.Partitions = append(ot.Partitions, op)
				}
				out.Topics = append(out.Topics, ot)
			}
			r.Groups = append(r.Groups, out)
		}
		return r
	}
	var topics []fetchTopic
	all := req.Topics == nil && req.Version >= 2
	for _, t := range req.Topics {
		topics = append(topics, fetchTopic{t.Topic, t.Partitions})
	}
	res, err := c.fetchOffsetsLocked(req.Group, topics, all, stable)
	if err != noError && req.Version < 2 {
		// No top-level error before v2: every requested partition carries it.
		res = nil
		for _, t := range topics {
			ft := fetchedTopic{topic: t.topic}
			for _, p := range t.partitions {
				ft.partitions = append(ft.partitions, fetchedPartition{partition: p, offset: -1, leaderEpoch: -1, errorCode: err.Code})
			}
			res = append(res, ft)
		}
	}
	if req.Version >= 2 {
		r.ErrorCode = err.Code
	}
	for _, t := range res {
		ot := kmsg.NewOffsetFetchResponseTopic()
		ot.Topic = t.topic
		for _, p := range t.partitions {
			op := kmsg.NewOffsetFetchResponseTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.partition, p.offset, p.leaderEpoch, p.metadata, p.errorCode
			ot.Partitions = append(ot.Partitions, op)
		}
		r.Topics = append(r.Topics, ot)
	}
	return r
}

type fetchTopic struct {
	topic      string
	partitions []int32
}

type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

type fetchedPartition struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    *string
	errorCode   int16
}

// fetchOffsetsLocked answers one group's fetch: the requested partitions,
// or every committed partition if all; with stable, partitions with
// pending transactional offsets answer UNSTABLE_OFFSET_COMMIT.
//
// Lock should be held.
func (c *Coordinator) fetchOffsetsLocked(groupID string, topics []fetchTopic, all, stable bool) ([]fetchedTopic, *kerr.Error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	var offsets map[string]map[int32]offsetEntry
	if g := c.groups[groupID]; g != nil {
		offsets = g.offsets
	}
	noMetadata := ""
	entry := func(topic string, p int32) fetchedPartition {
		if stable && c.hasPendingTxnOffsetLocked(groupID, topic, p) {
			return fetchedPartition{partition: p, offset: -1, leaderEpoch: -1, metadata: &noMetadata, errorCode: kerr.UnstableOffsetCommit.Code}
		}
		if e, ok := offsets[topic][p]; ok {
			md := e.metadata
			if md == nil {
				md = &noMetadata
			}
			return fetchedPartition{partition: p, offset: e.offset, leaderEpoch: e.leaderEpoch, metadata: md}
		}
		return fetchedPartition{partition: p, offset: -1, leaderEpoch: -1, metadata: &noMetadata}
	}
	var out []fetchedTopic
	if all {
		for _, topic := range sortedKeys(offsets) {
			ft := fetchedTopic{topic: topic}
			for _, p := range sortedKeys(offsets[topic]) {
				ft.partitions = append(ft.partitions, entry(topic, p))
			}
			out = append(out, ft)
		}
		return out, noError
	}
	for _, t := range topics {
		ft := fetchedTopic{topic: t.topic}
		for _, p := range t.partitions {
			ft.partitions = append(ft.partitions, entry(t.topic, p))
		}
		out = append(out, ft)
	}
	return out, noError
}

func sortedKeys[K interface{ ~string | ~int32 }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// OffsetDelete handles an OffsetDelete request: it deletes committed offsets
// of an Empty group, or of topics no member of a consumer group subscribes
// to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	r := kmsg.NewPtrOffsetDeleteResponse()
	if req.Group == "" {
		r.ErrorCode = kerr.InvalidGroupID.Code
		return r
	}
	c.mu.Lock()
	committed := c.offsetDeleteLocked(req, r)
	c.mu.Unlock()
	// Answered once the tombstones are committed, as Kafka's group
	// coordinator answers a write.
	if err := waitCommitted(committed); err != nil {
		r.ErrorCode = err.Code
		r.Topics = nil
	}
	return r
}

// offsetDeleteLocked is OffsetDelete under the lock; committed waits for
// the tombstones.
//
// Lock should be held.
func (c *Coordinator) offsetDeleteLocked(req *kmsg.OffsetDeleteRequest, r *kmsg.OffsetDeleteResponse) (committed func() *kerr.Error) {
	if c.closed {
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return nil
	}
	g := c.groups[req.Group]
	if g == nil {
		r.ErrorCode = kerr.GroupIDNotFound.Code
		return nil
	}
	if g.state != stateEmpty && g.protocolType != consumerProtocolType {
		r.ErrorCode = kerr.NonEmptyGroup.Code
		return nil
	}
	var dels []offsetKey
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		var err *kerr.Error
		switch {
		case c.cfg.TopicPartitions != nil && !c.topicExists(t.Topic):
			err = kerr.UnknownTopicOrPartition
		case g.state != stateEmpty && g.isSubscribedToTopic(t.Topic):
			err = kerr.GroupSubscribedToTopic
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if err != nil {
				rp.ErrorCode = err.Code
			} else {
				dels = append(dels, offsetKey{t.Topic, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	committed, err := c.deleteOffsetsLocked(g, dels)
	if err != nil {
		c.log.Warn("deleting offsets failed", "group", g.id, "err", err)
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		r.Topics = nil
		return nil
	}
	return committed
}

func (c *Coordinator) topicExists(topic string) bool {
	_, ok := c.cfg.TopicPartitions(topic)
	return ok
}

type offsetKey struct {
	topic     string
	partition int32
}

// deleteOffsetsLocked removes offsets from bbolt, then from memory;
// committed waits for their tombstones (appendAsyncLocked).
//
// Lock should be held.
func (c *Coordinator) deleteOffsetsLocked(g *group, keys []offsetKey) (committed func() *kerr.Error, _ error) {
	if len(keys) == 0 {
		return nil, nil
	}
	committed, err := c.deleteStoredOffsets(g.id, keys)
	if err != nil {
		return committed, err
	}
	for _, k := range keys {
		delete(g.offsets[k.topic], k.partition)
		if len(g.offsets[k.topic]) == 0 {
			delete(g.offsets, k.topic)
		}
	}
	return committed, nil
}

// Committed returns a copy of a group's committed offsets, topic →
// partition → offset; nil if the group has none.
func (c *Coordinator) Committed(group string) map[string]map[int32]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || len(g.offsets) == 0 {
		return nil
	}
	out := make(map[string]map[int32]int64, len(g.offsets))
	for t, ps := range g.offsets {
		m := make(map[int32]int64, len(ps))
		for p, e := range ps {
			m[p] = e.offset
		}
		out[t] = m
	}
	return out
}

// DeleteTopicOffsets drops every group's committed offsets of a deleted
// topic.
func (c *Coordinator) DeleteTopicOffsets(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if err := c.deleteTopicPendingLocked(topic); err != nil {
		c.log.Warn("deleting transactional offsets of deleted topic failed", "topic", topic, "err", err)
	}
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		var keys []offsetKey
		for _, p := range sortedKeys(g.offsets[topic]) {
			keys = append(keys, offsetKey{topic, p})
		}
		if _, err := c.deleteOffsetsLocked(g, keys); err != nil {
			c.log.Warn("deleting offsets of deleted topic failed", "group", id, "topic", topic, "err", err)
		}
	}
}

// scheduleExpiryLocked arms the next run of the offset expiry loop.
//
// Lock should be held.
func (c *Coordinator) scheduleExpiryLocked() {
	c.scheduleLocked(&c.expiry, c.cfg.OffsetsRetentionCheckInterval, func() {
		c.expireOffsetsLocked()
		c.scheduleExpiryLocked()
	})
}

// expireOffsetsLocked deletes offsets past retention and then Empty groups
// left without offsets. Retention counts from the commit for simple groups
// (no protocol type) and for topics a Stable consumer group no longer
// subscribes to, and from the moment the group became Empty otherwise.
//
// Lock should be held.
func (c *Coordinator) expireOffsetsLocked() {
	now := c.cfg.Now()
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		var keys []offsetKey
		for _, topic := range sortedKeys(g.offsets) {
			for _, p := range sortedKeys(g.offsets[topic]) {
				e := g.offsets[topic][p]
				var base time.Time
				switch {
				case g.protocolType == "":
					base = e.commitTime
				case g.state == stateEmpty:
					base = g.stateTime
				case g.state == stateStable && g.subscribedKnown && !g.subscribed[topic]:
					base = e.commitTime
				default:
					continue
				}
				if !now.Before(base.Add(c.cfg.OffsetsRetention)) {
					keys = append(keys, offsetKey{topic, p})
				}
			}
		}
		if len(keys) > 0 {
			if _, err := c.deleteOffsetsLocked(g, keys); err != nil {
				c.log.Warn("expiring offsets failed", "group", id, "err", err)
				continue
			}
			c.log.Info("expired offsets", "group", id, "partitions", len(keys))
		}
		if g.state == stateEmpty && len(g.offsets) == 0 && len(g.pending) == 0 {
			if _, err := c.deleteGroupLocked(g); err != nil {
				c.log.Warn("deleting empty group failed", "group", id, "err", err)
			}
		}
	}
}
