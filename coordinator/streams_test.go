package coordinator

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsHarness is a coordinator over a memLog with a mutable topic list.
type streamsHarness struct {
	t      *testing.T
	log    *memLog
	topics map[string]int32
	c      *Coordinator
	dir    string
}

func newStreamsHarness(t *testing.T, standbys int) *streamsHarness {
	h := &streamsHarness{t: t, log: newMemLog(), topics: map[string]int32{"input": 4}, dir: t.TempDir()}
	h.open(standbys)
	return h
}

func (h *streamsHarness) open(standbys int) {
	h.t.Helper()
	h.openWith(Config{LogPartitions: 50, StreamsNumStandbyReplicas: standbys, StreamsInitialRebalanceDelay: -1})
}

// openWith opens a coordinator with cfg over the harness's directory, log
// and topics, and loads the partition of group "app".
func (h *streamsHarness) openWith(cfg Config) {
	h.t.Helper()
	cfg.Dir, cfg.Log = h.dir, h.log
	cfg.Topics = func() []ConsumerTopic {
		var out []ConsumerTopic
		for _, n := range sortedKeys(h.topics) {
			out = append(out, ConsumerTopic{Name: n, ID: testTopicID(n), Partitions: h.topics[n]})
		}
		return out
	}
	c, err := Open(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	if err := c.LoadPartition(PartitionFor("app", 50)); err != nil {
		h.t.Fatal(err)
	}
	h.c = c
}

// wordCount is the topology of a word count: subtopology 0 reads input
// and writes the repartition topic, subtopology 1 reads it and keeps a
// store with a changelog.
func wordCount(epoch int32) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = epoch
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"input"}, []string{"app-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rp := kmsg.NewTopicInfo()
	rp.Topic = "app-repartition"
	rp.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	cl := kmsg.NewTopicInfo()
	cl.Topic = "app-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.RepartitionSourceTopics, s1.StateChangelogTopics = []kmsg.TopicInfo{rp}, []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

type ownedTasks struct{ active, standby partitionSet }

func (h *streamsHarness) hb(member, process string, epoch int32, own *ownedTasks, mod func(*kmsg.StreamsGroupHeartbeatRequest)) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopic) {
	h.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "app", member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = wordCount(0)
		req.ProcessID = kmsg.StringPtr(process)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	if own != nil {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = toTaskIDs(own.active), toTaskIDs(own.standby), []kmsg.TaskIDs{}
	}
	if mod != nil {
		mod(req)
	}
	return h.c.StreamsGroupHeartbeat(req, "client-"+member, "/127.0.0.1")
}

func (h *streamsHarness) describe(group string) kmsg.StreamsGroupDescribeResponseGroup {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{group}
	return h.c.StreamsGroupDescribe(req).Groups[0]
}

func tasksOf(ts []kmsg.TaskIDs) partitionSet {
	if ts == nil {
		return nil
	}
	return fromTaskIDs(ts)
}

func ps(s string) partitionSet {
	out := partitionSet{}
	for _, tp := range parseTopicParts(s) {
		for _, p := range tp.partitions {
			out.add(tp.topic, p)
		}
	}
	return out
}

