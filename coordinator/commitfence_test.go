package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestValidateConsumerOffsetCommit checks Kafka 4.4's order of checks
// (ConsumerGroup.validateOffsetCommit, createAssignmentEpochValidator) on
// a group whose consumer-protocol member m is at epoch 5, holding t:0
// (assigned at epoch 3) and t:1 (at 5) and revoking t:2 (at 4), and whose
// classic-protocol member c is at epoch 5, holding u:0 (at 4).
func TestValidateConsumerOffsetCommit(t *testing.T) {
	g := newGroup("g", time.Time{})
	g.cg = newConsumerGroup()
	m := &consumerMember{memberCore: memberCore{id: "m", epoch: 5, state: msUnrevoked}, assigned: partitionSet{"t": {0, 1}}, revoking: partitionSet{"t": {2}}}
	m.setAssignmentEpoch("t", 0, 3)
	m.setAssignmentEpoch("t", 1, 5)
	m.setAssignmentEpoch("t", 2, 4)
	cm := &consumerMember{memberCore: memberCore{id: "c", epoch: 5, state: msStable}, assigned: partitionSet{"u": {0}}, revoking: partitionSet{}, classic: &classicMember{}}
	cm.setAssignmentEpoch("u", 0, 4)
	g.cg.members["m"], g.cg.members["c"] = m, cm
	empty := newGroup("e", time.Time{})
	empty.cg = newConsumerGroup()

	oc := func(v int16) commitKind { return commitKind{version: v} }
	txn := func(v int16) commitKind { return commitKind{txn: true, version: v} }
	for _, tc := range []struct {
		name   string
		g      *group
		member string
		epoch  int32
		kind   commitKind
		parts  string
		want   *kerr.Error
	}{
		{"empty group, no epoch, any member", empty, "who", -1, oc(9), "t:0", nil},
		{"empty group, epoch -2", empty, "", -2, txn(3), "t:0", nil},
		{"members, no epoch, no member", g, "", -1, oc(9), "t:0", kerr.UnknownMemberID},
		{"txn without group metadata", g, "", -1, txn(3), "t:0", nil},
		{"txn without member but with an instance id", g, "", -1, commitKind{txn: true, version: 3, instance: true}, "t:0", kerr.UnknownMemberID},
		{"unknown member", g, "nobody", 5, oc(9), "t:0", kerr.UnknownMemberID},
		{"consumer member below v9", g, "m", 5, oc(8), "t:0", kerr.UnsupportedVersion},
		{"consumer member below v9, older epoch", g, "m", 4, oc(8), "t:0", kerr.UnsupportedVersion},
		{"classic member below v9", g, "c", 5, oc(8), "u:0", nil},
		{"txn has no version floor", g, "m", 5, txn(3), "t:0", nil},
		{"current epoch commits anything", g, "m", 5, oc(9), "t:0,1,2,3;u:1", nil},
		{"newer epoch", g, "m", 6, oc(9), "t:0", kerr.StaleMemberEpoch},
		{"newer epoch, classic", g, "c", 6, oc(9), "u:0", kerr.IllegalGeneration},
		{"newer epoch, txn v5", g, "m", 6, txn(5), "t:0", kerr.IllegalGeneration},
		{"newer epoch, txn v6", g, "m", 6, txn(6), "t:0", kerr.StaleMemberEpoch},
		{"older epoch, kept partition", g, "m", 4, oc(9), "t:0", nil},
		{"older epoch, at the assignment epoch", g, "m", 3, oc(9), "t:0", nil},
		{"older epoch, partition assigned since", g, "m", 4, oc(9), "t:1", kerr.StaleMemberEpoch},
		{"older epoch, pending revocation", g, "m", 4, oc(9), "t:2", nil},
		{"older epoch, pending revocation since", g, "m", 3, oc(9), "t:2", kerr.StaleMemberEpoch},
		{"older epoch, not owned", g, "m", 4, oc(9), "t:3", kerr.StaleMemberEpoch},
		{"older epoch, other topic", g, "m", 4, oc(9), "u:0", kerr.StaleMemberEpoch},
		{"older epoch, one bad partition fails all", g, "m", 4, oc(9), "t:0,1,2", kerr.StaleMemberEpoch},
		{"older epoch, before any", g, "m", 2, oc(9), "t:0", kerr.StaleMemberEpoch},
		{"older epoch, no partitions", g, "m", 0, oc(9), "", nil},
		{"older epoch, classic kept", g, "c", 4, oc(9), "u:0", nil},
		{"older epoch, classic since", g, "c", 3, oc(9), "u:0", kerr.IllegalGeneration},
		{"older epoch, txn v5 kept", g, "m", 4, txn(5), "t:0,2", nil},
		{"older epoch, txn v5 since", g, "m", 4, txn(5), "t:1", kerr.IllegalGeneration},
		{"older epoch, txn v6 since", g, "m", 4, txn(6), "t:1", kerr.StaleMemberEpoch},
	} {
		var parts []offsetKey
		for _, tp := range parseTopicParts(tc.parts) {
			for _, p := range tp.partitions {
				parts = append(parts, offsetKey{tp.topic, p})
			}
		}
		if got := validateConsumerOffsetCommit(tc.g, tc.member, tc.epoch, tc.kind, slices.Values(parts)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// commitAt commits offset to each of parts ("t:0,1;u:0") as member at
// epoch, and returns the answer as "t/0=ok t/1=STALE_MEMBER_EPOCH".
func commitAt(t *testing.T, c *Coordinator, member string, epoch int32, parts string, offset int64) string {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 9, "g", member, epoch
	for _, tp := range parseTopicParts(parts) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = tp.topic
		for _, p := range tp.partitions {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, offset
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	var out []string
	for _, rt := range c.OffsetCommit(req).Topics {
		for _, rp := range rt.Partitions {
			out = append(out, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, errName(rp.ErrorCode)))
		}
	}
	return strings.Join(out, " ")
}

// fetchAll returns the group's committed offsets as "t/0=5 t/1=7".
func fetchAll(t *testing.T, c *Coordinator) string {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, "g"
	r := c.OffsetFetch(req)
	if r.ErrorCode != 0 {
		t.Fatalf("OffsetFetch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	var out []string
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, rt.Topic+"/"+strconv.Itoa(int(rp.Partition))+"="+strconv.FormatInt(rp.Offset, 10))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// hb heartbeats member at epoch owning owned ("t:0,1"; "" for nothing),
// subscribing to topics on a join, and checks the epoch answered.
func hb(t *testing.T, c *Coordinator, member string, epoch int32, owned, topics string, wantEpoch int32) {
	t.Helper()
	r := cgh(t, c, member, epoch, func(req *kmsg.ConsumerGroupHeartbeatRequest) {
		if topics != "" {
			req.SubscribedTopicNames = strings.Split(topics, ",")
		}
		if epoch < 0 {
			return
		}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, tp := range parseTopicParts(owned) {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = testTopicID(tp.topic), tp.partitions
			req.Topics = append(req.Topics, rt)
		}
	})
	if r.ErrorCode != 0 || r.MemberEpoch != wantEpoch {
		t.Fatalf("heartbeat %s at %d: %v epoch %d, want epoch %d", member, epoch, kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, wantEpoch)
	}
}

// TestConsumerCommit_OlderEpochAfterRebalance plays the close race of a
// Java consumer: a heartbeat moves m1 to epoch 2 (m2 joined), and its
// closing commit still carries epoch 1. Kafka 4.3+ accepts it for the
// partitions m1 has held since epoch 1, and so must a coordinator that
// reloaded the group, from groups.db or from __consumer_offsets alone.
func TestConsumerCommit_OlderEpochAfterRebalance(t *testing.T) {
	log := newMemLog()
	dir := t.TempDir()
	a := openModern(t, dir, log)
	p := PartitionFor("g", 50)
	if err := a.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	hb(t, a, "m1", 0, "", "t", 1)         // m1: t:0-3 at epoch 1
	hb(t, a, "m1", 1, "t:0,1,2,3", "", 1) // ...
	hb(t, a, "m2", 0, "", "t", 2)         // group epoch 2: m2 is to get t:2,3
	hb(t, a, "m1", 1, "t:0,1,2,3", "", 1) // m1 revokes t:2,3 ...
	hb(t, a, "m1", 1, "t:0,1", "", 2)     // ... and moves to epoch 2 with t:0,1
	hb(t, a, "m2", 2, "", "", 2)          // m2 gets t:2,3 at epoch 2

	check := func(c *Coordinator, member string, epoch int32, parts string, offset int64, want string) {
		t.Helper()
		if got := commitAt(t, c, member, epoch, parts, offset); got != want {
			t.Errorf("commit %s at epoch %d of %s: %s, want %s", member, epoch, parts, got, want)
		}
	}
	const stale = "STALE_MEMBER_EPOCH"
	check(a, "m1", 1, "t:0,1", 10, "t/0=ok t/1=ok") // the close race
	check(a, "m1", 2, "t:0,1,2,3", 11, "t/0=ok t/1=ok t/2=ok t/3=ok")
	check(a, "m2", 1, "t:2", 12, "t/2="+stale)                 // assigned to m2 at epoch 2
	check(a, "m1", 1, "t:0,2", 12, "t/0="+stale+" t/2="+stale) // t:2 is no longer m1's: nothing is written
	check(a, "m1", 0, "t:0", 12, "t/0="+stale)                 // before m1 had it
	check(a, "m1", 3, "t:0", 12, "t/0="+stale)                 // ahead of m1
	check(a, "m1", 1, "t:0", 13, "t/0=ok")
	if got, want := fetchAll(t, a), "t/0=13 t/1=11 t/2=11 t/3=11"; got != want {
		t.Fatalf("offsets: %s, want %s", got, want)
	}

	// Reloaded from groups.db (the same directory) and from the log alone
	// (an empty one), the assignment epochs are the same.
	a.Close()
	b := openModern(t, dir, log)
	c := openModern(t, t.TempDir(), log)
	for _, x := range []*Coordinator{b, c} {
		if err := x.LoadPartition(p); err != nil {
			t.Fatal(err)
		}
		check(x, "m1", 1, "t:0,1", 20, "t/0=ok t/1=ok")
		check(x, "m1", 1, "t:0,2", 21, "t/0="+stale+" t/2="+stale)
		check(x, "m2", 1, "t:3", 21, "t/3="+stale)
		check(x, "m2", 2, "t:3", 22, "t/3=ok")
		if got, want := fetchAll(t, x), "t/0=20 t/1=20 t/2=11 t/3=22"; got != want {
			t.Fatalf("offsets after reload: %s, want %s", got, want)
		}
	}

	// m2 leaves: m1 moves to epoch 3 and gets t:2,3 at epoch 3, keeping
	// t:0,1 from epoch 1.
	hb(t, b, "m2", -1, "", "", -1)
	hb(t, b, "m1", 2, "t:0,1", "", 3)
	check(b, "m1", 2, "t:0,2", 30, "t/0="+stale+" t/2="+stale) // t:2 is newly assigned at epoch 3
	check(b, "m1", 2, "t:0,1", 31, "t/0=ok t/1=ok")
	check(b, "m1", 1, "t:1", 32, "t/1=ok")
	check(b, "m1", 3, "t:2", 33, "t/2=ok")
	if got, want := fetchAll(t, b), "t/0=31 t/1=32 t/2=33 t/3=22"; got != want {
		t.Fatalf("offsets: %s, want %s", got, want)
	}
}

// TestConsumerCommit_PendingRevocation: partitions a member must revoke
// keep their assignment epoch, so the member's commit of them at an
// older epoch, before it acknowledges the revocation, is accepted.
func TestConsumerCommit_PendingRevocation(t *testing.T) {
	a := openModern(t, t.TempDir(), newMemLog())
	if err := a.LoadPartition(PartitionFor("g", 50)); err != nil {
		t.Fatal(err)
	}
	hb(t, a, "m1", 0, "", "t", 1)         // m1: t:0-3 at epoch 1
	hb(t, a, "m1", 1, "t:0,1,2,3", "", 1) // ...
	hb(t, a, "m2", 0, "", "u", 2)         // m2 takes only u: m1 keeps t
	hb(t, a, "m1", 1, "t:0,1,2,3", "", 2) // m1 at epoch 2, t:0-3 still from epoch 1
	hb(t, a, "m3", 0, "", "t", 3)         // group epoch 3: m3 is to get t:2,3
	hb(t, a, "m1", 2, "t:0,1,2,3", "", 2) // m1 must revoke t:2,3, still at epoch 2

	for _, tc := range []struct {
		member string
		epoch  int32
		parts  string
		want   string
	}{
		{"m1", 1, "t:2,3", "t/2=ok t/3=ok"}, // pending revocation, assigned at epoch 1
		{"m1", 1, "t:0,2", "t/0=ok t/2=ok"},
		{"m1", 0, "t:2", "t/2=STALE_MEMBER_EPOCH"},
		{"m1", 1, "u:0", "u/0=STALE_MEMBER_EPOCH"}, // m2's
		{"m1", 3, "t:2", "t/2=STALE_MEMBER_EPOCH"},
	} {
		if got := commitAt(t, a, tc.member, tc.epoch, tc.parts, 5); got != tc.want {
			t.Errorf("commit %s at epoch %d of %s: %s, want %s", tc.member, tc.epoch, tc.parts, got, tc.want)
		}
	}
	// Once revoked, they are gone from m1's epochs.
	hb(t, a, "m1", 2, "t:0,1", "", 3)
	if got := commitAt(t, a, "m1", 2, "t:2", 6); got != "t/2=STALE_MEMBER_EPOCH" {
		t.Errorf("commit of a revoked partition: %s", got)
	}
	got := memberEpochs(a, "g", "m1")
	if want := "map[t:map[0:1 1:1]]"; got != want {
		t.Errorf("m1's assignment epochs: %s, want %s", got, want)
	}
}

// TestConsumerCommit_StaticLeaveResetsEpochs: a static member leaving
// with epoch -2 keeps its partitions for its instance, at assignment
// epoch 0.
func TestConsumerCommit_StaticLeaveResetsEpochs(t *testing.T) {
	a := openModern(t, t.TempDir(), newMemLog())
	if err := a.LoadPartition(PartitionFor("g", 50)); err != nil {
		t.Fatal(err)
	}
	static := func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("i1") }
	if r := cgh(t, a, "m1", 0, static); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("join: %+v", r)
	}
	if r := cgh(t, a, "m1", staticLeaveEpoch, static); r.ErrorCode != 0 {
		t.Fatalf("static leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := cgh(t, a, "m1b", 0, static); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("rejoin of the instance: %+v", r)
	}
	got := memberEpochs(a, "g", "m1b")
	if want := "map[t:map[0:0 1:0 2:0 3:0]]"; got != want {
		t.Errorf("assignment epochs after a static rejoin: %s, want %s", got, want)
	}
}

// TestConsumerCommit_RecordsWithoutEpochs: a current assignment record
// without AssignmentEpochs (Kafka before 4.3, Gregor before KIP-1251)
// gives its partitions max(member epoch, 0); one with them gives theirs.
func TestConsumerCommit_RecordsWithoutEpochs(t *testing.T) {
	log := newMemLog()
	p := PartitionFor("g", 50)
	key := func(typ int16, member string) []byte { return recordKey{typ, "g", member}.encode() }
	member := func(id string) LogRecord {
		mv := consumerMemberValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}, RebalanceTimeoutMs: 30000}
		return LogRecord{Key: key(keyConsumerGroupMember, id), Value: mv.encode()}
	}
	current := func(id string, epoch int32, epochs []int32) LogRecord {
		parts := []int32{0, 1}
		if id == "m2" {
			parts = []int32{2, 3}
		}
		cv := currentAssignmentValue{MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: memberStateStable,
			AssignedPartitions:          []topicPartitions{{TopicID: testTopicID("t"), Partitions: parts, AssignmentEpochs: epochs}},
			PartitionsPendingRevocation: []topicPartitions{}}
		return LogRecord{Key: key(keyConsumerGroupCurrentAssignment, id), Value: cv.encode(false)}
	}
	log.Append(p, []LogRecord{
		member("m1"), member("m2"),
		{Key: key(keyConsumerGroupMetadata, ""), Value: groupMetadataValue{Epoch: 3}.encodeConsumer()},
		{Key: key(keyConsumerGroupTargetMetadata, ""), Value: encodeEpochValue(3)},
		current("m1", 3, nil),           // no epochs: 3
		current("m2", 3, []int32{1, 2}), // t:2 at 1, t:3 at 2
	})
	a := openModern(t, t.TempDir(), log)
	if err := a.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		member string
		epoch  int32
		parts  string
		want   string
	}{
		{"m1", 3, "t:0", "t/0=ok"},
		{"m1", 2, "t:0", "t/0=STALE_MEMBER_EPOCH"},
		{"m2", 2, "t:2,3", "t/2=ok t/3=ok"},
		{"m2", 1, "t:2", "t/2=ok"},
		{"m2", 1, "t:3", "t/3=STALE_MEMBER_EPOCH"},
	} {
		if got := commitAt(t, a, tc.member, tc.epoch, tc.parts, 5); got != tc.want {
			t.Errorf("commit %s at epoch %d of %s: %s, want %s", tc.member, tc.epoch, tc.parts, got, tc.want)
		}
	}
}

// memberEpochs prints the assignment epochs of group's member.
func memberEpochs(c *Coordinator, group, member string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.groups[group].cg.members[member].epochs)
}
