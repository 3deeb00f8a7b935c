package broker

// Fetch: v4-17
//
// Consumers pull from an offset of their choosing. The answer for each
// partition starts at the whole batch that contains the fetch offset (so a
// fetch in the middle of a batch returns that batch; the client drops the
// records before its offset) and holds at most the partition's max bytes,
// except that the first partition with data always gets at least one whole
// batch, as Kafka does, and the response stays within max_bytes otherwise.
// Record bytes are not read by the broker: they go from the segment file to
// the socket with sendfile(2).
//
// Long poll: when fewer than min_bytes are available the request waits,
// woken by appends, up to max_wait_ms. Errors answer at once:
// UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+ names topics by id; a
// deleted and re-created topic has a new id), OFFSET_OUT_OF_RANGE,
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v9+ current leader epoch).
//
// In a cluster any replica serves a consumer's Fetch v11+, a follower up
// to its own high watermark, and the leader may answer a partition with
// PreferredReadReplica and no records instead (KIP-392, read_replica.go).
//
// Fetch sessions (KIP-227, package fetchsession): a full request with
// session epoch 0 makes a session when the cache has room and is answered
// with its id; incremental requests (epoch > 0) name only the partitions
// whose position changed and are answered only with the partitions that
// have something new. Epoch -1 asks for no session. Either full request
// closes the session it names, as in Kafka. read_committed stops at the last stable
// offset and lists the aborted transactions in the range returned, from the
// segments' aborted-transaction indexes, so the client can drop their
// batches; read_uncommitted reads to the high watermark.

import (
	"errors"
	"math"
	"time"

	"github.com/gregor-broker/gregor/fetchsession"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.Fetch, 4, 17, (*Broker).handleFetch)
}

// fetchTarget is one requested partition, resolved.
type fetchTarget struct {
	ti, pi int
	part   *partition
	req    *kmsg.FetchRequestTopicPartition
	code   int16 // resolution error, answered without reading
	// preferred is the replica that should serve this consumer instead
	// of this leader (KIP-392), -1 for none: answered without reading.
	preferred int32
	cut       bool // not read: the response was full (fetchOnce)
}

// fetchReplicaID is the broker id of a follower's Fetch, -1 for a consumer.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

func (b *Broker) handleFetch(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.FetchRequest)
	resp := r.fetchResponse(req)
	resp.Version = req.Version
	resp.SessionID = 0
	var fs fetchSessionUse
	if req.Version >= 7 {
		switch req.SessionEpoch {
		case fetchsession.InitialEpoch, fetchsession.FinalEpoch:
			if req.SessionID != 0 {
				b.fetchSessions.Remove(req.SessionID)
			}
			fs.create = req.SessionEpoch == fetchsession.InitialEpoch
		default:
			var code int16
			if req, resp, fs, code = b.incrementalFetch(r, req, resp); code != 0 {
				resp.ErrorCode = code
				r.out = r.encodeFetch(resp, noRegions)
				return nil, nil
			}
		}
	}

	start := time.Now()
	var cq *quota.Set
	if ix := b.quotas.Index(); ix != nil && fetchReplicaID(req) < 0 {
		cq = b.quotasFor(r, ix)
		r.quotaDone = true // fetchAnswer records it, after a long poll too
		req.MaxBytes = int32(min(int64(req.MaxBytes), b.quotas.MaxFetchBytes(cq)))
	}
	targets := b.resolveFetchTargets(req, resp, r.keep, fs.parts)
	b.authorizeFetch(r, req, resp, targets)
	if fs.sess != nil {
		watchSession(fs.parts, targets)
		fs.sess.Fetched(time.Now())
	}
	regions := r.keep.fetchRegions(resp)
	// The first read happens here, in the connection's reader; only a
	// fetch that must wait for data (the long poll) leaves the reader,
	// through r.wait.
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	if fs.sess != nil {
		// An incremental fetch reads the partitions of its session that
		// changed or that it names, and waits on the session.
		if !b.sessionPass(req, resp, targets, regions, deadline) {
			r.waitInWriter = true
			r.wait = func() {
				st := sessionRead{req: req, resp: resp, targets: targets, regions: regions}
				waited := b.sessionWaiting(r, &st, &fs, deadline)
				b.fetchAnswer(r, st.req, st.resp, st.regions, st.targets, cq, fs, time.Since(start)-waited)
			}
			return nil, nil
		}
		b.fetchAnswer(r, req, resp, regions, targets, cq, fs, time.Since(start))
		return nil, nil
	}
	if wake := b.fetchPass(req, resp, targets, regions, deadline); wake != nil {
		r.waitInWriter = true
		r.wait = func() {
			waited := b.fetchWaiting(r, req, resp, targets, regions, deadline, wake)
			b.fetchAnswer(r, req, resp, regions, targets, cq, fs, time.Since(start)-waited)
		}
		return nil, nil
	}
	b.fetchAnswer(r, req, resp, regions, targets, cq, fs, time.Since(start))
	return nil, nil
}

