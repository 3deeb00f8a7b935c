package broker

// ShareFetch: v1-2 (KIP-932; v0 was Kafka 4.0's early access)
//
// A share consumer fetches from the partition leaders in a share session,
// one per (group, member) on each broker: epoch 0 opens it (replacing one
// the member had; the member keeps the records it acquired), -1 closes it (after the
// acknowledgements in the request; the member's acquired records are
// released), any other epoch must be the session's current one
// (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a session)
// and moves it on. The request's partitions are added to the session, then
// the forgotten ones removed; every partition of the session is fetched.
//
// Piggy-backed acknowledgements are applied first, per partition all or
// none (AcknowledgeErrorCode). Then, for each partition, the records from
// the share partition's fetch offset are read (whole batches, up to the
// partition's and the request's max bytes) and their acquirable records
// acquired for the member (coordinator.SharePartition): the answer holds
// the batches as stored and AcquiredRecords, the offset ranges the member
// now owns with their delivery counts. MaxRecords bounds the records
// acquired: at batch boundaries in ShareAcquireMode 0 (batch-optimized),
// exactly in mode 1 (record-limit, v2), where the last batch sent may hold
// records past the acquired ones, which the client must not deliver.
// AcquisitionLockTimeoutMillis is the group's lock duration.
//
// Long poll: while nothing is acquired, the request waits up to
// MaxWaitMillis for an append, a release or the next lock expiry.
// MinBytes is treated as "any record": records are acquired as soon as
// there are some (Kafka waits for MinBytes before acquiring). Partitions
// this broker does not lead answer NOT_LEADER_OR_FOLLOWER with the leader
// in NodeEndpoints. Control batches are acquired as Kafka 4.4 acquires
// them (a client acknowledges their offsets as gaps). The group's
// share.isolation.level decides what else is acquired: under
// read_committed only records below the last stable offset, and the
// records of aborted transactions are archived without a delivery. ACLs
// are checked in acl_share.go.

import (
	"errors"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/share"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ShareFetch, 1, 2, (*Broker).handleShareFetch)
	runAsync(kmsg.ShareFetch)
}

