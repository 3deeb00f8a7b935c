package coordinator

// Share-partition state (KIP-932): what a share group has delivered of one
// topic partition, kept by the partition's leader.
//
// The share-partition start offset (SPSO) is the first offset not yet done:
// every record below it is Acknowledged or Archived. Records from the SPSO
// to the end offset (one past the last record ever acquired) are in flight,
// each in one of four states:
//
//	Available    may be acquired (again) by the next ShareFetch
//	Acquired     handed to one member, locked until the acquisition lock
//	             (group.share.record.lock.duration.ms) expires
//	Acknowledged accepted by its member: done
//	Archived     rejected, a gap, or delivered delivery.count.limit times
//
// Acquiring a record increments its delivery count. A Release, an expired
// lock or the member's session closing makes it Available again, unless
// its delivery count has reached the limit: then it is Archived. Accept
// makes it Acknowledged, Reject and Gap Archived, Renew (ShareAcknowledge
// v2) restarts its lock. Whenever the records at the SPSO are done, the
// SPSO moves past them. At most MaxInFlight offsets are in flight
// (group.share.partition.max.record.locks); new records are not acquired
// beyond it.
//
// A SharePartition is safe for concurrent use. The clock is the caller's:
// every method that depends on time takes now, and locks expire lazily
// when the next call sees them due (NextExpiry tells a long poll when).
// The state lives in memory; Snapshot and RestoreSharePartition convert it
// to and from Kafka's ShareSnapshotValue, which the partition leader
// writes to the share coordinator (ShareCoordinator, __share_group_state).

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Acknowledge types of ShareFetch and ShareAcknowledge.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4 // ShareAcknowledge/ShareFetch v2 (KIP-1222)
)

// RecordState is the state of an in-flight record.
type RecordState int8

// Record states, Kafka's names.
const (
	RecordAvailable RecordState = iota
	RecordAcquired
	RecordAcknowledged
	RecordArchived
)

func (s RecordState) String() string {
	switch s {
	case RecordAvailable:
		return "Available"
	case RecordAcquired:
		return "Acquired"
	case RecordAcknowledged:
		return "Acknowledged"
	case RecordArchived:
		return "Archived"
	}
	return "Unknown"
}

// Defaults of the share-partition settings, Kafka's.
const (
	DefaultShareRecordLockDuration = 30 * time.Second // group.share.record.lock.duration.ms
	DefaultShareDeliveryCountLimit = 5                // group.share.delivery.count.limit
	DefaultSharePartitionMaxLocks  = 2000             // group.share.partition.max.record.locks
)

// SharePartitionConfig is the share group's settings for a partition.
type SharePartitionConfig struct {
	LockDuration       time.Duration
	DeliveryCountLimit int16
	MaxInFlight        int64
}

func (c SharePartitionConfig) withDefaults() SharePartitionConfig {
	if c.LockDuration <= 0 {
		c.LockDuration = DefaultShareRecordLockDuration
	}
	if c.DeliveryCountLimit <= 0 {
		c.DeliveryCountLimit = DefaultShareDeliveryCountLimit
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultSharePartitionMaxLocks
	}
	return c
}

// BatchSpan is one record batch read from the log: its first and last
// offsets, and whether its records are never delivered, only archived
// (Skip: under read_committed, an aborted transaction's batch).
type BatchSpan struct {
	First, Last int64
	Skip        bool
}

// AcquiredRange is a run of offsets acquired by one ShareFetch with the
// same delivery count.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// AckBatch is one acknowledgement batch: Types has one entry for the whole
// range, or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

type shareRecord struct {
	state      RecordState
	deliveries int16
	owner      string
	lockUntil  time.Time
}

// SharePartition is the share-partition state of one group on one
// partition; see the file comment.
type SharePartition struct {
	mu      sync.Mutex
	cfg     SharePartitionConfig
	start   int64         // SPSO
	recs    []shareRecord // recs[i] is offset start+i; end = start+len(recs)
	changed chan struct{} // closed when records become acquirable
}

