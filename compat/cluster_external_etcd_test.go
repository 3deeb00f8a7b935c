package compat

// etcd.endpoints: brokers that join an etcd cluster someone already runs
// instead of embedding members. The etcd here is a real etcd server (the
// etcd project's own embed package) in the test process, on loopback.

import (
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.etcd.io/etcd/server/v3/embed"
)

func startEtcd(t *testing.T) string {
	t.Helper()
	ports := freePorts(t, 2)
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embed.NewConfig()
	cfg.Name = "external"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not become ready")
	}
	slog.Debug("external etcd", "client", client.String())
	return client.String()
}

func TestCluster_ExternalEtcd(t *testing.T) {
	endpoints := startEtcd(t)
	c := startCluster(t, 3, withExternalEtcd(endpoints), withSet("default.replication.factor=3"))
	ctx := testCtx(t, 2*time.Minute)
	topic := topicName(t, "")
	min2 := "2"
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &min2}, topic); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader(topic, 0)
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))})
			if err := r.FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if off := r[0].Record.Offset; off != int64(i) {
				t.Fatalf("record %d acknowledged at offset %d", i, off)
			}
		}
	}
	produce(0, 500)
	c.Node(leader).Kill()
	produce(500, 1000)
	if l := c.WaitLeader(topic, 0); l == leader {
		t.Fatalf("still led by the killed node %d", l)
	}
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 1000; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 1000: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint(r.Offset) {
				t.Fatalf("offset %d holds %q", r.Offset, r.Value)
			}
			got++
		})
	}
}
