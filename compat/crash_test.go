package compat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCrash_KillNineKeepsAcknowledgedData drives idempotent producers
// (acks=all) and a committing consumer group against the real binary, kills
// the broker with SIGKILL at random moments, restarts it and checks, cycle
// after cycle:
//
//   - every acknowledged record is present exactly once, at the offset it
//     was acknowledged with, in per-partition order;
//   - high watermarks never go backwards;
//   - every acknowledged offset commit is intact, and the group resumes
//     from it without redelivering committed records.
//
// GREGOR_CRASH_CYCLES sets the number of cycles (default 3; `make crash`
// runs 25). The figures are logged at the end.
func TestCrash_KillNineKeepsAcknowledgedData(t *testing.T) {
	singleNodeOnly(t, "kill -9 cycles of one process under load (TestClusterJepsen kills cluster nodes)")
	cycles := 3
	if v, err := strconv.Atoi(os.Getenv("GREGOR_CRASH_CYCLES")); err == nil && v > 0 {
		cycles = v
	}
	const partitions = 4
	topic := topicName(t, "")
	b := newBroker(t, "group.initial.rebalance.delay.ms=0")
	ctx := testCtx(t, time.Duration(cycles)*30*time.Second+time.Minute)
	createTopic(t, ctx, newAdmin(t, b), topic, partitions, nil)

	type ack struct {
		partition int32
		offset    int64
	}
	acked := map[string]ack{}        // value → where it was acknowledged
	committed := map[int32]int64{}   // acknowledged group commits
	hwm := make([]int64, partitions) // high watermarks seen
	var totalAcked, cycleCount int
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))

	for cycle := 0; cycle < cycles; cycle++ {
		cycleCount++
		var mu sync.Mutex
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		// Three idempotent producers, keyed records, acks=all.
		for p := 0; p < 3; p++ {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordRetries(3), kgo.ProducerLinger(time.Millisecond), kgo.RetryTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(p int) {
				defer wg.Done()
				defer cl.Close()
				for i := 0; runCtx.Err() == nil; i++ {
					v := fmt.Sprintf("c%d-p%d-%d", cycle, p, i)
					r := &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i % 16)), Value: []byte(v)}
					cl.Produce(runCtx, r, func(r *kgo.Record, err error) {
						if err == nil {
							mu.Lock()
							acked[string(r.Value)] = ack{r.Partition, r.Offset}
							mu.Unlock()
						}
					})
					if i%64 == 63 {
						time.Sleep(time.Millisecond)
					}
				}
			}(p)
		}
		// A group member that consumes and commits what it read.
		grp, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), kgo.ConsumerGroup("crash-group"), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryTimeout(2*time.Second),
			kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(6*time.Second), kgo.HeartbeatInterval(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				fs := grp.PollFetches(runCtx)
				if len(fs.Records()) == 0 {
					continue
				}
				offsets := map[int32]int64{}
				fs.EachRecord(func(r *kgo.Record) { offsets[r.Partition] = r.Offset + 1 })
				grp.CommitRecords(runCtx, fs.Records()...)
				// CommitRecords is synchronous: on success the commit is acknowledged.
				if runCtx.Err() == nil {
					mu.Lock()
					for p, o := range offsets {
						if o > committed[p] {
							committed[p] = o
						}
					}
					mu.Unlock()
				}
			}
		}()
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		b.kill()
		stop()
		wg.Wait()
		grp.Close()
		b.start(t)

		// Verify against the restarted broker.
		mu.Lock()
		want := make(map[string]ack, len(acked))
		for k, v := range acked {
			want[k] = v
		}
		wantCommits := make(map[int32]int64, len(committed))
		for k, v := range committed {
			wantCommits[k] = v
		}
		mu.Unlock()
		cl := newClient(t, b)
		adm := kadm.NewClient(cl)
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < partitions; p++ {
			o, _ := ends.Lookup(topic, p)
			if o.Offset < hwm[p] {
				t.Fatalf("cycle %d: partition %d high watermark went back from %d to %d", cycle, p, hwm[p], o.Offset)
			}
			hwm[p] = o.Offset
		}
		// Read every partition to its end: acknowledged values at their
		// offsets, nothing twice, offsets contiguous.
		consumer := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		seen := map[string]ack{}
		next := make([]int64, partitions)
		total := int64(0)
		for _, h := range hwm {
			total += h
		}
		for n := int64(0); n < total; {
			fs := consumer.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("cycle %d: consume: %v", cycle, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if r.Offset != next[r.Partition] {
					t.Fatalf("cycle %d: partition %d offset %d, want %d (gap or reorder)", cycle, r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				if prev, dup := seen[string(r.Value)]; dup {
					t.Fatalf("cycle %d: %s duplicated at %d/%d and %d/%d", cycle, r.Value, prev.partition, prev.offset, r.Partition, r.Offset)
				}
				seen[string(r.Value)] = ack{r.Partition, r.Offset}
			})
		}
		consumer.Close()
		lost := 0
		for v, a := range want {
			if got, ok := seen[v]; !ok || got != a {
				lost++
				if lost < 5 {
					t.Errorf("cycle %d: acknowledged %s at %d/%d, found %v (present %v)", cycle, v, a.partition, a.offset, got, ok)
				}
			}
		}
		if lost > 0 {
			t.Fatalf("cycle %d: %d acknowledged records lost or moved", cycle, lost)
		}
		totalAcked = len(want)
		// Committed offsets intact.
		fetched, err := adm.FetchOffsets(ctx, "crash-group")
		if err != nil {
			t.Fatal(err)
		}
		for p, o := range wantCommits {
			got, ok := fetched.Lookup(topic, p)
			if !ok || got.At < o {
				t.Fatalf("cycle %d: partition %d committed offset %d, acknowledged commit was %d", cycle, p, got.At, o)
			}
		}
		cl.Close()
	}
	// The group resumes from its commits without redelivery.
	fetched, err := kadm.NewClient(newClient(t, b)).FetchOffsets(ctx, "crash-group")
	if err != nil {
		t.Fatal(err)
	}
	resume := newClient(t, b, kgo.ConsumerGroup("crash-group"), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(6*time.Second))
	firstSeen := map[int32]int64{}
	deadline := time.Now().Add(20 * time.Second)
	for len(firstSeen) < partitions && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := resume.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := firstSeen[r.Partition]; !ok {
				firstSeen[r.Partition] = r.Offset
			}
		})
		if len(firstSeen) == 0 {
			// Everything committed may already be consumed: produce one
			// more record per partition to see where the group starts.
			for p := int32(0); p < partitions; p++ {
				newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("tail")})
			}
		}
	}
	for p, first := range firstSeen {
		if o, ok := fetched.Lookup(topic, p); ok && first != o.At {
			t.Fatalf("group resumed partition %d at %d, committed offset is %d", p, first, o.At)
		}
	}
	t.Logf("crash cycles: %d, acknowledged records: %d, lost: 0, duplicates: 0, committed partitions checked: %d", cycleCount, totalAcked, len(committed))
}