// NewSharePartition returns a share partition whose SPSO is start.
func NewSharePartition(cfg SharePartitionConfig, start int64) *SharePartition {
	return &SharePartition{cfg: cfg.withDefaults(), start: start, changed: make(chan struct{})}
}

// SetConfig replaces the settings; records already acquired keep their
// locks.
func (sp *SharePartition) SetConfig(cfg SharePartitionConfig) {
	sp.mu.Lock()
	sp.cfg = cfg.withDefaults()
	sp.mu.Unlock()
}

// LockDuration is the current acquisition lock duration.
func (sp *SharePartition) LockDuration() time.Duration {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.cfg.LockDuration
}

// StartOffset returns the SPSO.
func (sp *SharePartition) StartOffset() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.start
}

// SetStartOffset moves the SPSO to off and forgets every in-flight record
// (AlterShareGroupOffsets, on a group without members).
func (sp *SharePartition) SetStartOffset(off int64) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.start, sp.recs = off, nil
	sp.signalLocked()
}

// AdvanceLogStart moves the SPSO up to logStart when the records below it
// were deleted (retention, DeleteRecords).
func (sp *SharePartition) AdvanceLogStart(logStart int64) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if logStart <= sp.start {
		return
	}
	drop := min(logStart-sp.start, int64(len(sp.recs)))
	sp.recs = sp.recs[drop:]
	sp.start = logStart
	sp.signalLocked()
}

// Changed returns a channel closed when records may have become
// acquirable: released, expired, or the in-flight window moved.
func (sp *SharePartition) Changed() <-chan struct{} {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.changed
}

func (sp *SharePartition) signalLocked() {
	close(sp.changed)
	sp.changed = make(chan struct{})
}

func (sp *SharePartition) end() int64 { return sp.start + int64(len(sp.recs)) }

// NextExpiry returns the earliest acquisition lock deadline.
func (sp *SharePartition) NextExpiry() (time.Time, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var t time.Time
	for i := range sp.recs {
		r := &sp.recs[i]
		if r.state == RecordAcquired && (t.IsZero() || r.lockUntil.Before(t)) {
			t = r.lockUntil
		}
	}
	return t, !t.IsZero()
}

// FetchOffset expires due locks and returns where the next ShareFetch
// reads the log: the first Available record, else the end offset. It
// returns false when nothing can be acquired: no record is Available and
// the in-flight window is full.
func (sp *SharePartition) FetchOffset(now time.Time) (int64, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.expireLocked(now)
	for i := range sp.recs {
		if sp.recs[i].state == RecordAvailable {
			return sp.start + int64(i), true
		}
	}
	return sp.end(), int64(len(sp.recs)) < sp.cfg.MaxInFlight
}

// Acquire acquires for member the acquirable records of batches (read from
// the log at FetchOffset, in offset order): Available ones in flight and
// new ones past the end offset, within the in-flight window. It stops at a
// batch boundary once maxRecords (if positive) are acquired, as Kafka's
// batch-optimized acquire mode does.
func (sp *SharePartition) Acquire(member string, now time.Time, batches []BatchSpan, maxRecords int) []AcquiredRange {
	return sp.acquire(member, now, batches, maxRecords, false)
}

// AcquireExact is Acquire in Kafka's record-limit acquire mode (ShareFetch
// v2 ShareAcquireMode 1): it stops at maxRecords (if positive) even inside
// a batch; the records of that batch past the limit stay Available (in
// flight) or are not yet tracked (past the end offset), for a later fetch.
func (sp *SharePartition) AcquireExact(member string, now time.Time, batches []BatchSpan, maxRecords int) []AcquiredRange {
	return sp.acquire(member, now, batches, maxRecords, true)
}

