package fetchsession

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
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

	s    *Session
	pass uint64 // the request of the session that last listed it

	// Guarded by s.dmu.
	dirty    bool // in s.dirty
	watching any  // what the broker watches for it (Watch)

	left atomic.Int64 // when it left its session (Unix ns); 0 while in it
}

func (p *Partition) set(rp *kmsg.FetchRequestTopicPartition) {
	p.FetchOffset, p.LogStartOffset, p.MaxBytes = rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes
	p.CurrentLeaderEpoch, p.LastFetchedEpoch = rp.CurrentLeaderEpoch, rp.LastFetchedEpoch
}

// LogChanged marks p changed: the next request of its session (or the one
// waiting now) reads it. The broker's storage calls it for the log p
// watches.
func (p *Partition) LogChanged() { p.s.mark(p, true) }

// LastFetch is the time of its session's last fetch while p was in it
// (Session.Fetched): while p stays in a live session its client fetches
// it at the same position on every request that does not name it.
func (p *Partition) LastFetch() time.Time {
	if t := p.left.Load(); t != 0 {
		return time.Unix(0, t)
	}
	return time.Unix(0, p.s.lastFetch.Load())
}

// Watch records w as what the broker watches for p (its log), returning
// what it watched before. ok is false when p has left its session (or the
// session is closed): the caller is to stop watching w again, since the
// session's Retire hook has run or will not see it.
func (p *Partition) Watch(w any) (old any, ok bool) {
	s := p.s
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.retired || p.left.Load() != 0 {
		return nil, false
	}
	old, p.watching = p.watching, w
	return old, true
}

// Watching is what the broker watches for p, nil for nothing.
func (p *Partition) Watching() any {
	p.s.dmu.Lock()
	defer p.s.dmu.Unlock()
	return p.watching
}

// leave marks p out of its session at now and returns what it watched.
// s.dmu is held.
func (p *Partition) leaveLocked(now time.Time) any {
	if p.left.Load() == 0 {
		p.left.Store(now.UnixNano())
	}
	w := p.watching
	p.watching = nil
	return w
}

// Session is one client's fetch session.
type Session struct {
	id       int32
	follower bool
	topicIDs bool

	mu     sync.Mutex // guards what follows; taken before Cache.mu
	epoch  int32      // the epoch the next request must carry
	parts  []*Partition
	index  map[Key]*Partition
	passes uint64

	scratch     any // the caller's memory for this session's requests
	scratchBusy bool

	// The partitions changed since a request last read them. dmu is
	// taken last: storage calls mark with its locks held.
	dmu     sync.Mutex
	dirty   []*Partition
	retired bool
	wake    chan struct{} // a token when a partition is marked changed

	lastFetch atomic.Int64 // Unix ns of the last request (Fetched)
	stamp     int64        // Cache.Stamp as of the last request; s.mu

	// Guarded by Cache.mu.
	lastUsed  time.Time
	cachedLen int // len(parts) as of the last request
}

// ID returns the session's id.
func (s *Session) ID() int32 { return s.id }