func statusCodes(r *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	out := []int8{}
	for _, s := range r.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

// A first member with a topology whose internal topics do not exist gets
// MISSING_INTERNAL_TOPICS, the topics to create with the partition counts
// the topology gives them, and no tasks; once they exist its next
// heartbeat bumps the group epoch and gets every task.
func TestStreams_MissingInternalTopicsThenAssigned(t *testing.T) {
	h := newStreamsHarness(t, 0)
	r, create := h.hb("m1", "p1", 0, nil, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || r.MemberID != "m1" || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}
	if got := statusCodes(r); !reflect.DeepEqual(got, []int8{streamsStatusMissingInternalTopics}) {
		t.Fatalf("statuses %v", r.Status)
	}
	if r.Status[0].StatusDetail != "Internal topics are missing: app-counts-changelog, app-repartition" {
		t.Errorf("detail %q", r.Status[0].StatusDetail)
	}
	want := []StreamsTopic{
		{Name: "app-repartition", Partitions: 4, Configs: map[string]string{"cleanup.policy": "delete"}},
		{Name: "app-counts-changelog", Partitions: 4, Configs: map[string]string{"cleanup.policy": "compact"}},
	}
	if !reflect.DeepEqual(create, want) {
		t.Fatalf("create %+v", create)
	}
	if len(r.ActiveTasks) != 0 || r.ActiveTasks == nil {
		t.Fatalf("tasks before the topics exist: %v", r.ActiveTasks)
	}
	if d := h.describe("app"); d.State != sgNotReady || d.Epoch != 2 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 {
		t.Fatalf("describe %+v", d)
	}

	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	r, create = h.hb("m1", "p1", 2, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 3 || len(r.Status) != 0 || create != nil {
		t.Fatalf("after creation: %+v %v", r, create)
	}
	if got := tasksOf(r.ActiveTasks); !got.equal(ps("0:0,1,2,3;1:0,1,2,3")) {
		t.Fatalf("active %v", got)
	}
	d := h.describe("app")
	if d.State != sgStable || d.Epoch != 3 || d.AssignmentEpoch != 3 || len(d.Members) != 1 || d.Members[0].ProcessID != "p1" ||
		d.AssignorName == nil || *d.AssignorName != "sticky" || len(d.Topology.Subtopologies) != 2 ||
		d.Topology.Subtopologies[1].StateChangelogTopics[0].NumPartitions != 4 {
		t.Fatalf("describe %+v", d)
	}
}

// A second member takes half the tasks once the first has revoked them:
// the first stays at its epoch (UNREVOKED_TASKS) until it reports it no
// longer owns them; the second gets the new epoch at once, its tasks only
// once released; OffsetCommit checks member epochs exactly.
func TestStreams_ScaleOutRevocationAndEpochs(t *testing.T) {
	h := newStreamsHarness(t, 0)
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	r1, _ := h.hb("m1", "p1", 0, nil, nil)
	if r1.MemberEpoch != 2 || !tasksOf(r1.ActiveTasks).equal(ps("0:0,1,2,3;1:0,1,2,3")) {
		t.Fatalf("m1 join: %+v", r1)
	}
	r2, _ := h.hb("m2", "p2", 0, nil, nil)
	if r2.ErrorCode != 0 || r2.MemberEpoch != 3 || len(r2.ActiveTasks) != 0 {
		t.Fatalf("m2 join: %+v", r2)
	}
	// m1 is told to keep half: its epoch stays 1 while it revokes.
	r1, _ = h.hb("m1", "p1", 2, &ownedTasks{ps("0:0,1,2,3;1:0,1,2,3"), partitionSet{}}, nil)
	if r1.MemberEpoch != 2 || !tasksOf(r1.ActiveTasks).equal(ps("0:0,1;1:0,1")) {
		t.Fatalf("m1 revoking: %+v", r1)
	}
	if d := h.describe("app"); d.State != sgReconciling {
		t.Fatalf("state %s", d.State)
	}
	// A commit at an older epoch is stale; at the member's epoch it passes.
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 9, "app", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "input"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 10
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.c.OffsetCommit(req).Topics[0].Partitions[0].ErrorCode
	}
	if ec := commit("m1", 2); ec != 0 {
		t.Fatalf("commit at epoch 2: %v", kerr.ErrorForCode(ec))
	}
	if ec := commit("m2", 2); ec != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at an older epoch: %v", kerr.ErrorForCode(ec))
	}
	if ec := commit("m3", 1); ec != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of an unknown member: %v", kerr.ErrorForCode(ec))
	}
	// m2 heartbeats: its tasks are still owned by m1.
	r2, _ = h.hb("m2", "p2", 3, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	if r2.MemberEpoch != 3 || r2.ActiveTasks != nil {
		t.Fatalf("m2 unreleased: %+v", r2)
	}
	// m1 revokes: epoch 2.
	r1, _ = h.hb("m1", "p1", 2, &ownedTasks{ps("0:0,1;1:0,1"), partitionSet{}}, nil)
	if r1.MemberEpoch != 3 || !tasksOf(r1.ActiveTasks).equal(ps("0:0,1;1:0,1")) {
		t.Fatalf("m1 revoked: %+v", r1)
	}
	r2, _ = h.hb("m2", "p2", 3, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	if r2.MemberEpoch != 3 || !tasksOf(r2.ActiveTasks).equal(ps("0:2,3;1:2,3")) {
		t.Fatalf("m2 released: %+v", r2)
	}
	if d := h.describe("app"); d.State != sgStable || d.Epoch != 3 {
		t.Fatalf("state %s epoch %d", d.State, d.Epoch)
	}
	// An epoch from the future is fenced.
	if r, _ := h.hb("m2", "p2", 5, nil, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("future epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// m2 leaves: m1 gets everything back at epoch 3.
	if r, _ := h.hb("m2", "p2", -1, nil, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	r1, _ = h.hb("m1", "p1", 3, &ownedTasks{ps("0:0,1;1:0,1"), partitionSet{}}, nil)
	if r1.MemberEpoch != 4 || !tasksOf(r1.ActiveTasks).equal(ps("0:0,1,2,3;1:0,1,2,3")) {
		t.Fatalf("m1 after leave: %+v", r1)
	}
}

// With one standby replica, every task has a standby on the other process
// and never on its active one; user endpoints list the partitions of the
// input topics of each member's tasks.
func TestStreams_StandbysAndEndpoints(t *testing.T) {
	h := newStreamsHarness(t, 1)
	h.topics["input"] = 2
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 2, 2
	ep := func(port uint16) func(*kmsg.StreamsGroupHeartbeatRequest) {
		return func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "localhost", Port: port}
		}
	}
	r1, _ := h.hb("m1", "p1", 0, nil, ep(7001))
	if !tasksOf(r1.ActiveTasks).equal(ps("0:0,1;1:0,1")) || len(r1.StandbyTasks) != 0 {
		t.Fatalf("m1 alone: %+v", r1)
	}
	h.hb("m2", "p2", 0, nil, ep(7002))
	r1, _ = h.hb("m1", "p1", 2, &ownedTasks{ps("0:0,1;1:0,1"), partitionSet{}}, nil)
	r1, _ = h.hb("m1", "p1", 2, &ownedTasks{tasksOf(r1.ActiveTasks), partitionSet{}}, nil)
	r2, _ := h.hb("m2", "p2", 3, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	if r1.MemberEpoch != 3 || r2.MemberEpoch != 3 {
		t.Fatalf("epochs %d %d", r1.MemberEpoch, r2.MemberEpoch)
	}
	a1, s1 := tasksOf(r1.ActiveTasks), tasksOf(r1.StandbyTasks)
	a2, s2 := tasksOf(r2.ActiveTasks), tasksOf(r2.StandbyTasks)
	if !a1.equal(ps("0:0;1:0")) || !a2.equal(ps("0:1;1:1")) || !s1.equal(a2) || !s2.equal(a1) {
		t.Fatalf("m1 %v/%v m2 %v/%v", a1, s1, a2, s2)
	}
	if r2.EndpointInformationEpoch == 0 || len(r2.PartitionsByUserEndpoint) != 2 {
		t.Fatalf("endpoints %+v", r2.PartitionsByUserEndpoint)
	}
	e := r2.PartitionsByUserEndpoint[1]
	if e.UserEndpoint.Port != 7002 || len(e.ActivePartitions) != 2 || e.ActivePartitions[0].Topic != "app-repartition" ||
		!reflect.DeepEqual(e.ActivePartitions[1].Partitions, []int32{1}) || e.StandbyPartitions[1].Topic != "input" {
		t.Fatalf("m2's endpoint %+v", e)
	}
	// Up to date: not sent again.
	r2, _ = h.hb("m2", "p2", 3, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.EndpointInformationEpoch = r2.EndpointInformationEpoch })
	if r2.PartitionsByUserEndpoint != nil {
		t.Fatalf("endpoints sent again: %+v", r2.PartitionsByUserEndpoint)
	}
}

// Requests that break the protocol's rules are INVALID_REQUEST; unknown
// groups and members, and other kinds of groups, get Kafka's codes.
func TestStreams_Errors(t *testing.T) {
	h := newStreamsHarness(t, 0)
	for name, mod := range map[string]func(*kmsg.StreamsGroupHeartbeatRequest){
		"no topology":  func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil },
		"no process":   func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ProcessID = nil },
		"no rebalance": func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 },
		"no member id": func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" },
		"bad copartition": func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{3}}}
		},
		"owned when joining": func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		},
	} {
		if r, _ := h.hb("m1", "p1", 0, nil, mod); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
			t.Errorf("%s: %v", name, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if r, _ := h.hb("m1", "p1", 3, nil, nil); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("unknown group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	h.hb("m1", "p1", 0, nil, nil)
	if r, _ := h.hb("m9", "p1", 1, nil, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := h.c.LoadPartition(PartitionFor("nope", 50)); err != nil {
		t.Fatal(err)
	}
	if d := h.describe("nope"); d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group nope not found." {
		t.Errorf("describe unknown: %+v", d)
	}
	// A consumer heartbeat to the streams group is refused, and the other way round.
	creq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	creq.Version, creq.Group, creq.MemberID, creq.RebalanceTimeoutMillis = 1, "app", "c1", 1000
	creq.SubscribedTopicNames, creq.Topics = []string{"input"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := h.c.ConsumerGroupHeartbeat(creq, "c", "/h"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("consumer heartbeat to a streams group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// ListGroups and DescribeGroups see a streams group.
	lg := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"streams"}})
	if len(lg.Groups) != 1 || lg.Groups[0].GroupType != "streams" || lg.Groups[0].GroupState != sgNotReady {
		t.Errorf("list %+v", lg.Groups)
	}
	// A non-empty streams group cannot be deleted.
	if r := h.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"app"}}); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("delete non-empty: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	h.hb("m1", "p1", -1, nil, nil)
	if r := h.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"app"}}); r.Groups[0].ErrorCode != 0 {
		t.Errorf("delete empty: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	if d := h.describe("app"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("deleted group: %+v", d)
	}
}

