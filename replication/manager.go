package replication

import (
	"sync"
)

// Fetchers keeps one Fetcher per leader broker and moves partitions between
// them as leadership changes.
type Fetchers struct {
	cfg FetcherConfig

	mu       sync.Mutex
	byLeader map[int32]*Fetcher
	where    map[TP]int32 // partition -> leader it is followed on
}

// NewFetchers returns an empty set of fetchers.
func NewFetchers(cfg FetcherConfig) *Fetchers {
	cfg.defaults()
	return &Fetchers{cfg: cfg, byLeader: map[int32]*Fetcher{}, where: map[TP]int32{}}
}

// Follow makes tp follow leader (at addr) in leaderEpoch, first truncating
// its log to where it agrees with that leader. A partition followed
// elsewhere is moved.
func (m *Fetchers) Follow(tp TP, topicID [16]byte, log FollowerLog, leader int32, addr string, leaderEpoch int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unfollowLocked(tp)
	f := m.byLeader[leader]
	if f != nil && f.addr != addr {
		f.Close()
		delete(m.byLeader, leader)
		for p, l := range m.where {
			if l == leader {
				delete(m.where, p)
			}
		}
		f = nil
	}
	if f == nil {
		var err error
		if f, err = NewFetcher(m.cfg, leader, addr); err != nil {
			return err
		}
		m.byLeader[leader] = f
	}
	f.Add(tp, topicID, log, leaderEpoch)
	m.where[tp] = leader
	return nil
}

// Unfollow stops replicating tp. When it returns, no fetcher appends to its
// log any more.
func (m *Fetchers) Unfollow(tp TP) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unfollowLocked(tp)
}

func (m *Fetchers) unfollowLocked(tp TP) {
	leader, ok := m.where[tp]
	if !ok {
		return
	}
	delete(m.where, tp)
	f := m.byLeader[leader]
	if f == nil {
		return
	}
	f.Remove(tp)
	if f.Len() == 0 {
		delete(m.byLeader, leader)
		go f.Close() // its last request may take up to its max wait
	}
}

// Following returns the leader tp is followed on.
func (m *Fetchers) Following(tp TP) (int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.where[tp]
	return l, ok
}

// Close stops every fetcher.
func (m *Fetchers) Close() {
	m.mu.Lock()
	fs := m.byLeader
	m.byLeader = map[int32]*Fetcher{}
	m.where = map[TP]int32{}
	m.mu.Unlock()
	for _, f := range fs {
		f.Close()
	}
}
