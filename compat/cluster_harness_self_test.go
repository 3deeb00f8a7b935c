package compat

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterHarness_SingleNodeFaults drives the harness against today's
// single-node binary (no controller.quorum.voters) and proves each fault is
// real for an unmodified franz-go client going through the proxy: produce
// fails while the node is cut, killed, stopped or dropping its requests, and
// succeeds at the next offset once healed, resumed or restarted on the same
// ports; the data written before a SIGKILL is read back.
func TestClusterHarness_SingleNodeFaults(t *testing.T) {
	c := startCluster(t, 1, withSingleNode())
	nd := c.Node(1)
	topic := topicName(t, "")
	ctx := testCtx(t, 3*time.Minute)

	// The broker advertises its proxy: Metadata names the proxy address.
	md, err := c.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || fmt.Sprintf("%s:%d", md.Brokers[0].Host, md.Brokers[0].Port) != nd.Addr() || md.Brokers[0].NodeID != 1 {
		t.Fatalf("Metadata brokers = %+v, want node 1 at the proxy %s", md.Brokers, nd.Addr())
	}
	if nd.Addr() == nd.DirectAddr() {
		t.Fatalf("proxy and broker share an address %s", nd.Addr())
	}
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if l := c.WaitLeader(topic, 0); l != 1 {
		t.Fatalf("leader of %s/0 = %d, want 1", topic, l)
	}

	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(3*time.Second),
		kgo.RetryTimeout(3*time.Second), kgo.DefaultProduceTopic(topic))
	next := int64(0)
	mustProduce := func(step string) {
		t.Helper()
		var r *kgo.Record
		// The client reconnects on its own after a fault; give it a few
		// delivery timeouts to notice.
		err := waitUntil(30*time.Second, func() error {
			var err error
			r, err = cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", step, next))).First()
			return err
		})
		if err != nil {
			t.Fatalf("%s: produce: %v", step, err)
		}
		if r.Offset != next {
			t.Fatalf("%s: acknowledged at offset %d, want %d", step, r.Offset, next)
		}
		next++
	}
	// A failing produce uses its own non-idempotent client with few
	// retries: an idempotent client keeps a record that may have been sent
	// until it knows its fate, and the record must not reach the log.
	mustFail := func(step string) {
		t.Helper()
		fcl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(2),
			kgo.RecordDeliveryTimeout(2*time.Second), kgo.RetryTimeout(2*time.Second), kgo.DefaultProduceTopic(topic))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := fcl.ProduceSync(pctx, kgo.StringRecord(step+"-must-fail")).First(); err == nil {
			t.Fatalf("%s: produce succeeded", step)
		}
		if d := time.Since(start); d > 9*time.Second {
			t.Fatalf("%s: the produce took %v to fail", step, d)
		}
		fcl.Close()
	}

	mustProduce("start")

	// Cut: refused through the proxy, the broker itself still up.
	nd.Cut()
	mustFail("cut")
	if err := apiVersions(nd.Addr()); err == nil {
		t.Fatal("cut: ApiVersions through the proxy answered")
	}
	if err := apiVersions(nd.DirectAddr()); err != nil {
		t.Fatalf("cut: ApiVersions on the broker's own listener: %v", err)
	}
	nd.Heal()
	c.WaitAPIVersions()
	mustProduce("healed")

	// One-way: requests dropped on the way in, the connection stays open.
	nd.OneWay(inbound)
	if _, err := requestWithin(nd.Addr(), kmsg.NewPtrApiVersionsRequest(), 2*time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("one-way inbound: ApiVersions err = %v, want a deadline (request dropped)", err)
	}
	nd.Heal()
	nd.OneWay(outbound)
	if _, err := requestWithin(nd.Addr(), kmsg.NewPtrApiVersionsRequest(), 2*time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("one-way outbound: ApiVersions err = %v, want a deadline (response dropped)", err)
	}
	nd.Heal()
	mustProduce("one-way-healed")

	// Delay: 150ms each way.
	nd.Delay(150 * time.Millisecond)
	start := time.Now()
	if err := apiVersions(nd.Addr()); err != nil {
		t.Fatalf("delay: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("delay: ApiVersions took %v through a 150ms-each-way proxy", d)
	}
	nd.Heal()

	// SIGSTOP: no answer even on the broker's own listener; SIGCONT brings
	// it back.
	nd.Stop()
	if _, err := requestWithin(nd.DirectAddr(), kmsg.NewPtrApiVersionsRequest(), time.Second); err == nil {
		t.Fatal("stopped: broker answered ApiVersions")
	}
	nd.Cont()
	mustProduce("continued")

	// SIGKILL and restart on the same data directory and ports.
	addr, direct := nd.Addr(), nd.DirectAddr()
	nd.Kill()
	if nd.Running() {
		t.Fatal("killed node still running")
	}
	mustFail("killed")
	nd.Restart()
	if nd.Addr() != addr || nd.DirectAddr() != direct {
		t.Fatalf("restart moved the node: %s/%s, was %s/%s", nd.Addr(), nd.DirectAddr(), addr, direct)
	}
	c.WaitAPIVersions()
	mustProduce("restarted")

	// Everything acknowledged is there, in order, after the kill -9.
	rd := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	want := []string{"start-0", "healed-1", "one-way-healed-2", "continued-3", "restarted-4"}
	var got []string
	for len(got) < len(want) {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("record at offset %d, want %d", r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v, want %v (failed produces must not have landed)", got, want)
	}

	// HealAll restarts what is dead and resumes what is stopped.
	nd.Stop()
	c.HealAll()
	if err := apiVersions(nd.Addr()); err != nil {
		t.Fatalf("after HealAll of a stopped node: %v", err)
	}
	nd.Kill()
	c.HealAll()
	c.WaitAPIVersions()
}
