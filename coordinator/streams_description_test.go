package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With descriptions kept, the first heartbeat asks for the topology
// description and the next ones do not until the back-off (30 s, then
// doubling) ends; a push of another member, another topology epoch or an
// unknown node type is refused; a push is described AVAILABLE, with each
// node as Kafka keeps it, and nobody is asked again. Without them the push
// is UNSUPPORTED_VERSION and a describe NOT_STORED.
func TestStreams_TopologyDescription(t *testing.T) {
	for _, kept := range []bool{false, true} {
		now := time.Unix(1_700_000_000, 0)
		h := &streamsHarness{t: t, log: newMemLog(), topics: map[string]int32{"input": 4, "app-repartition": 4, "app-counts-changelog": 4}, dir: t.TempDir()}
		h.openWith(Config{LogPartitions: 50, StreamsInitialRebalanceDelay: -1, StreamsTopologyDescriptions: kept,
			Now: func() time.Time { return now }})
		r, _ := h.hb("m1", "p1", 0, nil, nil)
		if r.ErrorCode != 0 || r.TopologyDescriptionRequired != kept {
			t.Fatalf("kept=%v: join: %s, asked %v", kept, kerr.ErrorForCode(r.ErrorCode), r.TopologyDescriptionRequired)
		}
		epoch := r.MemberEpoch
		asked := func() bool {
			t.Helper()
			r, _ := h.hb("m1", "p1", epoch, nil, nil)
			if r.ErrorCode != 0 {
				t.Fatalf("heartbeat: %s", kerr.ErrorForCode(r.ErrorCode))
			}
			epoch = r.MemberEpoch
			return r.TopologyDescriptionRequired
		}
		if asked() {
			t.Fatalf("kept=%v: asked again within the back-off", kept)
		}
		now = now.Add(31 * time.Second)
		if got := asked(); got != kept {
			t.Fatalf("kept=%v: after the back-off: asked %v", kept, got)
		}
		now = now.Add(31 * time.Second)
		if asked() {
			t.Fatalf("kept=%v: asked again within the doubled back-off", kept)
		}
		push := func(member string, topologyEpoch int32, typ int8) int16 {
			req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
			req.Group, req.MemberID, req.TopologyEpoch = "app", member, topologyEpoch
			n := kmsg.NewTopologyDescriptionNode()
			n.Name, n.NodeType = "KSTREAM-SOURCE-0000000000", typ
			n.SourceTopics, n.Stores, n.Successors = []string{"input", "input"}, []string{"ignored"}, []string{"x", "x"}
			st := kmsg.NewTopologyDescriptionSubtopology()
			st.SubtopologyID, st.Nodes = "0", []kmsg.TopologyDescriptionNode{n}
			req.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{st}
			return h.c.StreamsGroupTopologyDescriptionUpdate(req).ErrorCode
		}
		describe := func() kmsg.StreamsGroupDescribeResponseGroup {
			req := kmsg.NewPtrStreamsGroupDescribeRequest()
			req.Version, req.Groups, req.IncludeTopologyDescription = 1, []string{"app"}, true
			return h.c.StreamsGroupDescribe(req).Groups[0]
		}
		if !kept {
			if code := push("m1", 0, 1); code != kerr.UnsupportedVersion.Code {
				t.Fatalf("push without a plugin: %s", kerr.ErrorForCode(code))
			}
			if d := describe(); d.TopologyDescriptionStatus != topologyDescriptionNotStored || d.TopologyDescription != nil {
				t.Fatalf("describe without a plugin: %d", d.TopologyDescriptionStatus)
			}
			continue
		}
		for name, want := range map[string]struct {
			member string
			epoch  int32
			typ    int8
			code   int16
		}{
			"unknown member": {"m9", 0, 1, kerr.UnknownMemberID.Code},
			"stale epoch":    {"m1", 1, 1, kerr.InvalidRequest.Code},
			"node type 0":    {"m1", 0, 0, kerr.InvalidRequest.Code},
		} {
			if code := push(want.member, want.epoch, want.typ); code != want.code {
				t.Errorf("%s: %s, want %s", name, kerr.ErrorForCode(code), kerr.ErrorForCode(want.code))
			}
		}
		if d := describe(); d.TopologyDescriptionStatus != topologyDescriptionNotStored {
			t.Fatalf("describe before the push: %d", d.TopologyDescriptionStatus)
		}
		if code := push("m1", 0, 1); code != 0 {
			t.Fatalf("push: %s", kerr.ErrorForCode(code))
		}
		d := describe()
		if d.TopologyDescriptionStatus != topologyDescriptionAvailable || d.TopologyDescription == nil {
			t.Fatalf("describe after the push: %d", d.TopologyDescriptionStatus)
		}
		n := d.TopologyDescription.Subtopologies[0].Nodes[0]
		if len(n.SourceTopics) != 1 || len(n.Stores) != 0 || len(n.Successors) != 1 || n.SinkTopic != nil {
			t.Fatalf("the stored source node: %+v", n)
		}
		now = now.Add(2 * time.Hour)
		if asked() {
			t.Fatal("asked again with a description stored")
		}
	}
}
