package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsJoin is a word count's first heartbeat: subtopology 0 reads
// "words" and writes "wc-repartition"; subtopology 1 reads that and keeps
// a store whose changelog is "wc-counts-changelog".
func streamsJoin(member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "wc", member, 30000
	req.ProcessID = kmsg.StringPtr("process-" + member)
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"words"}, []string{"wc-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "wc-repartition", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "wc-counts-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	req.Topology = &top
	return req
}

// A streams group through the broker: streams.version is finalized at 1
// and the APIs are advertised; a first heartbeat gets
// MISSING_INTERNAL_TOPICS and the broker creates the repartition and
// changelog topics with the topology's partition counts and configs; the
// next heartbeat gets every task; the group (members, epochs, tasks,
// topology) survives a broker restart, read back from __consumer_offsets;
// ListGroups says "streams".
func TestStreamsGroup_InternalTopicsAndRestart(t *testing.T) {
	dir := t.TempDir()
	b1, addr := startBroker(t, dir, map[string]string{"group.streams.initial.rebalance.delay.ms": "0"})
	ctx := testCtx(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "words"); err != nil {
		t.Fatal(err)
	}
	vers, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, bv := range vers {
		for _, k := range []int16{88, 89} {
			if mn, mx, ok := bv.KeyVersions(k); !ok || mn != 0 || mx != 1 {
				t.Fatalf("key %d advertised %d-%d %v", k, mn, mx, ok)
			}
		}
	}

	hcode := func(r *kmsg.StreamsGroupHeartbeatResponse) int16 { return r.ErrorCode }
	r := retryStreams(t, ctx, cl, streamsJoin("m1"), hcode)
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || len(r.Status) != 1 || r.Status[0].StatusCode != 3 ||
		r.Status[0].StatusDetail != "Internal topics are missing: wc-counts-changelog, wc-repartition" {
		t.Fatalf("join: %+v", r)
	}
	td, err := adm.ListTopics(ctx, "wc-repartition", "wc-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wc-repartition", "wc-counts-changelog"} {
		if d, ok := td[name]; !ok || d.Err != nil || len(d.Partitions) != 3 {
			t.Fatalf("internal topic %s: %+v", name, d)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "wc-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On("wc-counts-changelog", nil); err != nil || func() string {
		for _, cfg := range c.Configs {
			if cfg.Key == "cleanup.policy" {
				return *cfg.Value
			}
		}
		return ""
	}() != "compact" {
		t.Fatalf("changelog configs: %v %+v", err, c)
	}

	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "wc", "m1", 2, -1
	hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	r = retryStreams(t, ctx, cl, hb, hcode)
	want := "[{0 [0 1 2]} {1 [0 1 2]}]"
	if r.ErrorCode != 0 || r.MemberEpoch != 3 || len(r.Status) != 0 || taskString(r.ActiveTasks) != want {
		t.Fatalf("after creation: %+v", r)
	}
	hb.MemberEpoch, hb.ActiveTasks = 3, r.ActiveTasks
	if r = retryStreams(t, ctx, cl, hb, hcode); r.ErrorCode != 0 || r.MemberEpoch != 3 || r.ActiveTasks != nil {
		t.Fatalf("steady: %+v", r)
	}

	describe := func(cl *kgo.Client) kmsg.StreamsGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{"wc", "nope"}
		resp := retryStreams(t, ctx, cl, req, func(r *kmsg.StreamsGroupDescribeResponse) int16 { return r.Groups[0].ErrorCode })
		if len(resp.Groups) != 2 || resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("describe: %+v", resp)
		}
		return resp.Groups[0]
	}
	d := describe(cl)
	if d.State != "Stable" || d.Epoch != 3 || d.AssignmentEpoch != 3 || len(d.Members) != 1 || d.Members[0].MemberEpoch != 3 ||
		taskString(d.Members[0].Assignment.ActiveTasks) != want || d.Topology == nil || len(d.Topology.Subtopologies) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if lg, err := adm.ListGroups(ctx); err != nil || len(lg) != 1 || lg["wc"].GroupType != "streams" || lg["wc"].State != "Stable" {
		t.Fatalf("list groups: %v %+v", err, lg)
	}

	cl.Close()
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	_, addr2 := startBroker(t, dir, map[string]string{"group.streams.initial.rebalance.delay.ms": "0"})
	cl2 := newClient(t, addr2)
	if d2 := describe(cl2); d2.Epoch != 3 || len(d2.Members) != 1 || taskString(d2.Members[0].Assignment.ActiveTasks) != want || d2.State != "Stable" {
		t.Fatalf("describe after restart: %+v", d2)
	}
	if r = retryStreams(t, ctx, cl2, hb, hcode); r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("heartbeat after restart: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
}

// With streams.version finalized at 0 the APIs answer UNSUPPORTED_VERSION,
// as Kafka's do.
func TestStreamsGroup_FeatureOff(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	ctx := testCtx(t)
	cl := newClient(t, addr)
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "streams.version", 0, 2
	uf.FeatureUpdates = append(uf.FeatureUpdates, fu)
	if resp, err := uf.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("update features: %v %+v", err, resp)
	}
	r, err := retryStreams(t, ctx, cl, streamsJoin("m1"), func(*kmsg.StreamsGroupHeartbeatResponse) int16 { return 0 }), error(nil)
	if err != nil || r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat: %v %+v", err, r)
	}
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{"wc"}
	if d, err := retryStreams(t, ctx, cl, dreq, func(*kmsg.StreamsGroupDescribeResponse) int16 { return 0 }), error(nil); err != nil || d.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("describe: %v %+v", err, d)
	}
}

