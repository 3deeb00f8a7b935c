package coordinator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var t0 = time.Unix(1_700_000_000, 0)

func spCfg() SharePartitionConfig {
	return SharePartitionConfig{LockDuration: 30 * time.Second, DeliveryCountLimit: 3, MaxInFlight: 10}
}

func ranges(rs []AcquiredRange) string { return fmt.Sprint(rs) }

func wantRanges(t *testing.T, got []AcquiredRange, want string) {
	t.Helper()
	if s := ranges(got); s != want {
		t.Fatalf("acquired %s, want %s", s, want)
	}
}

func wantState(t *testing.T, sp *SharePartition, off int64, state RecordState, deliveries int16) {
	t.Helper()
	s, d, _ := sp.State(off)
	if s != state || d != deliveries {
		t.Fatalf("offset %d: %s/%d, want %s/%d", off, s, d, state, deliveries)
	}
}

// Two members share a partition: each gets disjoint records; acks move
// the SPSO; a release is redelivered with delivery count 2.
func TestSharePartition_AcquireAckRelease(t *testing.T) {
	sp := NewSharePartition(spCfg(), 0)
	batches := []BatchSpan{{0, 2, false}, {3, 4, false}, {5, 5, true}, {6, 7, false}}
	wantRanges(t, sp.Acquire("a", t0, batches[:2], 0), "[{0 4 1}]")
	off, ok := sp.FetchOffset(t0)
	if off != 5 || !ok {
		t.Fatalf("fetch offset %d %v, want 5 true", off, ok)
	}
	// b reads from 5: the control batch is archived, never acquired.
	wantRanges(t, sp.Acquire("b", t0, batches[2:], 0), "[{6 7 1}]")
	wantState(t, sp, 5, RecordArchived, 0)

	// b cannot acknowledge a's records; a's ack is all or none.
	if err := sp.Acknowledge("b", t0, []AckBatch{{0, 0, []int8{AckAccept}}}, false); err != kerr.InvalidRecordState {
		t.Fatalf("foreign ack: %v", err)
	}
	if err := sp.Acknowledge("a", t0, []AckBatch{{0, 1, []int8{AckAccept}}, {3, 9, []int8{AckAccept}}}, false); err != kerr.InvalidRecordState {
		t.Fatalf("ack past end: %v", err)
	}
	wantState(t, sp, 0, RecordAcquired, 1)
	if err := sp.Acknowledge("a", t0, []AckBatch{{0, 4, []int8{AckAccept, AckAccept, AckRelease, AckReject, AckAccept}}}, false); err != nil {
		t.Fatal(err)
	}
	if sp.StartOffset() != 2 {
		t.Fatalf("SPSO %d, want 2", sp.StartOffset())
	}
	wantState(t, sp, 2, RecordAvailable, 1)
	wantState(t, sp, 3, RecordArchived, 1)
	// Redelivery of 2 to b, count 2; nothing else is acquirable.
	wantRanges(t, sp.Acquire("b", t0, batches, 0), "[{2 2 2}]")
	if err := sp.Acknowledge("b", t0, []AckBatch{{2, 2, []int8{AckAccept}}, {6, 7, []int8{AckAccept}}}, false); err != nil {
		t.Fatal(err)
	}
	if sp.StartOffset() != 8 || sp.InFlight() != 0 {
		t.Fatalf("SPSO %d in flight %d, want 8 0", sp.StartOffset(), sp.InFlight())
	}
	// Malformed batches.
	sp.Acquire("a", t0, []BatchSpan{{8, 9, false}}, 0)
	for _, b := range []AckBatch{{9, 8, []int8{1}}, {8, 9, []int8{1, 1, 1}}, {8, 9, []int8{7}}, {8, 9, []int8{AckRenew}}} {
		if err := sp.Acknowledge("a", t0, []AckBatch{b}, false); err != kerr.InvalidRequest {
			t.Fatalf("%v: %v, want INVALID_REQUEST", b, err)
		}
	}
}