// shareTarget resolves a topic id and partition to a partition this
// broker leads, or an error code.
func (b *Broker) shareTarget(id [16]byte, partition int32) (*partition, int16) {
	t := b.lookupTopicID(uuid(id))
	if t == nil {
		return nil, kerr.UnknownTopicID.Code
	}
	p := partitionAt(b.partitionsOf(t), partition)
	if p == nil {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	if b.cluster != nil && p.log == nil {
		return p, kerr.NotLeaderForPartition.Code
	}
	if code := b.leadership(p); code != 0 {
		return p, code
	}
	return p, 0
}

// shareAcknowledge applies one partition's acknowledgement batches
// (share.Cache.Acknowledge), renewals only if the group allows them
// (share.renew.acknowledge.enable), and returns the error and its message.
func (b *Broker) shareAcknowledge(group, member string, p *partition, batches []coordinator.AckBatch, renew bool) (int16, *string) {
	if renew && !b.shares.RenewAllowed(group, batches) {
		return kerr.InvalidRecordState.Code, kmsg.StringPtr(share.RenewNotEnabled)
	}
	return b.shares.Acknowledge(shareKeyOf(group, p), shareLeader{p}, member, batches, renew), nil
}

func (b *Broker) handleShareFetch(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	if b.shareGroupsOff() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	group, member := "", ""
	if req.GroupID != nil {
		group = *req.GroupID
	}
	if req.MemberID != nil {
		member = *req.MemberID
	}
	hasAcks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	switch {
	case group == "" || member == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	case req.ShareSessionEpoch == share.InitialEpoch && hasAcks:
		resp.ErrorCode = kerr.InvalidRequest.Code
		msg := "Acknowledge data is not allowed when opening a share session."
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if req.Version < 2 && req.IsRenewAck {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	// The session's partitions after the request's are added and the
	// forgotten ones removed: those fetched.
	var add, forget []topicIDPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			add = append(add, topicIDPartition{TopicID: t.TopicID, Partition: p.Partition})
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			forget = append(forget, topicIDPartition{TopicID: f.TopicID, Partition: p})
		}
	}
	fetchParts, code := b.shareSessions.Fetch(r.shareOwner(), share.SessionKey{Group: group, Member: member}, req.ShareSessionEpoch, add, forget)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}

	// The answer's partitions, in order: those of the request, then the
	// rest of the session.
	type answer struct {
		sp      kmsg.ShareFetchResponseTopicPartition
		part    *partition
		topicID [16]byte
		keep    bool                        // answered even without records
		state   *coordinator.SharePartition // of a fetched partition
	}
	var answers []*answer
	byKey := map[topicIDPartition]*answer{}
	get := func(id [16]byte, partition int32) *answer {
		k := topicIDPartition{TopicID: id, Partition: partition}
		if a := byKey[k]; a != nil {
			return a
		}
		a := &answer{sp: kmsg.NewShareFetchResponseTopicPartition(), topicID: id}
		a.sp.Partition = partition
		a.part, a.sp.ErrorCode = b.shareTarget(id, partition)
		byKey[k] = a
		answers = append(answers, a)
		return a
	}
	// Acknowledgements first.
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			a := get(t.TopicID, p.Partition)
			a.keep = true
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			if a.sp.ErrorCode != 0 {
				a.sp.AcknowledgeErrorCode = a.sp.ErrorCode
				continue
			}
			batches := make([]coordinator.AckBatch, 0, len(p.AcknowledgementBatches))
			for _, ab := range p.AcknowledgementBatches {
				batches = append(batches, coordinator.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
			a.sp.AcknowledgeErrorCode, a.sp.AcknowledgeErrorMessage = b.shareAcknowledge(group, member, a.part, batches, req.IsRenewAck)
		}
	}
	if req.ShareSessionEpoch == share.FinalEpoch {
		b.shares.ReleaseMember(group, member)
		fetchParts = nil
	}
	if req.IsRenewAck {
		fetchParts = nil // a renewing request fetches nothing (KIP-1222)
	}

	// Then the fetch, with the long poll.
	var targets []*answer
	for _, tp := range fetchParts {
		a := get(tp.TopicID, tp.Partition)
		if a.sp.ErrorCode == 0 {
			// The share-partition's state, read from the share
			// coordinator when this leader has none yet.
			if a.state, a.sp.ErrorCode = b.sharePartition(group, a.part, true); a.sp.ErrorCode == 0 {
				targets = append(targets, a)
			} else {
				a.keep = true
			}
		}
	}
	resp.AcquisitionLockTimeoutMillis = int32(b.shares.LockDuration(group).Milliseconds())
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 1 << 31
	}
	for len(targets) > 0 {
		var wake []<-chan struct{}
		next := deadline
		got := 0
		remainingRecords := int(req.MaxRecords)
		budget := maxBytes
		isolation, _ := b.groupConfigValue(group, "share.isolation.level")
		readCommitted := isolation == "read_committed"
		for _, a := range targets {
			sp := a.state
			wake = append(wake, a.part.log.Notify(), sp.Changed())
			if t, ok := sp.NextExpiry(); ok && t.Before(next) {
				next = t
			}
			if req.Version >= 1 && req.MaxRecords > 0 && remainingRecords <= 0 {
				continue
			}
			limit := budget
			for _, rp := range req.Topics {
				for _, p := range rp.Partitions {
					if uuid(rp.TopicID) == a.part.topic.id && p.Partition == a.sp.Partition && p.PartitionMaxBytes > 0 {
						limit = min(limit, int64(p.PartitionMaxBytes))
					}
				}
			}
			if budget <= 0 {
				continue
			}
			recs, ranges, code := b.shareAcquire(sp, a.part, member, int32(min(limit, 1<<31-1)), remainingRecords, req.Version >= 2 && req.ShareAcquireMode == 1, readCommitted)
			if code != 0 {
				a.sp.ErrorCode = code
				continue
			}
			if len(ranges) == 0 {
				continue
			}
			a.sp.Records, a.sp.AcquiredRecords = recs, ranges
			got += len(recs)
			budget -= int64(len(recs))
			for _, ar := range ranges {
				remainingRecords -= int(ar.LastOffset - ar.FirstOffset + 1)
			}
		}
		if got > 0 || !time.Now().Before(deadline) {
			break
		}
		if !waitAny(r.ctx, wake, time.Until(next)) && !time.Now().Before(deadline) {
			break
		}
		if r.ctx.Err() != nil {
			break
		}
	}

	for _, a := range answers {
		if !a.keep && a.sp.ErrorCode == 0 && len(a.sp.AcquiredRecords) == 0 {
			continue
		}
		if a.sp.ErrorCode == kerr.NotLeaderForPartition.Code && a.part != nil {
			if br, leader, epoch, ok := b.leaderHint(a.part); ok {
				a.sp.CurrentLeader.LeaderID, a.sp.CurrentLeader.LeaderEpoch = leader, epoch
				found := false
				for _, e := range resp.NodeEndpoints {
					found = found || e.NodeID == br.id
				}
				if !found {
					resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: br.id, Host: br.host, Port: br.port, Rack: br.rack})
				}
			}
		}
		var rt *kmsg.ShareFetchResponseTopic
		for i := range resp.Topics {
			if resp.Topics[i].TopicID == a.topicID {
				rt = &resp.Topics[i]
			}
		}
		if rt == nil {
			resp.Topics = append(resp.Topics, kmsg.NewShareFetchResponseTopic())
			rt = &resp.Topics[len(resp.Topics)-1]
			rt.TopicID = a.topicID
		}
		rt.Partitions = append(rt.Partitions, a.sp)
	}
	return resp, nil
}

