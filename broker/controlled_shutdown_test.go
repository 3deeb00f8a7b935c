package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCluster_ControlledShutdownMovesLeadership: a broker of three leading
// a third of 6 RF=3 partitions (min.insync.replicas 2) is stopped the way
// SIGTERM stops it, ControlledShutdown then Close, while acks=all producers
// write to every partition. ControlledShutdown returns once no partition is
// led there, well before broker.session.timeout.ms would have moved them,
// it is out of every ISR (the leaders do not take it back while it still
// fetches, KIP-841), no produce fails, the producers (franz-go's defaults)
// find the new leaders without a Metadata request, and every acknowledged
// record is read back once.
func TestCluster_ControlledShutdownMovesLeadership(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, stop := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{"replica.fetch.wait.max.ms": "100"}
	})
	const topic, parts = "controlled", 6
	victim := createReplicatedTopic(t, brokers[0], addrs[0], topic, parts)
	other := addrs[victim%3]
	// franz-go's defaults: it refreshes metadata at most every 5 s
	// (MetadataMinAge), so a producer that needed a refresh to find the
	// new leaders would wait that long; it must not need one (below).
	var metadataReqs atomic.Int64
	prod := newClient(t, other, kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.WithHooks(metadataCounter{&metadataReqs}))

	ctx := testCtx(t)
	var (
		mu       sync.Mutex
		acked    = map[int32][]string{}
		firstErr error
		stopProd atomic.Bool
		wg       sync.WaitGroup
		slowest  time.Duration // the longest acks=all produce, for the log
	)
	for p := range int32(parts) {
		wg.Add(1)
		go func() { // one synchronous producer per partition
			defer wg.Done()
			for i := 0; !stopProd.Load(); i++ {
				v := fmt.Sprintf("%d-%05d", p, i)
				sent := time.Now()
				err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr()
				mu.Lock()
				slowest = max(slowest, time.Since(sent))
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", v, err)
				} else if err == nil {
					acked[p] = append(acked[p], v)
				}
				mu.Unlock()
			}
		}()
	}
	waitFor(t, 10*time.Second, "records acknowledged on every partition", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) == parts
	})
	vb := brokers[victim-1]
	metadataBefore := metadataReqs.Load()
	start := time.Now()
	if err := vb.ControlledShutdown(context.Background()); err != nil {
		t.Fatalf("ControlledShutdown: %v", err)
	}
	took := time.Since(start)
	md := topicPartitionsOf(vb, topic)
	for _, p := range md {
		if p.Leader == victim || slices.Contains(p.ISR, victim) {
			t.Fatalf("after ControlledShutdown partition %d: leader %d, ISR %v", p.Index, p.Leader, p.ISR)
		}
	}
	stop[victim-1]()
	mu.Lock()
	before := 0
	for _, vs := range acked {
		before += len(vs)
	}
	mu.Unlock()
	waitFor(t, 10*time.Second, "more records acknowledged after the stop", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, vs := range acked {
			n += len(vs)
		}
		return n > before+parts
	})
	stopProd.Store(true)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	// Every producer learnt its partition's new leader from an answer
	// (NOT_LEADER_OR_FOLLOWER with KIP-951's leader and endpoint): from
	// the stopping broker while it drained, and the new leader, a moment
	// behind in its metadata, waited for its election instead of sending
	// the producer back with a stale hint.
	if n := metadataReqs.Load() - metadataBefore; n != 0 {
		t.Errorf("the producers sent %d Metadata requests during the controlled shutdown; want 0", n)
	}
	for p := range int32(parts) {
		cons := newClient(t, other, kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
		var got []string
		for len(got) < len(acked[p]) {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("partition %d after %d of %d records: %v", p, len(got), len(acked[p]), err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if !slices.Equal(got, acked[p]) {
			t.Fatalf("partition %d: read %d records, acknowledged %d", p, len(got), len(acked[p]))
		}
	}
	t.Logf("broker %d handed off its partitions in %v; the longest acks=all produce took %v", victim, took.Round(time.Millisecond), slowest.Round(time.Millisecond))
}

// metadataCounter counts the Metadata requests a client writes.
type metadataCounter struct{ n *atomic.Int64 }

func (c metadataCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == int16(kmsg.Metadata) {
		c.n.Add(1)
	}
}

// TestCluster_ControlledShutdownAllAtOnce: every broker of a cluster
// stopped at once (make cluster's Ctrl-C, the compat harness's SIGTERM to
// all): each finds nobody left to take its partitions and returns well
// within the harness's 15 s between SIGTERM and SIGKILL, not after
// controlled.shutdown.timeout.ms.
func TestCluster_ControlledShutdownAllAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, stop := startEtcdBrokers(t, 3, nil)
	createReplicatedTopic(t, brokers[0], addrs[0], "all-at-once", 6)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.ControlledShutdown(ctx)
			stop[i]()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("broker %d: %v", i+1, err)
		}
	}
}
