package compat

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Jepsen at scale: run parameters.
const (
	jepsenScaleProducers   = 2
	jepsenScaleTick        = 10 * time.Millisecond  // each producer writes a burst this often
	jepsenScaleHWEvery     = 500 * time.Millisecond // monitors' poll per node
	jepsenScaleFailover    = 90 * time.Second       // kill to every partition led and written again
	jepsenScaleRecovery    = 3 * time.Minute        // restart to full ISR on every partition
	jepsenScaleDelivery    = 60 * time.Second       // a record's delivery timeout
	jepsenScaleRoundTime   = 10 * time.Second       // a round-robin pass over every partition, at most
	jepsenScaleMaxRate     = 4000                   // records a second, all producers
	jepsenScaleMinRate     = 200                    // records a second, all producers
	jepsenScaleMaxBuffer   = 200_000                // records a producer may buffer (a third of the partitions leaderless)
	jepsenScaleMetadataAge = 250 * time.Millisecond // producers' MetadataMinAge
)

// TestClusterJepsenScale is Jepsen at issue #22's scale: three gregor
// processes, one topic of GREGOR_JEPSEN_SCALE_PARTITIONS RF=3 partitions
// (default 1,000, as make test runs it; make jepsen-scale 3,000;
// min.insync.replicas=2), idempotent acks=all producers
// writing round-robin to every partition (each gets a record at least every
// jepsenScaleRoundTime throughout), a consumer reading everything, and per
// node a high-watermark monitor (ListOffsets of every partition) and a
// leader monitor (Metadata). The nemesis, GREGOR_JEPSEN_SCALE_CYCLES times
// (default 1; make jepsen-scale runs 5): waits until every partition has
// had a write acknowledged since the last recovery, kill -9s the broker
// leading the most partitions (about a third), times how long until
// Metadata names a live new leader for every one of them ("led again") and
// until a new leader acknowledged a write to every one ("writable"),
// restarts it, waits for a full ISR on every partition and moves leadership
// back with a preferred election of every partition (so that the next kill
// again strikes a leader of a third, and a thousand leaders move between
// live brokers at once, the other way two leaders could arise). Every wait is
// bounded: a partition never led or written again is a failure (a hang),
// not a slow run. Then every partition is read from the start and
// jepsenCheck checks the history: every acknowledged record exactly once at
// its offset, nothing lost, duplicated or regressed (high watermarks never
// back), and never two leaders (per partition and leaderEpoch one broker,
// by ListOffsets and every node's Metadata). The failover figures are
// logged per cycle and in the summary. Producers' records buffered for the
// killed leader may fail (the harness's proxy accepts and closes at once,
// which franz-go does not retry); they count as produce errors, not acks.
//
// GREGOR_JEPSEN_SCALE_RATE sets the records a second of all producers
// (default: a pass over every partition every two seconds, within
// jepsenScaleMinRate..jepsenScaleMaxRate). GREGOR_JEPSEN_SEED fixes the
// random moments of the kills; GREGOR_CLUSTER_LOGDIR keeps the logs.
func TestClusterJepsenScale(t *testing.T) {
	parts := envInt("GREGOR_JEPSEN_SCALE_PARTITIONS", 1000)
	cycles := envInt("GREGOR_JEPSEN_SCALE_CYCLES", 1)
	rate := envInt("GREGOR_JEPSEN_SCALE_RATE", min(max(parts/2, jepsenScaleMinRate), jepsenScaleMaxRate))
	if time.Duration(parts)*time.Second/time.Duration(rate) > jepsenScaleRoundTime {
		t.Fatalf("GREGOR_JEPSEN_SCALE_RATE=%d: a pass over %d partitions would take over %v", rate, parts, jepsenScaleRoundTime)
	}
	seed := uint64(envInt("GREGOR_JEPSEN_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("jepsen-scale: %d partitions, %d cycles, %d records/s, seed %d (GREGOR_JEPSEN_SEED)", parts, cycles, rate, seed)

	c := startCluster(t, 3)
	r := &jepsenRun{t: t, c: c, topic: topicName(t, ""), parts: int32(parts), rf: 3, rng: rand.New(rand.NewPCG(seed, 22)), seed: seed}
	r.h.Start = time.Now()
	r.h.Attempted = map[string]bool{}
	r.lastWritten = make([]jWritten, parts)
	ctx := testCtx(t, 10*time.Minute+time.Duration(cycles)*5*time.Minute)

	created := time.Now()
	minISR := "2"
	if resp, err := c.Admin().CreateTopic(ctx, int32(parts), 3, map[string]*string{"min.insync.replicas": &minISR}, r.topic); err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic %s, %d partitions RF=3: %v %v (%s)", r.topic, parts, err, resp.Err, resp.ErrMessage)
	}
	r.waitScaleRecovered("creation")
	t.Logf("created %d partitions, every one led with a full ISR, in %v", parts, time.Since(created).Round(time.Millisecond))

	work, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWork(); wg.Wait() }()
	for i := 0; i < jepsenScaleProducers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.scaleProduce(work, i, rate/jepsenScaleProducers) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.consume(work, r.topic, kgo.ReadUncommitted(), &r.h.Reads) }()
	for _, nd := range c.Nodes() {
		wg.Add(2)
		go func() { defer wg.Done(); r.monitor(work, nd, jepsenScaleHWEvery) }()
		go func() { defer wg.Done(); r.leaderMonitor(work, nd, jepsenScaleHWEvery) }()
	}

	since := time.Now()
	var figures []string
	for cycle := 0; cycle < cycles; cycle++ {
		r.waitAllWritten(fmt.Sprintf("before cycle %d", cycle), since, -1)
		time.Sleep(time.Duration(r.rng.IntN(1500)) * time.Millisecond) // strike at a random moment
		figures = append(figures, r.killBusiestLeader(cycle))
		since = time.Now()
	}
	r.waitAllWritten("after the last cycle", since, -1)
	stopWork()
	wg.Wait()

	r.finalRead(ctx)
	r.mu.Lock()
	h := r.h
	errs := r.produceErrs
	r.mu.Unlock()
	res := jepsenCheck(h, jepsenGapThreshold)
	t.Logf("%s(produce errors: %d, HW observations kept: %d, Metadata leaders: %d, batches acknowledged: %d)",
		res.Summary(), errs, len(h.HWs), len(h.Leaders), len(h.Written))
	for _, f := range figures {
		t.Logf("failover: %s", f)
	}
	if !res.OK() {
		t.Fatalf("jepsen-scale: %d properties broken (seed %d); see the VIOLATION lines above", len(res.Violations), seed)
	}
	if res.Acked == 0 || res.LeaderEpochs < parts {
		t.Fatalf("jepsen-scale: %d records acknowledged, leaders observed for %d partition epochs of %d partitions", res.Acked, res.LeaderEpochs, parts)
	}
	missing := 0
	for _, f := range res.Failovers {
		if !f.Found {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("jepsen-scale: %d partitions of killed leaders never had a write acknowledged afterwards", missing)
	}
}