// shareAcquire reads p from sp's fetch offset and acquires for member,
// returning the batches that hold acquired records and the ranges; under
// readCommitted only below the last stable offset, never delivering an
// aborted transaction's records.
func (b *Broker) shareAcquire(sp *coordinator.SharePartition, p *partition, member string, maxBytes int32, maxRecords int, recordLimit, readCommitted bool) ([]byte, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, int16) {
	off, ok := sp.FetchOffset(time.Now())
	bound := p.log.HighWatermark()
	if readCommitted {
		bound = p.log.LastStableOffset()
	}
	if !ok || off >= bound {
		return nil, nil, 0
	}
	var res storage.ReadResult
	var aborted []storage.AbortedTxn
	var err error
	if readCommitted {
		res, aborted, err = p.log.ReadCommitted(off, max(maxBytes, 0), true)
	} else {
		res, err = p.log.Read(off, max(maxBytes, 0), true)
	}
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return nil, nil, 0
		}
		return nil, nil, readErrorCode(err)
	}
	buf, err := res.Slice.ReadAll()
	res.Slice.Release()
	if err != nil {
		b.log.Error("share fetch read", "topic", p.topic.name, "partition", p.index, "err", err)
		return nil, nil, kerr.KafkaStorageError.Code
	}
	type raw struct {
		span  coordinator.BatchSpan
		bytes []byte
	}
	var batches []raw
	for len(buf) >= storage.BatchHeaderSize {
		h, err := storage.ParseBatchHeader(buf)
		if err != nil || h.Size() > int64(len(buf)) {
			break
		}
		// A control batch is acquired like any other (clients acknowledge
		// its offsets as gaps), an aborted transaction's batch archived.
		skip := h.Transactional() && !h.Control() && inAbortedTxn(aborted, h)
		batches = append(batches, raw{coordinator.BatchSpan{First: h.BaseOffset, Last: h.LastOffset(), Skip: skip}, buf[:h.Size()]})
		buf = buf[h.Size():]
	}
	spans := make([]coordinator.BatchSpan, len(batches))
	for i := range batches {
		spans[i] = batches[i].span
	}
	acquire := sp.Acquire
	if recordLimit {
		acquire = sp.AcquireExact
	}
	acquired := acquire(member, time.Now(), spans, maxRecords)
	if len(acquired) == 0 {
		return nil, nil, 0
	}
	var out []byte
	ranges := make([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, 0, len(acquired))
	for _, a := range acquired {
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
		ranges = append(ranges, ar)
	}
	for _, rb := range batches {
		for _, a := range acquired {
			if a.First <= rb.span.Last && a.Last >= rb.span.First {
				out = append(out, rb.bytes...)
				break
			}
		}
	}
	return out, ranges, 0
}

// inAbortedTxn reports whether the transactional batch h belongs to one of
// aborted: its producer's, begun at or before h and ended by its marker
// after h.
func inAbortedTxn(aborted []storage.AbortedTxn, h storage.BatchHeader) bool {
	for _, a := range aborted {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.LastOffset() < a.LastOffset {
			return true
		}
	}
	return false
}