// A static member leaving with epoch -2 keeps its tasks for the next
// member with its instance id, which comes back at the old epoch with
// them and without a rebalance.
func TestStreams_StaticMember(t *testing.T) {
	h := newStreamsHarness(t, 0)
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	inst := func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("i1") }
	r, _ := h.hb("a", "p1", 0, nil, inst)
	if r.MemberEpoch != 2 {
		t.Fatalf("join %+v", r)
	}
	if r, _ := h.hb("b", "p1", 0, nil, inst); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("instance in use: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r, _ := h.hb("a", "p1", -2, nil, inst); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave %+v", r)
	}
	r, _ = h.hb("b", "p1", 0, nil, inst)
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || !tasksOf(r.ActiveTasks).equal(ps("0:0,1,2,3;1:0,1,2,3")) {
		t.Fatalf("rejoin %+v", r)
	}
	if d := h.describe("app"); d.Epoch != 2 || len(d.Members) != 1 || d.Members[0].MemberID != "b" {
		t.Fatalf("describe %+v", d)
	}
}

// Every record written decodes, and a coordinator that loads the
// partition from the log (another broker taking over) has the same group:
// epochs, topology, members, current and target assignments; the members'
// next heartbeats are accepted at their epochs.
func TestStreams_ReloadFromLog(t *testing.T) {
	h := newStreamsHarness(t, 1)
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	h.hb("m1", "p1", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) {
		r.InstanceID, r.RackID = kmsg.StringPtr("i1"), kmsg.StringPtr("rack-a")
		r.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h1", Port: 9}
		r.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "zone", Value: "z1"}}
	})
	h.hb("m2", "p2", 0, nil, nil)
	r1, _ := h.hb("m1", "p1", 2, &ownedTasks{ps("0:0,1,2,3;1:0,1,2,3"), partitionSet{}}, nil)
	if r1.MemberEpoch != 2 {
		t.Fatalf("m1 %+v", r1)
	}
	before := h.describe("app")

	seen := map[int16]int{}
	for _, recs := range h.log.parts {
		for _, r := range recs {
			k, err := decodeRecordKey(r.Key)
			if err != nil || r.Value == nil {
				continue
			}
			seen[k.Type]++
			var derr error
			switch k.Type {
			case keyStreamsGroupMetadata:
				_, derr = decodeStreamsGroupMetadata(r.Value)
			case keyStreamsGroupMember:
				_, derr = decodeStreamsMember(r.Value)
			case keyStreamsGroupTargetMetadata:
				_, derr = decodeEpochValue(r.Value)
			case keyStreamsGroupTargetMember:
				_, derr = decodeStreamsTarget(r.Value)
			case keyStreamsGroupCurrentAssignment:
				_, derr = decodeStreamsCurrent(r.Value)
			case keyStreamsGroupTopology:
				_, derr = decodeStreamsTopology(r.Value)
			}
			if derr != nil {
				t.Errorf("record %+v does not decode: %v", k, derr)
			}
		}
	}
	for _, k := range []int16{keyStreamsGroupMetadata, keyStreamsGroupMember, keyStreamsGroupTargetMetadata, keyStreamsGroupTargetMember, keyStreamsGroupCurrentAssignment, keyStreamsGroupTopology} {
		if seen[k] == 0 {
			t.Errorf("no record of type %d written", k)
		}
	}

	// Another coordinator, with an empty groups.db, loads the partition.
	h.c.Close()
	h.dir = t.TempDir()
	h.open(1)
	after := h.describe("app")
	wire := func(d kmsg.StreamsGroupDescribeResponseGroup) []byte {
		r := kmsg.StreamsGroupDescribeResponse{Version: 1, Groups: []kmsg.StreamsGroupDescribeResponseGroup{d}}
		return r.AppendTo(nil)
	}
	if !reflect.DeepEqual(wire(before), wire(after)) {
		t.Fatalf("after reload:\n%+v\nbefore:\n%+v", after, before)
	}
	if after.Members[0].UserEndpoint == nil || after.Members[0].UserEndpoint.Port != 9 || *after.Members[0].InstanceID != "i1" ||
		after.Members[0].ClientTags[0].Value != "z1" || *after.Members[0].RackID != "rack-a" {
		t.Fatalf("member metadata lost: %+v", after.Members[0])
	}
	// The members carry on at their epochs; no rebalance.
	r1, _ = h.hb("m1", "p1", 2, &ownedTasks{tasksOf(r1.ActiveTasks), tasksOf(r1.StandbyTasks)}, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("i1") })
	r2, _ := h.hb("m2", "p2", 3, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.MemberEpoch != 3 || r2.MemberEpoch != 3 {
		t.Fatalf("after reload: m1 %+v m2 %+v", r1, r2)
	}
	if d := h.describe("app"); d.Epoch != 3 || d.State != sgStable {
		t.Fatalf("after reload: %s epoch %d", d.State, d.Epoch)
	}
	// And a restart of the same coordinator (replaying groups.db) too.
	h.c.Close()
	h.open(1)
	if d := h.describe("app"); d.Epoch != 3 || d.State != sgStable || len(d.Members) != 2 {
		t.Fatalf("after restart: %+v", d)
	}
}