// Locks expire on the caller's clock; at the delivery limit a record is
// archived instead of made available; Renew restarts the lock.
func TestSharePartition_LockExpiryAndDeliveryLimit(t *testing.T) {
	sp := NewSharePartition(spCfg(), 10)
	b := []BatchSpan{{10, 11, false}}
	now := t0
	for i := int16(1); i <= 3; i++ {
		wantRanges(t, sp.Acquire("a", now, b, 0), fmt.Sprintf("[{10 11 %d}]", i))
		if exp, ok := sp.NextExpiry(); !ok || !exp.Equal(now.Add(30*time.Second)) {
			t.Fatalf("expiry %v %v", exp, ok)
		}
		wantRanges(t, sp.Acquire("b", now.Add(29*time.Second), b, 0), "[]")
		now = now.Add(30 * time.Second)
	}
	// Third lock expired at the limit: archived, SPSO past them.
	if off, _ := sp.FetchOffset(now); off != 12 || sp.StartOffset() != 12 {
		t.Fatalf("fetch offset %d SPSO %d, want 12 12", off, sp.StartOffset())
	}

	sp.Acquire("a", now, []BatchSpan{{12, 12, false}}, 0)
	if err := sp.Acknowledge("a", now.Add(20*time.Second), []AckBatch{{12, 12, []int8{AckRenew}}}, true); err != nil {
		t.Fatal(err)
	}
	if exp, _ := sp.NextExpiry(); !exp.Equal(now.Add(50 * time.Second)) {
		t.Fatalf("renewed expiry %v", exp.Sub(now))
	}
	wantState(t, sp, 12, RecordAcquired, 1)
	sp.ReleaseMember("a")
	wantState(t, sp, 12, RecordAvailable, 1)
}

// The in-flight window bounds new acquisitions; maxRecords stops at a
// batch boundary; gaps in the log are archived.
func TestSharePartition_Limits(t *testing.T) {
	sp := NewSharePartition(spCfg(), 0)
	wantRanges(t, sp.Acquire("a", t0, []BatchSpan{{0, 3, false}, {4, 7, false}, {8, 9, false}}, 2), "[{0 3 1}]")
	wantRanges(t, sp.Acquire("a", t0, []BatchSpan{{4, 7, false}, {12, 20, false}}, 0), "[{4 7 1} {12 20 1}]")
	wantState(t, sp, 10, RecordArchived, 0)
	if _, ok := sp.FetchOffset(t0); ok {
		t.Fatal("window full, fetch offset reported acquirable")
	}
	wantRanges(t, sp.Acquire("a", t0, []BatchSpan{{21, 22, false}}, 0), "[]")
	sp.SetStartOffset(100)
	if off, ok := sp.FetchOffset(t0); off != 100 || !ok || sp.InFlight() != 0 {
		t.Fatalf("after alter: %d %v", off, ok)
	}
	sp.AdvanceLogStart(150)
	if sp.StartOffset() != 150 {
		t.Fatalf("SPSO %d after log start 150", sp.StartOffset())
	}
}

