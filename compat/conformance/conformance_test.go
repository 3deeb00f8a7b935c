//go:build kafka

package conformance

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// shortSet are scenarios that match today; TestConformanceShort fails when
// one of them starts to differ.
var shortSet = []string{
	"Produce: acks=-1, 3 records to a new topic",
	"ApiVersions: v5 (KIP-1242): bootstrapping, this broker, another cluster, another node, one of the two",
	"Produce: idempotent: unknown producer id with sequence 0 and with 3",
	"Fetch: beyond the high watermark",
	"Fetch: in the middle of a batch",
	"DescribeTopicPartitions: two topics and an unknown one",
	"DescribeTopicPartitions: paged two partitions at a time with the cursor",
	"Fetch: full fetch naming a session it closes (epoch -1)",
	"Fetch: incremental fetch of an unknown session",
	"Fetch: a session: made, idle, after appends, a new position, a forgotten partition, a replayed epoch, v12 in a v13 session, closed",
	"ListOffsets: latest (-1), earliest (-2), max timestamp (-3)",
	"DeleteRecords: beyond the high watermark",
	"Metadata: unknown topic, auto-create off",
	"AlterConfigs: bad value",
	"Heartbeat: wrong generation, unknown member, unknown group",
	"OffsetCommit: unknown group with generation -1, then OffsetFetch",
	"AddPartitionsToTxn: fenced epoch after a second InitProducerId",
	"EndTxn: commit without AddPartitionsToTxn",
	"CreatePartitions: fewer and as many partitions: messages",
	"AlterConfigs: retention.ms=abc: messages of AlterConfigs, IncrementalAlterConfigs and CreateTopics",
	"IncrementalAlterConfigs: broker: configs that are not dynamic: messages",
	"DescribeConfigs: topic with retention.ms set: synonyms",
	"DescribeConfigs: share group configs with synonyms",
	"IncrementalAlterConfigs: share group configs: messages",
	"UpdateFeatures: validate only: refusals and their messages (v2)",
	"UpdateFeatures: validate only: accepted updates (v1 with results, v2 without)",
	"UpdateFeatures: group.version and share.version at 0: ApiVersions, the group heartbeats and describes, ShareFetch and ShareAcknowledge",
	"ListConfigResources: v0 and v1: client metrics subscriptions and group configs",
	"IncrementalAlterConfigs: CLIENT_METRICS: validation errors and their messages",
	// Matched for #28.
	"CreateTopics: 3 partitions: answer with configs",
	"DescribeConfigs: topic: chosen keys with an override",
	"EndTxn: commit, fetch read_committed, abort after commit",
	"DescribeProducers: after idempotent and plain batches",
	"IncrementalAlterConfigs: per-broker dynamic config, describe with synonyms",
	"IncrementalAlterConfigs: group configs: share and consumer keys, bad value, unknown key",
	"DescribeShareGroupOffsets: unknown group, unknown topic",
	"StreamsGroupHeartbeat: join with a topology whose internal topics are missing, then once they exist",
	"StreamsGroupHeartbeat: missing source topic, unknown group, unknown member, no topology",
	"StreamsGroupDescribe: unknown group, classic group and a streams group",
	"UpdateFeatures: streams.version at 0: ApiVersions, StreamsGroupHeartbeat and StreamsGroupDescribe",
	"ListGroups: a streams group: type, protocol type and state; DescribeGroups of it",
	"OffsetCommit: streams group: the member's epoch, an older epoch, an unknown member",
	// Matched with the KRaft administration APIs.
	"UnregisterBroker: ids never registered (2, -1, 1000); the live broker still listed",
	"AddRaftVoter: static quorum: another cluster id, no directory id, no controller endpoint, a new voter, the voter itself",
	"RemoveRaftVoter: static quorum: another cluster id, no directory id, the voter itself, an unknown voter",
	"UnregisterController: an id that is no controller, -1, the active controller",
	"StreamsGroupTopologyDescriptionUpdate: no plugin configured: a member's push, an unknown and an empty group; describe with and without the description; the heartbeat never asks",
	"DescribeQuorum: single node: shape",
}

// TestConformanceShort runs shortSet against Apache Kafka and Gregor. Built
// only with -tags kafka (it starts a JVM): go test -tags kafka -run
// TestConformanceShort ./compat/conformance. GREGOR_SKIP_KAFKA=1 skips it;
// under GREGOR_CI=1 a missing java or mvn fails it.
func TestConformanceShort(t *testing.T) {
	if os.Getenv("GREGOR_SKIP_KAFKA") == "1" {
		t.Skip("GREGOR_SKIP_KAFKA=1")
	}
	if err := kafkaref.Available(); err != nil {
		if os.Getenv("GREGOR_CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := StartPair(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	want := map[string]bool{}
	for _, n := range shortSet {
		want[n] = true
	}
	var scenarios []Scenario
	for _, s := range All() {
		if want[s.API+": "+s.Name] {
			scenarios = append(scenarios, s)
			delete(want, s.API+": "+s.Name)
		}
	}
	if len(want) > 0 {
		t.Fatalf("shortSet names no scenario: %v", want)
	}
	outs, err := Run(p.Kafka.Addr, p.Gregor.Addr, scenarios, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if !o.Match {
			k, g := diffLines(o.Kafka, o.Gregor)
			t.Errorf("%s: %s differs:\n  kafka:  %s\n  gregor: %s", o.API, o.Name, strings.Join(k, "\n          "), strings.Join(g, "\n          "))
		}
	}
}