// A member not heard from within the session timeout is removed and the
// group epoch moves on.
func TestStreams_SessionExpiry(t *testing.T) {
	clock := newManualClock()
	h := &streamsHarness{t: t, log: newMemLog(), topics: map[string]int32{"input": 2, "app-repartition": 2, "app-counts-changelog": 2}, dir: t.TempDir()}
	h.openWith(Config{Now: clock.Now, AfterFunc: clock.AfterFunc, StreamsInitialRebalanceDelay: -1})
	h.hb("m1", "p1", 0, nil, nil)
	h.hb("m2", "p2", 0, nil, nil)
	clock.Advance(DefaultStreamsSessionTimeout / 2)
	h.hb("m1", "p1", 2, nil, nil)
	clock.Advance(DefaultStreamsSessionTimeout/2 + 1)
	d := h.describe("app")
	if len(d.Members) != 1 || d.Members[0].MemberID != "m1" || d.Epoch != 4 {
		t.Fatalf("after m2's session: %+v", d)
	}
}

// The first member of a group waits for the initial rebalance delay:
// meanwhile every member gets epoch 1, no tasks and ASSIGNMENT_DELAYED
// (the group Assigning); when it ends the target covers every member that
// joined, and the next heartbeats get it.
func TestStreams_InitialRebalanceDelay(t *testing.T) {
	clock := newManualClock()
	h := &streamsHarness{t: t, log: newMemLog(), topics: map[string]int32{"input": 2, "app-repartition": 2, "app-counts-changelog": 2}, dir: t.TempDir()}
	h.openWith(Config{Now: clock.Now, AfterFunc: clock.AfterFunc})
	delayed := []int8{streamsStatusAssignmentDelayed}
	r1, _ := h.hb("m1", "p1", 0, nil, nil)
	if r1.MemberEpoch != 1 || len(r1.ActiveTasks) != 0 || r1.ActiveTasks == nil || !reflect.DeepEqual(statusCodes(r1), delayed) ||
		r1.Status[0].StatusDetail != "Assignment delayed due to the configured initial rebalance delay." {
		t.Fatalf("m1 join: %+v", r1)
	}
	clock.Advance(time.Second)
	r2, _ := h.hb("m2", "p2", 0, nil, nil)
	if r2.MemberEpoch != 1 || len(r2.ActiveTasks) != 0 || !reflect.DeepEqual(statusCodes(r2), delayed) {
		t.Fatalf("m2 join: %+v", r2)
	}
	if d := h.describe("app"); d.State != sgAssigning || d.Epoch != 3 || d.AssignmentEpoch != 1 {
		t.Fatalf("during the delay: %s epoch %d assignment epoch %d", d.State, d.Epoch, d.AssignmentEpoch)
	}
	clock.Advance(2 * time.Second)
	if d := h.describe("app"); d.AssignmentEpoch != 3 {
		t.Fatalf("after the delay: %s epoch %d assignment epoch %d", d.State, d.Epoch, d.AssignmentEpoch)
	}
	r1, _ = h.hb("m1", "p1", 1, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	r2, _ = h.hb("m2", "p2", 1, &ownedTasks{partitionSet{}, partitionSet{}}, nil)
	if r1.MemberEpoch != 3 || r2.MemberEpoch != 3 || len(r1.Status) != 0 ||
		!tasksOf(r1.ActiveTasks).equal(ps("0:0;1:1")) || !tasksOf(r2.ActiveTasks).equal(ps("0:1;1:0")) {
		t.Fatalf("after the delay: m1 %+v m2 %+v", r1, r2)
	}
}

// The topology's configuration: repartition topics take the partitions of
// the subtopology writing them, changelogs one per task, copartitioned
// source topics must agree, and what is missing is reported with Kafka's
// status codes.
func TestStreams_ConfigureTopology(t *testing.T) {
	topics := func(parts map[string]int32) map[string]ConsumerTopic {
		out := map[string]ConsumerTopic{}
		for n, p := range parts {
			out[n] = ConsumerTopic{Name: n, Partitions: p}
		}
		return out
	}
	top := &streamsTopology{subtopologies: wordCount(0).Subtopologies}
	ct := top.configure(topics(map[string]int32{}))
	if ct.ready() || len(ct.statuses) != 1 || ct.statuses[0].StatusCode != streamsStatusMissingSourceTopics ||
		ct.statuses[0].StatusDetail != "Source topics input are missing." || ct.create != nil {
		t.Fatalf("no source: %+v", ct)
	}
	ct = top.configure(topics(map[string]int32{"input": 6}))
	if ct.ready() || len(ct.create) != 2 || ct.create[0].Partitions != 6 || ct.create[1].Partitions != 6 {
		t.Fatalf("internal topics to create: %+v", ct.create)
	}
	ct = top.configure(topics(map[string]int32{"input": 6, "app-repartition": 6, "app-counts-changelog": 5}))
	if ct.ready() || len(ct.statuses) != 1 || ct.statuses[0].StatusCode != streamsStatusIncorrectlyPartition {
		t.Fatalf("a changelog with 5 partitions for 6 tasks: %+v", ct.statuses)
	}
	ct = top.configure(topics(map[string]int32{"input": 6, "app-repartition": 6, "app-counts-changelog": 6}))
	if !ct.ready() || !reflect.DeepEqual(ct.tasks, map[string]int32{"0": 6, "1": 6}) {
		t.Fatalf("configured: %+v", ct)
	}
	// A fixed repartition count wins over the upstream's.
	fixed := wordCount(0)
	fixed.Subtopologies[1].RepartitionSourceTopics[0].NumPartitions = 3
	ct = (&streamsTopology{subtopologies: fixed.Subtopologies}).configure(topics(map[string]int32{"input": 6}))
	if ct.create[0].Name != "app-repartition" || ct.create[0].Partitions != 3 || ct.create[1].Partitions != 3 {
		t.Fatalf("fixed repartition count: %+v", ct.create)
	}
	// Copartitioned sources that disagree.
	join := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	join.SubtopologyID, join.SourceTopics = "0", []string{"left", "right"}
	join.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 1}}}
	ct = (&streamsTopology{subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{join}}).configure(topics(map[string]int32{"left": 2, "right": 3}))
	if ct.ready() || len(ct.statuses) != 1 || ct.statuses[0].StatusCode != streamsStatusIncorrectlyPartition {
		t.Fatalf("copartitioning: %+v", ct.statuses)
	}
}

