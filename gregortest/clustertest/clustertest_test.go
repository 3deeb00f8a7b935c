package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/gregortest/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Three brokers in the test process: a topic replicated on all three
// keeps every acknowledged record when its leader stops, takes writes
// from the new leader, and has the stopped broker back in its ISR after
// a restart.
func TestCluster_FailoverAndRestart(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	isr := func() []int32 {
		t.Helper()
		td, err := adm.ListTopics(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		p := td["orders"].Partitions[0]
		s := slices.Clone(p.ISR)
		slices.Sort(s)
		return s
	}
	waitISR := func(want []int32) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !slices.Equal(isr(), want) {
			select {
			case <-ctx.Done():
				t.Fatalf("ISR %v, want %v", isr(), want)
			case <-tick.C:
			}
		}
	}
	produce(0, 10)
	waitISR([]int32{1, 2, 3})

	old := c.LeaderOf("orders", 0)
	c.Stop(old)
	if l := c.LeaderOf("orders", 0); l == old || l < 1 {
		t.Fatalf("leader after stopping %d: %d", old, l)
	}
	produce(10, 20)

	c.Restart(old)
	waitISR([]int32{1, 2, 3})

	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < 20 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 20: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("r%d", len(got)); string(r.Value) != want || r.Offset != int64(len(got)) {
				t.Fatalf("offset %d: %q, want %q at %d", r.Offset, r.Value, want, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
}