// watchSession makes each session partition (parts, in the order of
// targets) watch the log its target resolved to, before that log is read,
// so that the session hears of every later change of it.
func watchSession(parts []*fetchsession.Partition, targets []fetchTarget) {
	for i := range targets {
		tg := &targets[i]
		if tg.part == nil || tg.part.log == nil || i >= len(parts) {
			continue
		}
		sp, l := parts[i], tg.part.log
		if w, _ := sp.Watching().(*storage.Log); w == l {
			continue
		}
		l.Watch(sp)
		old, ok := sp.Watch(l)
		if !ok {
			l.Unwatch(sp) // left its session meanwhile
			continue
		}
		if o, _ := old.(*storage.Log); o != nil {
			o.Unwatch(sp)
		}
	}
}

// sessionRead is an incremental fetch being answered: the request listing
// the partitions it reads, and what it read.
type sessionRead struct {
	req     *kmsg.FetchRequest
	resp    *kmsg.FetchResponse
	targets []fetchTarget
	regions [][]storage.Slice
}

// sessionPass is fetchPass for an incremental fetch: it reads the targets
// once and reports whether that is the answer; if not, it releases what it
// read, and the request waits on its session.
func (b *Broker) sessionPass(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, regions [][]storage.Slice, deadline time.Time) bool {
	total, now := b.fetchOnce(req, resp, targets, regions, max(req.MaxBytes, 0))
	if now || int64(total) >= int64(req.MinBytes) || total > 0 && req.MinBytes <= 0 || !time.Now().Before(deadline) {
		return true
	}
	releaseRegions(regions)
	return false
}

// sessionWaiting is the long poll of an incremental fetch: it waits for a
// partition of the session to change (or the deadline, or the end of the
// request's context), adds the changed partitions to the request and reads
// again, until sessionPass has the answer. It returns the time spent
// waiting, which the request quota does not count.
func (b *Broker) sessionWaiting(r *request, st *sessionRead, fs *fetchSessionUse, deadline time.Time) (waited time.Duration) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		w := time.Now()
		select {
		case <-fs.sess.Wake():
			waited += time.Since(w)
		case <-timer.C:
			waited += time.Since(w)
			b.fetchOnce(st.req, st.resp, st.targets, st.regions, max(st.req.MaxBytes, 0))
			return waited
		case <-r.ctx.Done():
			waited += time.Since(w)
			b.fetchOnce(st.req, st.resp, st.targets, st.regions, max(st.req.MaxBytes, 0))
			return waited
		}
		n := len(fs.parts)
		var changed bool
		if fs.parts, changed = fs.sess.TakeChanged(st.req, fs.parts); !changed {
			continue
		}
		if len(fs.parts) == n {
			// Only partitions it lists changed: read them again.
			if b.sessionPass(st.req, st.resp, st.targets, st.regions, deadline) {
				return waited
			}
			continue
		}
		if fs.scratch != nil {
			fs.scratch.parts = fs.parts
		}
		st.resp = r.fetchResponse(st.req)
		st.resp.Version, st.resp.SessionID = st.req.Version, 0
		st.targets = b.resolveFetchTargets(st.req, st.resp, r.keep, fs.parts)
		b.authorizeFetch(r, st.req, st.resp, st.targets)
		watchSession(fs.parts, st.targets)
		st.regions = r.keep.fetchRegions(st.resp)
		if b.sessionPass(st.req, st.resp, st.targets, st.regions, deadline) {
			return waited
		}
	}
}

