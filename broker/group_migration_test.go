package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroups_OnlineMigrationWithRealClients runs two classic franz-go
// consumers (default cooperative-sticky balancer) over six partitions, then
// adds a KIP-848 consumer (ServerSideBalancer) to the same group, which
// upgrades it to a consumer group with the classic members still in it;
// then the KIP-848 consumer leaves and the group downgrades to a classic
// group whose two members take every partition again. Every record is
// consumed; since consumers commit before they let a rebalance revoke
// anything, a record is consumed twice only after a failed commit.
func TestGroups_OnlineMigrationWithRealClients(t *testing.T) {
	_, addr := startBroker(t, "", map[string]string{
		"group.initial.rebalance.delay.ms":     "100",
		"group.consumer.heartbeat.interval.ms": "200",
		// As in Kafka, the minimum goes down with it.
		"group.consumer.min.heartbeat.interval.ms": "200",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "mig"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	next := 0
	produce := func(n int) {
		var rs []*kgo.Record
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: "mig", Value: []byte(fmt.Sprint(next))})
			next++
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	seen := map[string]int{}   // record value → times consumed
	by := map[string][]int32{} // consumer → partitions it consumed from
	var commitErrs atomic.Int32
	total := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}

	start := func(name string, opts ...kgo.Opt) (stop func()) {
		opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup("mg"), kgo.ConsumeTopics("mig"),
			kgo.FetchMaxWait(100 * time.Millisecond), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.HeartbeatInterval(200 * time.Millisecond), kgo.RebalanceTimeout(10 * time.Second),
			kgo.ClientID(name)}, opts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					by[name] = append(by[name], r.Partition)
					mu.Unlock()
				})
				// The commit uses the test's context, not the one stop
				// cancels: records counted as seen are committed even when
				// stop comes during the poll, and a commit that fails
				// counts, whatever failed it.
				if len(fs.Records()) > 0 {
					if err := cl.CommitUncommittedOffsets(ctx); err != nil {
						commitErrs.Add(1)
						t.Logf("%s: commit: %v", name, err)
					}
				}
				cl.AllowRebalance()
			}
		}()
		return func() {
			ccancel()
			<-done
			cl.Close()
		}
	}
	describe := func() (kadm.DescribedGroup, error) {
		gs, err := adm.DescribeGroups(ctx, "mg")
		if err != nil {
			return kadm.DescribedGroup{}, err
		}
		return gs["mg"], nil
	}
	consumerGroup := func() (*kmsg.ConsumerGroupDescribeResponseGroup, error) {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"mg"}
		resp, err := req.RequestWith(ctx, newClient(t, addr))
		if err != nil || len(resp.Groups) != 1 {
			return nil, fmt.Errorf("%v", err)
		}
		return &resp.Groups[0], nil
	}

	// Phase 1: a classic group of two.
	produce(600)
	stop1 := start("c1")
	defer stop1()
	stop2 := start("c2")
	defer stop2()
	waitFor(t, 30*time.Second, "the classic group to consume the first records", func() bool {
		g, err := describe()
		return err == nil && g.State == "Stable" && len(g.Members) == 2 && total() == 600
	})

	// Phase 2: a KIP-848 member joins: the group is upgraded.
	stop3 := start("k3", kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	stopped3 := false
	defer func() {
		if !stopped3 {
			stop3()
		}
	}()
	waitFor(t, 45*time.Second, "the consumer group of three to be Stable", func() bool {
		g, err := consumerGroup()
		if err != nil || g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 {
			return false
		}
		classic := 0
		for _, m := range g.Members {
			if m.MemberType == 0 {
				classic++
			}
			if len(m.Assignment.TopicPartitions) == 0 {
				return false
			}
		}
		return classic == 2
	})
	produce(600)
	waitFor(t, 30*time.Second, "the consumer group to consume every record", func() bool { return total() == 1200 })
	mu.Lock()
	k3 := len(by["k3"])
	mu.Unlock()
	if k3 == 0 {
		t.Fatal("the KIP-848 member consumed nothing")
	}

	// Phase 3: the KIP-848 member leaves: the group is classic again and
	// its two members share all six partitions.
	stop3()
	stopped3 = true
	mu.Lock()
	before := map[string]int{"c1": len(by["c1"]), "c2": len(by["c2"])}
	mu.Unlock()
	produce(600)
	waitFor(t, 45*time.Second, "the downgraded classic group to consume everything", func() bool {
		g, err := describe()
		if err != nil || g.Err != nil || g.State != "Stable" || len(g.Members) != 2 {
			return false
		}
		parts := 0
		for _, m := range g.Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, tp := range a.Topics {
					parts += len(tp.Partitions)
				}
			}
		}
		return parts == 6 && total() == 1800
	})

	mu.Lock()
	defer mu.Unlock()
	partsAfter := map[int32]bool{}
	for _, name := range []string{"c1", "c2"} {
		for _, p := range by[name][before[name]:] {
			partsAfter[p] = true
		}
	}
	if len(partsAfter) != 6 {
		t.Errorf("after the downgrade the classic members consumed from %d partitions, want 6", len(partsAfter))
	}
	dups := 0
	for i := 0; i < next; i++ {
		switch n := seen[fmt.Sprint(i)]; {
		case n == 0:
			t.Errorf("record %d was never consumed", i)
		case n > 1:
			dups++
		}
	}
	if dups > 0 && commitErrs.Load() == 0 {
		t.Errorf("%d records were consumed more than once without a failed commit", dups)
	} else if dups > 0 {
		t.Logf("%d records consumed twice after %d failed commits", dups, commitErrs.Load())
	}
}
