package replication

import (
	"slices"
	"sync"
	"time"
)

// LeaderLog is what a Leader needs of its partition's log.
type LeaderLog interface {
	LogEndOffset() int64
	HighWatermark() int64
	// SetHighWatermark moves the high watermark forward (never back) to
	// at most the log end offset.
	SetHighWatermark(hw int64) error
}

// State is a partition's replication state as the cluster metadata holds
// it.
type State struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
}

// ISRChange is a proposed ISR for the partition, to be written with a
// compare-and-set on LeaderEpoch and PartitionEpoch.
type ISRChange struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// Leader is the leader-side state of one partition in one leader epoch.
type Leader struct {
	self             int32
	log              LeaderLog
	epochStartOffset int64 // log end offset when this epoch began

	mu        sync.Mutex
	state     State
	pending   []int32 // the ISR of an in-flight AlterPartition, nil if none
	followers map[int32]*replicaState
}

// replicaState is what the leader knows of one follower.
type replicaState struct {
	leo                int64 // the follower's log end offset: its last fetch offset
	logStartOffset     int64 // the follower's log start offset, -1 if unknown
	lastCaughtUp       time.Time
	lastFetch          time.Time
	lastFetchLeaderLEO int64
	// session is the follower's fetch session that holds the partition,
	// nil if its fetches are not in one.
	session FetchClock
}

// A FetchClock is a follower's fetch session as one partition of it sees
// it: the time of the session's last fetch while the partition was in it.
// A session's fetch that does not name the partition fetches it at the
// position it named last, and a leader does not visit it: the partition is
// visited (Fetched) when the follower's position or the leader's log
// changed. Between visits the leader counts every fetch of the session at
// the follower's last position, as Kafka's leader does each fetch: caught
// up at each when that position was the log end offset.
type FetchClock interface {
	LastFetch() time.Time
}

// NewLeader starts tracking a partition this broker has just become the
// leader of. epochStartOffset is the log end offset at which its epoch
// begins. Every follower counts as caught up at now, so that a follower
// already in the ISR gets replica.lag.time.max.ms to show itself.
func NewLeader(self int32, log LeaderLog, st State, epochStartOffset int64, now time.Time) *Leader {
	l := &Leader{self: self, log: log, epochStartOffset: epochStartOffset, followers: map[int32]*replicaState{}}
	l.state = cloneState(st)
	for _, r := range st.Replicas {
		if r != self {
			l.followers[r] = &replicaState{leo: -1, logStartOffset: -1, lastCaughtUp: now, lastFetch: now}
		}
	}
	return l
}

func cloneState(st State) State {
	st.Replicas = slices.Clone(st.Replicas)
	st.ISR = slices.Clone(st.ISR)
	return st
}

// LeaderEpoch is the epoch this Leader serves.
func (l *Leader) LeaderEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.LeaderEpoch
}

// EpochStartOffset is the log end offset at which this leader epoch began.
// Until the high watermark reaches it, the leader cannot tell that its
// high watermark is not behind the previous leader's (KIP-207).
func (l *Leader) EpochStartOffset() int64 { return l.epochStartOffset }

// State returns the partition state the Leader applies.
func (l *Leader) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cloneState(l.state)
}

// ISRSize is the number of replicas in the committed ISR.
func (l *Leader) ISRSize() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.state.ISR)
}

// Update applies a newer state of the partition from the metadata, in the
// same leader epoch (a new epoch gets a new Leader). An in-flight proposal
// that the metadata now shows, or that a newer partition epoch overtook,
// is no longer pending.
func (l *Leader) Update(st State, now time.Time) {
	l.mu.Lock()
	if st.PartitionEpoch < l.state.PartitionEpoch {
		l.mu.Unlock()
		return
	}
	l.state = cloneState(st)
	l.pending = nil
	for _, r := range st.Replicas {
		if r != l.self && l.followers[r] == nil {
			l.followers[r] = &replicaState{leo: -1, logStartOffset: -1, lastCaughtUp: now, lastFetch: now}
		}
	}
	for r := range l.followers {
		if !slices.Contains(st.Replicas, r) {
			delete(l.followers, r)
		}
	}
	l.mu.Unlock()
	l.MaybeAdvanceHighWatermark()
}

// Proposed records that an AlterPartition for change is in flight: until
// the metadata answers, the high watermark counts the union of the old and
// the proposed ISR (the maximal ISR).
func (l *Leader) Proposed(change ISRChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if change.PartitionEpoch == l.state.PartitionEpoch {
		l.pending = slices.Clone(change.ISR)
	}
}

