package coordinator

// The share coordinator (KIP-932): the durable state of every
// share-partition, kept in __share_group_state.
//
// The state of share-partition K = (group, topic id, partition) lives in
// partition PartitionFor(K.CoordinatorKey(), LogPartitions) of
// __share_group_state ("group:topicId:partition", topicId in Kafka's
// base64 form, as Kafka's SharePartitionKey.asCoordinatorKey), as
// ShareSnapshot records (the whole state) and ShareUpdate records (the
// batches that changed, applied over the latest snapshot); a ShareSnapshot
// is written instead of an update once SnapshotUpdateRecords updates
// follow the last snapshot (Kafka's
// share.coordinator.snapshot.update.records.per.snapshot). Deleting a
// share-partition appends tombstones of both keys.
//
// This coordinator serves only the keys of the partitions it has loaded
// (LoadPartition, when this broker becomes their leader, replays the
// partition from its start; UnloadPartition when it stops); others get
// NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS during a load. Every
// write is appended and waited for (GroupLog.Append's wait: the high
// watermark, min.insync.replicas) before it is applied and answered, one
// write at a time per partition.
//
// The partition leaders read a share-partition's state when they first
// need it (ReadShareGroupState) and write it after every acknowledgement,
// release and SPSO change (WriteShareGroupState). A read or write carries
// the leader epoch of the share-partition's leader: a write with an older
// leader epoch than the state's is refused (FENCED_LEADER_EPOCH), and a
// read with a newer one records it, so a deposed leader cannot overwrite
// what its successor read. A write in an older state epoch is refused
// (FENCED_STATE_EPOCH); one in a newer state epoch replaces the state (the
// leader reset the SPSO: the offset admin APIs), as Initialize does.