// fetchSessionUse is what a Fetch does with a fetch session: make one
// (create), or answer within one (sess, with its partitions in the order
// of the request it rewrote, and the memory kept with the session, nil
// if another request of the session holds it).
type fetchSessionUse struct {
	create  bool
	sess    *fetchsession.Session
	parts   []*fetchsession.Partition
	scratch *sessionScratch
}

// sessionScratch is the memory an incremental fetch session's requests
// reuse: the request rewritten to every partition of the session, the
// response, targets and file regions, the encoded answer. A follower's
// idle fetches are long polls, which a connection does not recycle
// (request_reuse.go); the session does, one request at a time.
type sessionScratch struct {
	keep  reusable
	parts []*fetchsession.Partition
}

// incrementalFetch applies an incremental request (session epoch > 0) to
// its session and returns the request to serve, rewritten to every
// partition of the session (in the session's memory when it is free), the
// response to fill and the session's use; or a top-level error code. A
// request that empties its session is served sessionless, as it is.
func (b *Broker) incrementalFetch(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) (*kmsg.FetchRequest, *kmsg.FetchResponse, fetchSessionUse, int16) {
	s := b.fetchSessions.Lookup(req.SessionID)
	var fs fetchSessionUse
	into, partsBuf := req, []*fetchsession.Partition(nil)
	if s != nil {
		if v, ok := s.TakeScratch(); ok {
			fs.scratch, _ = v.(*sessionScratch)
			if fs.scratch == nil {
				fs.scratch = &sessionScratch{}
			}
			into = fs.scratch.keep.request(int16(kmsg.Fetch)).(*kmsg.FetchRequest)
			topics := into.Topics
			*into = *req
			into.Topics, into.ForgottenTopics = topics[:0], nil
			partsBuf = fs.scratch.parts[:0]
		}
	}
	parts, closed, code := b.fetchSessions.Incremental(s, req, into, partsBuf, time.Now())
	if code != 0 || closed {
		if fs.scratch != nil {
			s.PutScratch(fs.scratch)
		}
		return req, resp, fetchSessionUse{}, code
	}
	fs.sess, fs.parts = s, parts
	if fs.scratch != nil {
		fs.scratch.parts = parts
		r.keep = &fs.scratch.keep
		resp = r.fetchResponse(into)
		resp.Version, resp.SessionID = into.Version, 0
	}
	return into, resp, fs, 0
}

