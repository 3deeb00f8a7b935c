package replication

import (
	"slices"
	"testing"
	"time"
)

// memLog is a LeaderLog with a settable log end offset.
type memLog struct{ leo, hw int64 }

func (m *memLog) LogEndOffset() int64  { return m.leo }
func (m *memLog) HighWatermark() int64 { return m.hw }
func (m *memLog) SetHighWatermark(hw int64) error {
	if hw > m.hw && hw <= m.leo {
		m.hw = hw
	}
	return nil
}

func allLive(int32) bool { return true }

func TestLeader_HighWatermarkIsMinimumOverISR(t *testing.T) {
	now := time.Unix(1000, 0)
	log := &memLog{leo: 10}
	l := NewLeader(1, log, State{LeaderEpoch: 3, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 10, now)
	l.MaybeAdvanceHighWatermark()
	if log.hw != 0 {
		t.Fatalf("hw moved to %d before any follower fetched", log.hw)
	}
	l.FollowerFetched(2, 10, now)
	if log.hw != 0 {
		t.Fatalf("hw %d with follower 3 unheard", log.hw)
	}
	l.FollowerFetched(3, 6, now)
	if log.hw != 6 {
		t.Fatalf("hw = %d, want 6", log.hw)
	}
	l.FollowerFetched(3, 10, now)
	if log.hw != 10 {
		t.Fatalf("hw = %d, want 10", log.hw)
	}
	// Appends move the leader's end; the followers hold the hw.
	log.leo = 15
	l.MaybeAdvanceHighWatermark()
	if log.hw != 10 {
		t.Fatalf("hw = %d after append, want 10", log.hw)
	}
	// With the leader alone in the ISR the append itself moves it.
	l.Update(State{LeaderEpoch: 3, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}, now)
	if log.hw != 15 {
		t.Fatalf("hw = %d with ISR {1}, want 15", log.hw)
	}
}

func TestLeader_ShrinkAndExpandISR(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 10 * time.Second
	log := &memLog{leo: 100}
	l := NewLeader(1, log, State{LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 100, now)
	if _, ok := l.CheckISR(now.Add(lag), lag, allLive); ok {
		t.Fatal("proposed a change at exactly the lag limit")
	}
	// Follower 2 keeps up, 3 never fetches.
	l.FollowerFetched(2, 100, now.Add(5*time.Second))
	ch, ok := l.CheckISR(now.Add(lag+time.Second), lag, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 2}) || ch.PartitionEpoch != 1 || ch.LeaderEpoch != 1 {
		t.Fatalf("shrink = %+v %v, want ISR [1 2] at epochs 1/1", ch, ok)
	}
	l.Proposed(ch)
	if _, ok := l.CheckISR(now.Add(lag+time.Second), lag, allLive); ok {
		t.Fatal("proposed again while a proposal is in flight")
	}
	l.Update(State{LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, now.Add(lag+time.Second))
	// HW counts only 1 and 2 now.
	l.FollowerFetched(2, 100, now.Add(lag+2*time.Second))
	if log.hw != 100 {
		t.Fatalf("hw = %d, want 100", log.hw)
	}
	// 3 comes back behind: not added until it reaches the hw.
	t3 := now.Add(lag + 3*time.Second)
	l.FollowerFetched(3, 50, t3)
	if ch, ok := l.CheckISR(t3, lag, allLive); ok {
		t.Fatalf("added a follower below the hw: %+v", ch)
	}
	l.FollowerFetched(3, 100, t3.Add(time.Second))
	if _, ok := l.CheckISR(t3.Add(time.Second), lag, func(id int32) bool { return id != 3 }); ok {
		t.Fatal("added a broker that is not live")
	}
	ch, ok = l.CheckISR(t3.Add(time.Second), lag, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 2, 3}) || ch.PartitionEpoch != 2 {
		t.Fatalf("expand = %+v %v, want [1 2 3] at partition epoch 2", ch, ok)
	}
}

func TestLeader_MaximalISRHoldsTheHighWatermark(t *testing.T) {
	now := time.Unix(1000, 0)
	log := &memLog{leo: 20}
	l := NewLeader(1, log, State{LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}, 0, now)
	l.FollowerFetched(2, 20, now)
	if log.hw != 20 {
		t.Fatalf("hw = %d, want 20", log.hw)
	}
	ch, ok := l.CheckISR(now, time.Second, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 2}) {
		t.Fatalf("expand = %+v %v", ch, ok)
	}
	l.Proposed(ch)
	log.leo = 30
	l.MaybeAdvanceHighWatermark()
	if log.hw != 20 {
		t.Fatalf("hw = %d while adding 2 (at 20) is in flight, want 20", log.hw)
	}
	l.ProposalFailed()
	l.MaybeAdvanceHighWatermark()
	if log.hw != 30 {
		t.Fatalf("hw = %d after the proposal failed, want 30", log.hw)
	}
}

