// Command cluster-bench measures a three-node Gregor cluster on one
// machine, beside a three-node Apache Kafka 4.4.0 cluster (KRaft, every node
// a combined broker and controller; compat/kafkaref) when java and mvn are
// on the PATH: acks=all produce throughput of a replication factor 3 topic
// beside a replication factor 1 topic on the same cluster, with the three
// brokers' CPU seconds per GB and their RSS after those runs, and failover
// time: from kill -9 of a partition's leader to the first acknowledged
// produce on its new leader, with default settings. The targets take turns
// run by run (Gregor run 1, Kafka run 1, Gregor run 2, ...); both clusters
// stay up throughout.
//
//	make bench-cluster                      # or:
//	cd bench && go run ./cmd/cluster-bench -runs 3 -n 1000000 -failovers 5 [-targets gregor,kafka]
//
// It builds gregor from the working tree, starts the nodes on free loopback
// ports in temporary directories, and kills every process it started (the
// Kafka JVMs by process group) when it ends, fails, runs out of -timeout or
// is interrupted. Results go to standard output as markdown.
package main

import (
	"context"
	crand "crypto/rand"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/bench/internal/procstat"
	"github.com/gregor-broker/gregor/compat/kafkaref"
)

var (
	runs      = flag.Int("runs", 3, "throughput runs per replication factor and target")
	records   = flag.Int("n", 1000000, "records per throughput run")
	size      = flag.Int("size", 100, "record value size in bytes")
	failovers = flag.Int("failovers", 5, "failover measurements per target")
	rolling   = flag.Int("rolling", 0, "also measure this many rolling restarts (SIGTERM, start, full ISR; node by node) under acks=all producers (issue #22; 0: off)")
	scaleN    = flag.Int("scale-partitions", 0, "also measure failover of the broker leading the most of this many RF=3 partitions (issue #22; 0: off)")
	scaleKill = flag.String("scale-kill", "most", "with -scale-partitions, which broker is killed: most (leading the most), quorum-leader (hosting the metadata quorum's leader: etcd's raft leader, Kafka's active controller), not-quorum-leader (leading the most of the others)")
	scaleTP   = flag.Int("scale-topic-partitions", 0, "with -scale-partitions: topics of this many partitions each (0: one topic holding them all)")
	warmup    = flag.Int("warmup", 200000, "records written, untimed, to a RF=3 topic of each cluster before the runs (the JVMs' JIT)")
	targets   = flag.String("targets", "", "comma-separated: gregor, kafka (default both when java and mvn are on the PATH, else gregor)")
	timeout   = flag.Duration("timeout", 25*time.Minute, "bound on the whole run")
)

// cluster is one of the three-node clusters under test.
type cluster interface {
	seeds() []string
	// pids are the brokers' processes (for Kafka the JVMs).
	pids() []int
	// kill sends SIGKILL to the node and waits for it to exit.
	kill(nodeID int32)
	// stop sends SIGTERM to the node and waits for it to exit.
	stop(nodeID int32)
	// restart starts a killed node again and waits until the cluster
	// lists three brokers.
	restart(ctx context.Context, nodeID int32, t *target)
	// sessionTimeout is the configured (default) broker.session.timeout.ms.
	sessionTimeout() time.Duration
}