func openShare(t *testing.T) (*Coordinator, *manualClock, *[]string) {
	t.Helper()
	clk := newManualClock()
	var left []string
	topics := []ConsumerTopic{{Name: "t3", ID: [16]byte{3}, Partitions: 3}, {Name: "t1", ID: [16]byte{1}, Partitions: 1}}
	c, err := Open(Config{Dir: t.TempDir(), Now: clk.Now, AfterFunc: clk.AfterFunc,
		Topics:             func() []ConsumerTopic { return topics },
		OnShareMemberLeave: func(g, m string) { left = append(left, g+"/"+m) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, clk, &left
}

func shb(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version, r.GroupID, r.MemberID, r.MemberEpoch = 1, group, member, epoch
	if topics != nil {
		r.SubscribedTopicNames = topics
	}
	return r
}

func assigned(r *kmsg.ShareGroupHeartbeatResponse) string {
	if r.Assignment == nil {
		return "nil"
	}
	var out []string
	for _, tp := range r.Assignment.TopicPartitions {
		out = append(out, fmt.Sprintf("%d:%v", tp.TopicID[0], tp.Partitions))
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

func TestShareGroup_Heartbeats(t *testing.T) {
	c, clk, left := openShare(t)
	r := c.ShareGroupHeartbeat(shb("g", "m1", 0, "t3", "t1"), "c", "/h")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != "[1:[0] 3:[0 1 2]]" || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join m1: %v epoch %d %s", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, assigned(r))
	}
	r = c.ShareGroupHeartbeat(shb("g", "m2", 0, "t3", "t1"), "c", "/h")
	if r.MemberEpoch != 2 || assigned(r) != "[1:[0] 3:[1]]" {
		t.Fatalf("join m2: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	// m1 is brought to epoch 2 with its new assignment; t1's one
	// partition is shared.
	r = c.ShareGroupHeartbeat(shb("g", "m1", 1), "c", "/h")
	if r.MemberEpoch != 2 || assigned(r) != "[1:[0] 3:[0 2]]" {
		t.Fatalf("m1 at 2: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	if r = c.ShareGroupHeartbeat(shb("g", "m1", 2), "c", "/h"); r.ErrorCode != 0 || r.Assignment != nil {
		t.Fatalf("steady heartbeat: %v %s", kerr.ErrorForCode(r.ErrorCode), assigned(r))
	}
	for _, tc := range []struct {
		req  *kmsg.ShareGroupHeartbeatRequest
		want *kerr.Error
	}{
		{shb("g", "m1", 1), kerr.FencedMemberEpoch},
		{shb("g", "nobody", 3), kerr.UnknownMemberID},
		{shb("g", "nobody", -1), kerr.UnknownMemberID},
		{shb("other", "m1", 1), kerr.GroupIDNotFound},
		{shb("g", "", 0, "t1"), kerr.InvalidRequest},
		{shb("g", "m3", 0), kerr.InvalidRequest},
		{shb("g", "m3", -2, "t1"), kerr.InvalidRequest},
	} {
		if r := c.ShareGroupHeartbeat(tc.req, "c", "/h"); r.ErrorCode != tc.want.Code {
			t.Errorf("%s/%s@%d: %v, want %v", tc.req.GroupID, tc.req.MemberID, tc.req.MemberEpoch, kerr.ErrorForCode(r.ErrorCode), tc.want)
		}
	}

	// Describe, then m2's session expires.
	d := c.ShareGroupDescribe(&kmsg.ShareGroupDescribeRequest{GroupIDs: []string{"g", "nope"}})
	if g := d.Groups[0]; g.GroupState != "Stable" || g.GroupEpoch != 2 || len(g.Members) != 2 || g.Assignor != "simple" {
		t.Fatalf("describe: %+v", g)
	}
	if d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown: %d", d.Groups[1].ErrorCode)
	}
	clk.Advance(40 * time.Second)
	c.ShareGroupHeartbeat(shb("g", "m1", 2), "c", "/h")
	clk.Advance(10 * time.Second)
	if !slices.Equal(*left, []string{"g/m2"}) {
		t.Fatalf("left %v, want [g/m2]", *left)
	}
	r = c.ShareGroupHeartbeat(shb("g", "m1", 2), "c", "/h")
	if r.MemberEpoch != 3 || assigned(r) != "[1:[0] 3:[0 1 2]]" {
		t.Fatalf("after expiry: epoch %d %s", r.MemberEpoch, assigned(r))
	}

	// Not deletable with members; type "share" in ListGroups.
	if dr := c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}}); dr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty: %d", dr.Groups[0].ErrorCode)
	}
	lg := c.ListGroups(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"share"}})
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g" || lg.Groups[0].GroupType != "share" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("list: %+v", lg.Groups)
	}
	if r = c.ShareGroupHeartbeat(shb("g", "m1", -1), "c", "/h"); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if dr := c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}}); dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete empty: %d", dr.Groups[0].ErrorCode)
	}
	if c.IsShareGroup("g") {
		t.Fatal("deleted group still there")
	}
}

// Share and classic/consumer groups do not share ids.
func TestShareGroup_InconsistentProtocol(t *testing.T) {
	c, _, _ := openShare(t)
	cr := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cr.Version, cr.Group, cr.MemberID, cr.RebalanceTimeoutMillis = 1, "cg", "x", 1000
	cr.SubscribedTopicNames, cr.Topics = []string{"t1"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := c.ConsumerGroupHeartbeat(cr, "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("consumer join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := c.ShareGroupHeartbeat(shb("cg", "m", 0, "t1"), "c", "/h"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("share join of consumer group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	c.ShareGroupHeartbeat(shb("sg", "m", 0, "t1"), "c", "/h")
	cr.Group = "sg"
	if r := c.ConsumerGroupHeartbeat(cr, "c", "/h"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer join of share group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := c.ShareGroupStatus("cg", true, false); err != kerr.GroupIDNotFound {
		t.Fatalf("status of consumer group: %v", err)
	}
	if err := c.ShareGroupStatus("sg", false, true); err != kerr.NonEmptyGroup {
		t.Fatalf("status of non-empty share group: %v", err)
	}
}

// AcquireExact (record-limit mode) stops inside a batch at maxRecords; the
// rest of the batch is acquirable later, in flight or past the end.
func TestSharePartition_AcquireExact(t *testing.T) {
	sp := NewSharePartition(spCfg(), 0)
	batches := []BatchSpan{{0, 3, false}, {4, 7, false}}
	wantRanges(t, sp.AcquireExact("a", t0, batches, 2), "[{0 1 1}]")
	if off, ok := sp.FetchOffset(t0); off != 2 || !ok {
		t.Fatalf("fetch offset %d %v, want 2", off, ok)
	}
	wantRanges(t, sp.AcquireExact("b", t0, batches, 3), "[{2 4 1}]")
	wantRanges(t, sp.Acquire("c", t0, batches[1:], 0), "[{5 7 1}]")
}
