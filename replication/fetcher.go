package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FollowerLog is what a Fetcher needs of a partition's log.
type FollowerLog interface {
	LogStartOffset() int64
	LogEndOffset() int64
	HighWatermark() int64
	LatestLeaderEpoch() int32
	// EndOffsetForLeaderEpoch answers as OffsetForLeaderEpoch does: the
	// largest epoch <= epoch and where it ends, or (-1, -1).
	EndOffsetForLeaderEpoch(epoch int32) (int32, int64)
	TruncateTo(offset int64) error
	TruncateFullyAndStartAt(offset int64) error
	// AppendAsFollower appends the leader's batches at their offsets.
	AppendAsFollower(records []byte) error
	SetHighWatermark(hw int64) error
	// MaybeIncrementLogStartOffset follows the leader's log start offset
	// (DeleteRecords, retention) up to the high watermark.
	MaybeIncrementLogStartOffset(offset int64) error
}

// ErrOffsetMismatch is what AppendAsFollower implementations wrap when the
// leader's batches do not start at the log end offset; the Fetcher then
// truncates again.
var ErrOffsetMismatch = errors.New("batches do not start at the log end offset")

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// FetcherConfig configures the fetchers of one broker.
type FetcherConfig struct {
	Self         int32 // this broker's id, sent as the replica id
	ReplicaEpoch int64 // the broker epoch sent in ReplicaState (-1: none)
	// MaxWait, MinBytes, MaxBytes, PartitionMaxBytes: replica.fetch.wait.max.ms,
	// replica.fetch.min.bytes, replica.fetch.response.max.bytes, replica.fetch.max.bytes.
	MaxWait           time.Duration
	MinBytes          int32
	MaxBytes          int32
	PartitionMaxBytes int32
	Backoff           time.Duration // replica.fetch.backoff.ms
	// SocketTimeout (replica.socket.timeout.ms) bounds how long a
	// request to the leader may take beyond a Fetch's MaxWait. A full
	// Fetch of tens of thousands of partitions from a busy leader takes
	// seconds: cut off, it ends the session and the next is full again,
	// so a bound below that never replicates (seen at 100,000 partitions
	// on three nodes: a restarted follower never caught up).
	SocketTimeout time.Duration
	ClientOpts    []kgo.Opt // extra options for the connection to the leader (TLS, SASL)
	Logger        *slog.Logger
}

func (c *FetcherConfig) defaults() {
	if c.MaxWait <= 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = 30 * time.Second
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 10 << 20
	}
	if c.PartitionMaxBytes <= 0 {
		c.PartitionMaxBytes = 1 << 20
	}
	if c.Backoff <= 0 {
		c.Backoff = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// fpart is one followed partition.
type fpart struct {
	tp          TP
	topicID     [16]byte
	log         FollowerLog
	leaderEpoch int32
	truncate    bool      // must agree with the leader before fetching
	paused      bool      // fenced: waits for a newer epoch from the metadata
	retryAt     time.Time // backoff after a partition error
}

// Fetcher replicates the partitions this broker follows on one leader.
type Fetcher struct {
	cfg    FetcherConfig
	leader int32
	addr   string
	cl     *kgo.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu    sync.Mutex // held while applying a response, so Remove waits for it
	parts map[TP]*fpart
	// changed holds the partitions added, removed or changed (appended,
	// truncated, failed, paused) since run last looked at them: an
	// incremental request names or forgets only those. retrying holds
	// those waiting for retryAt.
	changed  map[TP]struct{}
	retrying map[TP]struct{}

	// The fetch session with the leader (KIP-227), used by run's
	// goroutine only: id 0 when there is none, the epoch of the next
	// incremental request, and each partition of the session as last sent.
	session sessionState
	// snapshot's buffers, reused by each pass of run.
	truncBuf, fetchBuf []fpart
	forgetBuf          []TP
}

// sessionState is a follower's fetch session with its leader.
type sessionState struct {
	id    int32
	epoch int32
	sent  map[TP]*sentPart
	names map[[16]byte]string // the topics' names by id, for answers by id
}

// sentPart is a partition of the session as the leader holds it: the
// position last sent and the assignment it was sent for.
type sentPart struct {
	topicID     [16]byte
	log         FollowerLog
	leaderEpoch int32
	fetchOffset int64
	logStart    int64
}

// reset forgets the session; the next request is a full one that closes
// it at the leader and asks for a new one.
func (s *sessionState) reset() {
	s.epoch, s.sent = 0, nil
}

// NewFetcher starts a fetcher for the leader broker at addr.
func NewFetcher(cfg FetcherConfig, leader int32, addr string) (*Fetcher, error) {
	cfg.defaults()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(fmt.Sprintf("gregor-replica-%d", cfg.Self)),
		kgo.RequestTimeoutOverhead(cfg.SocketTimeout),
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestRetries(0),
	}, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{cfg: cfg, leader: leader, addr: addr, cl: cl, parts: map[TP]*fpart{},
		changed: map[TP]struct{}{}, retrying: map[TP]struct{}{}, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	go f.run()
	return f, nil
}

// Add starts following tp in leaderEpoch; its log first truncates to where
// it agrees with the leader.
func (f *Fetcher) Add(tp TP, topicID [16]byte, log FollowerLog, leaderEpoch int32) {
	f.mu.Lock()
	f.parts[tp] = &fpart{tp: tp, topicID: topicID, log: log, leaderEpoch: leaderEpoch, truncate: true}
	f.changed[tp] = struct{}{}
	f.mu.Unlock()
	f.poke()
}

// Remove stops following tp. When it returns, nothing more is appended to
// its log by this fetcher.
func (f *Fetcher) Remove(tp TP) {
	f.mu.Lock()
	delete(f.parts, tp)
	f.changed[tp] = struct{}{} // forgotten by the next request
	f.mu.Unlock()
}

// Len is the number of partitions followed.
func (f *Fetcher) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parts)
}

