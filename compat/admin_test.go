package compat

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic administration: Metadata, CreateTopics, DeleteTopics, ListOffsets
// and topic configs, through kadm and raw kmsg requests.

// createRaw issues one CreateTopics request for the given topics
// (partitions and replication factor per topic) and returns the per-topic
// responses by name.
func createRaw(t *testing.T, ctx context.Context, cl *kgo.Client, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) map[string]kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	out := make(map[string]kmsg.CreateTopicsResponseTopic)
	for _, rt := range resp.Topics {
		out[rt.Topic] = rt
	}
	return out
}

func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions = partitions
	rt.ReplicationFactor = rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = configs[i]
		c.Value = kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func listTopicNames(t *testing.T, ctx context.Context, cl *kgo.Client) []string {
	t.Helper()
	var names []string
	for _, mt := range metadata(t, ctx, cl).Topics {
		if mt.Topic != nil {
			names = append(names, *mt.Topic)
		}
	}
	slices.Sort(names)
	return names
}

func TestAdmin_Metadata(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, b)
	topic := topicName(t, "")
	id := createTopic(t, ctx, kadm.NewClient(cl), topic, 3, nil)

	md := metadata(t, ctx, cl, topic)
	nodes := expectedNodes()
	var brokers []string
	for _, mb := range md.Brokers {
		brokers = append(brokers, fmt.Sprintf("%d@%s", mb.NodeID, net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port)))))
	}
	slices.Sort(brokers)
	var wantBrokers []string
	for i, addr := range b.seedList() {
		wantBrokers = append(wantBrokers, fmt.Sprintf("%d@%s", nodes[i], addr))
	}
	if !slices.Equal(brokers, wantBrokers) {
		t.Errorf("Metadata v%d brokers = %v, want exactly %v", md.Version, brokers, wantBrokers)
	}
	if !slices.Contains(nodes, md.ControllerID) {
		t.Errorf("Metadata controller id %d, want one of %v", md.ControllerID, nodes)
	}
	if md.ClusterID == nil || *md.ClusterID == "" {
		t.Errorf("Metadata cluster id missing")
	}
	if len(md.Topics) != 1 {
		t.Fatalf("Metadata for %q: %d topics", topic, len(md.Topics))
	}
	mt := md.Topics[0]
	if mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != topic || mt.TopicID != id || mt.IsInternal {
		t.Errorf("Metadata topic = error %s name %v id %x internal %v; want NONE %q %x false", errName(mt.ErrorCode), mt.Topic, mt.TopicID, mt.IsInternal, topic, id)
	}
	slices.SortFunc(mt.Partitions, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
	if len(mt.Partitions) != 3 {
		t.Fatalf("Metadata topic has %d partitions, want 3", len(mt.Partitions))
	}
	for i, p := range mt.Partitions {
		// One broker: node 0 leads, replicates and is the ISR. A
		// cluster: RF 3, so every node is a replica and (just created,
		// nothing to catch up) in the ISR, and one of them leads.
		replicas, isr := slices.Sorted(slices.Values(p.Replicas)), slices.Sorted(slices.Values(p.ISR))
		if p.ErrorCode != 0 || p.Partition != int32(i) || !slices.Contains(nodes, p.Leader) || !slices.Equal(replicas, nodes) || !slices.Equal(isr, nodes) || p.LeaderEpoch < 0 {
			t.Errorf("partition %d: %s partition %d leader %d epoch %d replicas %v isr %v; want NONE %d, a leader in %v, epoch >=0, replicas and isr %v",
				i, errName(p.ErrorCode), p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, i, nodes, nodes)
		}
	}

	// An unknown topic without auto-creation.
	md = metadata(t, ctx, cl, "no-such-topic")
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Metadata for an unknown topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION(3)", md.Topics)
	}
	if names := listTopicNames(t, ctx, cl); !slices.Equal(names, []string{topic}) {
		t.Errorf("all topics = %q, want [%q] (no auto-creation when the request disallows it)", names, topic)
	}
}

