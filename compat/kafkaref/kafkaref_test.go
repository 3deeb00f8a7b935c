//go:build kafka

package kafkaref

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStartStop starts Kafka, creates a topic on it and stops it. Built only
// with -tags kafka (a JVM is heavy); GREGOR_SKIP_KAFKA=1 skips it, and
// GREGOR_CI=1 turns a missing java or mvn into a failure.
func TestStartStop(t *testing.T) {
	if os.Getenv("GREGOR_SKIP_KAFKA") == "1" {
		t.Skip("GREGOR_SKIP_KAFKA=1")
	}
	if err := Available(); err != nil {
		if os.Getenv("GREGOR_CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := Start(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Kafka %s on %s: first ApiVersions answer %v, ready %v after the JVM started", b.Version, b.Addr, b.FirstAnswer, b.StartDuration)
	if b.FirstAnswer <= 0 || b.FirstAnswer > b.StartDuration || b.Pid() <= 0 {
		t.Fatalf("FirstAnswer %v, StartDuration %v, Pid %d", b.FirstAnswer, b.StartDuration, b.Pid())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 2, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %+v", resp.Topics)
	}
	start := time.Now()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(start))
	if b.cmd.ProcessState == nil || !b.cmd.ProcessState.Exited() && b.cmd.ProcessState.Sys() == nil {
		t.Fatalf("process state %v", b.cmd.ProcessState)
	}
}

// TestCluster starts a three-node KRaft cluster, writes to a replication
// factor 3 topic and reads the exact records back, kills the partition's
// leader, writes again on the new leader, restarts the killed node and
// reads everything back. Same build tag and skips as TestStartStop.
func TestCluster(t *testing.T) {
	if os.Getenv("GREGOR_SKIP_KAFKA") == "1" {
		t.Skip("GREGOR_SKIP_KAFKA=1")
	}
	if err := Available(); err != nil {
		if os.Getenv("GREGOR_CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, 3, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		start := time.Now()
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		t.Logf("stopped in %v", time.Since(start))
	}()
	if len(c.Brokers) != 3 || len(c.Addrs()) != 3 {
		t.Fatalf("%d brokers, addrs %v", len(c.Brokers), c.Addrs())
	}
	for i, b := range c.Brokers {
		if b.Pid() <= 0 || b.ClusterID != c.ClusterID {
			t.Fatalf("node %d: pid %d, cluster id %q of %q", i+1, b.Pid(), b.ClusterID, c.ClusterID)
		}
		t.Logf("node %d on %s: ready %v after its JVM started", i+1, b.Addr, b.StartDuration)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("t"),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "t"); err != nil {
		t.Fatal(err)
	}
	var leader int32 = -1
	for leader < 0 {
		md, err := adm.Metadata(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := md.Topics["t"].Partitions[0]; ok && p.Leader >= 0 && len(p.ISR) == 3 {
			leader = p.Leader
		} else if ctx.Err() != nil {
			t.Fatalf("no leader with an ISR of 3: %+v", md.Topics["t"])
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).First()
			if err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			if r.Offset != int64(i) {
				t.Fatalf("record %d at offset %d", i, r.Offset)
			}
		}
	}
	consume := func(n int) {
		cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		var got []string
		for len(got) < n {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d records: %v", len(got), err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != int64(len(got)) {
					t.Fatalf("record %d at offset %d", len(got), r.Offset)
				}
				got = append(got, string(r.Value))
			})
		}
		for i, v := range got {
			if v != fmt.Sprintf("v%d", i) {
				t.Fatalf("record %d is %q", i, v)
			}
		}
		if len(got) != n {
			t.Fatalf("%d records, want %d", len(got), n)
		}
	}
	produce(0, 10)
	consume(10)

	killed := time.Now()
	if err := c.Kill(int(leader) - 1); err != nil {
		t.Fatal(err)
	}
	produce(10, 20)
	t.Logf("killed leader %d; first 10 acknowledged writes after %v", leader, time.Since(killed))
	if err := c.Restart(ctx, int(leader)-1); err != nil {
		t.Fatal(err)
	}
	consume(20)
}