// Exactly-once v2: TxnOffsetCommit carries the member id and epoch; an
// older epoch is STALE_MEMBER_EPOCH, the member's passes. OffsetFetch v9
// checks the epoch too; a joining member with a newer topology epoch
// replaces the topology and members behind it get STALE_TOPOLOGY; a
// member asking to shut the application down makes every member's next
// heartbeat say SHUTDOWN_APPLICATION.
func TestStreams_TxnOffsetsFetchTopologyShutdown(t *testing.T) {
	h := newStreamsHarness(t, 0)
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	r1, _ := h.hb("m1", "p1", 0, nil, nil)
	txn := func(epoch int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID = 3, "app-tx", "app", 7
		req.MemberID, req.Generation = "m1", epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "input"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.c.TxnOffsetCommit(req).Topics[0].Partitions[0].ErrorCode
	}
	if ec := txn(r1.MemberEpoch - 1); ec != kerr.StaleMemberEpoch.Code {
		t.Fatalf("txn commit at an old epoch: %v", kerr.ErrorForCode(ec))
	}
	if ec := txn(r1.MemberEpoch); ec != 0 {
		t.Fatalf("txn commit at the member's epoch: %v", kerr.ErrorForCode(ec))
	}
	fetch := func(epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "app", kmsg.StringPtr("m1"), epoch
		req.Groups = append(req.Groups, g)
		return h.c.OffsetFetch(req).Groups[0].ErrorCode
	}
	if ec := fetch(r1.MemberEpoch + 1); ec != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch at another epoch: %v", kerr.ErrorForCode(ec))
	}
	if ec := fetch(r1.MemberEpoch); ec != 0 {
		t.Fatalf("fetch at the member's epoch: %v", kerr.ErrorForCode(ec))
	}
	// m2 joins with topology epoch 1: the group's topology moves on, m1 is stale.
	r2, _ := h.hb("m2", "p2", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = wordCount(1) })
	r1, _ = h.hb("m1", "p1", r1.MemberEpoch, nil, nil)
	if got := statusCodes(r1); !reflect.DeepEqual(got, []int8{streamsStatusStaleTopology}) ||
		r1.Status[0].StatusDetail != "The member's topology epoch 0 is behind the group's topology epoch 1." {
		t.Fatalf("stale topology: %+v", r1.Status)
	}
	if d := h.describe("app"); d.Topology.Epoch != 1 {
		t.Fatalf("topology epoch %d", d.Topology.Epoch)
	}
	if r2, _ = h.hb("m2", "p2", r2.MemberEpoch, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ShutdownApplication = true }); r2.ErrorCode != 0 {
		t.Fatalf("m2: %v", kerr.ErrorForCode(r2.ErrorCode))
	}
	r1, _ = h.hb("m1", "p1", r1.MemberEpoch, nil, nil)
	if got := statusCodes(r1); !reflect.DeepEqual(got, []int8{streamsStatusStaleTopology, streamsStatusShutdownApplication}) {
		t.Fatalf("shutdown: %+v", r1.Status)
	}
}

