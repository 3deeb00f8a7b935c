package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopics_AnswerShapes: as Kafka answers, a topic named twice gets
// one INVALID_REQUEST entry after the others, an error entry carries an
// empty (not null) Configs array, and validate_only returns a non-zero topic
// id without creating the topic.
func TestCreateTopics_AnswerShapes(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	topicReq := func(name string, parts int32) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, 1
		return rt
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, topicReq("twice", 1), topicReq("ok", 1), topicReq("twice", 2), topicReq("zero", 0))
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 3 {
		t.Fatalf("%d answers, want 3: %+v", len(resp.Topics), resp.Topics)
	}
	for i, want := range []struct {
		name    string
		code    int16
		configs bool
	}{{"ok", 0, true}, {"zero", kerr.InvalidPartitions.Code, false}, {"twice", kerr.InvalidRequest.Code, false}} {
		got := resp.Topics[i]
		if got.Topic != want.name || got.ErrorCode != want.code {
			t.Errorf("answer %d: %s %v, want %s %v", i, got.Topic, kerr.ErrorForCode(got.ErrorCode), want.name, kerr.ErrorForCode(want.code))
		}
		if got.Configs == nil || (len(got.Configs) > 0) != want.configs {
			t.Errorf("answer %d (%s): configs %v (nil %v)", i, got.Topic, got.Configs, got.Configs == nil)
		}
		if want.code != 0 && (got.NumPartitions != -1 || got.ReplicationFactor != -1 || got.TopicID != [16]byte{}) {
			t.Errorf("error answer %d: partitions %d, rf %d, id %x; want -1, -1, zero", i, got.NumPartitions, got.ReplicationFactor, got.TopicID)
		}
	}

	req = kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = true
	req.Topics = append(req.Topics, topicReq("validated", 2))
	resp, err = req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0]; got.ErrorCode != 0 || got.TopicID == [16]byte{} || got.NumPartitions != 2 {
		t.Fatalf("validate only: %v, id %x, partitions %d", kerr.ErrorForCode(got.ErrorCode), got.TopicID, got.NumPartitions)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("validated")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := mresp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("validated topic exists afterwards: %v", kerr.ErrorForCode(code))
	}
}

// TestCreateTopics_ManyInOneRequest: one request's topics are created
// together (one batch of records) and answered in the request's order; a
// name that collides with another of the same request, or exists, is
// refused as when created one by one. After a clean stop the data
// directory holds one clean-shutdown list and no marker per partition,
// and a restart finds every record.
func TestCreateTopics_ManyInOneRequest(t *testing.T) {
	dir := t.TempDir()
	b, addr := startBroker(t, dir, nil)
	cl := newClient(t, addr)
	if _, err := b.createTopic("exists", 1, nil); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("many-%02d", i))
	}
	names = append(names, "a.b", "exists", "a_b")
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 4, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != len(names) {
		t.Fatalf("%d answers for %d topics", len(resp.Topics), len(names))
	}
	for i, st := range resp.Topics {
		want := int16(0)
		switch names[i] {
		case "exists":
			want = kerr.TopicAlreadyExists.Code
		case "a_b":
			want = kerr.InvalidTopicException.Code
		}
		if st.Topic != names[i] || st.ErrorCode != want {
			t.Fatalf("answer %d: %s %v, want %s %v", i, st.Topic, kerr.ErrorForCode(st.ErrorCode), names[i], kerr.ErrorForCode(want))
		}
		if want == 0 && (st.NumPartitions != 4 || st.TopicID == [16]byte{} || len(st.Configs) == 0) {
			t.Fatalf("answer %d: partitions %d id %x configs %d", i, st.NumPartitions, st.TopicID, len(st.Configs))
		}
	}
	// A record in every partition of every new topic, at offset 0.
	var recs []*kgo.Record
	for _, n := range append(names[:40:40], "a.b") {
		for p := range int32(4) {
			recs = append(recs, &kgo.Record{Topic: n, Partition: p, Value: []byte(n + "/" + strconv.Itoa(int(p)))})
		}
	}
	pcl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, r := range pcl.ProduceSync(testCtx(t), recs...) {
		if r.Err != nil || r.Record.Offset != 0 {
			t.Fatalf("produce %s-%d: offset %d err %v", r.Record.Topic, r.Record.Partition, r.Record.Offset, r.Err)
		}
	}
	pcl.Close()
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join(dir, "clean-shutdown"))
	if err != nil {
		t.Fatalf("no clean-shutdown list after a clean stop: %v", err)
	}
	// The header and the partitions written; "exists-0", never written,
	// has no directory to trust.
	if n := strings.Count(string(list), "\n"); n != 1+len(recs) {
		t.Fatalf("clean-shutdown list has %d lines, want %d:\n%s", n, 1+len(recs), list)
	}
	if _, err := os.Lstat(filepath.Join(dir, "exists-0")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a partition never written has a directory (err %v)", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "clean-shutdown")); len(m) > 0 {
		t.Fatalf("per-partition markers beside the list: %v", m)
	}

	_, addr = startBroker(t, dir, nil)
	ccl := newClient(t, addr, kgo.ConsumeTopics(append(names[:40:40], "a.b")...))
	got := map[string]bool{}
	ctx := testCtx(t)
	for len(got) < len(recs) {
		fs := ccl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %d of %d records", len(got), len(recs))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := r.Topic + "/" + strconv.Itoa(int(r.Partition)); string(r.Value) != want || r.Offset != 0 {
				t.Fatalf("read %q at %d from %s-%d", r.Value, r.Offset, r.Topic, r.Partition)
			}
			got[string(r.Value)] = true
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "clean-shutdown")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("clean-shutdown list still there after the start: %v", err)
	}
}