// target is a cluster, its admin client and its results.
type target struct {
	name  string
	c     cluster
	admin *kadm.Client
	cl    *kgo.Client
	rate  map[int16][]float64 // rec/s by replication factor, one per run
	cpu   map[int16]float64   // broker CPU seconds summed over the runs
	bytes map[int16]float64   // value bytes written over the runs
	rssKB int64               // sum of the brokers' VmRSS after the throughput runs
	fo    []float64           // failover seconds
}

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	time.AfterFunc(*timeout, func() { fatalf("cluster-bench: -timeout %v reached", *timeout) })
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { s := <-sig; fatalf("cluster-bench: %v", s) }()

	names, note := chooseTargets()
	tmp, err := os.MkdirTemp("", "cluster-bench")
	if err != nil {
		log.Fatal(err)
	}
	if os.Getenv("GREGOR_BENCH_KEEP") == "" {
		atExit(func() { os.RemoveAll(tmp) })
	} else {
		log.Printf("keeping %s (GREGOR_BENCH_KEEP)", tmp)
	}
	var ts []*target
	for _, name := range names {
		t := &target{name: name, rate: map[int16][]float64{}, cpu: map[int16]float64{}, bytes: map[int16]float64{}}
		switch name {
		case "Gregor":
			t.c = startGregor(tmp)
		case "Kafka":
			t.c = startKafka(ctx, tmp)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...))
		if err != nil {
			fatalf("%v", err)
		}
		t.admin, t.cl = kadm.NewClient(cl), cl
		waitBrokers(ctx, t, 3)
		ts = append(ts, t)
	}

	fmt.Printf("## A three-node cluster\n\n`cd bench && go run ./cmd/cluster-bench -runs %d -n %d -size %d -failovers %d -warmup %d -rolling %d -scale-partitions %d -scale-topic-partitions %d -targets %s` on %s; %s, the client and (Gregor) etcd on one machine (%d cores), taking turns run by run after %d untimed records to a RF=3 topic of each.%s\n\n",
		*runs, *records, *size, *failovers, *warmup, *rolling, *scaleN, *scaleTP, strings.ToLower(strings.Join(names, ",")), time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		describe(names), numCPU(), *warmup, note)

	for _, t := range ts {
		if *warmup > 0 {
			produce(ctx, t, "warmup", 3, *warmup)
		}
	}

	fmt.Printf("| run |")
	for _, t := range ts {
		fmt.Printf(" %s RF=1 rec/s | %s RF=3 rec/s | %s RF=3 / RF=1 |", t.name, t.name, t.name)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|---|---|", len(ts)))
	for run := 1; run <= *runs; run++ {
		fmt.Printf("| %d |", run)
		for _, t := range ts {
			r1 := produceRun(ctx, t, 1, run)
			r3 := produceRun(ctx, t, 3, run)
			fmt.Printf(" %.0f | %.0f | %.2f |", r1, r3, r3/r1)
		}
		fmt.Println()
	}
	for _, t := range ts {
		for _, p := range t.c.pids() {
			t.rssKB += procstat.RSSKB(p)
		}
	}

	fmt.Printf("\nFailover, kill -9 of the leader of a RF=3 partition (min.insync.replicas=2) under one synchronous acks=all producer → its first acknowledged produce after the kill:\n\n")
	for i := 1; i <= *failovers; i++ {
		var parts []string
		for _, t := range ts {
			d := failover(ctx, t, i)
			t.fo = append(t.fo, d.Seconds())
			parts = append(parts, fmt.Sprintf("%s %.2f s", t.name, d.Seconds()))
		}
		fmt.Printf("- %d: %s\n", i, strings.Join(parts, ", "))
	}
	fmt.Println()
	if *rolling > 0 {
		fmt.Printf("Rolling restart of the three nodes (SIGTERM, start again, every partition's ISR full again, then the next node) under %d acks=all producers, one per partition of a RF=3 topic (min.insync.replicas=2), each sending one record at a time → the longest wait for an acknowledgement:\n\n", rollingPartitions)
		for i := 1; i <= *rolling; i++ {
			var parts []string
			for _, t := range ts {
				parts = append(parts, rollingRestart(ctx, t, i))
			}
			fmt.Printf("- %d: %s\n", i, strings.Join(parts, "; "))
		}
		fmt.Println()
	}
	if *scaleN > 0 {
		fmt.Printf("Failover at scale, %d RF=3 partitions (min.insync.replicas=2): kill -9 of the broker leading the most → Metadata names a live leader for every partition it led / an acks=all produce to each of them is acknowledged:\n\n", *scaleN)
		for _, t := range ts {
			fmt.Printf("- %s\n", scaleFailover(ctx, t, *scaleN))
		}
		fmt.Println()
	}
	summary(ts)
	cleanup()
}