func TestLeader_CaughtUpTimeFollowsKafkasRule(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 10 * time.Second
	log := &memLog{leo: 10}
	l := NewLeader(1, log, State{LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, now)
	// A follower that always fetches what the leader had at its previous
	// fetch is caught up as of that previous fetch, even if the leader
	// keeps appending.
	for i := 1; i <= 30; i++ {
		at := now.Add(time.Duration(i) * time.Second)
		l.FollowerFetched(2, log.leo, at)
		log.leo += 5
	}
	if ch, ok := l.CheckISR(now.Add(31*time.Second), lag, allLive); ok {
		t.Fatalf("a follower keeping pace was removed: %+v", ch)
	}
	// One that stops advancing falls out after lag.
	stuck := log.leo - 5
	for i := 31; i <= 45; i++ {
		l.FollowerFetched(2, stuck, now.Add(time.Duration(i)*time.Second))
		log.leo += 5
	}
	if _, ok := l.CheckISR(now.Add(45*time.Second), lag, allLive); !ok {
		t.Fatal("a stuck follower was kept in the ISR")
	}
}

// TestLeader_ReassignmentAddsReplica: a replica a reassignment adds is
// tracked from the Update that lists it and proposed for the ISR once it
// reaches the high watermark; a member outside the replicas is never
// proposed.
func TestLeader_ReassignmentAddsReplica(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 10 * time.Second
	log := &memLog{leo: 40}
	l := NewLeader(1, log, State{LeaderEpoch: 2, PartitionEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, now)
	l.FollowerFetched(2, 40, now)
	if l.IsReplica(3) {
		t.Fatal("3 is a replica before the reassignment")
	}
	// The reassignment [1 2] -> [2 3]: replicas [2 3 1], 3 adding.
	l.Update(State{LeaderEpoch: 2, PartitionEpoch: 5, Replicas: []int32{2, 3, 1}, ISR: []int32{1, 2}}, now)
	if !l.IsReplica(3) {
		t.Fatal("3 not tracked after the reassignment")
	}
	l.FollowerFetched(3, 10, now.Add(time.Second))
	if ch, ok := l.CheckISR(now.Add(time.Second), lag, allLive); ok {
		t.Fatalf("proposed %+v with 3 behind", ch)
	}
	if log.hw != 40 {
		t.Fatalf("hw = %d: the adding replica held it back", log.hw)
	}
	l.FollowerFetched(3, 40, now.Add(2*time.Second))
	ch, ok := l.CheckISR(now.Add(2*time.Second), lag, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 2, 3}) || ch.PartitionEpoch != 5 {
		t.Fatalf("expand = %+v %v, want [1 2 3] at partition epoch 5", ch, ok)
	}
	// A state whose ISR names a broker outside the replicas (never written
	// by the controller, but the leader must not echo it).
	l.Update(State{LeaderEpoch: 2, PartitionEpoch: 6, Replicas: []int32{1, 3}, ISR: []int32{1, 2, 3}}, now.Add(3*time.Second))
	if l.IsReplica(2) {
		t.Fatal("2 still tracked after leaving the replicas")
	}
	l.FollowerFetched(3, 40, now.Add(3*time.Second))
	ch, ok = l.CheckISR(now.Add(3*time.Second), lag, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 3}) {
		t.Fatalf("proposed %+v %v, want [1 3]", ch, ok)
	}
}

