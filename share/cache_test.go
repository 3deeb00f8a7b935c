package share

import (
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

// wantCalls checks the Persister calls made since the last check.
func wantCalls(t *testing.T, p *fakePersister, want ...string) {
	t.Helper()
	if got := p.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("persister calls:\n%q\nwant:\n%q", got, want)
	}
}

// TestCache_ReadOncePerLeaderEpoch: a share-partition is read from the
// share coordinator once per leader epoch of its partition, written after
// each acknowledgement, and read again (restored from what was written)
// in a new leader epoch.
func TestCache_ReadOncePerLeaderEpoch(t *testing.T) {
	c, p, s := newTestCache()
	s.setGroup("g", "share.auto.offset.reset", "earliest")
	l := &fakeLeader{epoch: 3, logStart: 0, hwm: 10}
	k := Key{Group: "g", TopicID: topicID("a"), Partition: 0}

	sp, code := c.Get(k, l, true)
	if code != 0 || sp == nil || sp.StartOffset() != 0 {
		t.Fatalf("created: %v %v", sp, kerr.ErrorForCode(code))
	}
	wantCalls(t, p, "read g/a:0 leader=3: none")

	acq := sp.Acquire("m1", time.Now(), []coordinator.BatchSpan{{First: 0, Last: 4}}, 100)
	if want := []coordinator.AcquiredRange{{First: 0, Last: 4, DeliveryCount: 1}}; !slices.Equal(acq, want) {
		t.Fatalf("acquired %v, want %v", acq, want)
	}
	// Accept 0-1, release 2, reject 3, accept 4.
	ack := []coordinator.AckBatch{{First: 0, Last: 4, Types: []int8{coordinator.AckAccept, coordinator.AckAccept, coordinator.AckRelease, coordinator.AckReject, coordinator.AckAccept}}}
	if code := c.Acknowledge(k, l, "m1", ack, false); code != 0 {
		t.Fatalf("acknowledge: %v", kerr.ErrorForCode(code))
	}
	wantCalls(t, p, "write g/a:0 state=0 leader=3 start=2 [2-2:0@1 3-3:4@1 4-4:2@1]")

	// The same leader epoch: the cached state, no read.
	if again, code := c.Get(k, l, true); again != sp || code != 0 {
		t.Fatalf("second get: %p %v, want the cached %p", again, kerr.ErrorForCode(code), sp)
	}
	wantCalls(t, p)

	// A new leader epoch: read again, restored from what was written.
	l.epoch = 4
	next, code := c.Get(k, l, true)
	if code != 0 || next == sp {
		t.Fatalf("new leader epoch: %p %v, want a state read again", next, kerr.ErrorForCode(code))
	}
	wantCalls(t, p, "read g/a:0 leader=4: state=0 start=2 [2-2:0@1 3-3:4@1 4-4:2@1]")
	if st, n, _ := next.State(2); next.StartOffset() != 2 || st != coordinator.RecordAvailable || n != 1 {
		t.Fatalf("restored: start %d, offset 2 %v@%d", next.StartOffset(), st, n)
	}
	if st, _, _ := next.State(3); st != coordinator.RecordArchived {
		t.Fatalf("restored offset 3: %v", st)
	}
	if got := c.States("g"); len(got) != 1 || got[TopicIDPartition{topicID("a"), 0}] != next {
		t.Fatalf("states: %v", got)
	}

	// Its writes carry the new leader epoch.
	next.Acquire("m1", time.Now(), []coordinator.BatchSpan{{First: 2, Last: 2}}, 1)
	if code := c.Acknowledge(k, l, "m1", []coordinator.AckBatch{{First: 2, Last: 2, Types: []int8{coordinator.AckAccept}}}, false); code != 0 {
		t.Fatalf("acknowledge in epoch 4: %v", kerr.ErrorForCode(code))
	}
	wantCalls(t, p, "write g/a:0 state=0 leader=4 start=5 []")
}