import (
	"encoding/base64"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultShareSnapshotUpdateRecords is Kafka's
// share.coordinator.snapshot.update.records.per.snapshot.
const DefaultShareSnapshotUpdateRecords = 500

// ShareCoordinatorConfig configures a ShareCoordinator.
type ShareCoordinatorConfig struct {
	Log                   GroupLog // __share_group_state
	LogPartitions         int32    // its partition count
	SnapshotUpdateRecords int      // updates between snapshots; 0: DefaultShareSnapshotUpdateRecords
	Now                   func() time.Time
}

// CoordinatorKey is Kafka's key of a share-partition for FindCoordinator
// (key type 2) and placement: "group:topicId:partition".
func (k ShareStateKey) CoordinatorKey() string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

type shareKeyState struct {
	snap    ShareSnapshot // the snapshot with every later update applied
	updates int           // ShareUpdate records since the snapshot
}

// ShareCoordinator is the share coordinator of one broker. It is safe for
// concurrent use.
type ShareCoordinator struct {
	cfg ShareCoordinatorConfig

	// coordinatorRuntime holds the lock (mu) and the load state of each
	// partition of __share_group_state (runtime.go).
	coordinatorRuntime

	states  map[int32]map[ShareStateKey]*shareKeyState
	writeMu map[int32]*sync.Mutex // one append at a time per partition
}

// NewShareCoordinator returns a share coordinator serving no partition.
func NewShareCoordinator(cfg ShareCoordinatorConfig) *ShareCoordinator {
	if cfg.SnapshotUpdateRecords <= 0 {
		cfg.SnapshotUpdateRecords = DefaultShareSnapshotUpdateRecords
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LogPartitions <= 0 {
		cfg.LogPartitions = 1
	}
	c := &ShareCoordinator{
		cfg:     cfg,
		states:  map[int32]map[ShareStateKey]*shareKeyState{},
		writeMu: map[int32]*sync.Mutex{},
	}
	c.initRuntime("__share_group_state", cfg.Log, cfg.LogPartitions, nil)
	return c
}

// PartitionOf returns k's partition of __share_group_state.
func (c *ShareCoordinator) PartitionOf(k ShareStateKey) int32 {
	return c.partitionOf(k.CoordinatorKey())
}

// KeyError reports what a request for k gets here: 0, or
// COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR.
func (c *ShareCoordinator) KeyError(k ShareStateKey) int16 { return c.keyCode(k.CoordinatorKey()) }

// KeyCodeOf is KeyError of a coordinator key ("group:topicId:partition").
func (c *ShareCoordinator) KeyCodeOf(key string) int16 { return c.keyCode(key) }

// LoadPartition replays partition pi of __share_group_state and serves its
// keys from then on.
func (c *ShareCoordinator) LoadPartition(pi int32) error {
	states := map[ShareStateKey]*shareKeyState{}
	replay := func() error {
		_, err := c.cfg.Log.Replay(pi, 0, func(_ int64, r LogRecord) error {
			t, k, err := DecodeShareStateKey(r.Key)
			if err != nil {
				return nil // not ours: skipped, as Kafka skips unknown record types
			}
			if r.Value == nil {
				delete(states, k)
				return nil
			}
			switch t {
			case ShareSnapshotRecord:
				s, err := DecodeShareSnapshot(r.Value)
				if err != nil {
					return err
				}
				states[k] = &shareKeyState{snap: s}
			case ShareUpdateRecord:
				u, err := DecodeShareUpdate(r.Value)
				if err != nil {
					return err
				}
				if st := states[k]; st != nil {
					st.snap = applyShareUpdate(st.snap, u)
					st.updates++
				}
			}
			return nil
		})
		return err
	}
	return c.loadPartition(pi, replay, func() (func(), error) {
		c.states[pi] = states
		return nil, nil
	})
}

// UnloadPartition stops serving partition pi.
func (c *ShareCoordinator) UnloadPartition(pi int32) {
	c.unloadPartition(pi, func() { delete(c.states, pi) })
}

// Loaded returns the partitions served, sorted.
//
// Deprecated: use LoadedPartitions, which the other coordinators have too.
func (c *ShareCoordinator) Loaded() []int32 { return c.LoadedPartitions() }

func (c *ShareCoordinator) lockWrites(pi int32) func() {
	c.mu.Lock()
	mu := c.writeMu[pi]
	if mu == nil {
		mu = &sync.Mutex{}
		c.writeMu[pi] = mu
	}
	c.mu.Unlock()
	mu.Lock()
	return mu.Unlock
}

// current returns a copy of k's state and the number of updates since its
// snapshot, or a non-zero code when k is not served here.
func (c *ShareCoordinator) current(k ShareStateKey) (*shareKeyState, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pi := c.PartitionOf(k)
	if err := c.partitionErrLocked(pi); err != nil {
		return nil, err.Code
	}
	st := c.states[pi][k]
	if st == nil {
		return nil, 0
	}
	cp := *st
	cp.snap.StateBatches = slices.Clone(st.snap.StateBatches)
	return &cp, 0
}

// appendState appends a record of k and, once committed, installs st as
// k's state (nil: deleted).
func (c *ShareCoordinator) appendState(k ShareStateKey, recs []LogRecord, st *shareKeyState) int16 {
	pi := c.PartitionOf(k)
	if _, err := c.appendAndWait(pi, recs); err != nil {
		return appendErrorCode(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts[pi] != partLoaded {
		return kerr.NotCoordinator.Code
	}
	if st == nil {
		delete(c.states[pi], k)
	} else {
		c.states[pi][k] = st
	}
	return 0
}

// appendErrorCode maps a failed append to what the leader is answered:
// NOT_COORDINATOR when this broker no longer leads the partition, else
// COORDINATOR_NOT_AVAILABLE (both make the leader look the coordinator up
// again).
func appendErrorCode(err error) int16 {
	if e, ok := err.(*kerr.Error); ok && (e == kerr.NotLeaderForPartition || e == kerr.NotCoordinator) {
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// Read returns k's state (found false when it has none). A leaderEpoch
// newer than the state's is recorded first (a ShareSnapshot), fencing
// writes of earlier leaders; -1 reads without recording.
func (c *ShareCoordinator) Read(k ShareStateKey, leaderEpoch int32) (ShareSnapshot, bool, int16) {
	defer c.lockWrites(c.PartitionOf(k))()
	st, code := c.current(k)
	if code != 0 || st == nil {
		return ShareSnapshot{}, false, code
	}
	if leaderEpoch > st.snap.LeaderEpoch {
		next := &shareKeyState{snap: st.snap}
		next.snap.LeaderEpoch = leaderEpoch
		next.snap.SnapshotEpoch++
		next.snap.WriteTimestamp = c.cfg.Now().UnixMilli()
		if code := c.appendState(k, []LogRecord{{Key: EncodeShareStateKey(ShareSnapshotRecord, k), Value: next.snap.Encode()}}, next); code != 0 {
			return ShareSnapshot{}, false, code
		}
		st = next
	}
	return st.snap, true, 0
}

// ShareWrite is one partition of a WriteShareGroupState: the state epoch
// and leader epoch it was made in, the SPSO (-1: unchanged) and the state
// batches that changed.
type ShareWrite struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: unknown
	StateBatches          []ShareStateBatch
}

// Write records a change of k's state: a ShareUpdate, or a ShareSnapshot
// when k has no state yet or SnapshotUpdateRecords updates follow its
// snapshot, or a ShareSnapshot of w alone when w is in a newer state
// epoch. It answers FENCED_LEADER_EPOCH when w comes from an earlier
// leader than the state's, FENCED_STATE_EPOCH when it is in an earlier
// state epoch.
func (c *ShareCoordinator) Write(k ShareStateKey, w ShareWrite) int16 {
	defer c.lockWrites(c.PartitionOf(k))()
	st, code := c.current(k)
	if code != 0 {
		return code
	}
	now := c.cfg.Now().UnixMilli()
	if st != nil && w.LeaderEpoch >= 0 && w.LeaderEpoch < st.snap.LeaderEpoch {
		return kerr.FencedLeaderEpoch.Code
	}
	if st != nil && w.StateEpoch < st.snap.StateEpoch {
		return kerr.FencedStateEpoch.Code
	}
	if st != nil && w.StateEpoch > st.snap.StateEpoch {
		st = nil // a new state epoch: the state starts over
	}
	u := ShareUpdate{LeaderEpoch: w.LeaderEpoch, StartOffset: w.StartOffset, DeliveryCompleteCount: w.DeliveryCompleteCount, StateBatches: w.StateBatches}
	if u.StateBatches == nil {
		u.StateBatches = []ShareStateBatch{}
	}
	if st == nil || st.updates+1 >= c.cfg.SnapshotUpdateRecords {
		next := &shareKeyState{}
		if st == nil {
			start := w.StartOffset
			if start < 0 && len(w.StateBatches) > 0 {
				start = w.StateBatches[0].FirstOffset
			}
			next.snap = ShareSnapshot{StateEpoch: w.StateEpoch, LeaderEpoch: w.LeaderEpoch, StartOffset: start, CreateTimestamp: now, DeliveryCompleteCount: -1, StateBatches: []ShareStateBatch{}}
			next.snap = applyShareUpdate(next.snap, u)
		} else {
			next.snap = applyShareUpdate(st.snap, u)
			next.snap.SnapshotEpoch++
		}
		next.snap.WriteTimestamp = now
		return c.appendState(k, []LogRecord{{Key: EncodeShareStateKey(ShareSnapshotRecord, k), Value: next.snap.Encode()}}, next)
	}
	u.SnapshotEpoch = st.snap.SnapshotEpoch
	next := &shareKeyState{snap: applyShareUpdate(st.snap, u), updates: st.updates + 1}
	return c.appendState(k, []LogRecord{{Key: EncodeShareStateKey(ShareUpdateRecord, k), Value: u.Encode()}}, next)
}

// Initialize replaces k's state by an empty one starting at startOffset,
// in state epoch stateEpoch, or one past the current state epoch when
// that is not lower.
func (c *ShareCoordinator) Initialize(k ShareStateKey, stateEpoch int32, startOffset int64) int16 {
	defer c.lockWrites(c.PartitionOf(k))()
	st, code := c.current(k)
	if code != 0 {
		return code
	}
	now := c.cfg.Now().UnixMilli()
	next := &shareKeyState{snap: ShareSnapshot{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset,
		DeliveryCompleteCount: 0, CreateTimestamp: now, WriteTimestamp: now, StateBatches: []ShareStateBatch{}}}
	if st != nil {
		next.snap.SnapshotEpoch = st.snap.SnapshotEpoch + 1
		next.snap.LeaderEpoch = st.snap.LeaderEpoch
		next.snap.StateEpoch = max(stateEpoch, st.snap.StateEpoch+1)
	}
	return c.appendState(k, []LogRecord{{Key: EncodeShareStateKey(ShareSnapshotRecord, k), Value: next.snap.Encode()}}, next)
}

// Delete removes k's state: tombstones of its ShareSnapshot and
// ShareUpdate keys.
func (c *ShareCoordinator) Delete(k ShareStateKey) int16 {
	defer c.lockWrites(c.PartitionOf(k))()
	st, code := c.current(k)
	if code != 0 || st == nil {
		return code
	}
	return c.appendState(k, []LogRecord{
		{Key: EncodeShareStateKey(ShareSnapshotRecord, k)},
		{Key: EncodeShareStateKey(ShareUpdateRecord, k)},
	}, nil)
}

// KeysOf returns the share-partitions of group served here, of one topic
// or (topic nil) all.
func (c *ShareCoordinator) KeysOf(group string, topic *[16]byte) []ShareStateKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ShareStateKey
	for _, states := range c.states {
		for k := range states {
			if k.Group == group && (topic == nil || k.TopicID == *topic) {
				out = append(out, k)
			}
		}
	}
	return out
}

// applyShareUpdate returns s with u applied: u's batches replace the
// state of their offsets, the SPSO moves to u's (unless -1), and nothing
// below the SPSO is kept.
func applyShareUpdate(s ShareSnapshot, u ShareUpdate) ShareSnapshot {
	if u.StartOffset >= 0 {
		s.StartOffset = u.StartOffset
	}
	if u.LeaderEpoch > s.LeaderEpoch {
		s.LeaderEpoch = u.LeaderEpoch
	}
	if u.DeliveryCompleteCount != -1 {
		s.DeliveryCompleteCount = u.DeliveryCompleteCount
	}
	s.StateBatches = combineStateBatches(s.StateBatches, u.StateBatches, s.StartOffset)
	return s
}

// combineStateBatches lays upd over old (a later batch wins where batches
// overlap), drops what lies below start, and merges adjacent batches of
// one state and delivery count. The result is sorted and disjoint.
func combineStateBatches(old, upd []ShareStateBatch, start int64) []ShareStateBatch {
	out := slices.Clone(old)
	for _, nb := range upd {
		if nb.LastOffset < nb.FirstOffset {
			continue
		}
		var next []ShareStateBatch
		for _, ob := range out {
			if ob.LastOffset < nb.FirstOffset || ob.FirstOffset > nb.LastOffset {
				next = append(next, ob)
				continue
			}
			if ob.FirstOffset < nb.FirstOffset {
				lo := ob
				lo.LastOffset = nb.FirstOffset - 1
				next = append(next, lo)
			}
			if ob.LastOffset > nb.LastOffset {
				hi := ob
				hi.FirstOffset = nb.LastOffset + 1
				next = append(next, hi)
			}
		}
		out = append(next, nb)
	}
	out = slices.DeleteFunc(out, func(b ShareStateBatch) bool { return b.LastOffset < start })
	for i := range out {
		out[i].FirstOffset = max(out[i].FirstOffset, start)
	}
	slices.SortFunc(out, func(a, b ShareStateBatch) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
	merged := make([]ShareStateBatch, 0, len(out))
	for _, b := range out {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if last.LastOffset+1 == b.FirstOffset && last.DeliveryState == b.DeliveryState && last.DeliveryCount == b.DeliveryCount {
				last.LastOffset = b.LastOffset
				continue
			}
		}
		merged = append(merged, b)
	}
	return merged
}