// chooseTargets reads -targets and says when Kafka is left out.
func chooseTargets() (names []string, note string) {
	spec := *targets
	if spec == "" {
		spec = "gregor,kafka"
		if err := kafkaref.Available(); err != nil {
			spec = "gregor"
			note = fmt.Sprintf(" Apache Kafka is left out: %v.", err)
		}
	}
	for _, s := range strings.Split(spec, ",") {
		switch strings.TrimSpace(strings.ToLower(s)) {
		case "gregor":
			names = append(names, "Gregor")
		case "kafka":
			if err := kafkaref.Available(); err != nil {
				log.Fatalf("-targets kafka: %v", err)
			}
			names = append(names, "Kafka")
		default:
			log.Fatalf("-targets: unknown target %q (gregor, kafka)", s)
		}
	}
	if len(names) == 0 {
		log.Fatal("-targets: none")
	}
	return names, note
}

func describe(names []string) string {
	var d []string
	for _, n := range names {
		switch n {
		case "Gregor":
			d = append(d, "three gregor processes")
		case "Kafka":
			v, _ := kafkaref.Version()
			d = append(d, fmt.Sprintf("three Apache Kafka %s JVMs (KRaft, combined broker+controller, -Xmx%s with kafka-server-start.sh's G1 flags, %s)", v, kafkaHeap, kafkaref.JavaVersion()))
		}
	}
	return strings.Join(d, " beside ")
}