// fetchAnswer encodes the response, with the regions read as file regions
// sent by sendfile, unless the client's quotas throttle it: then the answer
// is empty, as in Kafka. An incremental fetch answers only the partitions
// its session selects; a full one with epoch 0 makes a session.
func (b *Broker) fetchAnswer(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, regions [][]storage.Slice, targets []fetchTarget, cq *quota.Set, fs fetchSessionUse, handlerTime time.Duration) {
	b.rewriteEndpoints(r, resp)
	release := r.keep.releaser(regions)
	var heard []*fetchsession.Partition
	var created *fetchsession.Session
	switch {
	case fs.sess != nil:
		resp, regions, heard = sessionAnswer(fs.sess, fs.parts, resp, regions, targets)
		resp.SessionID = fs.sess.ID()
		release = func() { releaseRegions(regions) }
		if sc := fs.scratch; sc != nil {
			// Lent until the answer is written.
			release = func() {
				releaseRegions(regions)
				clear(sc.parts)
				fs.sess.PutScratch(sc)
			}
		}
	case fs.create && resp.ErrorCode == 0:
		if created = b.fetchSessions.Create(req, resp, fetchReplicaID(req) >= 0, time.Now()); created != nil {
			resp.SessionID = created.ID()
		}
	}
	r.out = r.encodeFetch(resp, func(ti, pi int) (protocol.Region, bool) {
		s := regions[ti][pi]
		return protocol.Region{File: s.File, Pos: s.Pos, Size: s.Size}, s.Size > 0
	})
	if cq != nil && b.throttleFetch(r, cq, resp, r.out.Size(), handlerTime) {
		// Throttled: answered empty, as Kafka does; nothing is sent. What
		// it would have said is said in the next answer, and a session it
		// would have made is not made.
		releaseRegions(regions)
		resp.Topics = nil
		if fs.sess != nil {
			fs.sess.Unheard(heard)
		}
		if created != nil {
			b.fetchSessions.Remove(created.ID())
			resp.SessionID = 0
		}
		r.out = r.encodeFetch(resp, noRegions)
		if fs.scratch != nil {
			r.release = release
		}
		return
	}
	b.observeFetch(req, resp, regions)
	r.release = release
}

// sessionAnswer is the answer of an incremental fetch: of resp's
// partitions, those its session selects (fetchsession.Session.Answer), in a
// new response with their regions, which are moved out of regions. It
// returns the partitions selected. A partition answered with records, or
// left out for the response's size (cut), is read again by the next
// request, as Kafka reads every partition of a session: its client names
// it with its new position, or (if it does not) is served the same
// records again.
func sessionAnswer(s *fetchsession.Session, parts []*fetchsession.Partition, resp *kmsg.FetchResponse, regions [][]storage.Slice, targets []fetchTarget) (*kmsg.FetchResponse, [][]storage.Slice, []*fetchsession.Partition) {
	out := *resp
	out.Topics = nil
	var outRegions [][]storage.Slice
	last := -1
	heard := s.Answer(parts, resp, func(i int) (records, again bool) {
		tg := &targets[i]
		records = regions[tg.ti][tg.pi].Size > 0
		return records, records || tg.cut
	}, func(ti, pi int) {
		if ti != last {
			t := resp.Topics[ti]
			t.Partitions = nil
			out.Topics = append(out.Topics, t)
			outRegions = append(outRegions, nil)
			last = ti
		}
		n := len(out.Topics) - 1
		out.Topics[n].Partitions = append(out.Topics[n].Partitions, resp.Topics[ti].Partitions[pi])
		outRegions[n] = append(outRegions[n], regions[ti][pi])
		regions[ti][pi] = storage.Slice{}
	})
	return &out, outRegions, heard
}

// throttleFetch records a consumer's Fetch against its quotas: the response
// size and the handler time (the long poll excluded). When either is over
// its bound it unrecords the bytes (the answer will be empty), sets the
// throttle time in resp and r, and returns true.
func (b *Broker) throttleFetch(r *request, cq *quota.Set, resp *kmsg.FetchResponse, size int64, handlerTime time.Duration) bool {
	r.quotaDone = true
	now := time.Now()
	bw := b.quotas.Record(cq, quota.Fetch, float64(size), now)
	rq := b.quotas.Record(cq, quota.Request, quota.RequestPercent(handlerTime), now)
	if bw <= 0 && rq <= 0 {
		return false
	}
	b.quotas.Unrecord(cq, quota.Fetch, float64(size), now)
	r.throttleMs, r.throttleKind = max(bw, rq), quota.Fetch
	if rq > bw {
		r.throttleKind = quota.Request
	}
	resp.ThrottleMillis = int32(min(r.throttleMs, math.MaxInt32))
	return true
}