func TestAdmin_AutoCreateTopics(t *testing.T) {
	t.Run("enabled", func(t *testing.T) {
		b := newBroker(t, "num.partitions=4")
		ctx := testCtx(t, 30*time.Second)
		cl := newClient(t, b)
		topic := topicName(t, "")
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		var last string
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			// Kafka answers the creating request LEADER_NOT_AVAILABLE
			// or UNKNOWN_TOPIC_OR_PARTITION, later ones NONE.
			mt := resp.Topics[0]
			last = fmt.Sprintf("error %s, %d partitions", errName(mt.ErrorCode), len(mt.Partitions))
			if mt.ErrorCode == 0 && len(mt.Partitions) == 4 {
				break
			}
			if c := mt.ErrorCode; c != 0 && c != kerr.LeaderNotAvailable.Code && c != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("Metadata auto-creating %q: %s", topic, last)
			}
			if time.Now().After(deadline) {
				t.Fatalf("auto-created topic %q not ready within 5s: %s, want NONE with num.partitions=4 partitions", topic, last)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// kgo producing to a missing topic with auto-creation allowed.
		other := topicName(t, "produced")
		pcl := newClient(t, b, kgo.AllowAutoTopicCreation())
		produceAll(t, ctx, pcl, []*kgo.Record{{Topic: other, Value: []byte("v")}})
		md := metadata(t, ctx, cl, other)
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != 4 {
			t.Errorf("topic auto-created by produce: %+v, want 4 partitions", md.Topics)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		b := newBroker(t, "auto.create.topics.enable=false")
		ctx := testCtx(t, 30*time.Second)
		cl := newClient(t, b)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("not-created")
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if c := resp.Topics[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("Metadata with auto.create.topics.enable=false: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", errName(c))
		}
		if names := listTopicNames(t, ctx, cl); len(names) != 0 {
			t.Errorf("topics = %q, want none", names)
		}
	})
}

func TestAdmin_CreateTopicsErrors(t *testing.T) {
	b := newBroker(t, "num.partitions=2")
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, b)

	long249 := strings.Repeat("x", 249)
	invalid := []string{"", ".", "..", "a/b", "a b", "tópico", strings.Repeat("y", 250)}
	var reqTopics []kmsg.CreateTopicsRequestTopic
	for _, name := range invalid {
		reqTopics = append(reqTopics, newTopic(name, 1, 1))
	}
	reqTopics = append(reqTopics, newTopic(long249, 1, 1))
	got := createRaw(t, ctx, cl, false, reqTopics...)
	for _, name := range invalid {
		if rt, ok := got[name]; !ok || rt.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("CreateTopics %q (%d chars): %s (present %v), want INVALID_TOPIC_EXCEPTION(17)", trunc(name), len(name), errName(rt.ErrorCode), ok)
		}
	}
	if rt := got[long249]; rt.ErrorCode != 0 {
		t.Errorf("CreateTopics with a 249-char name: %s, want NONE", errName(rt.ErrorCode))
	}

	// Metadata for invalid names answers INVALID_TOPIC_EXCEPTION too.
	for _, name := range []string{"a/b", "..", strings.Repeat("y", 250)} {
		md := metadata(t, ctx, cl, name)
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
			var code int16 = -1
			if len(md.Topics) == 1 {
				code = md.Topics[0].ErrorCode
			}
			t.Errorf("Metadata for %q: %s, want INVALID_TOPIC_EXCEPTION(17)", trunc(name), errName(code))
		}
	}

	got = createRaw(t, ctx, cl, false, newTopic("a_b", 1, 1))
	if c := got["a_b"].ErrorCode; c != 0 {
		t.Fatalf("CreateTopics a_b: %s", errName(c))
	}
	for _, tc := range []struct {
		desc  string
		topic kmsg.CreateTopicsRequestTopic
		want  int16
	}{
		{"duplicate of an existing topic", newTopic("a_b", 1, 1), kerr.TopicAlreadyExists.Code},
		{"colliding with a_b ('.' vs '_')", newTopic("a.b", 1, 1), kerr.InvalidTopicException.Code},
		{"zero partitions", newTopic("zero-partitions", 0, 1), kerr.InvalidPartitions.Code},
		{"replication factor above the number of brokers", newTopic("rf-too-high", 1, int16(len(expectedNodes())+1)), kerr.InvalidReplicationFactor.Code},
		{"replication factor 0", newTopic("rf0", 1, 0), kerr.InvalidReplicationFactor.Code},
		{"unknown config", newTopic("badconfig", 1, 1, "no.such.config", "1"), kerr.InvalidConfig.Code},
		{"non-numeric retention.ms", newTopic("badretention", 1, 1, "retention.ms", "soon"), kerr.InvalidConfig.Code},
	} {
		got := createRaw(t, ctx, cl, false, tc.topic)
		if rt, ok := got[tc.topic.Topic]; !ok || rt.ErrorCode != tc.want {
			t.Errorf("CreateTopics %q (%s): %s, want %s", tc.topic.Topic, tc.desc, errName(rt.ErrorCode), errName(tc.want))
		}
	}

	// The same name twice in one request: Kafka answers INVALID_REQUEST.
	resp := kmsg.NewPtrCreateTopicsRequest()
	resp.TimeoutMillis = 10000
	resp.Topics = []kmsg.CreateTopicsRequestTopic{newTopic("twice", 1, 1), newTopic("twice", 1, 1)}
	if r, err := resp.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		for _, rt := range r.Topics {
			if rt.Topic == "twice" && rt.ErrorCode != kerr.InvalidRequest.Code {
				t.Errorf("CreateTopics with \"twice\" listed twice: %s, want INVALID_REQUEST(42)", errName(rt.ErrorCode))
			}
		}
	}

	// -1 partitions and replication factor take the broker defaults.
	got = createRaw(t, ctx, cl, false, newTopic("defaults", -1, -1))
	if rt := got["defaults"]; rt.ErrorCode != 0 || rt.NumPartitions != 2 || rt.ReplicationFactor != replicationFactor() {
		t.Errorf("CreateTopics with -1/-1: %s, %d partitions, rf %d; want NONE, 2 (num.partitions), %d (default.replication.factor)", errName(rt.ErrorCode), rt.NumPartitions, rt.ReplicationFactor, replicationFactor())
	}
	// validateOnly succeeds without creating.
	got = createRaw(t, ctx, cl, true, newTopic("validated", 3, 1))
	if rt := got["validated"]; rt.ErrorCode != 0 {
		t.Errorf("CreateTopics validateOnly: %s, want NONE", errName(rt.ErrorCode))
	}

	want := []string{"a_b", "defaults", long249}
	slices.Sort(want)
	if names := listTopicNames(t, ctx, cl); !slices.Equal(names, want) {
		t.Errorf("topics after the failed creates = %q, want %q", names, want)
	}
}