// ProposalFailed forgets an in-flight proposal that was rejected. The
// maximal ISR shrinks back to the committed one, which may let the high
// watermark move.
func (l *Leader) ProposalFailed() {
	l.mu.Lock()
	l.pending = nil
	l.mu.Unlock()
	l.MaybeAdvanceHighWatermark()
}

// IsReplica reports whether id is one of the partition's followers.
func (l *Leader) IsReplica(id int32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.followers[id] != nil
}

// FollowerFetched records a Fetch from follower id at fetchOffset (its log
// end offset), and moves the high watermark if that allows it.
func (l *Leader) FollowerFetched(id int32, fetchOffset int64, now time.Time) {
	l.mu.Lock()
	f := l.followers[id]
	var grew bool
	if f != nil {
		grew = l.fetchedLocked(f, fetchOffset, now, nil)
	}
	l.mu.Unlock()
	if grew {
		l.MaybeAdvanceHighWatermark()
	}
}

// Fetched is what a follower's Fetch does for each partition, in one
// step: it records the follower's fetch offset (its log end offset) and
// log start offset (-1 when its Fetch version has none) and moves the high
// watermark when the follower's log end offset grew. It reports whether
// id is a follower of the partition and whether it may rejoin the ISR
// now: out of the committed ISR, caught up (CheckISR's test but for the
// broker being live), and no change proposed yet. A follower still
// catching up is not reported, so that the broker looks for ISR changes
// once per partition that can make one, not on every fetch of thousands
// of partitions after a restart. session is the follower's fetch session
// holding the partition (nil for none): its fetches in between that do
// not visit the partition count as fetches at this fetchOffset.
func (l *Leader) Fetched(id int32, fetchOffset, logStartOffset int64, now time.Time, session FetchClock) (replica, rejoin bool) {
	hw := l.log.HighWatermark()
	l.mu.Lock()
	f := l.followers[id]
	if f == nil {
		l.mu.Unlock()
		return false, false
	}
	f.logStartOffset = logStartOffset
	grew := l.fetchedLocked(f, fetchOffset, now, session)
	rejoin = l.pending == nil && !slices.Contains(l.state.ISR, id) && l.caughtUpLocked(f, hw)
	l.mu.Unlock()
	if grew {
		l.MaybeAdvanceHighWatermark()
	}
	return true, rejoin
}

// caughtUpLocked reports whether follower f has reached the high
// watermark hw and the start of this leader's epoch, as a follower
// joining the ISR must (Kafka's isFollowerInSync). l.mu is held.
func (l *Leader) caughtUpLocked(f *replicaState, hw int64) bool {
	return f.leo >= hw && f.leo >= l.epochStartOffset
}

// lastCaughtUpLocked is when f was last caught up, its session's fetches
// since its last visit included: each fetched at f.leo, caught up when
// f.leo had reached the log end offset of the last visit. (An append since
// then visits the partition at the session's next fetch, so at most one
// of those fetches came after it, and Kafka's rule below would count that
// one as caught up at the fetch before it.) l.mu is held.
func (l *Leader) lastCaughtUpLocked(f *replicaState) time.Time {
	t := f.lastCaughtUp
	if f.session != nil && f.leo >= f.lastFetchLeaderLEO {
		if s := f.session.LastFetch(); s.After(t) {
			t = s
		}
	}
	return t
}

// fetchedLocked records a fetch of f at fetchOffset, in session (nil for
// none), and reports whether f's log end offset grew, the only way a fetch
// can move the high watermark. l.mu is held.
func (l *Leader) fetchedLocked(f *replicaState, fetchOffset int64, now time.Time, session FetchClock) bool {
	if f.session != nil {
		// The session's fetches since the last visit, at f.leo while the
		// log end offset was f.lastFetchLeaderLEO (Kafka's rule below,
		// applied to the latest of them).
		if t := f.session.LastFetch(); t.After(f.lastFetch) && t.Before(now) {
			if f.leo >= f.lastFetchLeaderLEO {
				f.lastCaughtUp = t
			}
			f.lastFetch = t
		}
	}
	f.session = session
	leo := l.log.LogEndOffset()
	grew := fetchOffset > f.leo
	f.leo = fetchOffset
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = now
	case fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = f.lastFetch
	}
	f.lastFetch, f.lastFetchLeaderLEO = now, leo
	return grew
}

// FollowerLogStartOffset records the log start offset follower id sent in
// its Fetch (-1 when its Fetch version has none), which ReadReplicas uses.
func (l *Leader) FollowerLogStartOffset(id int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.followers[id]; f != nil {
		f.logStartOffset = offset
	}
}