// scaleProduce writes unique values round-robin over every partition with an
// idempotent acks=all client, rate records a second, until ctx ends,
// recording every attempt and acknowledgement. Producer id starts at its
// own share of the partitions, so the producers cover them all together.
func (r *jepsenRun) scaleProduce(ctx context.Context, id, rate int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.c.Seeds()...), kgo.DefaultProduceTopic(r.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RecordDeliveryTimeout(jepsenScaleDelivery),
		kgo.RetryTimeout(jepsenScaleDelivery), kgo.MaxBufferedRecords(jepsenScaleMaxBuffer), kgo.WithHooks(r),
		// A partition's NOT_LEADER or a dead connection asks for metadata at
		// once and retries soon, as the Java client does (retry.backoff.ms
		// 100, retry.backoff.max.ms 1000); with franz-go's defaults (5 s
		// between metadata loads, backoff up to 2.5 s) the client, not the
		// cluster, would set "writable".
		kgo.MetadataMinAge(jepsenScaleMetadataAge),
		kgo.RetryBackoffFn(func(tries int) time.Duration {
			return min(100*time.Millisecond<<min(max(tries-1, 0), 4), time.Second)
		}))
	if err != nil {
		r.t.Error(err)
		return
	}
	defer cl.Close()
	per := max(1, rate*int(jepsenScaleTick)/int(time.Second))
	next := id * int(r.parts) / jepsenScaleProducers
	tick := time.NewTicker(jepsenScaleTick)
	defer tick.Stop()
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range per {
			v := fmt.Sprintf("s%d-%d", id, i)
			i++
			p := int32(next % int(r.parts))
			next++
			r.mu.Lock()
			r.h.Attempted[v] = true
			r.mu.Unlock()
			cl.Produce(ctx, &kgo.Record{Partition: p, Value: []byte(v)}, func(rec *kgo.Record, err error) {
				now := time.Now()
				r.mu.Lock()
				defer r.mu.Unlock()
				if err != nil {
					r.produceErrs++
					if r.produceErrs <= 5 {
						r.t.Logf("produce %q to partition %d: %v", rec.Value, rec.Partition, err)
					}
					return
				}
				r.h.Acks = append(r.h.Acks, jAck{Partition: rec.Partition, Offset: rec.Offset, Value: string(rec.Value), At: now})
			})
		}
	}
}