// resolveFetchTargets looks up every requested partition (by topic id from
// v13) and checks its leader epoch. It fills resp with one empty answer per
// requested partition, in request order, and returns the targets, whose
// resolution errors fetchOnce answers. sess, for an incremental fetch, is
// its session's partitions in the same order (a follower's fetch session,
// replication.FetchClock).
// k, when not nil, lends the lists' memory.
func (b *Broker) resolveFetchTargets(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, k *reusable, sess []*fetchsession.Partition) []fetchTarget {
	var targets []fetchTarget
	if k != nil {
		targets = k.targets[:0]
	}
	replica := fetchReplicaID(req)
	now := time.Now()
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		var t *topic
		missing := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 13 {
			t = b.lookupTopicID(uuid(rt.TopicID))
			missing = kerr.UnknownTopicID.Code
		} else {
			t = b.lookupTopic(rt.Topic)
		}
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = fetchResponsePartitions(resp, ti)
		var parts []*partition
		if t != nil {
			parts = b.partitionsOf(t)
			st.Topic = t.name
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			tg := fetchTarget{ti: ti, pi: pi, req: rp, preferred: -1}
			switch {
			case t == nil:
				tg.code = missing
			case rp.Partition < 0 || int(rp.Partition) >= len(parts):
				tg.code = kerr.UnknownTopicOrPartition.Code
			default:
				tg.part = parts[rp.Partition]
				var clock replication.FetchClock
				if len(targets) < len(sess) {
					clock = sess[len(targets)]
				}
				tg.code = b.fetchLeadership(tg.part, req, rp, now, clock)
				if tg.code == 0 && replica < 0 && req.Version >= 11 {
					tg.preferred = b.preferredReadReplica(tg.part, req.Rack, rp.FetchOffset)
				}
			}
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Kafka answers empty records, never null: librdkafka rejects
			// a null record set.
			sp.RecordBatches = []byte{}
			b.noteNotLeader(tg.code)
			if req.Version >= 16 && (tg.code == kerr.NotLeaderForPartition.Code || tg.code == kerr.FencedLeaderEpoch.Code) {
				b.fetchLeaderHint(resp, &sp, tg.part)
			}
			st.Partitions = append(st.Partitions, sp)
			targets = append(targets, tg)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if k != nil {
		k.targets = targets
	}
	return targets
}

// fetchPass reads the targets into resp and regions once. When that is
// the answer (min_bytes reached, an error, max_wait_ms over, nothing to
// wait on) it returns nil; otherwise it releases what it read and returns
// the channels to wait on, taken before the read so that an append between
// the read and the wait is not missed.
func (b *Broker) fetchPass(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, regions [][]storage.Slice, deadline time.Time) []logWake {
	var wake []logWake
	for _, tg := range targets {
		if tg.part != nil && tg.code == 0 {
			l := tg.part.log
			wake = append(wake, logWake{l, l.Notify()})
		}
	}
	total, now := b.fetchOnce(req, resp, targets, regions, max(req.MaxBytes, 0))
	if now || int64(total) >= int64(req.MinBytes) || total > 0 && req.MinBytes <= 0 || !time.Now().Before(deadline) || len(wake) == 0 {
		return nil
	}
	releaseRegions(regions)
	return wake
}

// fetchWaiting is the long poll: it waits for an append on wake (or the
// deadline, or the end of the request's context) and reads again, until
// fetchPass has the answer. It returns the time spent waiting, which the
// request quota does not count.
func (b *Broker) fetchWaiting(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, regions [][]storage.Slice, deadline time.Time, wake []logWake) (waited time.Duration) {
	for wake != nil {
		w := time.Now()
		woken := waitLogs(r.ctx, wake, time.Until(deadline))
		waited += time.Since(w)
		if !woken {
			// Timed out or shutting down: answer with what is there now.
			b.fetchOnce(req, resp, targets, regions, max(req.MaxBytes, 0))
			return
		}
		wake = b.fetchPass(req, resp, targets, regions, deadline)
	}
	return waited
}

// releaseRegions releases the file regions read so far and clears them.
func releaseRegions(regions [][]storage.Slice) {
	for _, rs := range regions {
		for i := range rs {
			if rs[i].Size > 0 {
				rs[i].Release()
				rs[i] = storage.Slice{}
			}
		}
	}
}

func noRegions(int, int) (protocol.Region, bool) { return protocol.Region{}, false }

// fetchOnce reads every target into resp and regions, returning the bytes
// found and whether the answer must go at once: a partition has an error
// or a preferred read replica (as in Kafka, neither waits for min_bytes).
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, regions [][]storage.Slice, maxBytes int32) (int, bool) {
	total := 0
	answerNow := false
	for i := range targets {
		tg := &targets[i]
		tg.cut = false
		sp := &resp.Topics[tg.ti].Partitions[tg.pi]
		sp.ErrorCode = tg.code
		if tg.code != 0 {
			answerNow = true
			if tg.part == nil {
				// Refused before any read (unknown topic, topic id or
				// partition, not authorized): Kafka's answer has an
				// empty AbortedTransactions array; after a read error
				// (leadership, offset) it is null.
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			continue
		}
		if tg.preferred >= 0 {
			// KIP-392: the consumer is to fetch from that replica; this
			// answer has its offsets and no records.
			sp.PreferredReadReplica = tg.preferred
			b.fillOffsets(sp, tg.part.log)
			answerNow = true
			continue
		}
		remaining := int64(maxBytes) - int64(total)
		limit := int32(min(int64(tg.req.PartitionMaxBytes), max(remaining, 0)))
		minOne := total == 0
		if limit <= 0 && !minOne {
			b.fillOffsets(sp, tg.part.log)
			tg.cut = true
			continue
		}
		var res storage.ReadResult
		var err error
		if req.IsolationLevel == isolationCommitted {
			var aborted []storage.AbortedTxn
			res, aborted, err = tg.part.log.ReadCommitted(tg.req.FetchOffset, max(limit, 0), minOne)
			sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(aborted))
			for _, a := range aborted {
				sp.AbortedTransactions = append(sp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
			}
		} else if fetchReplicaID(req) >= 0 {
			res, err = tg.part.log.ReadForFollower(tg.req.FetchOffset, max(limit, 0), minOne)
		} else {
			res, err = tg.part.log.Read(tg.req.FetchOffset, max(limit, 0), minOne)
		}
		if err != nil {
			sp.ErrorCode = readErrorCode(err)
			if sp.ErrorCode != kerr.OffsetOutOfRange.Code && !errors.Is(err, storage.ErrLogClosed) {
				b.log.Error("fetch read", "topic", tg.part.topic.name, "partition", tg.part.index, "err", err)
			}
			answerNow = true
			continue
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
		regions[tg.ti][tg.pi] = res.Slice
		total += int(res.Slice.Size)
	}
	return total, answerNow
}

func (b *Broker) fillOffsets(sp *kmsg.FetchResponseTopicPartition, l *storage.Log) {
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = l.HighWatermark(), l.LastStableOffset(), l.LogStartOffset()
}

// checkLeaderEpoch validates a client's current leader epoch (-1 = unknown,
// not checked) against the partition's.
func checkLeaderEpoch(client, ours int32) int16 {
	switch {
	case client == -1 || client == ours:
		return 0
	case client < ours:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

func readErrorCode(err error) int16 {
	switch {
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrLogClosed):
		return kerr.UnknownTopicOrPartition.Code
	}
	return kerr.KafkaStorageError.Code
}

// fetchLeaderHint adds the new leader to a Fetch answer (v16+) that sends
// the client elsewhere.
func (b *Broker) fetchLeaderHint(resp *kmsg.FetchResponse, sp *kmsg.FetchResponseTopicPartition, p *partition) {
	br, leader, epoch, ok := b.leaderHint(p)
	if !ok {
		return
	}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
	for _, e := range resp.Brokers {
		if e.NodeID == br.id {
			return
		}
	}
	resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: br.id, Host: br.host, Port: br.port, Rack: br.rack})
}
