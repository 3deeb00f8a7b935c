package coordinator

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func modernTopics() []ConsumerTopic {
	return []ConsumerTopic{{Name: "t", ID: testTopicID("t"), Partitions: 4}, {Name: "u", ID: testTopicID("u"), Partitions: 2}}
}

func openModern(t *testing.T, dir string, log GroupLog) *Coordinator {
	t.Helper()
	c, err := Open(Config{Dir: dir, Log: log, LogPartitions: 50, Topics: modernTopics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func cgh(t *testing.T, c *Coordinator, member string, epoch int32, mod func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if mod != nil {
		mod(req)
	}
	return c.ConsumerGroupHeartbeat(req, "client-"+member, "/127.0.0.1")
}

func owned(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if a == nil {
		return out
	}
	for _, t := range a.Topics {
		rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		rt.TopicID, rt.Partitions = t.TopicID, t.Partitions
		out = append(out, rt)
	}
	return out
}

func describeCG(c *Coordinator, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{group}
	return c.ConsumerGroupDescribe(req).Groups[0]
}

func describeSG(c *Coordinator, group string) kmsg.ShareGroupDescribeResponseGroup {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	return c.ShareGroupDescribe(req).Groups[0]
}

func sgh(t *testing.T, c *Coordinator, group, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"u"}
	}
	return c.ShareGroupHeartbeat(req, "client-"+member, "/127.0.0.1")
}

// A coordinator that loads a __consumer_offsets partition written by
// another (an empty groups.db: every record replayed) has the same consumer
// and share groups, and their members' next heartbeats are accepted.
func TestModernGroupsReloadFromLog(t *testing.T) {
	log := newMemLog()
	a := openModern(t, t.TempDir(), log)
	p := PartitionFor("g", 50)
	for _, q := range []int32{p, PartitionFor("sg", 50)} {
		if err := a.LoadPartition(q); err != nil {
			t.Fatal(err)
		}
	}
	r1 := cgh(t, a, "m1", 0, nil)
	r2 := cgh(t, a, "m2", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.InstanceID, r.RackID = kmsg.StringPtr("i2"), kmsg.StringPtr("rack")
		r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("t|u")
		r.ServerAssignor = kmsg.StringPtr("range")
	})
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 {
		t.Fatalf("joins: %v %v", kerr.ErrorForCode(r1.ErrorCode), kerr.ErrorForCode(r2.ErrorCode))
	}
	// m1 revokes what the second member's arrival took from it.
	r1 = cgh(t, a, "m1", r1.MemberEpoch, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = owned(r1.Assignment) })
	if r1.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r1.ErrorCode))
	}
	if s := sgh(t, a, "sg", "s1", 0); s.ErrorCode != 0 || s.MemberEpoch != 1 {
		t.Fatalf("share join: %+v", s)
	}
	if s := sgh(t, a, "sg", "s2", 0); s.ErrorCode != 0 || s.MemberEpoch != 2 {
		t.Fatalf("share join: %+v", s)
	}

	// Every record appended decodes; the types expected are there.
	seen := map[int16]int{}
	for _, recs := range log.parts {
		for _, r := range recs {
			k, err := decodeRecordKey(r.Key)
			if err != nil {
				continue
			}
			seen[k.Type]++
			var derr error
			switch k.Type {
			case keyConsumerGroupMetadata:
				_, derr = decodeConsumerGroupMetadata(r.Value)
			case keyConsumerGroupMember:
				_, derr = decodeConsumerMember(r.Value)
			case keyConsumerGroupTargetMetadata, keyShareGroupTargetMetadata:
				_, derr = decodeEpochValue(r.Value)
			case keyConsumerGroupTargetMember, keyShareGroupTargetMember:
				_, derr = decodeTargetMember(r.Value)
			case keyConsumerGroupCurrentAssignment:
				_, derr = decodeCurrentAssignment(r.Value, false)
			case keyShareGroupCurrentAssignment:
				_, derr = decodeCurrentAssignment(r.Value, true)
			case keyConsumerGroupRegex:
				_, derr = decodeRegex(r.Value)
			case keyShareGroupMetadata:
				_, derr = decodeShareGroupMetadata(r.Value)
			case keyShareGroupMember:
				_, derr = decodeShareMember(r.Value)
			}
			if derr != nil {
				t.Errorf("record %+v does not decode: %v", k, derr)
			}
		}
	}
	for _, typ := range []int16{3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 16} {
		if seen[typ] == 0 {
			t.Errorf("no record of type %d in the log (%v)", typ, seen)
		}
	}

	wantCG, wantSG := describeCG(a, "g"), describeSG(a, "sg")
	if wantCG.ErrorCode != 0 || len(wantCG.Members) != 2 || wantSG.ErrorCode != 0 || len(wantSG.Members) != 2 {
		t.Fatalf("before: %+v %+v", wantCG, wantSG)
	}
	a.UnloadPartition(p)
	a.UnloadPartition(PartitionFor("sg", 50))

	b := openModern(t, t.TempDir(), log)
	for _, q := range []int32{p, PartitionFor("sg", 50)} {
		if err := b.LoadPartition(q); err != nil {
			t.Fatal(err)
		}
	}
	gotCG, gotSG := describeCG(b, "g"), describeSG(b, "sg")
	// Join order is not recorded: members come back sorted by id, as they
	// were joined here.
	if !reflect.DeepEqual(gotCG, wantCG) {
		t.Errorf("consumer group after reload:\n got %+v\nwant %+v", gotCG, wantCG)
	}
	if !reflect.DeepEqual(gotSG, wantSG) {
		t.Errorf("share group after reload:\n got %+v\nwant %+v", gotSG, wantSG)
	}

	// The members carry on with their ids and epochs.
	var m1, m2 kmsg.ConsumerGroupDescribeResponseGroupMember
	for _, m := range gotCG.Members {
		switch m.MemberID {
		case "m1":
			m1 = m
		case "m2":
			m2 = m
		}
	}
	toOwned := func(as kmsg.Assignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
		out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range as.TopicPartitions {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = t.TopicID, t.Partitions
			out = append(out, rt)
		}
		return out
	}
	h1 := cgh(t, b, "m1", m1.MemberEpoch, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = toOwned(m1.Assignment) })
	h2 := cgh(t, b, "m2", m2.MemberEpoch, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.InstanceID = kmsg.StringPtr("i2")
		r.Topics = toOwned(m2.Assignment)
	})
	if h1.ErrorCode != 0 || h2.ErrorCode != 0 {
		t.Fatalf("heartbeats after reload: %v %v", kerr.ErrorForCode(h1.ErrorCode), kerr.ErrorForCode(h2.ErrorCode))
	}
	if h1.MemberEpoch != wantCG.Epoch && h1.MemberEpoch != m1.MemberEpoch {
		t.Fatalf("m1's epoch after reload: %d", h1.MemberEpoch)
	}
	if d := describeCG(b, "g"); d.Epoch != wantCG.Epoch {
		t.Fatalf("group epoch moved on reload: %d, want %d", d.Epoch, wantCG.Epoch)
	}
	for _, m := range gotSG.Members {
		if s := sgh(t, b, "sg", m.MemberID, m.MemberEpoch); s.ErrorCode != 0 || s.MemberEpoch != wantSG.GroupEpoch {
			t.Fatalf("share heartbeat of %s after reload: %+v", m.MemberID, s)
		}
	}

	// Deleting the groups writes tombstones: a third coordinator has none.
	for _, m := range []string{"m1", "m2"} {
		cgh(t, b, m, -1, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			if m == "m2" {
				r.InstanceID = kmsg.StringPtr("i2")
			}
		})
	}
	for _, m := range gotSG.Members {
		sgh(t, b, "sg", m.MemberID, -1)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "sg"}
	for _, g := range b.DeleteGroups(del).Groups {
		if g.ErrorCode != 0 {
			t.Fatalf("delete %s: %v", g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
	}
	c := openModern(t, t.TempDir(), log)
	for _, q := range []int32{p, PartitionFor("sg", 50)} {
		if err := c.LoadPartition(q); err != nil {
			t.Fatal(err)
		}
	}
	if d := describeCG(c, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted consumer group after reload: %+v", d)
	}
	if d := describeSG(c, "sg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted share group after reload: %+v", d)
	}
}

// The view in groups.db is kept with the log: a coordinator restarted on
// the same directory replays only the tail and has the same groups.
func TestModernGroupsReloadFromView(t *testing.T) {
	log := newMemLog()
	dir := t.TempDir()
	a, err := Open(Config{Dir: dir, Log: log, LogPartitions: 50, Topics: modernTopics})
	if err != nil {
		t.Fatal(err)
	}
	p := PartitionFor("g", 50)
	if err := a.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	r := cgh(t, a, "m1", 0, nil)
	if r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	want := describeCG(a, "g")
	a.Close()
	n := int64(len(log.parts[p]))

	b := openModern(t, dir, log)
	if err := b.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if from := log.replays[len(log.replays)-1]; from != n {
		t.Fatalf("replayed from %d, want %d (the checkpoint)", from, n)
	}
	if got := describeCG(b, "g"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart:\n got %+v\nwant %+v", got, want)
	}
	if h := cgh(t, b, "m1", r.MemberEpoch, func(req *kmsg.ConsumerGroupHeartbeatRequest) { req.Topics = owned(r.Assignment) }); h.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(h.ErrorCode))
	}
}