// TestCache_CreatesAtAutoOffsetReset: without state a share-partition
// starts at the high watermark (latest, the default) or the log start
// offset (earliest); Get without create makes none and caches nothing.
func TestCache_CreatesAtAutoOffsetReset(t *testing.T) {
	c, p, s := newTestCache()
	l := &fakeLeader{epoch: 1, logStart: 4, hwm: 10}
	latest := Key{Group: "g", TopicID: topicID("a"), Partition: 0}
	if sp, code := c.Get(latest, l, false); sp != nil || code != 0 {
		t.Fatalf("without create: %v %d", sp, code)
	}
	if sp, code := c.Get(latest, l, false); sp != nil || code != 0 {
		t.Fatalf("without create, again: %v %d", sp, code)
	}
	wantCalls(t, p, "read g/a:0 leader=1: none", "read g/a:0 leader=1: none")
	if sp, _ := c.Get(latest, l, true); sp == nil || sp.StartOffset() != 10 {
		t.Fatalf("latest: %v", sp)
	}
	s.setGroup("h", "share.auto.offset.reset", "earliest")
	if sp, _ := c.Get(Key{Group: "h", TopicID: topicID("a"), Partition: 0}, l, true); sp == nil || sp.StartOffset() != 4 {
		t.Fatalf("earliest: %v", sp)
	}
	// Nothing is written until something changes.
	wantCalls(t, p, "read g/a:0 leader=1: none", "read h/a:0 leader=1: none")
}

// TestCache_ReadFailureNotCached: a share coordinator that cannot be read
// fails Get with its code and is asked again next time.
func TestCache_ReadFailureNotCached(t *testing.T) {
	c, p, _ := newTestCache()
	l := &fakeLeader{epoch: 2, hwm: 7}
	k := Key{Group: "g", TopicID: topicID("a"), Partition: 1}
	p.failAll = kerr.CoordinatorNotAvailable.Code
	if sp, code := c.Get(k, l, true); sp != nil || code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("failing read: %v %d", sp, code)
	}
	if code := c.Acknowledge(k, l, "m1", nil, false); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("acknowledge while failing: %d", code)
	}
	p.failAll = 0
	if sp, code := c.Get(k, l, true); sp == nil || code != 0 || sp.StartOffset() != 7 {
		t.Fatalf("after recovery: %v %d", sp, code)
	}
	wantCalls(t, p,
		"read g/a:1 leader=2: COORDINATOR_NOT_AVAILABLE",
		"read g/a:1 leader=2: COORDINATOR_NOT_AVAILABLE",
		"read g/a:1 leader=2: none")
}

// TestCache_AcknowledgeWithoutStateOrRenewing: acknowledging a
// share-partition that has no state is INVALID_RECORD_STATE; a renewal
// restarts locks and writes nothing.
func TestCache_AcknowledgeWithoutStateOrRenewing(t *testing.T) {
	c, p, _ := newTestCache()
	l := &fakeLeader{epoch: 1, hwm: 0}
	k := Key{Group: "g", TopicID: topicID("a"), Partition: 0}
	if code := c.Acknowledge(k, l, "m1", []coordinator.AckBatch{{First: 0, Last: 0, Types: []int8{coordinator.AckAccept}}}, false); code != kerr.InvalidRecordState.Code {
		t.Fatalf("no state: %d", code)
	}
	sp, _ := c.Get(k, l, true)
	sp.Acquire("m1", time.Now(), []coordinator.BatchSpan{{First: 0, Last: 1}}, 10)
	wantCalls(t, p, "read g/a:0 leader=1: none", "read g/a:0 leader=1: none")
	if code := c.Acknowledge(k, l, "m1", []coordinator.AckBatch{{First: 0, Last: 1, Types: []int8{coordinator.AckRenew}}}, true); code != 0 {
		t.Fatalf("renew: %v", kerr.ErrorForCode(code))
	}
	wantCalls(t, p)
	// Not m2's records: all or none, nothing written.
	if code := c.Acknowledge(k, l, "m2", []coordinator.AckBatch{{First: 0, Last: 1, Types: []int8{coordinator.AckAccept}}}, false); code != kerr.InvalidRecordState.Code {
		t.Fatalf("another member's: %d", code)
	}
	wantCalls(t, p)
}

