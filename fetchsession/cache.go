package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Session epochs of a Fetch request (Kafka's FetchMetadata.INITIAL_EPOCH
// and FINAL_EPOCH); a session id of 0 is no session.
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// EvictAfter is how long a session must have been unused before any new
// session may evict it (Kafka's min.incremental.fetch.session.eviction.ms).
const EvictAfter = 2 * time.Minute

// NextEpoch returns the epoch after epoch: one more, wrapping to 1.
func NextEpoch(epoch int32) int32 {
	if epoch < 0 {
		return FinalEpoch
	}
	if epoch++; epoch <= 0 {
		return 1
	}
	return epoch
}

// Key names a partition of a session: by topic id when the session was
// made by Fetch v13 or later, else by topic name.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Partition is one partition of a session: where its client fetches from
// (as its last request naming it said) and what the client last heard.
type Partition struct {
	Key
	FetchOffset        int64
	LogStartOffset     int64 // a follower's own log start offset
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32

	// What the client last heard; -1 (a new partition, or one answered
	// with an error) makes the next answer include it.
	highWatermark  int64
	logStartOffset int64
	moved          bool // answered with records: moves to the end of the order
}

func (p *Partition) set(rp *kmsg.FetchRequestTopicPartition) {
	p.FetchOffset, p.LogStartOffset, p.MaxBytes = rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes
	p.CurrentLeaderEpoch, p.LastFetchedEpoch = rp.CurrentLeaderEpoch, rp.LastFetchedEpoch
}

// Session is one client's fetch session.
type Session struct {
	id       int32
	follower bool
	topicIDs bool

	mu    sync.Mutex // guards what follows; taken before Cache.mu
	epoch int32      // the epoch the next request must carry
	parts []*Partition
	index map[Key]*Partition

	scratch     any // the caller's memory for this session's requests
	scratchBusy bool

	// Guarded by Cache.mu.
	lastUsed  time.Time
	cachedLen int // len(parts) as of the last request
}

// ID returns the session's id.
func (s *Session) ID() int32 { return s.id }

// Cache is a broker's fetch sessions.
type Cache struct {
	mu        sync.Mutex
	max       int
	sessions  map[int32]*Session
	evictions int64
	parts     int // partitions of all sessions, as of their last request
}

// NewCache returns a cache of at most slots sessions (0: none are made).
func NewCache(slots int) *Cache {
	return &Cache{max: slots, sessions: map[int32]*Session{}}
}

// Stats returns the number of sessions, the partitions they hold and the
// evictions so far (Kafka's NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached and IncrementalFetchSessionEvictions).
func (c *Cache) Stats() (sessions, partitions int, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.parts, c.evictions
}

// Remove closes session id, if there is one.
func (c *Cache) Remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

func (c *Cache) removeLocked(s *Session) {
	delete(c.sessions, s.id)
	c.parts -= s.cachedLen
}

// Lookup returns session id, nil if there is none.
func (c *Cache) Lookup(id int32) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// Incremental applies an incremental request (session epoch > 0) to its
// session s (from Lookup; nil when there is none): it checks the session
// and epoch, updates the partitions the request names, drops the
// forgotten ones, moves the epoch on, and writes into.Topics (into may be
// req) to list every partition of the session in its order, with the
// positions the session holds. It returns the session's partitions in that
// order, appended to parts. A top-level error code is returned when the
// request is refused; nil partitions without an error mean the request
// emptied the session, which is now closed, and is to be answered
// sessionless.
func (c *Cache) Incremental(s *Session, req, into *kmsg.FetchRequest, parts []*Partition, now time.Time) ([]*Partition, int16) {
	if s == nil {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != req.SessionEpoch:
		return nil, kerr.InvalidFetchSessionEpoch.Code
	case s.topicIDs != (req.Version >= 13):
		return nil, kerr.FetchSessionTopicIDError.Code
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			k := s.key(rt.TopicID, rt.Topic, rp.Partition)
			p := s.index[k]
			if p == nil {
				p = &Partition{Key: k, highWatermark: -1, logStartOffset: -1}
				s.index[k] = p
				s.parts = append(s.parts, p)
			}
			p.set(rp)
		}
	}
	if len(req.ForgottenTopics) > 0 {
		for _, ft := range req.ForgottenTopics {
			for _, pn := range ft.Partitions {
				delete(s.index, s.key(ft.TopicID, ft.Topic, pn))
			}
		}
		kept := s.parts[:0]
		for _, p := range s.parts {
			if s.index[p.Key] == p {
				kept = append(kept, p)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
	c.mu.Lock()
	if c.sessions[s.id] != s {
		// Closed or evicted while this request was applied.
		c.mu.Unlock()
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	if len(s.parts) == 0 {
		c.removeLocked(s)
		c.mu.Unlock()
		return nil, 0
	}
	c.parts += len(s.parts) - s.cachedLen
	s.cachedLen = len(s.parts)
	s.lastUsed = now
	c.mu.Unlock()
	s.epoch = NextEpoch(s.epoch)
	parts = append(parts, s.parts...)
	s.expand(into, parts)
	return parts, 0
}

// TakeScratch lends the memory its caller keeps with the session (v is
// nil the first time), to one request at a time: ok is false while
// another holds it. PutScratch gives it back.
func (s *Session) TakeScratch() (v any, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scratchBusy {
		return nil, false
	}
	s.scratchBusy = true
	return s.scratch, true
}

// PutScratch gives back the memory TakeScratch lent, to be lent again.
func (s *Session) PutScratch(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scratch, s.scratchBusy = v, false
}

func (s *Session) key(id [16]byte, topic string, partition int32) Key {
	if s.topicIDs {
		return Key{TopicID: id, Partition: partition}
	}
	return Key{Topic: topic, Partition: partition}
}

// expand rewrites req.Topics to parts, a topic entry for each run of
// partitions of one topic, reusing the request's memory.
func (s *Session) expand(req *kmsg.FetchRequest, parts []*Partition) {
	topics := req.Topics[:0]
	for i, p := range parts {
		if i == 0 || p.TopicID != parts[i-1].TopicID || p.Topic != parts[i-1].Topic {
			if len(topics) < cap(topics) {
				topics = topics[:len(topics)+1]
				rt := &topics[len(topics)-1]
				*rt = kmsg.FetchRequestTopic{Partitions: rt.Partitions[:0]}
			} else {
				topics = append(topics, kmsg.FetchRequestTopic{})
			}
			rt := &topics[len(topics)-1]
			rt.Topic, rt.TopicID = p.Topic, p.TopicID
		}
		rt := &topics[len(topics)-1]
		rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{
			Partition:          p.Partition,
			CurrentLeaderEpoch: p.CurrentLeaderEpoch,
			FetchOffset:        p.FetchOffset,
			LastFetchedEpoch:   p.LastFetchedEpoch,
			LogStartOffset:     p.LogStartOffset,
			PartitionMaxBytes:  p.MaxBytes,
		})
	}
	req.Topics = topics
}

// Create makes a session of the partitions of a full request (session
// epoch 0) and its answer, resp, whose partitions are in the request's
// order, when there is room: it returns the session (nil for none), whose
// id the answer is to carry.
func (c *Cache) Create(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, follower bool, now time.Time) *Session {
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	s := &Session{follower: follower, topicIDs: req.Version >= 13, epoch: 1, lastUsed: now,
		parts: make([]*Partition, 0, n), index: make(map[Key]*Partition, n)}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			p := &Partition{Key: s.key(rt.TopicID, rt.Topic, rp.Partition), highWatermark: -1, logStartOffset: -1}
			p.set(rp)
			if ti < len(resp.Topics) && pi < len(resp.Topics[ti].Partitions) {
				p.heard(&resp.Topics[ti].Partitions[pi])
			}
			if _, dup := s.index[p.Key]; !dup {
				s.index[p.Key] = p
				s.parts = append(s.parts, p)
			}
		}
	}
	s.cachedLen = len(s.parts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 {
		return nil
	}
	for len(c.sessions) >= c.max {
		if !c.evictForLocked(s, now) {
			return nil
		}
	}
	for s.id == 0 || c.sessions[s.id] != nil {
		s.id = rand.Int32N(1<<31-1) + 1
	}
	c.sessions[s.id] = s
	c.parts += s.cachedLen
	return s
}

// evictForLocked evicts a session to make room for s: the one unused
// longest if that is more than EvictAfter, else the least valuable one if
// it is worth less than s. c.mu is held.
func (c *Cache) evictForLocked(s *Session, now time.Time) bool {
	var stale, cheapest *Session
	for _, o := range c.sessions {
		if now.Sub(o.lastUsed) > EvictAfter && (stale == nil || o.lastUsed.Before(stale.lastUsed)) {
			stale = o
		}
		if cheapest == nil || less(o, cheapest) {
			cheapest = o
		}
	}
	victim := stale
	if victim == nil && cheapest != nil && less(cheapest, s) {
		victim = cheapest
	}
	if victim == nil {
		return false
	}
	c.removeLocked(victim)
	c.evictions++
	return true
}

// less orders sessions by worth: consumers' before followers', then
// smaller before larger.
func less(a, b *Session) bool {
	if a.follower != b.follower {
		return !a.follower
	}
	return a.cachedLen < b.cachedLen
}

// heard records what an answer told the client of p.
func (p *Partition) heard(sp *kmsg.FetchResponseTopicPartition) {
	if sp.ErrorCode != 0 {
		p.highWatermark = -1 // told again once the error is gone
		return
	}
	p.highWatermark, p.logStartOffset = sp.HighWatermark, sp.LogStartOffset
}

// Answer selects what the answer of an incremental request tells its
// client: of resp's partitions (those of parts, in the same order: the
// request Incremental rewrote), the ones with records (hasRecords), an
// error, a preferred read replica or a high watermark or log start offset
// the client has not heard. It records what they say and moves those with
// records to the end of the session's order. keep is called with each
// selected partition's place in resp; the selected partitions are
// returned.
func (s *Session) Answer(parts []*Partition, resp *kmsg.FetchResponse, hasRecords func(ti, pi int) bool, keep func(ti, pi int)) []*Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept []*Partition
	i := 0
	anyMoved := false
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			if i >= len(parts) {
				return kept
			}
			p, sp := parts[i], &rt.Partitions[pi]
			i++
			records := hasRecords(ti, pi)
			must := records || sp.ErrorCode != 0 || sp.PreferredReadReplica >= 0 ||
				sp.HighWatermark != p.highWatermark || sp.LogStartOffset != p.logStartOffset
			if !must {
				continue
			}
			p.heard(sp)
			if records {
				p.moved, anyMoved = true, true
			}
			keep(ti, pi)
			kept = append(kept, p)
		}
	}
	if anyMoved {
		s.moveToEndLocked()
	}
	return kept
}

// moveToEndLocked moves the partitions marked moved to the end of the
// order, keeping the relative order of each group.
func (s *Session) moveToEndLocked() {
	order := make([]*Partition, 0, len(s.parts))
	for _, p := range s.parts {
		if !p.moved {
			order = append(order, p)
		}
	}
	for _, p := range s.parts {
		if p.moved {
			p.moved = false
			order = append(order, p)
		}
	}
	s.parts = order
}

// Unheard forgets what an answer selected by Answer told the client of
// parts, when that answer is not sent
// (a throttled client gets an empty answer): they are included again in
// the next one.
func (s *Session) Unheard(parts []*Partition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		p.highWatermark = -1
	}
}
