package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupLogSyncWaitsForCommit: the leader's SyncGroup is answered only
// once the GroupMetadata record with the assignment is committed, and the
// group stays CompletingRebalance until then; a record that fails to
// commit answers its error (Kafka's mapping) and the group rebalances.
func TestGroupLogSyncWaitsForCommit(t *testing.T) {
	clock := newManualClock()
	log := newHeldLog()
	cfg := testConfig(t.TempDir(), clock)
	cfg.Log, cfg.LogPartitions = log, 50
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	group := "g-sync"
	p := PartitionFor(group, 50)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}

	sync := func(id string, gen int32) chan *kmsg.SyncGroupResponse {
		sr := kmsg.NewPtrSyncGroupRequest()
		sr.Group, sr.MemberID, sr.Generation = group, id, gen
		sr.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: id, MemberAssignment: []byte("a")}}
		out := make(chan *kmsg.SyncGroupResponse, 1)
		go func() { out <- c.SyncGroup(context.Background(), sr) }()
		return out
	}
	join := func(id string) *kmsg.JoinGroupResponse {
		done := make(chan *kmsg.JoinGroupResponse, 1)
		go func() { done <- c.JoinGroup(context.Background(), joinReq(group, id), "cli", "/h") }()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case jr := <-done:
				if jr.ErrorCode != 0 {
					t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
				}
				return jr
			case <-time.After(time.Millisecond):
				if c.parkedCalls() == 1 {
					clock.Advance(0) // the join phase ends now
				}
			}
		}
		t.Fatal("join did not complete")
		return nil
	}
	r := c.JoinGroup(context.Background(), joinReq(group, ""), "cli", "/h")
	id := r.MemberID
	jr := join(id)

	log.holdNext(p)
	res := sync(id, jr.Generation)
	<-log.held
	// The record is in the log but not committed: no answer, and the
	// group has not become Stable.
	if d := describeOne(c, group); d.State != "CompletingRebalance" {
		t.Fatalf("state before the record commits: %s", d.State)
	}
	select {
	case sr := <-res:
		t.Fatalf("SyncGroup answered before its record committed: %v", kerr.ErrorForCode(sr.ErrorCode))
	default:
	}
	log.release(p, nil)
	sr := <-res
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "a" {
		t.Fatalf("sync: %v %q", kerr.ErrorForCode(sr.ErrorCode), sr.MemberAssignment)
	}
	if d := describeOne(c, group); d.State != "Stable" {
		t.Fatalf("state after the record committed: %s", d.State)
	}

	// The next generation's record fails: NOT_ENOUGH_REPLICAS answers
	// COORDINATOR_NOT_AVAILABLE, and the group rebalances.
	jr = join(id)
	log.holdNext(p)
	res = sync(id, jr.Generation)
	<-log.held
	log.release(p, kerr.NotEnoughReplicas)
	if sr := <-res; sr.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("sync with a failed record: %v", kerr.ErrorForCode(sr.ErrorCode))
	}
	if d := describeOne(c, group); d.State != "PreparingRebalance" {
		t.Fatalf("state after a failed record: %s", d.State)
	}
}

// TestGroupLogDeletesWaitForCommit: DeleteGroups and OffsetDelete answer
// once their tombstones are committed, with the append's error if they are
// not.
func TestGroupLogDeletesWaitForCommit(t *testing.T) {
	log := newHeldLog()
	c := openLogged(t, t.TempDir(), log)
	for i := range int32(50) {
		c.LoadPartition(i)
	}
	simpleCommit(t, c, "gone", "t", map[int32]int64{0: 1})
	simpleCommit(t, c, "kept", "u", map[int32]int64{0: 4, 1: 5})

	pg := PartitionFor("gone", 50)
	log.holdNext(pg)
	dres := make(chan *kmsg.DeleteGroupsResponse, 1)
	go func() {
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{"gone"}
		dres <- c.DeleteGroups(del)
	}()
	<-log.held
	select {
	case <-dres:
		t.Fatal("DeleteGroups answered before its tombstones committed")
	default:
	}
	log.release(pg, nil)
	if r := <-dres; r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}

	pk := PartitionFor("kept", 50)
	log.holdNext(pk)
	ores := make(chan *kmsg.OffsetDeleteResponse, 1)
	go func() {
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = "kept"
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic = "u"
		ot.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		od.Topics = append(od.Topics, ot)
		ores <- c.OffsetDelete(od)
	}()
	<-log.held
	select {
	case <-ores:
		t.Fatal("OffsetDelete answered before its tombstone committed")
	default:
	}
	log.release(pk, kerr.NotLeaderForPartition)
	if r := <-ores; r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetDelete with a lost tombstone: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