// Close stops the fetcher and closes its connection.
func (f *Fetcher) Close() {
	f.cancel()
	<-f.done
	f.cl.Close()
}

func (f *Fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *Fetcher) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.wake:
	case <-f.ctx.Done():
	}
}

// snapshot returns copies of the partitions to work on now, in f's
// buffers (run's goroutine only): those to truncate, those to fetch, and
// those to forget, with how long until a partition's backoff ends. With
// full set (a full request: no session yet) every fetchable partition is
// listed; otherwise only those changed since the last snapshot (and those
// whose backoff ended), and the partitions no longer fetchable (removed,
// fenced, backing off, truncating) to forget. A partition still to
// truncate stays changed, so that it is fetched once it has been.
func (f *Fetcher) snapshot(now time.Time, full bool) (trunc, fetch []fpart, forget []TP, next time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	trunc, fetch, forget = f.truncBuf[:0], f.fetchBuf[:0], f.forgetBuf[:0]
	defer func() { f.truncBuf, f.fetchBuf, f.forgetBuf = trunc, fetch, forget }()
	next = time.Hour
	for tp := range f.retrying {
		if p := f.parts[tp]; p == nil || !now.Before(p.retryAt) {
			delete(f.retrying, tp)
			f.changed[tp] = struct{}{}
		}
	}
	visit := func(tp TP, p *fpart) {
		switch {
		case p == nil || p.paused:
			forget = append(forget, tp)
			delete(f.changed, tp)
		case now.Before(p.retryAt):
			next = min(next, p.retryAt.Sub(now))
			f.retrying[tp] = struct{}{}
			forget = append(forget, tp)
			delete(f.changed, tp)
		case p.truncate:
			trunc = append(trunc, *p)
			forget = append(forget, tp)
			f.changed[tp] = struct{}{}
		default:
			fetch = append(fetch, *p)
			delete(f.changed, tp)
		}
	}
	if full {
		for tp, p := range f.parts {
			visit(tp, p)
		}
		for tp := range f.changed {
			if f.parts[tp] == nil {
				delete(f.changed, tp)
			}
		}
		forget = forget[:0] // a full request names what it fetches, nothing else
	} else {
		for tp := range f.changed {
			visit(tp, f.parts[tp])
		}
	}
	for tp := range f.retrying {
		next = min(next, f.parts[tp].retryAt.Sub(now))
	}
	return trunc, fetch, forget, next
}

// remark marks changed again the partitions of a snapshot not sent.
func (f *Fetcher) remark(fetch []fpart, forget []TP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range fetch {
		f.changed[p.tp] = struct{}{}
	}
	for _, tp := range forget {
		f.changed[tp] = struct{}{}
	}
}

// markLocked notes that p changed: the next incremental request names it
// (or forgets it). f.mu is held.
func (f *Fetcher) markLocked(p *fpart) { f.changed[p.tp] = struct{}{} }

// current returns the live entry for p if it is still the same
// assignment (same epoch). f.mu must be held.
func (f *Fetcher) currentLocked(p fpart) *fpart {
	cur := f.parts[p.tp]
	if cur == nil || cur.leaderEpoch != p.leaderEpoch || cur.log != p.log {
		return nil
	}
	return cur
}