// Every prefix of every streams record, and every value with one byte
// flipped, decodes to an error or a value: never a panic (groups.db and
// __consumer_offsets may hold anything a torn write or another writer
// left).
func TestStreams_RecordsDecodeMalformed(t *testing.T) {
	h := newStreamsHarness(t, 1)
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	h.hb("m1", "p1", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) {
		r.InstanceID = kmsg.StringPtr("i1")
		r.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h", Port: 1}
		r.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "k", Value: "v"}}
		r.Topology.Subtopologies[0].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0}}}
	})
	h.hb("m2", "p2", 0, nil, nil)
	decoders := map[int16]func([]byte) error{
		keyStreamsGroupMetadata:          func(b []byte) error { _, err := decodeStreamsGroupMetadata(b); return err },
		keyStreamsGroupMember:            func(b []byte) error { _, err := decodeStreamsMember(b); return err },
		keyStreamsGroupTargetMember:      func(b []byte) error { _, err := decodeStreamsTarget(b); return err },
		keyStreamsGroupCurrentAssignment: func(b []byte) error { _, err := decodeStreamsCurrent(b); return err },
		keyStreamsGroupTopology:          func(b []byte) error { _, err := decodeStreamsTopology(b); return err },
	}
	n := 0
	for _, recs := range h.log.parts {
		for _, r := range recs {
			k, err := decodeRecordKey(r.Key)
			dec := decoders[k.Type]
			if err != nil || dec == nil || r.Value == nil {
				continue
			}
			if err := dec(r.Value); err != nil {
				t.Fatalf("record %+v: %v", k, err)
			}
			n++
			for i := range r.Value {
				dec(r.Value[:i])
				flipped := slices.Clone(r.Value)
				flipped[i] ^= 0xff
				dec(flipped)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d records checked", n)
	}
}

// A commit at an older member epoch (the Streams thread built it before
// the heartbeat that moved its member on was answered, or a coordinator's
// kill -9 lost that answer) is accepted for the tasks the member was
// given at or before that epoch and still holds, as Kafka 4.4 accepts it
// (KIP-1251); for a task it no longer holds, at an epoch before the task
// was given, or at a newer epoch it is STALE_MEMBER_EPOCH. The assignment
// epochs survive another coordinator loading the partition. Found by
// StreamsClusterTest: after a coordinator failover, Streams' TxnOffsetCommit
// at the previous epoch was refused, the thread was "fenced", dropped all
// its tasks and rejoined.
func TestStreams_OlderEpochCommitForHeldTasks(t *testing.T) {
	h := newStreamsHarness(t, 0)
	h.topics["app-repartition"], h.topics["app-counts-changelog"] = 4, 4
	h.hb("m1", "p1", 0, nil, nil)
	h.hb("m2", "p2", 0, nil, nil)
	h.hb("m1", "p1", 2, &ownedTasks{ps("0:0,1,2,3;1:0,1,2,3"), partitionSet{}}, nil)
	r1, _ := h.hb("m1", "p1", 2, &ownedTasks{ps("0:0,1;1:0,1"), partitionSet{}}, nil)
	if r1.MemberEpoch != 3 || !tasksOf(r1.ActiveTasks).equal(ps("0:0,1;1:0,1")) {
		t.Fatalf("m1 after revoking: %+v", r1)
	}
	commit := func(epoch int32, topic string, p int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 9, "app", "m1", epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 10
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.c.OffsetCommit(req).Topics[0].Partitions[0].ErrorCode
	}
	txn := func(epoch int32, topic string, p int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID = 3, "app-tx", "app", 7
		req.MemberID, req.Generation = "m1", epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.c.TxnOffsetCommit(req).Topics[0].Partitions[0].ErrorCode
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			epoch int32
			topic string
			p     int32
			want  int16
		}{
			{3, "input", 2, 0},                                         // the member's epoch commits anything
			{2, "input", 0, 0},                                         // task 0_0, held since epoch 2
			{2, "app-repartition", 1, 0},                               // task 1_1, held since epoch 2
			{2, "input", 2, kerr.StaleMemberEpoch.Code},                // task 0_2 went to m2
			{1, "input", 0, kerr.StaleMemberEpoch.Code},                // before task 0_0 was given
			{4, "input", 0, kerr.StaleMemberEpoch.Code},                // a newer epoch
			{2, "app-counts-changelog", 0, kerr.StaleMemberEpoch.Code}, // no subtopology reads it
		} {
			if got := commit(c.epoch, c.topic, c.p); got != c.want {
				t.Errorf("%s: OffsetCommit at epoch %d of %s[%d] = %v, want %v", when, c.epoch, c.topic, c.p, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
			}
			if got := txn(c.epoch, c.topic, c.p); got != c.want {
				t.Errorf("%s: TxnOffsetCommit at epoch %d of %s[%d] = %v, want %v", when, c.epoch, c.topic, c.p, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
			}
		}
	}
	check("before reload")
	// Another coordinator, with an empty groups.db, loads the partition.
	h.c.Close()
	h.dir = t.TempDir()
	h.open(0)
	check("after reload")
}