// TestCreateTopics_AnswerListsKafkasTopicConfigs: a created topic's answer
// lists every topic config Kafka 4.4 lists, including those Gregor only
// stores (compression levels, tiered storage, the share-group dead-letter
// queue flag, max.decompressed.message.bytes), each with Kafka's default
// and source DEFAULT_CONFIG, and a cluster-wide dynamic
// min.insync.replicas with source DYNAMIC_DEFAULT_BROKER_CONFIG.
func TestCreateTopics_AnswerListsKafkasTopicConfigs(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "min.insync.replicas", kmsg.StringPtr("1")
	ar.Configs = append(ar.Configs, ac)
	alter.Resources = append(alter.Resources, ar)
	aresp, err := alter.RequestWith(testCtx(t), cl)
	if err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("setting the cluster default: %v %+v", err, aresp)
	}

	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "configs", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, c := range resp.Topics[0].Configs {
		got[c.Name] = c
	}
	for _, want := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{"compression.gzip.level", "-1", kmsg.ConfigSourceDefaultConfig},
		{"compression.lz4.level", "9", kmsg.ConfigSourceDefaultConfig},
		{"compression.zstd.level", "3", kmsg.ConfigSourceDefaultConfig},
		{"errors.deadletterqueue.group.enable", "false", kmsg.ConfigSourceDefaultConfig},
		{"max.decompressed.message.bytes", "2147483639", kmsg.ConfigSourceDefaultConfig},
		{"remote.copy.lag.bytes", "-1", kmsg.ConfigSourceDefaultConfig},
		{"remote.copy.lag.ms", "0", kmsg.ConfigSourceDefaultConfig},
		{"remote.log.copy.disable", "false", kmsg.ConfigSourceDefaultConfig},
		{"remote.log.delete.on.disable", "false", kmsg.ConfigSourceDefaultConfig},
		{"min.insync.replicas", "1", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
	} {
		c, ok := got[want.name]
		if !ok {
			t.Errorf("%s not in the answer", want.name)
			continue
		}
		if c.Value == nil || *c.Value != want.value || kmsg.ConfigSource(c.Source) != want.source || c.ReadOnly || c.IsSensitive {
			t.Errorf("%s: value %v source %d read-only %v sensitive %v; want %s, %v", want.name, c.Value, c.Source, c.ReadOnly, c.IsSensitive, want.value, want.source)
		}
	}
	if len(got) != 37 { // LogConfig's 38 but internal.segment.bytes
		t.Errorf("%d configs in the answer, want Kafka 4.4's 37", len(got))
	}
}
