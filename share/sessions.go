package share

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share session epochs of ShareFetch and ShareAcknowledge (Kafka's
// ShareRequestMetadata.INITIAL_EPOCH and FINAL_EPOCH).
const (
	InitialEpoch int32 = 0  // opens a session, replacing the member's
	FinalEpoch   int32 = -1 // closes the session
)

// NextEpoch returns the epoch after epoch: one more, wrapping to 1 (never
// to InitialEpoch or FinalEpoch), as Kafka's ShareRequestMetadata.nextEpoch.
func NextEpoch(epoch int32) int32 {
	if epoch++; epoch <= 0 {
		return 1
	}
	return epoch
}

// SessionKey names a member's share session on this broker.
type SessionKey struct{ Group, Member string }

// session is one member's share session: the epoch its next request must
// carry, the partitions it fetches and the connection that opened it.
type session struct {
	epoch int32
	parts []TopicIDPartition // in the order added
	owner any                // nil: none
}

func (s *session) add(tp TopicIDPartition) {
	if !slices.Contains(s.parts, tp) {
		s.parts = append(s.parts, tp)
	}
}

func (s *session) forget(tp TopicIDPartition) {
	s.parts = slices.DeleteFunc(s.parts, func(x TopicIDPartition) bool { return x == tp })
}

// Sessions is a broker's share sessions (Kafka's ShareSessionCache), one
// per (group, member), at most group.share.max.share.sessions. Closing a
// session releases the records its member acquired, in the Cache it was
// made with; a member opening a new session keeps them.
type Sessions struct {
	cache *Cache

	mu       sync.Mutex // guards sessions and owned; Cache.mu is never taken inside it
	sessions map[SessionKey]*session
	owned    map[any][]SessionKey // the sessions each owner opened (some since closed or reopened elsewhere)
}

// NewSessions returns a broker's share sessions, whose members' records
// are in cache.
func NewSessions(cache *Cache) *Sessions {
	return &Sessions{cache: cache, sessions: map[SessionKey]*session{}, owned: map[any][]SessionKey{}}
}

// Len returns the number of open sessions.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// step checks a request's session epoch against k's session and moves the
// session on, with s.mu held: InitialEpoch opens a session (when canOpen),
// replacing the one k had, FinalEpoch removes it, any other epoch must be
// its current one and moves it to the next. A replaced session's member
// keeps what it acquired (Kafka 4.4 does not release it either: measured
// by make conformance); it can acknowledge it in the new session.
// It returns the session or a top-level error code.
func (s *Sessions) step(owner any, k SessionKey, epoch int32, canOpen bool) (*session, int16) {
	cur := s.sessions[k]
	switch {
	case epoch == InitialEpoch:
		if !canOpen {
			return nil, kerr.InvalidShareSessionEpoch.Code
		}
		if cur == nil && int64(len(s.sessions)) >= s.cache.settings.BrokerInt("group.share.max.share.sessions") {
			return nil, kerr.ShareSessionLimitReached.Code
		}
		cur = &session{epoch: NextEpoch(InitialEpoch), owner: owner}
		s.sessions[k] = cur
		if owner != nil && !slices.Contains(s.owned[owner], k) {
			s.owned[owner] = append(s.owned[owner], k)
		}
		return cur, 0
	case cur == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case epoch == FinalEpoch:
		delete(s.sessions, k)
		return cur, 0
	case epoch != cur.epoch:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	cur.epoch = NextEpoch(cur.epoch)
	return cur, 0
}

// Fetch steps k's session for a ShareFetch at epoch, opened (at
// InitialEpoch) by owner, a comparable handle of the connection (nil: no
// connection), and returns the partitions to fetch: the session's, after
// adding add and then removing forget, in the order added; none when
// epoch is FinalEpoch, which closes the session (the caller releases the
// member's records after its acknowledgements). It answers
// INVALID_SHARE_SESSION_EPOCH for an epoch that is not the session's,
// SHARE_SESSION_NOT_FOUND for an epoch other than InitialEpoch without a
// session and SHARE_SESSION_LIMIT_REACHED for a new session beyond
// group.share.max.share.sessions.
func (s *Sessions) Fetch(owner any, k SessionKey, epoch int32, add, forget []TopicIDPartition) ([]TopicIDPartition, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, code := s.step(owner, k, epoch, true)
	if code != 0 || epoch == FinalEpoch {
		return nil, code
	}
	for _, tp := range add {
		cur.add(tp)
	}
	for _, tp := range forget {
		cur.forget(tp)
	}
	return slices.Clone(cur.parts), 0
}

// Acknowledge steps k's session for a ShareAcknowledge at epoch, which
// cannot open one: InitialEpoch answers INVALID_SHARE_SESSION_EPOCH;
// otherwise as Fetch.
func (s *Sessions) Acknowledge(owner any, k SessionKey, epoch int32) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, code := s.step(owner, k, epoch, false)
	return code
}

// Close closes the sessions owner opened, which has closed, and releases
// what their members acquired on this broker, as Kafka does when a share
// consumer's connection drops (KAFKA-19015). A session its member has
// since reopened on another connection is not owner's any more and stays.
func (s *Sessions) Close(owner any) {
	if owner == nil {
		return
	}
	s.mu.Lock()
	keys := s.owned[owner]
	delete(s.owned, owner)
	var gone []SessionKey
	for _, k := range keys {
		if cur := s.sessions[k]; cur != nil && cur.owner == owner {
			delete(s.sessions, k)
			gone = append(gone, k)
		}
	}
	s.mu.Unlock()
	for _, k := range gone {
		s.cache.ReleaseMember(k.Group, k.Member)
	}
}

// MemberLeft releases what member acquired in group on this broker and
// closes its session: it left the group or was fenced (the group
// coordinator's OnShareMemberLeave).
func (s *Sessions) MemberLeft(group, member string) {
	s.cache.ReleaseMember(group, member)
	s.mu.Lock()
	delete(s.sessions, SessionKey{group, member})
	s.mu.Unlock()
}

// GroupDeleted removes group's share-partitions (Cache.Delete of every
// topic) and closes its sessions: the group was deleted.
func (s *Sessions) GroupDeleted(group string) {
	s.cache.Delete(group, nil)
	s.mu.Lock()
	for k := range s.sessions {
		if k.Group == group {
			delete(s.sessions, k)
		}
	}
	s.mu.Unlock()
}
