package compat

// The topology description of a streams group (KIP-1331, Kafka 4.4)
// against Gregor and Apache Kafka 4.4, both with
// group.streams.topology.description.plugin.class set to Kafka's
// in-memory plugin: the member's heartbeat answer asks for the
// description (TopologyDescriptionRequired), the member pushes it with
// StreamsGroupTopologyDescriptionUpdate (after an unknown member's and a
// stale topology epoch's push are refused), the next heartbeat no longer
// asks, and kafka-streams-groups --describe --topology prints the same
// on both.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const inMemoryTopologyPlugin = "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"

// wordCountDescription is a word count's topology description: split the
// lines into words, repartition by word, count into a store.
func wordCountDescription(app, source string) kmsg.TopologyDescription {
	node := func(name string, typ int8, successors ...string) kmsg.TopologyDescriptionNode {
		n := kmsg.NewTopologyDescriptionNode()
		n.Name, n.NodeType, n.Successors = name, typ, successors
		n.SourceTopics, n.Stores = []string{}, []string{}
		if successors == nil {
			n.Successors = []string{}
		}
		return n
	}
	src := node("KSTREAM-SOURCE-0000000000", 1, "KSTREAM-FLATMAPVALUES-0000000001")
	src.SourceTopics = []string{source}
	split := node("KSTREAM-FLATMAPVALUES-0000000001", 2, "KSTREAM-SINK-0000000002")
	sink := node("KSTREAM-SINK-0000000002", 3)
	sink.SinkTopic = kmsg.StringPtr(app + "-words-repartition")
	s0 := kmsg.NewTopologyDescriptionSubtopology()
	s0.SubtopologyID, s0.Nodes = "0", []kmsg.TopologyDescriptionNode{src, split, sink}
	src1 := node("KSTREAM-SOURCE-0000000003", 1, "KSTREAM-AGGREGATE-0000000004")
	src1.SourceTopics = []string{app + "-words-repartition"}
	agg := node("KSTREAM-AGGREGATE-0000000004", 2)
	agg.Stores = []string{"counts"}
	s1 := kmsg.NewTopologyDescriptionSubtopology()
	s1.SubtopologyID, s1.Nodes = "1", []kmsg.TopologyDescriptionNode{src1, agg}
	d := kmsg.NewTopologyDescription()
	d.Subtopologies, d.GlobalStores = []kmsg.TopologyDescriptionSubtopology{s0, s1}, []kmsg.TopologyDescriptionGlobalStore{}
	return d
}

func TestKafkaStreamsGroups_TopologyDescriptionAsKafka(t *testing.T) {
	singleNodeOnly(t, "compared with a one-node Kafka")
	ctx := testCtx(t, 5*time.Minute)
	if err := kafkaref.Available(); err != nil {
		t.Skip(err)
	}
	kafka, err := kafkaref.Start(ctx, kafkaref.Options{Dir: t.TempDir(),
		Props: map[string]string{"group.streams.topology.description.plugin.class": inMemoryTopologyPlugin}})
	if err != nil {
		t.Fatalf("starting Apache Kafka: %v", err)
	}
	t.Cleanup(func() { kafka.Stop() })
	g := newBroker(t, "group.streams.topology.description.plugin.class="+inMemoryTopologyPlugin)
	outs := map[string][]string{}
	for _, side := range []struct{ name, addr string }{{"kafka", kafka.Addr}, {"gregor", g.addr}} {
		streamsGroupUp(t, ctx, side.addr)
		cl := newAddrClient(t, side.addr, kgo.ClientID("sgt-client"))
		do := func(req kmsg.Request) kmsg.Response {
			t.Helper()
			resp, err := cl.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				t.Fatalf("%s: %s: %v", side.name, kmsg.NameForKey(req.Key()), err)
			}
			return resp
		}
		d := kmsg.NewPtrStreamsGroupDescribeRequest()
		d.Groups = []string{"sgt"}
		desc := do(d).(*kmsg.StreamsGroupDescribeResponse).Groups[0]
		if len(desc.Members) != 1 || desc.Topology == nil {
			t.Fatalf("%s: describe %+v", side.name, desc)
		}
		epoch, topologyEpoch := desc.Members[0].MemberEpoch, desc.Topology.Epoch
		heartbeat := func() bool {
			hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.MemberEpoch = "sgt", "member-1", epoch
			r := do(hb).(*kmsg.StreamsGroupHeartbeatResponse)
			if r.ErrorCode != 0 {
				t.Fatalf("%s: heartbeat: %s", side.name, errName(r.ErrorCode))
			}
			return r.TopologyDescriptionRequired
		}
		push := func(member string, topologyEpoch int32) string {
			u := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
			u.Group, u.MemberID, u.TopologyEpoch = "sgt", member, topologyEpoch
			u.TopologyDescription = wordCountDescription("sgt", "sgt-in")
			return errName(do(u).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode)
		}
		describeStatus := func() int8 {
			d.IncludeTopologyDescription = true
			return do(d).(*kmsg.StreamsGroupDescribeResponse).Groups[0].TopologyDescriptionStatus
		}
		outs[side.name] = append(outs[side.name],
			"asked before: "+boolText(heartbeat()),
			"status before: "+strconv.Itoa(int(describeStatus())),
			"unknown member: "+push("member-9", topologyEpoch),
			"stale topology epoch: "+push("member-1", topologyEpoch+1),
			"push: "+push("member-1", topologyEpoch),
			"asked after: "+boolText(heartbeat()),
			"status after: "+strconv.Itoa(int(describeStatus())),
			toolOutcome(t, streamsToolClass, "--bootstrap-server", side.addr, "--group", "sgt", "--describe", "--topology"))
	}
	k, gr := strings.Join(outs["kafka"], "\n"), strings.Join(outs["gregor"], "\n")
	t.Logf("gregor:\n%s", gr)
	if k != gr {
		t.Errorf("differs:\nkafka:\n%s\ngregor:\n%s", k, gr)
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