// waitAllWritten waits until every partition (or, with led, the partitions
// led holds) has had a batch acknowledged after since, by a broker other
// than notBy (-1: any); a partition without one within
// jepsenScaleFailover is a failure.
func (r *jepsenRun) waitAllWritten(when string, since time.Time, notBy int32, led ...int32) {
	r.t.Helper()
	if led == nil {
		for p := int32(0); p < r.parts; p++ {
			led = append(led, p)
		}
	}
	err := waitUntil(jepsenScaleFailover, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		var waiting []int32
		for _, p := range led {
			if w := r.lastWritten[p]; !w.At.After(since) || w.Node == notBy {
				waiting = append(waiting, p)
			}
		}
		if len(waiting) > 0 {
			return fmt.Errorf("%d partitions without a write acknowledged since (first %v)", len(waiting), waiting[:min(len(waiting), 10)])
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("%s: not every partition writable within %v: %v", when, jepsenScaleFailover, err)
	}
}

// killBusiestLeader kill -9s the broker leading the most partitions, times
// how long until Metadata names a live new leader for every partition it
// led and until a new leader acknowledged a write to each, restarts it and
// waits for a full ISR everywhere; it returns the figures.
func (r *jepsenRun) killBusiestLeader(cycle int) string {
	r.t.Helper()
	leaders, err := r.c.Leaders(r.topic)
	if err != nil {
		r.t.Fatalf("metadata: %v", err)
	}
	byNode := map[int32][]int32{}
	for p, l := range leaders {
		byNode[l] = append(byNode[l], p)
	}
	var busiest []int32 // the brokers leading the most, one chosen at random
	for _, n := range sortedKeys(byNode) {
		switch {
		case n < 0:
		case len(busiest) == 0 || len(byNode[n]) > len(byNode[busiest[0]]):
			busiest = []int32{n}
		case len(byNode[n]) == len(byNode[busiest[0]]):
			busiest = append(busiest, n)
		}
	}
	if len(busiest) == 0 {
		r.t.Fatalf("cycle %d: no partition has a leader: %v", cycle, leaders)
	}
	victim := busiest[r.rng.IntN(len(busiest))]
	led := byNode[victim]
	slices.Sort(led)
	nd := r.c.Node(victim)
	killed := time.Now()
	nd.Kill()
	r.mu.Lock()
	r.h.Kills = append(r.h.Kills, jKill{At: killed, Node: victim, Partitions: led, Label: "busiest leader"})
	r.mu.Unlock()
	r.t.Logf("nemesis: cycle %d: kill -9 node %d, leader of %d of %d partitions", cycle, victim, len(led), r.parts)

	// Led again: a Metadata answer that names a live leader other than the
	// victim for every partition it led.
	var ledAgain time.Duration
	err = waitUntil(jepsenScaleFailover, func() error {
		md, err := r.c.Metadata(r.topic)
		if err != nil {
			return err
		}
		live := map[int32]bool{}
		for _, b := range md.Brokers {
			live[b.NodeID] = b.NodeID != victim
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(r.parts) {
			return fmt.Errorf("metadata: %d topics", len(md.Topics))
		}
		mine := map[int32]bool{}
		for _, p := range led {
			mine[p] = true
		}
		waiting := 0
		for _, p := range md.Topics[0].Partitions {
			if mine[p.Partition] && !live[p.Leader] {
				waiting++
			}
		}
		if waiting > 0 {
			return fmt.Errorf("%d of the %d partitions node %d led have no live leader", waiting, len(led), victim)
		}
		ledAgain = time.Since(killed)
		return nil
	})
	if err != nil {
		r.t.Fatalf("cycle %d: not every partition led again within %v of killing node %d: %v", cycle, jepsenScaleFailover, victim, err)
	}
	r.waitAllWritten(fmt.Sprintf("cycle %d, after killing node %d", cycle, victim), killed, victim, led...)
	// Writable: the first batch a new leader acknowledged, per partition.
	r.mu.Lock()
	h := jHistory{Written: slices.Clone(r.h.Written), Kills: r.h.Kills[len(r.h.Kills)-1:]}
	r.mu.Unlock()
	var writable time.Duration
	var ds []time.Duration
	for _, f := range failovers(h) {
		ds = append(ds, f.D)
		writable = max(writable, f.D)
	}
	r.t.Logf("nemesis: cycle %d: node %d's %d partitions led again after %.2fs, every one written by its new leader after %.2fs (first write per partition: %s)",
		cycle, victim, len(led), ledAgain.Seconds(), writable.Seconds(), quantiles(ds))

	restarted := time.Now()
	nd.Restart()
	r.waitScaleRecovered(fmt.Sprintf("cycle %d", cycle))
	isr := time.Since(restarted)
	r.t.Logf("nemesis: cycle %d: node %d restarted; full ISR on every partition %.2fs after the restart", cycle, victim, isr.Seconds())
	moved, back := r.electPreferred(cycle)
	return fmt.Sprintf("cycle %d: kill -9 of node %d, leader of %d of %d partitions: led again after %.2fs, every one writable after %.2fs; full ISR %.2fs after its restart; preferred election moved %d back in %.2fs",
		cycle, victim, len(led), r.parts, ledAgain.Seconds(), writable.Seconds(), isr.Seconds(), moved, back.Seconds())
}

// electPreferred asks for a preferred leader election of every partition
// (the restarted broker takes back the third it led, so that the next kill
// again strikes a leader of about a third, and leadership moves between
// live brokers, a clean handover, en masse) and waits until Metadata names
// every partition's first replica its leader, with a full ISR. It returns
// how many partitions moved and how long that took.
func (r *jepsenRun) electPreferred(cycle int) (int, time.Duration) {
	r.t.Helper()
	start := time.Now()
	all := kadm.TopicsSet{}
	for p := int32(0); p < r.parts; p++ {
		all.Add(r.topic, p)
	}
	res, err := r.c.Admin().ElectLeaders(context.Background(), kadm.ElectPreferredReplica, all)
	if err != nil {
		r.t.Fatalf("cycle %d: ElectLeaders: %v", cycle, err)
	}
	if len(res[r.topic]) != int(r.parts) {
		r.t.Fatalf("cycle %d: ElectLeaders answered for %d of %d partitions", cycle, len(res[r.topic]), r.parts)
	}
	moved := 0
	for _, pr := range res[r.topic] {
		switch {
		case pr.Err == nil:
			moved++
		case errors.Is(pr.Err, kerr.ElectionNotNeeded):
		default:
			r.t.Fatalf("cycle %d: ElectLeaders: partition %d: %v (%s)", cycle, pr.Partition, pr.Err, pr.ErrMessage)
		}
	}
	err = waitUntil(jepsenScaleRecovery, func() error {
		md, err := r.c.Metadata(r.topic)
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(r.parts) {
			return fmt.Errorf("metadata: %d topics", len(md.Topics))
		}
		off := 0
		for _, p := range md.Topics[0].Partitions {
			if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] || len(p.ISR) != r.rf {
				off++
			}
		}
		if off > 0 {
			return fmt.Errorf("%d partitions not led by their preferred replica with a full ISR", off)
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("cycle %d: preferred election of %d partitions not done within %v: %v", cycle, moved, jepsenScaleRecovery, err)
	}
	d := time.Since(start)
	r.t.Logf("nemesis: cycle %d: preferred election: %d partitions moved back to their first replica in %.2fs", cycle, moved, d.Seconds())
	return moved, d
}

// waitScaleRecovered is waitRecovered bounded by jepsenScaleRecovery: every
// node answers, Metadata lists the three brokers, and every partition has a
// live leader and a full ISR.
func (r *jepsenRun) waitScaleRecovered(when string) {
	r.t.Helper()
	r.c.WaitAPIVersions()
	r.c.WaitBrokers(len(r.c.Nodes()))
	err := waitUntil(jepsenScaleRecovery, func() error {
		md, err := r.c.Metadata(r.topic)
		if err != nil {
			return err
		}
		live := map[int32]bool{}
		for _, b := range md.Brokers {
			live[b.NodeID] = true
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(r.parts) {
			return fmt.Errorf("metadata: %d topics", len(md.Topics))
		}
		short := 0
		var first string
		for _, p := range md.Topics[0].Partitions {
			if p.ErrorCode != 0 || !live[p.Leader] || len(p.ISR) != r.rf {
				if short == 0 {
					first = fmt.Sprintf("partition %d: error %d, leader %d, ISR %v", p.Partition, p.ErrorCode, p.Leader, p.ISR)
				}
				short++
			}
		}
		if short > 0 {
			return fmt.Errorf("%d partitions without a live leader and a full ISR, first %s", short, first)
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("%s: cluster not recovered within %v: %v", when, jepsenScaleRecovery, err)
	}
}
