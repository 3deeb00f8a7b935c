package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroups_ThreeMembersShareSixPartitions runs a franz-go group of three
// over six partitions: every record is consumed exactly once between them,
// offsets are committed, and a restarted group resumes without redelivery.
func TestGroups_ThreeMembersShareSixPartitions(t *testing.T) {
	dir := t.TempDir()
	b, addr := startBroker(t, dir, map[string]string{"group.initial.rebalance.delay.ms": "100"})
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "g6"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	const n = 600
	produce := func(from int) {
		var rs []*kgo.Record
		for i := from; i < from+n; i++ {
			rs = append(rs, &kgo.Record{Topic: "g6", Value: []byte(fmt.Sprint(i))})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0)

	consume := func(want int) map[string]int {
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		var clients []*kgo.Client
		for m := 0; m < 3; m++ {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("g6"),
				kgo.FetchMaxWait(200*time.Millisecond), kgo.DisableAutoCommit())
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, cl)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for cctx.Err() == nil {
					fs := cl.PollFetches(cctx)
					fs.EachRecord(func(r *kgo.Record) {
						mu.Lock()
						seen[string(r.Value)]++
						mu.Unlock()
					})
					if len(fs.Records()) > 0 {
						cl.CommitUncommittedOffsets(cctx)
					}
					mu.Lock()
					done := len(seen) >= want
					mu.Unlock()
					if done {
						cancel()
					}
				}
			}()
		}
		wg.Wait()
		for _, cl := range clients {
			cl.Close()
		}
		return seen
	}
	seen := consume(n)
	if len(seen) != n {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), n)
	}
	lags, err := adm.Lag(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	if total := lags["grp"].Lag.Total(); total != 0 {
		t.Fatalf("lag after consuming everything: %d", total)
	}
	_ = b
	produce(n)
	seen = consume(n)
	for v := range seen {
		var i int
		fmt.Sscan(v, &i)
		if i < n {
			t.Fatalf("record %s redelivered after restart of the group", v)
		}
	}
	if len(seen) != n {
		t.Fatalf("second round consumed %d distinct, want %d", len(seen), n)
	}
}