func trunc(s string) string {
	if len(s) > 20 {
		return s[:10] + "…" + s[len(s)-5:]
	}
	return s
}

func TestAdmin_DeleteAndRecreate(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	oldID := createTopic(t, ctx, adm, topic, 3, nil)
	produceAll(t, ctx, newClient(t, b), keyedRecords(topic, testKeys, 20))

	dr, err := adm.DeleteTopic(ctx, topic)
	if err != nil || dr.Err != nil {
		t.Fatalf("DeleteTopics %q: %v %v", topic, err, dr.Err)
	}
	cl := newClient(t, b)
	md := metadata(t, ctx, cl, topic)
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Metadata after delete: %+v, want UNKNOWN_TOPIC_OR_PARTITION(3)", md.Topics)
	}
	if dr, _ := adm.DeleteTopic(ctx, topic); dr.Err != kerr.UnknownTopicOrPartition {
		t.Errorf("DeleteTopics of a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", dr.Err)
	}

	newID := createTopic(t, ctx, adm, topic, 1, nil)
	if newID == oldID {
		t.Errorf("re-created topic reuses id %x", oldID)
	}
	checkEmpty := func(stage string, cl *kgo.Client) {
		t.Helper()
		if id := topicID(t, ctx, cl, topic); id != newID {
			t.Errorf("%s: metadata topic id %x, want %x", stage, id, newID)
		}
		for _, ts := range []int64{-2, -1} {
			p, _ := rawListOffset(t, ctx, cl, topic, 0, ts)
			if p.ErrorCode != 0 || p.Offset != 0 {
				t.Errorf("%s: ListOffsets(%d): %s offset %d, want NONE 0", stage, ts, errName(p.ErrorCode), p.Offset)
			}
		}
		p := rawFetch(t, ctx, cl, topic, newID, 0, 0)
		if p.ErrorCode != 0 || p.HighWatermark != 0 || len(p.RecordBatches) != 0 {
			t.Errorf("%s: Fetch at 0: %s HWM %d, %d bytes; want NONE, 0, none", stage, errName(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
		}
		md := metadata(t, ctx, cl, topic)
		if n := len(md.Topics[0].Partitions); n != 1 {
			t.Errorf("%s: %d partitions, want 1", stage, n)
		}
	}
	checkEmpty("after re-create", cl)
	// The old topic id is gone: a v13+ Fetch by it is UNKNOWN_TOPIC_ID.
	if maxVersion(t, ctx, cl, 1) >= 13 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 10
		req.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = oldID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		if resp, err := req.RequestWith(ctx, cl); err != nil {
			t.Errorf("Fetch by the deleted topic id: %v", err)
		} else if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
			t.Errorf("Fetch v%d by the deleted topic id: %+v, want UNKNOWN_TOPIC_ID(100)", req.Version, resp.Topics)
		}
	}

	b.restart(t)
	checkEmpty("after restart", newClient(t, b))
}