// retryStreams is retryLoad for the streams group APIs, which kgo does
// not route: they go to the one broker directly.
func retryStreams[R kmsg.Response](t *testing.T, ctx context.Context, cl *kgo.Client, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	var out R
	waitFor(t, 15*time.Second, "the coordinator answers", func() bool {
		if err := cl.Ping(ctx); err != nil {
			return false
		}
		bs := cl.DiscoveredBrokers()
		if len(bs) == 0 {
			return false
		}
		resp, err := bs[0].Request(ctx, req)
		if err != nil {
			return false
		}
		out = resp.(R)
		c := code(out)
		return c != kerr.CoordinatorLoadInProgress.Code && c != kerr.NotCoordinator.Code && c != kerr.CoordinatorNotAvailable.Code
	})
	return out
}

func taskString(ts []kmsg.TaskIDs) string {
	s := "["
	for i, t := range ts {
		if i > 0 {
			s += " "
		}
		s += "{" + t.SubtopologyID + " ["
		for j, p := range t.Partitions {
			if j > 0 {
				s += " "
			}
			s += string(rune('0' + p))
		}
		s += "]}"
	}
	return s + "]"
}

// A streams group's own group configs (IncrementalAlterConfigs, GROUP):
// streams.num.standby.replicas gives every task a standby on the other
// member's process, streams.heartbeat.interval.ms is what heartbeats
// answer; out of range values are INVALID_CONFIG.
func TestStreamsGroup_GroupConfigs(t *testing.T) {
	_, addr := startBroker(t, "", map[string]string{"group.streams.initial.rebalance.delay.ms": "0"})
	ctx := testCtx(t)
	cl := newClient(t, addr)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "words"); err != nil {
		t.Fatal(err)
	}
	alter := func(name, value string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "wc"
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: name, Value: kmsg.StringPtr(value)}}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	if code, msg := alter("streams.num.standby.replicas", "3"); code != kerr.InvalidConfig.Code || msg != "streams.num.standby.replicas must be less than or equal to 2" {
		t.Fatalf("3 standbys: %v %q", kerr.ErrorForCode(code), msg)
	}
	for name, v := range map[string]string{"streams.num.standby.replicas": "1", "streams.heartbeat.interval.ms": "6000"} {
		if code, msg := alter(name, v); code != 0 {
			t.Fatalf("%s=%s: %v %q", name, v, kerr.ErrorForCode(code), msg)
		}
	}
	hcode := func(r *kmsg.StreamsGroupHeartbeatResponse) int16 { return r.ErrorCode }
	r1 := retryStreams(t, ctx, cl, streamsJoin("m1"), hcode)
	if r1.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("heartbeat interval %d", r1.HeartbeatIntervalMillis)
	}
	hb := func(member string, epoch int32, active, standby []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "wc", member, epoch, -1
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = active, standby, []kmsg.TaskIDs{}
		return retryStreams(t, ctx, cl, req, hcode)
	}
	// Each member reports what it was last given (a null list: unchanged).
	type owned struct{ active, standby []kmsg.TaskIDs }
	own := map[string]*owned{"m1": {[]kmsg.TaskIDs{}, []kmsg.TaskIDs{}}, "m2": {[]kmsg.TaskIDs{}, []kmsg.TaskIDs{}}}
	keep := func(member string, r *kmsg.StreamsGroupHeartbeatResponse) *kmsg.StreamsGroupHeartbeatResponse {
		if r.ActiveTasks != nil {
			own[member].active, own[member].standby = r.ActiveTasks, orEmpty(r.StandbyTasks)
		}
		return r
	}
	r1 = keep("m1", hb("m1", r1.MemberEpoch, own["m1"].active, own["m1"].standby)) // the internal topics exist now
	r2 := keep("m2", retryStreams(t, ctx, cl, streamsJoin("m2"), hcode))
	for range 3 {
		r1 = keep("m1", hb("m1", r1.MemberEpoch, own["m1"].active, own["m1"].standby))
		r2 = keep("m2", hb("m2", r2.MemberEpoch, own["m2"].active, own["m2"].standby))
	}
	d := retryStreams(t, ctx, cl, &kmsg.StreamsGroupDescribeRequest{Groups: []string{"wc"}}, func(r *kmsg.StreamsGroupDescribeResponse) int16 { return r.Groups[0].ErrorCode }).Groups[0]
	if d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	for i, m := range d.Members {
		other := d.Members[1-i]
		if taskString(m.Assignment.StandbyTasks) != taskString(other.Assignment.ActiveTasks) || len(m.Assignment.ActiveTasks) == 0 {
			t.Fatalf("member %s: active %s standby %s; other's active %s", m.MemberID, taskString(m.Assignment.ActiveTasks),
				taskString(m.Assignment.StandbyTasks), taskString(other.Assignment.ActiveTasks))
		}
	}
}

func orEmpty(ts []kmsg.TaskIDs) []kmsg.TaskIDs {
	if ts == nil {
		return []kmsg.TaskIDs{}
	}
	return ts
}