// TestCache_FencedByNewerLeaderDropsState: when another leader has read
// the state in a newer leader epoch, this leader's write is fenced and its
// cached state dropped; the next Get reads the share coordinator's.
func TestCache_FencedByNewerLeaderDropsState(t *testing.T) {
	c, p, _ := newTestCache()
	l := &fakeLeader{epoch: 5, hwm: 3}
	k := Key{Group: "g", TopicID: topicID("b"), Partition: 0}
	sp, _ := c.Get(k, l, true)
	sp.Acquire("m1", time.Now(), []coordinator.BatchSpan{{First: 3, Last: 3}}, 1)
	if code := c.Acknowledge(k, l, "m1", []coordinator.AckBatch{{First: 3, Last: 3, Types: []int8{coordinator.AckRelease}}}, false); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	p.Read(k, 6) // the new leader
	wantCalls(t, p,
		"read g/b:0 leader=5: none",
		"read g/b:0 leader=6: state=0 start=3 [3-3:0@1]",
		"write g/b:0 state=0 leader=5 start=3 [3-3:0@1]")
	sp.Acquire("m1", time.Now(), []coordinator.BatchSpan{{First: 3, Last: 3}}, 1)
	if code := c.Acknowledge(k, l, "m1", []coordinator.AckBatch{{First: 3, Last: 3, Types: []int8{coordinator.AckAccept}}}, false); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("a deposed leader's write: %v", kerr.ErrorForCode(code))
	}
	if got := c.States("g"); len(got) != 0 {
		t.Fatalf("a fenced state was kept: %v", got)
	}
	wantCalls(t, p, "write g/b:0 state=0 leader=5 start=4 []: FENCED_LEADER_EPOCH")
	again, _ := c.Get(k, l, true)
	if st, n, _ := again.State(3); again == sp || st != coordinator.RecordAvailable || n != 1 {
		t.Fatalf("read again: %v@%d", st, n)
	}
	wantCalls(t, p, "read g/b:0 leader=5: state=0 start=3 [3-3:0@1]")
}

// TestCache_SetStartOlderWriteFencedKeepsNewerState: two
// InitializeShareGroupState for one share-partition overlap on its leader
// (the group coordinator retried the first after its request timed out on
// a busy machine): the second bumps the state epoch and lands first, the
// first is then fenced (FENCED_STATE_EPOCH). The fence must not drop the
// cached state the second stored: before, the leader answered the retry
// with success and then held no state at all
// (TestCluster_ShareOffsetsOnLeaders under make test-stress: "broker 1's
// state of partition 0: <nil>").
func TestCache_SetStartOlderWriteFencedKeepsNewerState(t *testing.T) {
	c, p, _ := newTestCache()
	l := &fakeLeader{epoch: 3, hwm: 10}
	k := Key{Group: "g-overlap", TopicID: topicID("s"), Partition: 0}
	if code := c.SetStart(k, l, 3); code != 0 {
		t.Fatalf("first start: %v", kerr.ErrorForCode(code))
	}
	c.mu.Lock()
	older := c.parts[k].epochs() // what the slow first request wrote with
	c.mu.Unlock()
	if code := c.SetStart(k, l, 7); code != 0 { // the retry, landing first
		t.Fatalf("second start: %v", kerr.ErrorForCode(code))
	}
	wantCalls(t, p,
		"read g-overlap/s:0 leader=3: none",
		"write g-overlap/s:0 state=1 leader=3 start=3 []",
		"write g-overlap/s:0 state=2 leader=3 start=7 []")
	sp := c.States(k.Group)[TopicIDPartition{k.TopicID, 0}]
	if code := c.persistAt(k, sp, older); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("the older write: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}
	got := c.States(k.Group)[TopicIDPartition{k.TopicID, 0}]
	if got == nil || got.StartOffset() != 7 {
		t.Fatalf("state after the older write was fenced: %v", got)
	}
	// A write fenced while the cache has not moved on still drops it: the
	// coordinator holds something newer than this broker knows.
	c.mu.Lock()
	c.parts[k].stateEpoch--
	stale := c.parts[k].epochs()
	c.mu.Unlock()
	if code := c.persistAt(k, got, stale); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("a stale cache's write: %v", kerr.ErrorForCode(code))
	}
	if c.States(k.Group)[TopicIDPartition{k.TopicID, 0}] != nil {
		t.Fatal("a fenced stale cache was kept")
	}
	wantCalls(t, p,
		"write g-overlap/s:0 state=1 leader=3 start=7 []: FENCED_STATE_EPOCH",
		"write g-overlap/s:0 state=1 leader=3 start=7 []: FENCED_STATE_EPOCH")
}