// ReadReplica is a follower that could serve a consumer's Fetch (KIP-392).
type ReadReplica struct {
	Replica      int32
	LogEndOffset int64
	LastCaughtUp time.Time
}

// ReadReplicas lists the followers that could serve a consumer fetching
// from fetchOffset, as Kafka's ReplicaManager.findPreferredReadReplica
// chooses them: those in the committed ISR whose log holds fetchOffset
// (log start offset at most fetchOffset, log end offset at least
// fetchOffset). A follower out of the ISR may lag without bound, so it is
// never offered.
func (l *Leader) ReadReplicas(fetchOffset int64) []ReadReplica {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ReadReplica
	for _, r := range l.state.ISR {
		f := l.followers[r]
		if r == l.self || f == nil || f.leo < fetchOffset || f.logStartOffset > fetchOffset {
			continue
		}
		out = append(out, ReadReplica{Replica: r, LogEndOffset: f.leo, LastCaughtUp: l.lastCaughtUpLocked(f)})
	}
	return out
}

// MaybeAdvanceHighWatermark moves the high watermark to the smallest log
// end offset over the maximal ISR. Call it after an append too: with the
// leader alone in the ISR, the append itself moves it.
func (l *Leader) MaybeAdvanceHighWatermark() {
	hw := l.log.LogEndOffset()
	l.mu.Lock()
	for _, r := range l.maximalISRLocked() {
		if r == l.self {
			continue
		}
		f := l.followers[r]
		if f == nil || f.leo < 0 {
			hw = -1 // an ISR member we have not heard from yet holds it back
			break
		}
		hw = min(hw, f.leo)
	}
	l.mu.Unlock()
	if hw > l.log.HighWatermark() {
		// A failure here is the log's own (closed, or an I/O error it
		// keeps); the high watermark simply does not move.
		_ = l.log.SetHighWatermark(hw)
	}
}

// maximalISRLocked is the committed ISR plus the members an in-flight
// proposal adds. Lock should be held.
func (l *Leader) maximalISRLocked() []int32 {
	if l.pending == nil {
		return l.state.ISR
	}
	out := slices.Clone(l.state.ISR)
	for _, r := range l.pending {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// CheckISR returns the ISR change the leader should propose now, if any:
// followers in the ISR that have not caught up for lagMax leave it, and
// followers out of it whose log end offset has reached the high watermark
// and the start of this leader epoch join it. Nothing is proposed while a
// proposal is in flight. live tells whether a broker is registered; only
// live brokers join. Replicas that a reassignment adds (an Update with a
// larger replica set) join the same way once caught up; the proposed ISR
// never holds a broker outside the replicas.
func (l *Leader) CheckISR(now time.Time, lagMax time.Duration, live func(int32) bool) (ISRChange, bool) {
	hw := l.log.HighWatermark()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending != nil {
		return ISRChange{}, false
	}
	var isr []int32
	changed := false
	for _, r := range l.state.ISR {
		if r != l.self && !slices.Contains(l.state.Replicas, r) {
			changed = true // never propose a member outside the replicas
			continue
		}
		if f := l.followers[r]; r != l.self && f != nil && now.Sub(l.lastCaughtUpLocked(f)) > lagMax {
			changed = true
			continue
		}
		isr = append(isr, r)
	}
	for _, r := range l.state.Replicas {
		if r == l.self || slices.Contains(l.state.ISR, r) {
			continue
		}
		f := l.followers[r]
		if f != nil && l.caughtUpLocked(f, hw) && now.Sub(l.lastCaughtUpLocked(f)) <= lagMax && live(r) {
			isr = append(isr, r)
			changed = true
		}
	}
	if !changed {
		return ISRChange{}, false
	}
	return ISRChange{LeaderEpoch: l.state.LeaderEpoch, PartitionEpoch: l.state.PartitionEpoch, ISR: isr}, true
}

// Lag describes one follower for observability.
type Lag struct {
	Replica      int32
	LogEndOffset int64 // -1: not heard from in this epoch
	InSync       bool
	LastCaughtUp time.Time
}

// Followers describes the followers.
func (l *Leader) Followers() []Lag {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Lag
	for _, r := range l.state.Replicas {
		if f := l.followers[r]; f != nil {
			out = append(out, Lag{Replica: r, LogEndOffset: f.leo, InSync: slices.Contains(l.state.ISR, r), LastCaughtUp: l.lastCaughtUpLocked(f)})
		}
	}
	return out
}