func (sp *SharePartition) acquire(member string, now time.Time, batches []BatchSpan, maxRecords int, exact bool) []AcquiredRange {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.expireLocked(now)
	lock := now.Add(sp.cfg.LockDuration)
	var out []AcquiredRange
	n := 0
	take := func(off int64, r *shareRecord) {
		r.state, r.owner, r.lockUntil = RecordAcquired, member, lock
		r.deliveries++
		n++
		if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].DeliveryCount == r.deliveries {
			out[k].Last = off
			return
		}
		out = append(out, AcquiredRange{First: off, Last: off, DeliveryCount: r.deliveries})
	}
	for _, b := range batches {
		if maxRecords > 0 && n >= maxRecords {
			break
		}
		if b.Last < sp.start {
			continue
		}
		if b.First >= sp.end() && int64(len(sp.recs)) >= sp.cfg.MaxInFlight {
			break
		}
		for off := max(b.First, sp.start); off <= b.Last; off++ {
			if exact && maxRecords > 0 && n >= maxRecords {
				break
			}
			if off < sp.end() {
				if r := &sp.recs[off-sp.start]; r.state == RecordAvailable && !b.Skip {
					take(off, r)
				}
				continue
			}
			for off > sp.end() { // offsets missing from the log: never delivered
				sp.recs = append(sp.recs, shareRecord{state: RecordArchived})
			}
			if b.Skip {
				sp.recs = append(sp.recs, shareRecord{state: RecordArchived})
				continue
			}
			sp.recs = append(sp.recs, shareRecord{})
			take(off, &sp.recs[len(sp.recs)-1])
		}
	}
	sp.advanceLocked()
	return out
}

// Acknowledge applies member's acknowledgement batches: all or none. Every
// offset must be Acquired by member (INVALID_RECORD_STATE otherwise); a
// malformed batch or an unknown type is INVALID_REQUEST, and Renew is only
// allowed with renew (ShareAcknowledge v2 IsRenewAck).
func (sp *SharePartition) Acknowledge(member string, now time.Time, batches []AckBatch, renew bool) *kerr.Error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.expireLocked(now)
	for _, b := range batches {
		if b.Last < b.First || len(b.Types) == 0 || (len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1) {
			return kerr.InvalidRequest
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && !renew) {
				return kerr.InvalidRequest
			}
		}
		if b.First < sp.start || b.Last >= sp.end() {
			return kerr.InvalidRecordState
		}
		for off := b.First; off <= b.Last; off++ {
			if r := &sp.recs[off-sp.start]; r.state != RecordAcquired || r.owner != member {
				return kerr.InvalidRecordState
			}
		}
	}
	released := false
	for _, b := range batches {
		for off := b.First; off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &sp.recs[off-sp.start]
			switch t {
			case AckAccept:
				r.state, r.owner = RecordAcknowledged, ""
			case AckGap, AckReject:
				r.state, r.owner = RecordArchived, ""
			case AckRelease:
				released = sp.releaseLocked(r) || released
			case AckRenew:
				r.lockUntil = now.Add(sp.cfg.LockDuration)
			}
		}
	}
	if sp.advanceLocked() || released {
		sp.signalLocked()
	}
	return nil
}

// ReleaseMember makes every record acquired by member Available again (or
// Archived at the delivery limit): its share session closed or it left the
// group.
func (sp *SharePartition) ReleaseMember(member string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	released := false
	for i := range sp.recs {
		if r := &sp.recs[i]; r.state == RecordAcquired && r.owner == member {
			released = sp.releaseLocked(r) || released
		}
	}
	if sp.advanceLocked() || released {
		sp.signalLocked()
	}
}

// State returns the state, delivery count and owner of the record at off;
// records below the SPSO are reported Acknowledged, past the end
// Available.
func (sp *SharePartition) State(off int64) (RecordState, int16, string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case off < sp.start:
		return RecordAcknowledged, 0, ""
	case off >= sp.end():
		return RecordAvailable, 0, ""
	}
	r := sp.recs[off-sp.start]
	return r.state, r.deliveries, r.owner
}