// TestCache_SetStartWithoutLeader: the SPSO of a partition this broker
// does not lead (a single node's AlterShareGroupOffsets of a partition it
// has no state of) is written at leader epoch 0, without a read.
func TestCache_SetStartWithoutLeader(t *testing.T) {
	c, p, _ := newTestCache()
	k := Key{Group: "g", TopicID: topicID("a"), Partition: 2}
	if code := c.SetStart(k, nil, 12); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	wantCalls(t, p, "write g/a:2 state=1 leader=0 start=12 []")
	if sp := c.States("g")[TopicIDPartition{k.TopicID, 2}]; sp == nil || sp.StartOffset() != 12 {
		t.Fatalf("state: %v", sp)
	}
}

// TestCache_DeleteAndRelease: Delete removes a group's share-partitions of
// one topic or of all, here and at the Persister; ReleaseMember releases
// a member's records in every share-partition of its group and writes
// each.
func TestCache_DeleteAndRelease(t *testing.T) {
	c, p, s := newTestCache()
	s.setGroup("g", "share.auto.offset.reset", "earliest")
	s.setGroup("h", "share.auto.offset.reset", "earliest")
	l := &fakeLeader{epoch: 1, hwm: 10}
	keys := []Key{
		{Group: "g", TopicID: topicID("a"), Partition: 0},
		{Group: "g", TopicID: topicID("a"), Partition: 1},
		{Group: "g", TopicID: topicID("b"), Partition: 0},
		{Group: "h", TopicID: topicID("a"), Partition: 0},
	}
	for _, k := range keys {
		sp, _ := c.Get(k, l, true)
		sp.Acquire("m1", time.Now(), []coordinator.BatchSpan{{First: 0, Last: 1}}, 2)
	}
	p.takeCalls()
	c.ReleaseMember("g", "m1")
	wantCalls(t, p,
		"write g/a:0 state=0 leader=1 start=0 [0-1:0@1]",
		"write g/a:1 state=0 leader=1 start=0 [0-1:0@1]",
		"write g/b:0 state=0 leader=1 start=0 [0-1:0@1]")
	if st, _, _ := c.States("g")[TopicIDPartition{topicID("b"), 0}].State(1); st != coordinator.RecordAvailable {
		t.Fatalf("g's b:0 after the release: %v", st)
	}
	if st, _, owner := c.States("h")[TopicIDPartition{topicID("a"), 0}].State(1); st != coordinator.RecordAcquired || owner != "m1" {
		t.Fatalf("h's a:0 after g's release: %v %s", st, owner)
	}

	a := topicID("a")
	c.Delete("g", &a)
	wantCalls(t, p, "delete g/a")
	if got := c.States("g"); len(got) != 1 || got[TopicIDPartition{topicID("b"), 0}] == nil {
		t.Fatalf("g after deleting topic a: %v", got)
	}
	c.Delete("g", nil)
	wantCalls(t, p, "delete g/*")
	if len(c.States("g")) != 0 || len(c.States("h")) != 1 {
		t.Fatalf("after deleting g: g %v, h %v", c.States("g"), c.States("h"))
	}
}

