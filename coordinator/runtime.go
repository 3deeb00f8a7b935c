package coordinator

// The partitioned-coordinator runtime, under the group, transaction and
// share coordinators as Kafka's coordinator-common (CoordinatorRuntime,
// PartitionWriter, CoordinatorLoader) sits under its group and share
// coordinators.
//
// Each coordinator keeps its state in the partitions of an internal topic
// (__consumer_offsets, __transaction_state, __share_group_state): a key
// (group id, transactional id, share-partition key) belongs to partition
// PartitionFor(key, partitions), and the coordinator serves the keys of
// the partitions it has loaded, those this broker leads. The
// coordinatorRuntime each of them embeds owns what that takes and nothing
// of their state machines:
//
//   - the coordinator's lock (mu), its closed flag (close) and its timers
//     (timers.go: callbacks run under mu, never after close);
//   - the key → partition mapping (partitionOf) and the load state of each
//     partition, with what a request for a key gets: nil when served
//     (always without a log), COORDINATOR_LOAD_IN_PROGRESS while its
//     partition loads, NOT_COORDINATOR when it is not loaded here,
//     COORDINATOR_NOT_AVAILABLE once the coordinator is closed
//     (ownerErrLocked, coordinatorErrLocked, keyCode, LoadedPartitions);
//   - the load and unload protocol (loadPartition, unloadPartition), with
//     the replay, the activation and the drop of a partition's state
//     supplied by the coordinator;
//   - the log writer and loader (runtimelog.go): GroupLog, the batches in
//     flight and the checkpoint of the coordinator's bbolt view, what a
//     request answers once its batch is committed, the replay of a
//     partition's tail.
//
// Locks: mu is the coordinator's one lock (Coordinator.mu,
// TxnCoordinator.mu, ShareCoordinator.mu in docs/LOCK_ORDER.md); the
// runtime takes no other, and calls the coordinator's callbacks (replay
// without mu, the others with it) as the comments say.

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Load states of a partition (coordinatorRuntime.parts); a partition not
// in the map is not served here.
const (
	partLoading = 1
	partLoaded  = 2
)

// coordinatorRuntime is the part of a coordinator (Coordinator,
// TxnCoordinator, ShareCoordinator) that is the same in all three: see
// the comment at the top of runtime.go. It is embedded, so its fields and
// methods are the coordinator's.
type coordinatorRuntime struct {
	// mu is the coordinator's lock: it guards the fields below and the
	// coordinator's own state.
	mu     sync.Mutex
	closed bool

	topic         string   // the internal topic's name, for messages
	stateLog      GroupLog // the internal topic; nil: none, every key is served here
	numPartitions int32    // its partition count

	parts map[int32]int8 // with a log: partition → partLoading, partLoaded
	// With a log, per partition: the batches whose commit is awaited
	// (writeLocked), and the offset after the last record appended or
	// replayed (runtimelog.go).
	inflight map[int32]int
	logNext  map[int32]int64

	timers timers
}

// initRuntime sets the runtime up for the internal topic named topic, of
// partitions partitions (log nil: none), and the clock's afterFunc (nil
// if the coordinator has no timers). It is called once, before the
// coordinator is shared.
func (rt *coordinatorRuntime) initRuntime(topic string, log GroupLog, partitions int32, afterFunc func(time.Duration, func()) Timer) {
	rt.topic, rt.stateLog, rt.numPartitions = topic, log, partitions
	rt.parts, rt.inflight, rt.logNext = map[int32]int8{}, map[int32]int{}, map[int32]int64{}
	rt.timers = newTimers(&rt.mu, &rt.closed, afterFunc)
}

