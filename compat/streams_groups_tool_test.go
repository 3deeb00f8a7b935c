package compat

// Kafka's own kafka-streams-groups (org.apache.kafka.tools.streams.
// StreamsGroupCommand, from the Kafka 4.4 jars compat/kafkaref resolves)
// against Gregor and against Apache Kafka 4.4: the same streams group
// (one member of a word count's topology, its internal topics created by
// the broker, its tasks assigned after the initial rebalance delay,
// offsets committed at its member epoch) is described with --describe,
// --describe --offsets --verbose, --describe --members (also --verbose)
// and --describe --state, and the tool prints the same on both (rows
// sorted, the coordinator's address left out).

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const streamsToolClass = "org.apache.kafka.tools.streams.StreamsGroupCommand"

func streamsToolJoin(app, source, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = app, member, 30000
	req.ProcessID = kmsg.StringPtr("11111111-2222-3333-4444-555555555555")
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{source}, []string{app + "-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: app + "-words-repartition", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: app + "-counts-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	req.Topology = &top
	return req
}

// streamsGroupUp makes the group on the broker at addr and returns once
// its one member is stable with every task.
func streamsGroupUp(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	cl := newAddrClient(t, addr, kgo.ClientID("sgt-client"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "sgt-in"); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range 5 {
		rs = append(rs, &kgo.Record{Topic: "sgt-in", Partition: int32(i % 2), Value: []byte("a b")})
	}
	if err := newAddrClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// FindCoordinator makes Kafka create __consumer_offsets.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "sgt", []string{"sgt"}
	heartbeat := func(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		var r *kmsg.StreamsGroupHeartbeatResponse
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := cl.SeedBrokers()[0].Request(ctx, req)
			if err == nil {
				r = resp.(*kmsg.StreamsGroupHeartbeatResponse)
				if r.ErrorCode != 14 && r.ErrorCode != 15 && r.ErrorCode != 16 {
					if r.ErrorCode != 0 {
						t.Fatalf("heartbeat: %s", errName(r.ErrorCode))
					}
					return r
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("heartbeat: %v %+v", err, r)
			}
			time.Sleep(100 * time.Millisecond)
			fc.RequestWith(ctx, cl) //nolint:errcheck // retried with the heartbeat
		}
	}
	r := heartbeat(streamsToolJoin("sgt", "sgt-in", "member-1"))
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "sgt", "member-1", r.MemberEpoch
	hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	deadline := time.Now().Add(60 * time.Second)
	for len(r.ActiveTasks) == 0 || len(r.Status) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no tasks: %+v", r)
		}
		time.Sleep(200 * time.Millisecond)
		r = heartbeat(hb)
		hb.MemberEpoch = r.MemberEpoch
	}
	hb.ActiveTasks = r.ActiveTasks
	if r = heartbeat(hb); r.MemberEpoch != hb.MemberEpoch {
		t.Fatalf("steady heartbeat: %+v", r)
	}
	// The member commits offsets 2 and 1 at its epoch.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.MemberID, oc.Generation = "sgt", "member-1", r.MemberEpoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	td, err := adm.ListTopics(ctx, "sgt-in")
	if err != nil {
		t.Fatal(err)
	}
	rt.Topic, rt.TopicID = "sgt-in", td["sgt-in"].ID // v10 (Kafka) names topics by id
	for p, off := range []int64{2, 1} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(p), off
		rt.Partitions = append(rt.Partitions, rp)
	}
	oc.Topics = append(oc.Topics, rt)
	ocr, err := oc.RequestWith(ctx, cl)
	if err != nil || ocr.Topics[0].Partitions[0].ErrorCode != 0 || ocr.Topics[0].Partitions[1].ErrorCode != 0 {
		t.Fatalf("offset commit: %v %+v", err, ocr)
	}
}

func TestKafkaStreamsGroups_DescribeAsKafka(t *testing.T) {
	singleNodeOnly(t, "compared with a one-node Kafka")
	ctx := testCtx(t, 5*time.Minute)
	kafka := startKafkaSource(t, ctx)
	g := newBroker(t)
	views := [][]string{{"--describe"}, {"--describe", "--offsets", "--verbose"}, {"--describe", "--members"}, {"--describe", "--state"}, {"--describe", "--members", "--verbose"}}
	outs := map[string][]string{}
	for _, side := range []struct{ name, addr string }{{"kafka", kafka.Addr}, {"gregor", g.addr}} {
		streamsGroupUp(t, ctx, side.addr)
		for _, v := range views {
			out := kafkaTool(t, streamsToolClass, append([]string{"--bootstrap-server", side.addr, "--group", "sgt"}, v...)...)
			outs[side.name] = append(outs[side.name], normaliseStreamsTool(out))
		}
	}
	for i, v := range views {
		k, gr := outs["kafka"][i], outs["gregor"][i]
		t.Logf("kafka-streams-groups %s:\n%s", strings.Join(v, " "), gr)
		if k != gr {
			t.Errorf("kafka-streams-groups %s differs:\nkafka:\n%s\ngregor:\n%s", strings.Join(v, " "), k, gr)
		}
	}
}

// coordinatorRE is the coordinator column of --state: host:port (node id),
// which differs between any two brokers.
var coordinatorRE = regexp.MustCompile(`127\.0\.0\.1:\d+ \(\d+\)`)

// normaliseStreamsTool drops the columns' padding and the coordinator's
// address, and sorts the rows under the header: the tool prints a
// HashMap's entries, in an order that changes from run to run against
// Kafka itself.
func normaliseStreamsTool(out string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, coordinatorRE.ReplaceAllString(strings.Join(strings.Fields(l), " "), "<coordinator>"))
	}
	if len(lines) > 1 {
		slices.Sort(lines[1:])
	}
	return strings.Join(lines, "\n")
}