// mark adds p to the changed partitions; wake tells a waiting request.
func (s *Session) mark(p *Partition, wake bool) {
	s.dmu.Lock()
	if !p.dirty {
		p.dirty = true
		s.dirty = append(s.dirty, p)
	}
	s.dmu.Unlock()
	if wake {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Wake receives a token after a partition of the session changed (more
// changes before it is read coalesce); a request waiting for data waits
// on it, then takes the changed partitions with TakeChanged.
func (s *Session) Wake() <-chan struct{} { return s.wake }

// TakeChanged takes the partitions of the session changed since they were
// last taken, and clears their marks, for a request waiting for data that
// lists parts: it appends those it does not list yet to parts and rewrites
// req.Topics to list them all. changed tells whether any partition
// changed, listed or not: the request is to read them all again.
func (s *Session) TakeChanged(req *kmsg.FetchRequest, parts []*Partition) (_ []*Partition, changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(parts)
	parts, changed = s.takeChangedLocked(parts)
	if len(parts) > n {
		s.expand(req, parts)
	}
	return parts, changed
}

// takeChangedLocked takes the changed partitions, appending to parts
// those still in the session that the current request does not list yet.
// s.mu is held.
func (s *Session) takeChangedLocked(parts []*Partition) ([]*Partition, bool) {
	s.dmu.Lock()
	dirty := s.dirty
	s.dirty = nil
	for _, p := range dirty {
		p.dirty = false
	}
	s.dmu.Unlock()
	for _, p := range dirty {
		if s.index[p.Key] == p && p.pass != s.passes {
			p.pass = s.passes
			parts = append(parts, p)
		}
	}
	return parts, len(dirty) > 0
}

// Fetched records a request of the session at now: the time LastFetch
// answers for every partition still in it. Call it once the request has
// read the partitions it lists.
func (s *Session) Fetched(now time.Time) { s.lastFetch.Store(now.UnixNano()) }

// Cache is a broker's fetch sessions.
type Cache struct {
	mu        sync.Mutex
	max       int
	sessions  map[int32]*Session
	evictions int64
	parts     int // partitions of all sessions, as of their last request

	// retire is told of the partitions that left a session, with what
	// they watched (Partition.Watch), to stop watching it.
	retire func(p *Partition, watched any)

	// Stamp, when set, is the version of what else a request's answers
	// depend on besides the partitions' logs (the broker's ACLs, say),
	// for req: an incremental request whose stamp differs from the
	// session's last reads every partition again, so that the change
	// reaches idle partitions too. Set it before the first request.
	Stamp func(req *kmsg.FetchRequest) int64
}

// NewCache returns a cache of at most slots sessions (0: none are made).
// retire, when not nil, is called with every partition that leaves a
// session (forgotten, or its session closed or evicted) and watched
// something, without the cache's locks held.
func NewCache(slots int, retire func(p *Partition, watched any)) *Cache {
	return &Cache{max: slots, sessions: map[int32]*Session{}, retire: retire}
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
	s := c.sessions[id]
	if s != nil {
		c.removeLocked(s)
	}
	c.mu.Unlock()
	if s != nil {
		c.retireSession(s, time.Now())
	}
}

// removeLocked takes s out of the cache; the caller retires it
// (retireSession) once it holds neither c.mu nor s.mu.
func (c *Cache) removeLocked(s *Session) {
	delete(c.sessions, s.id)
	c.parts -= s.cachedLen
}

// retireSession marks every partition of s, which is out of the cache,
// out of its session and stops what they watched.
func (c *Cache) retireSession(s *Session, now time.Time) {
	s.dmu.Lock()
	s.retired = true
	s.dmu.Unlock()
	s.mu.Lock()
	parts := slices.Clone(s.parts)
	s.mu.Unlock()
	c.retireParts(parts, now)
}

// retireParts marks parts out of their session and stops what they
// watched.
func (c *Cache) retireParts(parts []*Partition, now time.Time) {
	for _, p := range parts {
		p.s.dmu.Lock()
		w := p.leaveLocked(now)
		p.s.dmu.Unlock()
		if w != nil && c.retire != nil {
			c.retire(p, w)
		}
	}
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
// forgotten ones and moves the epoch on. It writes into.Topics (into may
// be req) to list the partitions to read, with the positions the session
// holds: those changed since a request last read them (LogChanged, or
// answered with an error or cut short by the response's size), then those
// the request names. The others are where their client last heard, and
// are not read. It returns the partitions listed, in that order, appended
// to parts (none when nothing changed: the request waits on the session).
// A top-level error code is returned when the request is refused; closed
// means the request emptied the session, which is now closed, and is to
// be answered sessionless.
func (c *Cache) Incremental(s *Session, req, into *kmsg.FetchRequest, parts []*Partition, now time.Time) (_ []*Partition, closed bool, code int16) {
	if s == nil {
		return nil, false, kerr.FetchSessionIDNotFound.Code
	}
	var forgotten []*Partition
	defer func() {
		// Without the session's locks: retire takes them.
		if len(forgotten) > 0 {
			c.retireParts(forgotten, now)
		}
		if closed {
			c.retireSession(s, now)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != req.SessionEpoch:
		return nil, false, kerr.InvalidFetchSessionEpoch.Code
	case s.topicIDs != (req.Version >= 13):
		return nil, false, kerr.FetchSessionTopicIDError.Code
	}
	s.passes++
	named := len(parts)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			k := s.key(rt.TopicID, rt.Topic, rp.Partition)
			p := s.index[k]
			if p == nil {
				p = &Partition{Key: k, highWatermark: -1, logStartOffset: -1, s: s}
				s.index[k] = p
				s.parts = append(s.parts, p)
			}
			p.set(rp)
			if p.pass != s.passes {
				p.pass = s.passes
				parts = append(parts, p)
			}
		}
	}
	if len(req.ForgottenTopics) > 0 {
		for _, ft := range req.ForgottenTopics {
			for _, pn := range ft.Partitions {
				k := s.key(ft.TopicID, ft.Topic, pn)
				if p := s.index[k]; p != nil {
					delete(s.index, k)
					forgotten = append(forgotten, p)
				}
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
		listed := parts[:named]
		for _, p := range parts[named:] {
			if s.index[p.Key] == p {
				listed = append(listed, p)
			}
		}
		clear(parts[len(listed):])
		parts = listed
	}
	c.mu.Lock()
	if c.sessions[s.id] != s {
		// Closed or evicted while this request was applied.
		c.mu.Unlock()
		return nil, false, kerr.FetchSessionIDNotFound.Code
	}
	if len(s.parts) == 0 {
		c.removeLocked(s)
		c.mu.Unlock()
		closed = true
		return nil, true, 0
	}
	c.parts += len(s.parts) - s.cachedLen
	s.cachedLen = len(s.parts)
	s.lastUsed = now
	c.mu.Unlock()
	s.epoch = NextEpoch(s.epoch)
	// The changed partitions first, then those the request names (which
	// it read last time and advanced past): a response's byte limit does
	// not keep serving the same partitions first, as Kafka's session
	// order does not.
	byName := len(parts) // parts[named:byName] are named
	if c.Stamp != nil {
		if st := c.Stamp(req); st != s.stamp {
			s.stamp = st
			for _, p := range s.parts {
				s.mark(p, false)
			}
		}
	}
	parts, _ = s.takeChangedLocked(parts)
	slices.Reverse(parts[named:byName])
	slices.Reverse(parts[byName:])
	slices.Reverse(parts[named:])
	s.expand(into, parts[named:])
	return parts, false, 0
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
		parts: make([]*Partition, 0, n), index: make(map[Key]*Partition, n), wake: make(chan struct{}, 1)}
	s.lastFetch.Store(now.UnixNano())
	if c.Stamp != nil {
		s.stamp = c.Stamp(req)
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			p := &Partition{Key: s.key(rt.TopicID, rt.Topic, rp.Partition), highWatermark: -1, logStartOffset: -1, s: s}
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
	// Every partition is read by the first incremental request, which
	// starts watching them: a change between this request's read and
	// that is not missed.
	s.dirty = slices.Clone(s.parts)
	for _, p := range s.parts {
		p.dirty = true
	}
	var evicted []*Session
	defer func() {
		for _, v := range evicted {
			c.retireSession(v, now)
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 {
		return nil
	}
	for len(c.sessions) >= c.max {
		v := c.evictForLocked(s, now)
		if v == nil {
			return nil
		}
		evicted = append(evicted, v)
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
// it is worth less than s, and returns it (nil for none), to be retired.
// c.mu is held.
func (c *Cache) evictForLocked(s *Session, now time.Time) *Session {
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
		return nil
	}
	c.removeLocked(victim)
	c.evictions++
	return victim
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
// request Incremental rewrote), the ones with records, an error, a
// preferred read replica or a high watermark or log start offset the
// client has not heard. read tells whether the answer of parts[i] has
// records, and whether it must be read again by the next request although
// its log does not change (it has more to read than the answer held). It
// records what the selected partitions say; those with an error, a
// preferred read replica or more to read stay marked changed, read first
// by the next request. keep is called with each selected partition's
// place in resp; the selected partitions are returned.
func (s *Session) Answer(parts []*Partition, resp *kmsg.FetchResponse, read func(i int) (records, again bool), keep func(ti, pi int)) []*Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept []*Partition
	i := 0
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			if i >= len(parts) {
				return kept
			}
			p, sp := parts[i], &rt.Partitions[pi]
			records, again := read(i)
			i++
			if again || sp.ErrorCode != 0 || sp.PreferredReadReplica >= 0 {
				s.mark(p, false)
			}
			must := records || sp.ErrorCode != 0 || sp.PreferredReadReplica >= 0 ||
				sp.HighWatermark != p.highWatermark || sp.LogStartOffset != p.logStartOffset
			if !must {
				continue
			}
			p.heard(sp)
			keep(ti, pi)
			kept = append(kept, p)
		}
	}
	return kept
}

// Unheard forgets what an answer selected by Answer told the client of
// parts, when that answer is not sent (a throttled client gets an empty
// answer): they are read and included again in the next one.
func (s *Session) Unheard(parts []*Partition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		p.highWatermark = -1
		s.mark(p, false)
	}
}
