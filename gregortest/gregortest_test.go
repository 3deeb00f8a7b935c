package gregortest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestStart_OptionsApply checks seeded topics with their partitions and
// configs, num.partitions for auto-created topics, and auto-create off.
func TestStart_OptionsApply(t *testing.T) {
	b := Start(t, Partitions(4), Topic("seeded", 2, map[string]string{"retention.ms": "60000"}))
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	td, err := adm.ListTopics(ctx, "seeded")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td["seeded"].Partitions); n != 2 {
		t.Fatalf("seeded has %d partitions, want 2", n)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "seeded")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On("seeded", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, kv := range c.Configs {
		if kv.Key == "retention.ms" && kv.MaybeValue() == "60000" {
			found = true
		}
	}
	if !found {
		t.Fatalf("retention.ms=60000 not among seeded's configs: %v", c.Configs)
	}
	cl := newClient(t, b.Addr(), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err = adm.ListTopics(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td["auto"].Partitions); n != 4 {
		t.Fatalf("auto-created topic has %d partitions, want num.partitions=4", n)
	}

	off := Start(t, AutoCreateTopics(false))
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("nope")
	md.Topics = append(md.Topics, rt)
	resp, err := md.RequestWith(ctx, newClient(t, off.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code == 0 {
		t.Fatal("topic was auto-created with auto.create.topics.enable=false")
	}
}

// TestStart_BadTopicFails checks that an invalid seed topic is reported.
func TestStart_BadTopicFails(t *testing.T) {
	if _, err := start(t.TempDir(), Topic("bad/name", 1, nil)); err == nil {
		t.Fatal("start with an invalid topic name succeeded")
	}
}

// TestStart_ReadyTime measures start to ready: New and Listen until a
// client's ApiVersions is answered, on a new data directory each time. It
// reports the median, minimum and maximum and fails only when it is
// absurdly slow (a second), which would defeat the package's purpose.
func TestStart_ReadyTime(t *testing.T) {
	const runs = 21
	ds := make([]time.Duration, 0, runs)
	for range runs {
		t0 := time.Now()
		b := Start(t)
		if err := kafkaref.APIVersions(testCtx(t), b.Addr()); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	t.Logf("start to ready (New+Listen+Serve until ApiVersions answered on a new connection): median %v (%v–%v) over %d runs", ds[runs/2], ds[0], ds[runs-1], runs)
	if ds[runs-1] > time.Second {
		t.Errorf("start to ready took %v", ds[runs-1])
	}
}

// TestStart_SchemaRegistry: the SchemaRegistry option serves Confluent's
// REST API, which franz-go's sr client uses.
func TestStart_SchemaRegistry(t *testing.T) {
	b := Start(t, SchemaRegistry())
	if b.SchemaRegistryURL() == "" {
		t.Fatal("no schema registry URL")
	}
	cl, err := sr.NewClient(sr.URLs(b.SchemaRegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(context.Background(), "orders-value", sr.Schema{Schema: `{"type":"string"}`})
	if err != nil || ss.ID != 1 {
		t.Fatalf("register: %+v %v", ss, err)
	}
	if got := Start(t).SchemaRegistryURL(); got != "" {
		t.Fatalf("without the option: %q", got)
	}
}