// summary prints one row per measure, a column per target and, with both,
// their ratio.
func summary(ts []*target) {
	type row struct {
		name string
		f    string
		v    func(*target) float64
	}
	gb := func(t *target, rf int16) float64 {
		if t.bytes[rf] == 0 {
			return 0
		}
		return t.cpu[rf] / (t.bytes[rf] / 1e9)
	}
	rows := []row{
		{"RF=1 acks=all rec/s, median", "%.0f", func(t *target) float64 { return median(t.rate[1]) }},
		{"RF=3 acks=all rec/s, median", "%.0f", func(t *target) float64 { return median(t.rate[3]) }},
		{"RF=3 / RF=1", "%.2f", func(t *target) float64 { return median(t.rate[3]) / median(t.rate[1]) }},
		{"broker CPU s per GB of values, RF=1 (3 processes)", "%.1f", func(t *target) float64 { return gb(t, 1) }},
		{"broker CPU s per GB of values, RF=3 (3 processes)", "%.1f", func(t *target) float64 { return gb(t, 3) }},
		{"RSS of the 3 brokers after the throughput runs, MiB", "%.0f", func(t *target) float64 { return float64(t.rssKB) / 1024 }},
		{"failover, median s", "%.2f", func(t *target) float64 { return median(t.fo) }},
		{"failover, max s", "%.2f", func(t *target) float64 { return slices.Max(t.fo) }},
		{"broker.session.timeout.ms (default)", "%.0f", func(t *target) float64 { return float64(t.c.sessionTimeout().Milliseconds()) }},
	}
	if *failovers == 0 {
		rows = slices.DeleteFunc(rows, func(r row) bool { return strings.HasPrefix(r.name, "failover") })
	}
	fmt.Printf("| |")
	for _, t := range ts {
		fmt.Printf(" %s |", t.name)
	}
	ratio := len(ts) == 2
	if ratio {
		fmt.Printf(" %s/%s |", ts[0].name, ts[1].name)
	}
	fmt.Printf("\n|---|%s", strings.Repeat("---|", len(ts)))
	if ratio {
		fmt.Printf("---|")
	}
	fmt.Println()
	for _, r := range rows {
		fmt.Printf("| %s |", r.name)
		for _, t := range ts {
			fmt.Printf(" "+r.f+" |", r.v(t))
		}
		if ratio {
			fmt.Printf(" %.2f |", r.v(ts[0])/r.v(ts[1]))
		}
		fmt.Println()
	}
	fmt.Printf("\nCPU is utime+stime of the three broker processes (for Kafka the JVMs) from /proc over each produce run, summed over the runs and divided by the value bytes written (records × size); with RF=3 it includes the followers' replication. Each cluster's failover follows from its configured default broker.session.timeout.ms (Gregor 3 s, Kafka 9 s), not from a common setting.\n")
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	switch {
	case len(s) == 0:
		return 0
	case len(s)%2 == 0:
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// waitBrokers waits until the cluster lists n brokers. It sends Metadata
// itself: kadm's BrokerMetadata answers from the client's cached metadata,
// which franz-go refreshes only every metadata.max.age (5 min) when no
// topic is in use, so a client that first saw a cluster while its
// brokers were still registering kept seeing 2 of 3 for minutes.
func waitBrokers(ctx context.Context, t *target, n int) {
	for ctx.Err() == nil {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		resp, err := req.RequestWith(ctx, t.cl)
		if err == nil && len(resp.Brokers) == n {
			return
		}
		if os.Getenv("GREGOR_BENCH_DEBUG") != "" && err == nil {
			log.Printf("waitBrokers: %d brokers", len(resp.Brokers))
		}
		time.Sleep(100 * time.Millisecond)
	}
	fatalf("%s: the cluster did not list %d brokers: %v", t.name, n, ctx.Err())
}

func createTopic(ctx context.Context, t *target, name string, rf int16) {
	minISR := strconv.Itoa(int(min(rf, 2)))
	resp, err := t.admin.CreateTopic(ctx, 1, rf, map[string]*string{"min.insync.replicas": &minISR}, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		fatalf("%s: create %s: %v", t.name, name, err)
	}
	for ctx.Err() == nil {
		md, err := metadataNow(ctx, t.cl, []string{name})
		if err == nil {
			if p, ok := md[name][0]; ok && p.Leader >= 0 && len(p.ISR) == int(rf) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	fatalf("%s: %s has no leader with a full ISR: %v", t.name, name, ctx.Err())
}

// produceRun writes *records records to a new topic, records the rate and
// the brokers' CPU time, and returns records per second.
func produceRun(ctx context.Context, t *target, rf int16, run int) float64 {
	topic := fmt.Sprintf("bench-rf%d-%d", rf, run)
	pids := t.c.pids()
	var cpu0 float64
	d := produce(ctx, t, topic, rf, *records, func() { cpu0 = sumCPU(pids) })
	rate := float64(*records) / d.Seconds()
	t.cpu[rf] += sumCPU(pids) - cpu0
	t.bytes[rf] += float64(*records) * float64(*size)
	t.rate[rf] = append(t.rate[rf], rate)
	return rate
}

// produce creates topic and writes n records of *size random bytes to it
// with an idempotent acks=all producer; it returns the time from the first
// Produce to the end of Flush, calling the before functions first.
func produce(ctx context.Context, t *target, topic string, rf int16, n int, before ...func()) time.Duration {
	createTopic(ctx, t, topic, rf)
	vals := make([][]byte, 4096)
	for i := range vals {
		vals[i] = make([]byte, *size)
		crand.Read(vals[i])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		fatalf("%v", err)
	}
	defer cl.Close()
	var errOnce sync.Once
	for _, f := range before {
		f()
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: vals[i%len(vals)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { log.Printf("%s: produce: %v", t.name, err) })
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		fatalf("%s: flush: %v", t.name, err)
	}
	return time.Since(start)
}

// failover kills the leader of a fresh RF=3 partition while a producer
// writes to it and returns the time from the kill to the first
// acknowledgement of a produce sent after it; then it restarts the node and
// waits for the partition's ISR to be full again.
func failover(ctx context.Context, t *target, i int) time.Duration {
	topic := fmt.Sprintf("failover-%d", i)
	createTopic(ctx, t, topic, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		fatalf("%v", err)
	}
	defer cl.Close()
	for j := 0; j < 100; j++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			fatalf("%s: warm-up: %v", t.name, err)
		}
	}
	// The leader as the cluster has it now (a cached answer could name
	// the previous one, and the kill would miss it).
	md, err := metadataNow(ctx, t.cl, []string{topic})
	p0, ok := md[topic][0]
	if err != nil || !ok || p0.Leader < 0 {
		fatalf("%s: %s has no leader: %v", t.name, topic, err)
	}
	leader := p0.Leader
	t.c.kill(leader)
	killed := time.Now()
	var d time.Duration
	for ctx.Err() == nil {
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err == nil && sent.After(killed) {
			d = time.Since(killed)
			break
		}
	}
	t.c.restart(ctx, leader, t)
	// Back to a full ISR before the next measurement.
	for ctx.Err() == nil {
		md, err := metadataNow(ctx, t.cl, []string{topic})
		if p, ok := md[topic][0]; err == nil && ok && len(p.ISR) == 3 {
			return d
		}
		time.Sleep(100 * time.Millisecond)
	}
	fatalf("%s: %s: no full ISR after the restart: %v", t.name, topic, ctx.Err())
	return d
}

// rollingPartitions is the partition count of a rolling restart's topic.
const rollingPartitions = 6

// rollingRestart restarts the nodes one by one (SIGTERM, start, wait until
// every partition of the topic has a full ISR) while one synchronous
// acks=all producer per partition writes to it, and reports the longest
// time one of them waited for an acknowledgement, how many records were
// acknowledged and how long the rolling restart took. Kafka's and
// Gregor's controlled shutdowns both move the leadership of the stopping
// broker's partitions to in-sync followers first.
func rollingRestart(ctx context.Context, t *target, i int) string {
	topic := fmt.Sprintf("rolling-%d", i)
	minISR := "2"
	resp, err := t.admin.CreateTopic(ctx, rollingPartitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		fatalf("%s: create %s: %v", t.name, topic, err)
	}
	// fullISR asks every broker itself: kgo answers a Metadata request
	// made with Client.Request from its cache for up to its metadata
	// min age (5 s), which still names the ISR before a stop.
	fullISR := func() bool {
		for id := int32(1); id <= 3; id++ {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, t.cl.Broker(int(id)))
			if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != rollingPartitions {
				return false
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != 3 {
					return false
				}
			}
		}
		return true
	}
	for ctx.Err() == nil && !fullISR() {
		time.Sleep(50 * time.Millisecond)
	}
	pctx, stopProducers := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		longest time.Duration
		acked   int
		failed  int
		wg      sync.WaitGroup
	)
	for p := range int32(rollingPartitions) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			fatalf("%v", err)
		}
		wg.Go(func() {
			defer cl.Close()
			for pctx.Err() == nil {
				sent := time.Now()
				err := cl.ProduceSync(pctx, &kgo.Record{Partition: p, Value: []byte("rolling")}).FirstErr()
				took := time.Since(sent)
				mu.Lock()
				switch {
				case err == nil:
					acked++
					longest = max(longest, took)
				case pctx.Err() == nil:
					failed++
					longest = max(longest, took)
				default: // still waiting when the restarts were over
					longest = max(longest, took)
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second) // the producers under way before the first stop
	start := time.Now()
	for id := int32(1); id <= 3; id++ {
		t.c.stop(id)
		t.c.restart(ctx, id, t)
		for ctx.Err() == nil && !fullISR() {
			time.Sleep(50 * time.Millisecond)
		}
	}
	took := time.Since(start)
	stopProducers()
	wg.Wait()
	return fmt.Sprintf("%s longest wait %.2f s, %d records acknowledged, %d failed, restart of the three %.1f s", t.name, longest.Seconds(), acked, failed, took.Seconds())
}

// describeQuorumLeader is the node that leads the metadata quorum, as
// DescribeQuorum answers it: etcd's raft leader on Gregor, the active
// controller on Kafka; -1 when it cannot be told.
func describeQuorumLeader(ctx context.Context, t *target) int32 {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, t.cl)
	if err != nil || len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		log.Printf("%s: DescribeQuorum: %v", t.name, err)
		return -1
	}
	return resp.Topics[0].Partitions[0].LeaderID
}