func TestAdmin_ListOffsets(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	createTopic(t, ctx, adm, topic, 1, nil)

	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	cl := newClient(t, b, kgo.ProducerLinger(100*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var first []*kgo.Record // one batch, timestamps base+0s..base+9s
	for i := range 10 {
		first = append(first, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", i), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	produceAll(t, ctx, cl, first)
	for i := 10; i < 20; i++ { // ten more batches, base+10s..base+19s
		produceAll(t, ctx, cl, []*kgo.Record{{Topic: topic, Value: fmt.Appendf(nil, "%d", i), Timestamp: base.Add(time.Duration(i) * time.Second)}})
	}

	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, _ := starts.Lookup(topic, 0); lo.Err != nil || lo.Offset != 0 {
		t.Errorf("earliest = %+v, want 0", lo)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, _ := ends.Lookup(topic, 0); lo.Err != nil || lo.Offset != 20 {
		t.Errorf("latest = %+v, want 20", lo)
	}

	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	for _, tc := range []struct {
		ts         int64
		wantOffset int64
		wantTS     int64
	}{
		{ms(-time.Minute), 0, ms(0)},
		{ms(0), 0, ms(0)},
		{ms(3500 * time.Millisecond), 4, ms(4 * time.Second)}, // inside the first batch
		{ms(9 * time.Second), 9, ms(9 * time.Second)},
		{ms(9001 * time.Millisecond), 10, ms(10 * time.Second)},
		{ms(15 * time.Second), 15, ms(15 * time.Second)},
		{ms(19 * time.Second), 19, ms(19 * time.Second)},
		{ms(20 * time.Second), -1, -1}, // after every record: Kafka answers -1/-1
	} {
		p, v := rawListOffset(t, ctx, cl, topic, 0, tc.ts)
		if p.ErrorCode != 0 || p.Offset != tc.wantOffset || p.Timestamp != tc.wantTS {
			t.Errorf("ListOffsets v%d at base%+dms: %s offset %d timestamp %d; want NONE %d %d",
				v, tc.ts-base.UnixMilli(), errName(p.ErrorCode), p.Offset, p.Timestamp, tc.wantOffset, tc.wantTS)
		}
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, ms(12500*time.Millisecond), topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, _ := after.Lookup(topic, 0); lo.Err != nil || lo.Offset != 13 || lo.Timestamp != ms(13*time.Second) {
		t.Errorf("kadm ListOffsetsAfterMilli(base+12.5s) = %+v, want offset 13 at base+13s", lo)
	}

	if maxVersion(t, ctx, cl, 2) >= 7 {
		// KIP-734: -3 answers the offset of the largest timestamp.
		p, v := rawListOffset(t, ctx, cl, topic, 0, -3)
		if p.ErrorCode != 0 || p.Offset != 19 || p.Timestamp != ms(19*time.Second) {
			t.Errorf("ListOffsets v%d max timestamp (-3): %s offset %d ts %d; want NONE 19 %d", v, errName(p.ErrorCode), p.Offset, p.Timestamp, ms(19*time.Second))
		}
	}
	if p, _ := rawListOffset(t, ctx, cl, topic, 5, -1); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("ListOffsets on partition 5 of a 1-partition topic: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", errName(p.ErrorCode))
	}
}

func firstAlterErr(rs kadm.AlterConfigsResponses) error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func configOf(t *testing.T, ctx context.Context, adm *kadm.Client, topic, key string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %q: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs %q: %v %v %s", topic, err, rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("DescribeTopicConfigs %q: no %s among %d configs", topic, key, len(rc.Configs))
	return kadm.Config{}
}

func wantConfig(t *testing.T, ctx context.Context, adm *kadm.Client, stage, topic, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c := configOf(t, ctx, adm, topic, key)
	if clusterMode {
		// DescribeConfigs answers from the receiving node's metadata,
		// which follows an alter made through another node a moment
		// later (as a Kafka broker's metadata cache follows the
		// controller).
		start := time.Now()
		for (c.MaybeValue() != value || c.Source != source) && time.Since(start) < 10*time.Second {
			time.Sleep(50 * time.Millisecond)
			c = configOf(t, ctx, adm, topic, key)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Logf("%s: %s = %q after %v", stage, key, c.MaybeValue(), d.Round(time.Millisecond))
		}
	}
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s: %s = %q (source %v), want %q (source %v)", stage, key, c.MaybeValue(), c.Source, value, source)
	}
}

func TestAdmin_TopicConfigs(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	createTopic(t, ctx, adm, topic, 1, nil)
	withCfg := topicName(t, "created-with-config")
	createTopic(t, ctx, adm, withCfg, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")})

	wantConfig(t, ctx, adm, "default", topic, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, ctx, adm, "default", topic, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, ctx, adm, "default", topic, "compression.type", "producer", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, ctx, adm, "created with config", withCfg, "retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)

	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, topic)
	if err == nil {
		err = firstAlterErr(rs)
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs set retention.ms: %v", err)
	}
	wantConfig(t, ctx, adm, "after incremental set", topic, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)

	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("7200000")}}, topic)
	if err == nil {
		err = firstAlterErr(rs)
	}
	if err != nil {
		t.Fatalf("AlterConfigs retention.ms: %v", err)
	}
	wantConfig(t, ctx, adm, "after AlterConfigs", topic, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)

	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")}}, topic)
	if err == nil && firstAlterErr(rs) == nil {
		t.Errorf("IncrementalAlterConfigs of an unknown config succeeded, want INVALID_CONFIG")
	} else if err == nil && firstAlterErr(rs) != kerr.InvalidConfig {
		t.Errorf("IncrementalAlterConfigs of an unknown config: %v, want INVALID_CONFIG", firstAlterErr(rs))
	}
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "no-such-topic"); err == nil && firstAlterErr(rs) != kerr.UnknownTopicOrPartition {
		t.Errorf("IncrementalAlterConfigs of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", firstAlterErr(rs))
	}

	b.restart(t)
	adm = newAdmin(t, b)
	wantConfig(t, ctx, adm, "after restart", topic, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, ctx, adm, "after restart", withCfg, "retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)

	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
	if err == nil {
		err = firstAlterErr(rs)
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs delete retention.ms: %v", err)
	}
	wantConfig(t, ctx, adm, "after incremental delete", topic, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	rcs, err := adm.DescribeTopicConfigs(ctx, "no-such-topic")
	if err == nil {
		if rc, _ := rcs.On("no-such-topic", nil); rc.Err != kerr.UnknownTopicOrPartition {
			t.Errorf("DescribeConfigs of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", rc.Err)
		}
	}
}

// TestAdmin_BrokerConfigDefaults: --set log.retention.ms becomes the default
// a topic reports for retention.ms, as a static broker config.
func TestAdmin_BrokerConfigDefaults(t *testing.T) {
	b := newBroker(t, "log.retention.ms=86400000")
	ctx := testCtx(t, 30*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	createTopic(t, ctx, adm, topic, 1, nil)
	wantConfig(t, ctx, adm, "log.retention.ms=86400000", topic, "retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig)
}