// PartitionFor is Kafka's placement of group (or transactional id) id
// among n partitions: abs(id.hashCode()) % n, with Java's String.hashCode
// over UTF-16 code units and Kafka's Utils.abs (Integer.MIN_VALUE → 0).
func PartitionFor(id string, n int32) int32 {
	var h int32
	for _, r := range id {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// partitionOf is key's partition of the internal topic.
func (rt *coordinatorRuntime) partitionOf(key string) int32 {
	return PartitionFor(key, rt.numPartitions)
}

// partitionErrLocked is nil when this coordinator serves partition p:
// always without a log, else when p is loaded; COORDINATOR_LOAD_IN_PROGRESS
// while it loads, NOT_COORDINATOR otherwise.
//
// Lock should be held.
func (rt *coordinatorRuntime) partitionErrLocked(p int32) *kerr.Error {
	if rt.stateLog == nil {
		return nil
	}
	switch rt.parts[p] {
	case partLoaded:
		return nil
	case partLoading:
		return kerr.CoordinatorLoadInProgress
	}
	return kerr.NotCoordinator
}

// ownerErrLocked is partitionErrLocked of key's partition.
//
// Lock should be held.
func (rt *coordinatorRuntime) ownerErrLocked(key string) *kerr.Error {
	return rt.partitionErrLocked(rt.partitionOf(key))
}

// coordinatorErrLocked is what a request for key gets here:
// COORDINATOR_NOT_AVAILABLE once the coordinator is closed, else
// ownerErrLocked.
//
// Lock should be held.
func (rt *coordinatorRuntime) coordinatorErrLocked(key string) *kerr.Error {
	if rt.closed {
		return kerr.CoordinatorNotAvailable
	}
	return rt.ownerErrLocked(key)
}

// keyCode is the code of coordinatorErrLocked (0 when key is served here),
// under the lock: what FindCoordinator and the request routing ask.
func (rt *coordinatorRuntime) keyCode(key string) int16 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if err := rt.coordinatorErrLocked(key); err != nil {
		return err.Code
	}
	return 0
}

// LoadedPartitions reports the partitions of the coordinator's internal
// topic that it serves, sorted.
func (rt *coordinatorRuntime) LoadedPartitions() []int32 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []int32
	for p, s := range rt.parts {
		if s == partLoaded {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// loadPartition runs the load of partition p (Kafka's CoordinatorRuntime
// load operation). p is marked loading, so requests for its keys answer
// COORDINATOR_LOAD_IN_PROGRESS, and replay brings the coordinator's state
// up to the end of p's log, without the lock. Then, under the lock,
// unless p was unloaded meanwhile (replay's error is returned), p is
// marked loaded and activate installs its state; if replay or activate
// fails, p is forgotten (NOT_COORDINATOR) and the error returned. The
// after function activate returns, if any, runs once the lock is
// released. A closed coordinator, one without a log and a partition
// loading or loaded already are left as they are.
func (rt *coordinatorRuntime) loadPartition(p int32, replay func() error, activateLocked func() (after func(), err error)) error {
	rt.mu.Lock()
	if rt.closed || rt.stateLog == nil || rt.parts[p] != 0 {
		rt.mu.Unlock()
		return nil
	}
	rt.parts[p] = partLoading
	rt.mu.Unlock()
	err := replay()
	rt.mu.Lock()
	if rt.parts[p] != partLoading { // unloaded meanwhile
		rt.mu.Unlock()
		return err
	}
	var after func()
	if err == nil {
		rt.parts[p] = partLoaded
		after, err = activateLocked()
	}
	if err != nil {
		delete(rt.parts, p)
		rt.mu.Unlock()
		return err
	}
	rt.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

// unloadPartition stops serving partition p: p is forgotten and dropLocked
// drops the coordinator's state of p's keys, under the lock. Without a
// log, or when p is neither loading nor loaded, nothing is done.
func (rt *coordinatorRuntime) unloadPartition(p int32, dropLocked func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.stateLog == nil || rt.parts[p] == 0 {
		return
	}
	delete(rt.parts, p)
	dropLocked()
}

// close marks the coordinator closed, so that its timers no longer fire
// and its requests answer COORDINATOR_NOT_AVAILABLE, and runs stopLocked
// under the lock; ErrClosed if it was closed already.
func (rt *coordinatorRuntime) close(stopLocked func()) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return ErrClosed
	}
	rt.closed = true
	stopLocked()
	return nil
}

// scheduleLocked (re)arms s to run f under the lock after d (see
// timers.scheduleLocked).
//
// Lock should be held.
func (rt *coordinatorRuntime) scheduleLocked(s *timerSlot, d time.Duration, f func()) {
	rt.timers.scheduleLocked(s, d, func() func() { f(); return nil })
}