// TestCache_PartitionConfigFollowsSettings: the share-partition settings
// are the group's configs, read on every Get.
func TestCache_PartitionConfigFollowsSettings(t *testing.T) {
	c, _, s := newTestCache()
	want := coordinator.SharePartitionConfig{LockDuration: 30 * time.Second, DeliveryCountLimit: 5, MaxInFlight: 2000}
	if got := c.PartitionConfig("g"); got != want {
		t.Fatalf("defaults: %+v", got)
	}
	l := &fakeLeader{epoch: 1}
	k := Key{Group: "g", TopicID: topicID("a")}
	sp, _ := c.Get(k, l, true)
	s.setGroup("g", "share.record.lock.duration.ms", "20000")
	s.setGroup("g", "share.delivery.count.limit", "3")
	s.setGroup("g", "share.partition.max.record.locks", "150")
	want = coordinator.SharePartitionConfig{LockDuration: 20 * time.Second, DeliveryCountLimit: 3, MaxInFlight: 150}
	if got := c.PartitionConfig("g"); got != want {
		t.Fatalf("set: %+v", got)
	}
	if c.LockDuration("g") != 20*time.Second || c.LockDuration("other") != 30*time.Second {
		t.Fatalf("lock durations: %v %v", c.LockDuration("g"), c.LockDuration("other"))
	}
	if sp.LockDuration() != 30*time.Second {
		t.Fatalf("before the next Get: %v", sp.LockDuration())
	}
	c.Get(k, l, true)
	if sp.LockDuration() != 20*time.Second {
		t.Fatalf("a cached share-partition after Get: %v", sp.LockDuration())
	}
}

// TestCache_RenewAllowed: renewals only while the group's
// share.renew.acknowledge.enable is true (in any case); other
// acknowledgements always.
func TestCache_RenewAllowed(t *testing.T) {
	c, _, s := newTestCache()
	renew := []coordinator.AckBatch{{First: 0, Last: 1, Types: []int8{coordinator.AckAccept}}, {First: 2, Last: 3, Types: []int8{coordinator.AckRenew, coordinator.AckAccept}}}
	accept := []coordinator.AckBatch{{First: 0, Last: 1, Types: []int8{coordinator.AckAccept}}}
	if !c.RenewAllowed("g", renew) {
		t.Error("a renewal refused by default")
	}
	s.setGroup("g", "share.renew.acknowledge.enable", "false")
	if c.RenewAllowed("g", renew) || !c.RenewAllowed("g", accept) || !c.RenewAllowed("other", renew) {
		t.Error("with false: a renewal allowed, or an acceptance or another group's renewal refused")
	}
	s.setGroup("g", "share.renew.acknowledge.enable", "TRUE")
	if !c.RenewAllowed("g", renew) {
		t.Error("a renewal refused with TRUE")
	}
}

// TestCache_StartByDuration: share.auto.offset.reset=by_duration starts a
// new share-partition at its first record at most the duration old, at
// the end when none is.
func TestCache_StartByDuration(t *testing.T) {
	c, _, s := newTestCache()
	now := time.Now().UnixMilli()
	l := &fakeLeader{epoch: 1, hwm: 4, timestamps: []int64{now - 7200_000, now - 5400_000, now - 600_000, now - 1000}}
	s.setGroup("g", "share.auto.offset.reset", "by_duration:1h")
	s.setGroup("h", "share.auto.offset.reset", "by_duration:1ms")
	for group, want := range map[string]int64{"g": 2, "h": 4} {
		sp, code := c.Get(Key{Group: group, TopicID: topicID("a")}, l, true)
		if code != 0 {
			t.Fatal(code)
		}
		if off, _ := sp.FetchOffset(time.Now()); off != want {
			t.Errorf("%s: starts at %d, want %d", group, off, want)
		}
	}
}