// TestLeader_FetchedReportsARejoinOnce: Fetched reports that a follower
// out of the ISR may rejoin only once it has caught up (its log end offset
// at the high watermark), and not while the change is proposed; a follower
// in the ISR or still behind is never reported, so the broker does not look
// for ISR changes on every fetch of a follower catching up.
func TestLeader_FetchedReportsARejoinOnce(t *testing.T) {
	now := time.Unix(1000, 0)
	log := &memLog{leo: 100, hw: 100}
	l := NewLeader(1, log, State{LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, 0, now)
	if ok, rejoin := l.Fetched(2, 100, -1, now, nil); !ok || rejoin {
		t.Fatalf("in-ISR follower: replica %v rejoin %v, want true false", ok, rejoin)
	}
	if ok, rejoin := l.Fetched(3, 50, -1, now, nil); !ok || rejoin {
		t.Fatalf("follower behind: replica %v rejoin %v, want true false", ok, rejoin)
	}
	if ok, rejoin := l.Fetched(4, 100, -1, now, nil); ok || rejoin {
		t.Fatalf("not a replica: replica %v rejoin %v, want false false", ok, rejoin)
	}
	if _, rejoin := l.Fetched(3, 100, -1, now, nil); !rejoin {
		t.Fatal("caught-up follower out of the ISR not reported")
	}
	ch, ok := l.CheckISR(now, time.Minute, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 2, 3}) {
		t.Fatalf("expand = %+v %v", ch, ok)
	}
	l.Proposed(ch)
	if _, rejoin := l.Fetched(3, 100, -1, now, nil); rejoin {
		t.Fatal("reported again while the change is proposed")
	}
	l.ProposalFailed()
	if _, rejoin := l.Fetched(3, 100, -1, now, nil); !rejoin {
		t.Fatal("not reported after the proposal failed")
	}
}

// clock is a follower's fetch session as a partition sees it.
type clock struct{ t time.Time }

func (c *clock) LastFetch() time.Time { return c.t }

// TestLeader_SessionFetchesCountBetweenVisits: a follower whose fetch
// session holds an idle partition is not visited by the session's fetches
// (the broker reads only changed partitions), yet each of those fetches
// keeps it caught up, as Kafka's leader sees every fetch: it stays in the
// ISR for as long as the session fetches, however long the partition is
// idle; it leaves once the session stops (lastFetch frozen), and when it
// stays behind an append.
func TestLeader_SessionFetchesCountBetweenVisits(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 30 * time.Second
	log := &memLog{leo: 100, hw: 100}
	l := NewLeader(1, log, State{LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 0, now)
	s2, s3 := &clock{now}, &clock{now}
	l.Fetched(2, 100, -1, now, s2)
	l.Fetched(3, 100, -1, now, s3)
	// Two idle minutes: follower 2's session keeps fetching, 3's stopped
	// after 10 s.
	s2.t = now.Add(2 * time.Minute)
	s3.t = now.Add(10 * time.Second)
	at := now.Add(2*time.Minute + 500*time.Millisecond)
	ch, ok := l.CheckISR(at, lag, allLive)
	if !ok || !slices.Equal(ch.ISR, []int32{1, 2}) {
		t.Fatalf("after two idle minutes: change %+v %v, want ISR [1 2]", ch, ok)
	}
	for _, f := range l.Followers() {
		if want := map[int32]time.Time{2: s2.t, 3: s3.t}[f.Replica]; !f.LastCaughtUp.Equal(want) {
			t.Errorf("follower %d last caught up %v, want %v", f.Replica, f.LastCaughtUp, want)
		}
	}
	// An append; follower 2's next fetch visits the partition, still at
	// 100 (Kafka's rule: caught up as of its fetch before, the last idle
	// one), and then stays behind: it leaves lag after that fetch.
	log.leo = 110
	visit := at.Add(200 * time.Millisecond)
	l.Fetched(2, 100, -1, visit, s2)
	s2.t = visit
	if got := l.Followers()[0]; got.Replica == 2 && !got.LastCaughtUp.Equal(now.Add(2*time.Minute)) {
		t.Fatalf("after the visit behind the append: last caught up %v, want %v", got.LastCaughtUp, now.Add(2*time.Minute))
	}
	s2.t = visit.Add(lag) // fetching on, at 100, every fetch visiting it
	l.Fetched(2, 100, -1, visit.Add(lag), s2)
	if ch, ok := l.CheckISR(visit.Add(lag), lag, allLive); !ok || slices.Contains(ch.ISR, 2) {
		t.Fatalf("a follower behind for longer than the lag stayed: %+v %v", ch, ok)
	}
}