// InFlight returns the number of offsets between the SPSO and the end
// offset.
func (sp *SharePartition) InFlight() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return int64(len(sp.recs))
}

// releaseLocked ends r's acquisition, reporting whether it became
// Available.
//
// Lock should be held.
func (sp *SharePartition) releaseLocked(r *shareRecord) bool {
	r.owner, r.lockUntil = "", time.Time{}
	if r.deliveries >= sp.cfg.DeliveryCountLimit {
		r.state = RecordArchived
		return false
	}
	r.state = RecordAvailable
	return true
}

// expireLocked releases the records whose lock is due.
//
// Lock should be held.
func (sp *SharePartition) expireLocked(now time.Time) {
	released := false
	for i := range sp.recs {
		if r := &sp.recs[i]; r.state == RecordAcquired && !now.Before(r.lockUntil) {
			released = sp.releaseLocked(r) || released
		}
	}
	if sp.advanceLocked() || released {
		sp.signalLocked()
	}
}

// advanceLocked moves the SPSO past the done records at its head,
// reporting whether it moved.
//
// Lock should be held.
func (sp *SharePartition) advanceLocked() bool {
	i := 0
	for i < len(sp.recs) && (sp.recs[i].state == RecordAcknowledged || sp.recs[i].state == RecordArchived) {
		i++
	}
	if i == 0 {
		return false
	}
	sp.start += int64(i)
	sp.recs = slices.Delete(sp.recs, 0, i)
	return true
}

// Snapshot returns the state to persist: the SPSO and the in-flight
// records in runs of one state and delivery count. Acquired records are
// written as Available with their delivery count (a restarted leader
// delivers them again, counting the earlier delivery), as Kafka does.
func (sp *SharePartition) Snapshot() ShareSnapshot {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	s := ShareSnapshot{StartOffset: sp.start, StateBatches: []ShareStateBatch{}}
	for i, r := range sp.recs {
		st := shareStateAvailable
		switch r.state {
		case RecordAcknowledged:
			st = shareStateAcknowledged
			s.DeliveryCompleteCount++
		case RecordArchived:
			st = shareStateArchived
			s.DeliveryCompleteCount++
		}
		off := sp.start + int64(i)
		if n := len(s.StateBatches); n > 0 {
			last := &s.StateBatches[n-1]
			if last.LastOffset == off-1 && last.DeliveryState == st && last.DeliveryCount == r.deliveries {
				last.LastOffset = off
				continue
			}
		}
		s.StateBatches = append(s.StateBatches, ShareStateBatch{FirstOffset: off, LastOffset: off, DeliveryState: st, DeliveryCount: r.deliveries})
	}
	return s
}

// RestoreSharePartition returns a share partition in the state of a
// snapshot; offsets between its batches are Available, never delivered.
func RestoreSharePartition(cfg SharePartitionConfig, s ShareSnapshot) *SharePartition {
	sp := NewSharePartition(cfg, s.StartOffset)
	for _, b := range s.StateBatches {
		if b.LastOffset < b.FirstOffset || b.LastOffset < s.StartOffset || b.LastOffset-s.StartOffset >= 1<<24 {
			continue
		}
		for off := max(b.FirstOffset, s.StartOffset); off <= b.LastOffset; off++ {
			i := int(off - s.StartOffset)
			for len(sp.recs) <= i {
				sp.recs = append(sp.recs, shareRecord{})
			}
			r := shareRecord{state: RecordAvailable, deliveries: b.DeliveryCount}
			switch b.DeliveryState {
			case shareStateAcknowledged:
				r.state = RecordAcknowledged
			case shareStateArchived:
				r.state = RecordArchived
			}
			sp.recs[i] = r
		}
	}
	sp.advanceLocked()
	return sp
}