func (f *Fetcher) run() {
	defer close(f.done)
	for f.ctx.Err() == nil {
		full := f.session.epoch == 0
		trunc, fetch, forget, next := f.snapshot(time.Now(), full)
		if len(trunc) > 0 {
			f.remark(fetch, forget) // sent once the truncations are done
			if err := f.truncate(trunc); err != nil {
				f.cfg.Logger.Debug("replica truncation request failed", "leader", f.leader, "err", err)
				f.sleep(f.cfg.Backoff)
			}
			continue
		}
		if len(fetch) == 0 && len(f.session.sent) == 0 {
			f.sleep(next)
			continue
		}
		if err := f.fetch(fetch, forget, full); err != nil {
			if f.ctx.Err() == nil {
				f.cfg.Logger.Debug("replica fetch failed", "leader", f.leader, "addr", f.addr, "err", err)
				f.sleep(f.cfg.Backoff)
			}
		}
	}
}

func (f *Fetcher) seed() *kgo.Broker {
	return f.cl.SeedBrokers()[0]
}

// truncate asks the leader where each partition's latest epoch ends and
// truncates to the point both logs agree on (KIP-101, KIP-279).
func (f *Fetcher) truncate(parts []fpart) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.cfg.Self
	byTopic := map[string]int{}
	for _, p := range parts {
		epoch := p.log.LatestLeaderEpoch()
		if epoch < 0 {
			// Nothing with an epoch: an empty log has nothing to undo.
			f.mu.Lock()
			if cur := f.currentLocked(p); cur != nil {
				if p.log.LogEndOffset() > p.log.LogStartOffset() {
					if err := p.log.TruncateTo(max(p.log.HighWatermark(), p.log.LogStartOffset())); err != nil {
						f.failLocked(cur, err)
					}
				}
				cur.truncate = false
			}
			f.mu.Unlock()
			continue
		}
		i, ok := byTopic[p.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[p.tp.Topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = p.tp.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.CurrentLeaderEpoch = p.leaderEpoch
		rp.LeaderEpoch = epoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kresp, err := f.seed().Request(f.ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	idx := map[TP]fpart{}
	for _, p := range parts {
		idx[p.tp] = p
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			p, ok := idx[TP{rt.Topic, rp.Partition}]
			if !ok {
				continue
			}
			cur := f.currentLocked(p)
			if cur == nil {
				continue
			}
			if rp.ErrorCode != 0 {
				f.partitionErrorLocked(cur, rp.ErrorCode)
				continue
			}
			f.applyEpochEndLocked(cur, rp.LeaderEpoch, rp.EndOffset)
		}
	}
	return nil
}

// applyEpochEndLocked truncates p's log given the leader's answer for its
// latest epoch. f.mu must be held.
func (f *Fetcher) applyEpochEndLocked(p *fpart, leaderEpoch int32, endOffset int64) {
	l := p.log
	leo := l.LogEndOffset()
	ours := l.LatestLeaderEpoch()
	var to int64
	done := true
	switch {
	case leaderEpoch < 0 || endOffset < 0:
		// The leader knows no epoch at or below ours: keep what is
		// known to be committed.
		to = min(l.HighWatermark(), leo)
	case leaderEpoch == ours:
		to = min(endOffset, leo)
	default:
		// The leader's largest epoch <= ours is an older one: our log
		// diverges from where that epoch ends, at the latest.
		e, end := l.EndOffsetForLeaderEpoch(leaderEpoch)
		to = min(endOffset, leo)
		if e >= 0 {
			to = min(to, end)
		}
		done = e == leaderEpoch
	}
	to = max(to, l.LogStartOffset())
	if to < leo {
		f.cfg.Logger.Info("truncating follower log", "partition", p.tp, "from", leo, "to", to, "leader_epoch", leaderEpoch, "our_epoch", ours)
		if err := l.TruncateTo(to); err != nil {
			f.failLocked(p, err)
			return
		}
	}
	p.truncate = !done
}

func (f *Fetcher) failLocked(p *fpart, err error) {
	f.cfg.Logger.Error("follower log failed", "partition", p.tp, "err", err)
	p.retryAt = time.Now().Add(time.Second)
	f.markLocked(p)
}

// partitionErrorLocked handles a Kafka error for one partition.
func (f *Fetcher) partitionErrorLocked(p *fpart, code int16) {
	f.markLocked(p)
	switch code {
	case kerr.FencedLeaderEpoch.Code:
		// The leader is in a newer epoch than we know: the metadata will
		// hand us the new assignment.
		p.paused = true
	default:
		// UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER: the leader has not
		// seen the new epoch yet, which takes it a moment. Anything else:
		// try again shortly.
		p.retryAt = time.Now().Add(min(f.cfg.Backoff, 50*time.Millisecond))
	}
}

// fetch sends one Fetch in the fetch session with the leader when there
// is one: a full request (full; epoch 0) names every partition of parts
// and asks for a session; once the leader has made one, an incremental
// request names only those of parts (the changed ones) whose position or
// assignment differs from what the session holds, and forgets those of
// forget that it holds; the answer holds only the partitions with news.
// Any failure ends the session; the next request is full again.
func (f *Fetcher) fetch(parts []fpart, forget []TP, full bool) error {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.cfg.Self
	req.ReplicaState.ID = f.cfg.Self
	req.ReplicaState.Epoch = f.cfg.ReplicaEpoch
	req.MaxWaitMillis = int32(f.cfg.MaxWait / time.Millisecond)
	req.MinBytes = f.cfg.MinBytes
	req.MaxBytes = f.cfg.MaxBytes
	ss := &f.session
	req.SessionID, req.SessionEpoch = ss.id, ss.epoch
	if full {
		ss.sent = make(map[TP]*sentPart, len(parts))
	}
	byTopic := map[string]int{}
	for _, p := range parts {
		leo, start := p.log.LogEndOffset(), p.log.LogStartOffset()
		sp := ss.sent[p.tp]
		if sp != nil && sp.log == p.log && sp.leaderEpoch == p.leaderEpoch && sp.topicID == p.topicID &&
			sp.fetchOffset == leo && sp.logStart == start {
			continue // in the session as it is
		}
		if sp == nil {
			sp = &sentPart{}
			ss.sent[p.tp] = sp
		}
		*sp = sentPart{topicID: p.topicID, log: p.log, leaderEpoch: p.leaderEpoch, fetchOffset: leo, logStart: start}
		if ss.names[p.topicID] != p.tp.Topic {
			if ss.names == nil {
				ss.names = map[[16]byte]string{}
			}
			ss.names[p.topicID] = p.tp.Topic
		}
		i, ok := byTopic[p.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[p.tp.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.tp.Topic, p.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.CurrentLeaderEpoch = p.leaderEpoch
		rp.FetchOffset = leo
		rp.LastFetchedEpoch = -1
		rp.LogStartOffset = start
		rp.PartitionMaxBytes = f.cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	var ft map[string]int
	for _, tp := range forget {
		sp := ss.sent[tp]
		if sp == nil {
			continue
		}
		delete(ss.sent, tp)
		if ft == nil {
			ft = map[string]int{}
		}
		i, ok := ft[tp.Topic]
		if !ok {
			i = len(req.ForgottenTopics)
			ft[tp.Topic] = i
			req.ForgottenTopics = append(req.ForgottenTopics, kmsg.FetchRequestForgottenTopic{Topic: tp.Topic, TopicID: sp.topicID})
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
	}
	kresp, err := f.seed().Request(f.ctx, req)
	if err != nil {
		ss.reset()
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		ss.reset()
		switch resp.ErrorCode {
		case kerr.FetchSessionIDNotFound.Code:
			ss.id = 0 // the leader has no such session (restarted, evicted)
			return nil
		case kerr.InvalidFetchSessionEpoch.Code:
			// The leader has the session at another epoch (it served a
			// request whose answer was lost): the full request closes it
			// and asks for a new one, as Kafka's FetchSessionHandler does.
			return nil
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	var outOfRange []fpart
	f.mu.Lock()
	for _, rt := range resp.Topics {
		name := rt.Topic
		if name == "" {
			name = ss.names[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			tp := TP{name, rp.Partition}
			sp, cur := ss.sent[tp], f.parts[tp]
			if sp == nil || cur == nil || cur.leaderEpoch != sp.leaderEpoch || cur.log != sp.log {
				continue // removed or re-added while the fetch was out
			}
			switch rp.ErrorCode {
			case 0:
				f.applyLocked(cur, &rp)
			case kerr.OffsetOutOfRange.Code:
				outOfRange = append(outOfRange, *cur)
			default:
				f.partitionErrorLocked(cur, rp.ErrorCode)
			}
		}
	}
	f.mu.Unlock()
	switch {
	case resp.SessionID == 0:
		ss.id = 0
		ss.reset() // no session: the next request is full again
	case full:
		ss.id, ss.epoch = resp.SessionID, 1
	default:
		ss.epoch = nextEpoch(ss.epoch)
	}
	for _, p := range outOfRange {
		f.outOfRange(p)
	}
	return nil
}

// nextEpoch is the session epoch after epoch, wrapping to 1.
func nextEpoch(epoch int32) int32 {
	if epoch++; epoch <= 0 {
		return 1
	}
	return epoch
}

// applyLocked appends what the leader sent and takes its high watermark.
// A partition whose log end or start offset moved is marked changed: the
// next request names its new position.
func (f *Fetcher) applyLocked(p *fpart, rp *kmsg.FetchResponseTopicPartition) {
	l := p.log
	if len(rp.RecordBatches) > 0 {
		f.markLocked(p)
		at, err := appendAsFollower(l, rp.RecordBatches)
		if at >= 0 {
			f.cfg.Logger.Info("follower log restarted at the base offset of the batch holding its log start offset", "partition", p.tp, "at", at)
		}
		if err != nil {
			if errors.Is(err, ErrOffsetMismatch) {
				f.cfg.Logger.Warn("follower append out of place; truncating again", "partition", p.tp, "err", err)
				p.truncate = true
				f.markLocked(p)
				return
			}
			f.failLocked(p, err)
			return
		}
	}
	if hw := min(rp.HighWatermark, l.LogEndOffset()); hw > l.HighWatermark() {
		if err := l.SetHighWatermark(hw); err != nil {
			f.cfg.Logger.Warn("follower high watermark", "partition", p.tp, "err", err)
		}
	}
	if rp.LogStartOffset > l.LogStartOffset() {
		f.markLocked(p)
		if err := l.MaybeIncrementLogStartOffset(min(rp.LogStartOffset, l.HighWatermark())); err != nil {
			f.cfg.Logger.Warn("follower log start offset", "partition", p.tp, "err", err)
		}
	}
}

// appendAsFollower appends the leader's batches to l. When l is empty (its
// log end offset is its log start offset, as after TruncateFullyAndStartAt
// at the leader's log start offset) and the first batch starts before that
// offset and ends at or after it, the leader's log start offset fell inside
// the batch (DeleteRecords, which Kafka Streams sends for its repartition
// topics after each commit): the log restarts at the batch's base offset
// and the append is retried, as Kafka's
// Partition.appendRecordsToFollowerOrFutureReplica does on an
// UnexpectedAppendOffsetException. Without it the follower truncated again
// and refetched the same batch forever. It returns the offset the log was
// restarted at, -1 if it was not.
func appendAsFollower(l FollowerLog, batches []byte) (int64, error) {
	err := l.AppendAsFollower(batches)
	if err == nil || !errors.Is(err, ErrOffsetMismatch) {
		return -1, err
	}
	first, last, ok := firstBatchOffsets(batches)
	leo := l.LogEndOffset()
	if !ok || leo != l.LogStartOffset() || first >= leo || last < leo {
		return -1, err
	}
	if err := l.TruncateFullyAndStartAt(first); err != nil {
		return -1, err
	}
	return first, l.AppendAsFollower(batches)
}

// firstBatchOffsets returns the base and last offsets of the first record
// batch in b (base offset: bytes 0-7; last offset delta: bytes 23-26, after
// the length, partition leader epoch, magic, CRC and attributes); false if
// b is too short to hold a batch header.
func firstBatchOffsets(b []byte) (first, last int64, ok bool) {
	if len(b) < 27 {
		return 0, 0, false
	}
	first = int64(binary.BigEndian.Uint64(b[0:8]))
	return first, first + int64(int32(binary.BigEndian.Uint32(b[23:27]))), true
}

// outOfRange handles a fetch offset the leader does not have: below its
// log start offset the follower restarts its log there; otherwise it
// truncates again.
func (f *Fetcher) outOfRange(p fpart) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.cfg.Self
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = p.tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = p.tp.Partition
	rp.CurrentLeaderEpoch = p.leaderEpoch
	rp.Timestamp = -2 // earliest
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	kresp, err := f.seed().Request(f.ctx, req)
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.currentLocked(p)
	if cur == nil {
		return
	}
	f.markLocked(cur)
	if err != nil {
		cur.retryAt = time.Now().Add(f.cfg.Backoff)
		return
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		cur.retryAt = time.Now().Add(f.cfg.Backoff)
		return
	}
	lp := resp.Topics[0].Partitions[0]
	if lp.ErrorCode != 0 {
		f.partitionErrorLocked(cur, lp.ErrorCode)
		return
	}
	if cur.log.LogEndOffset() < lp.Offset {
		f.cfg.Logger.Info("follower behind the leader's log start; restarting its log", "partition", p.tp, "at", lp.Offset)
		if err := cur.log.TruncateFullyAndStartAt(lp.Offset); err != nil {
			f.failLocked(cur, err)
		}
		return
	}
	cur.truncate = true
}
