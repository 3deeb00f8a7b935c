// Command link-bench measures mirroring from Apache Kafka 4.4 (compat/kafkaref)
// into Gregor: a cluster link (gregor link) beside MirrorMaker 2, on the
// same machine and the same data, one after the other:
//
//	cd bench && go run ./cmd/link-bench -bin ../bin/gregor -mb 512 -targets link,mm2
//
// With -gregor-nodes 3 the target is three clustered Gregor processes
// (embedded etcd, as cmd/cluster-bench starts them; replication factor 3,
// min.insync.replicas 2): each mirror partition is fetched by its
// leader, and its followers replicate it.
//
// Kafka is filled first (-mb of records of -size bytes over -partitions
// partitions), then for each target a fresh Gregor starts and the time is
// taken from starting the mirror (gregor link create; MirrorMaker 2's
// dedicated mode, org.apache.kafka.connect.mirror.MirrorMaker, with the
// classpath of compat/java's connect profile) until Gregor holds every
// record (its end offsets sum to Kafka's). It also measures, for the link,
// the time a promotion takes once caught up. MirrorMaker 2 writes the
// records anew (topic A.bench, new offsets); the link appends Kafka's
// batches at their offsets.
//
// With -live-mbps R, once a target has caught up a producer writes R MB/s
// more into Kafka for -live-for, and the lag is sampled every 50 ms: the
// records Gregor is behind (as MiB) and how long ago Kafka had what Gregor
// has (the mirror's delay, to within a sample).
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	bin := flag.String("bin", "../bin/gregor", "the gregor binary")
	mb := flag.Int("mb", 512, "megabytes of record values to mirror")
	size := flag.Int("size", 1000, "record value size")
	partitions := flag.Int("partitions", 8, "partitions of the topic")
	targets := flag.String("targets", "link,mm2", "link, mm2")
	liveMBps := flag.Float64("live-mbps", 0, "after catching up, MB/s produced into Kafka while the lag is sampled; 0: no live phase")
	liveFor := flag.Duration("live-for", 30*time.Second, "how long the live phase produces")
	nodes := flag.Int("gregor-nodes", 1, "Gregor nodes of the target: 1, or a cluster of N clustered processes (embedded etcd, replication factor min(N, 3), min.insync.replicas min(N, 2))")
	flag.Parse()
	if *nodes < 1 {
		log.Fatal("-gregor-nodes: at least 1")
	}
	log.SetFlags(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	root, err := os.MkdirTemp("", "link-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	kafka, err := kafkaref.Start(ctx, kafkaref.Options{Dir: filepath.Join(root, "kafka"), Heap: "2g"})
	if err != nil {
		log.Fatalf("Apache Kafka: %v", err)
	}
	defer kafka.Stop()
	// Uncompressed, incompressible values: the MiB are the bytes moved.
	src, err := kgo.NewClient(kgo.SeedBrokers(kafka.Addr), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	if _, err := kadm.NewClient(src).CreateTopic(ctx, int32(*partitions), 1, nil, "bench"); err != nil {
		log.Fatal(err)
	}
	n := *mb << 20 / *size
	value := make([]byte, *size)
	rand.Read(value)
	start := time.Now()
	for range n {
		src.Produce(ctx, &kgo.Record{Topic: "bench", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				log.Fatalf("producing to Kafka: %v", err)
			}
		})
	}
	if err := src.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	total := endSum(ctx, src, "bench")
	log.Printf("Kafka %s: %d records of %d bytes (%d MiB) in %d partitions, produced in %v", kafka.Version, total, *size, *mb, *partitions, time.Since(start).Round(time.Millisecond))

	fmt.Printf("| mirror | records | MiB | time to mirror everything | MiB/s | promote |\n|---|---|---|---|---|---|\n")
	var lives []string
	for _, target := range strings.Split(*targets, ",") {
		label := target
		if *nodes > 1 {
			label = fmt.Sprintf("%s, %d Gregor nodes", target, *nodes)
		}
		dir := filepath.Join(root, target)
		addr, stop := startGregor(ctx, *bin, dir, *nodes)
		dst, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.MetadataMinAge(20*time.Millisecond)) // the topic appears while we poll
		if err != nil {
			log.Fatal(err)
		}
		var topic string
		var stopMirror func()
		begin := time.Now()
		switch target {
		case "link":
			topic = "bench"
			// A new cluster may not take the link at once (its metadata
			// store still electing): asked again for 30s.
			for try := 0; ; try++ {
				out, err := exec.CommandContext(ctx, *bin, "link", "create", "bench", "--brokers", addr, "--source", kafka.Addr, "--topics", "bench", "--sync-interval", "1s").CombinedOutput()
				if err == nil {
					break
				}
				if try == 150 {
					log.Fatalf("gregor link create: %v\n%s", err, out)
				}
				time.Sleep(200 * time.Millisecond)
			}
			stopMirror = func() {}
		case "mm2":
			topic = "A.bench"
			stopMirror = startMM2(ctx, dir, kafka.Addr, addr)
		default:
			log.Fatalf("unknown target %s", target)
		}
		for endSum(ctx, dst, topic) < total {
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(begin)
		caughtUp, mib := total, float64(total)*float64(*size)/(1<<20)
		if *liveMBps > 0 {
			lr := live(ctx, src, dst, topic, *liveMBps, *liveFor, *size, value)
			total = lr.sourceEnd
			lives = append(lives, fmt.Sprintf("| %s | %.1f | %.1f / %.1f / %.1f | %v / %v / %v |", label, lr.mbps,
				lr.lagMiB(50), lr.lagMiB(99), lr.lagMiB(100), lr.delay(50), lr.delay(99), lr.delay(100)))
		}
		promote := "-"
		if target == "link" {
			p := time.Now()
			run(ctx, *bin, "link", "promote", "bench", "--brokers", addr)
			promote = time.Since(p).Round(time.Millisecond).String()
		}
		stopMirror()
		fmt.Printf("| %s | %d | %.0f | %v | %.0f | %s |\n", label, caughtUp, mib, took.Round(time.Millisecond), mib/took.Seconds(), promote)
		dst.Close()
		stop()
	}
	if len(lives) > 0 {
		fmt.Printf("\n| mirror (live phase, %v) | MB/s produced into Kafka | lag p50 / p99 / max, MiB | delay p50 / p99 / max |\n|---|---|---|---|\n", *liveFor)
		for _, l := range lives {
			fmt.Println(l)
		}
	}
}

// liveResult is what the live phase saw: the lag samples (records) and
// the mirror's delay per sample.
type liveResult struct {
	mbps      float64 // achieved
	size      int
	sourceEnd int64
	lags      []int64
	delays    []time.Duration
}

func (r liveResult) lagMiB(pct int) float64 {
	return float64(percentile(r.lags, pct)*int64(r.size)) / (1 << 20)
}

func (r liveResult) delay(pct int) time.Duration {
	return percentile(r.delays, pct).Round(time.Millisecond)
}

func percentile[T int64 | time.Duration](xs []T, pct int) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*pct)/100)]
}

// live produces mbps MB/s of records into Kafka's bench topic for d while
// sampling, every 50 ms, Kafka's and Gregor's end offsets (Gregor's topic
// is topic); then it waits for Gregor to catch up again.
func live(ctx context.Context, src, dst *kgo.Client, topic string, mbps float64, d time.Duration, size int, value []byte) liveResult {
	r := liveResult{size: size}
	pctx, stop := context.WithTimeout(ctx, d)
	defer stop()
	var produced atomic.Int64
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		perRecord := float64(size) / 1e6
		for pctx.Err() == nil {
			due := int64(time.Since(start).Seconds() * mbps / perRecord)
			for produced.Load() < due && pctx.Err() == nil {
				produced.Add(1)
				src.Produce(ctx, &kgo.Record{Topic: "bench", Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						log.Fatalf("producing to Kafka: %v", err)
					}
				})
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := src.Flush(ctx); err != nil {
			log.Fatal(err)
		}
	}()
	type sample struct {
		t   time.Time
		end int64
	}
	var srcs []sample
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
sampling:
	for {
		select {
		case <-done:
			break sampling
		case <-tick.C:
		}
		now := time.Now()
		se, me := endSum(ctx, src, "bench"), endSum(ctx, dst, topic)
		srcs = append(srcs, sample{now, se})
		r.lags = append(r.lags, max(se-me, 0))
		// The delay: 0 when Gregor has all Kafka had at this sample, else
		// how long ago Kafka first had at least what Gregor has now.
		if me >= se {
			r.delays = append(r.delays, 0)
			continue
		}
		i, _ := slices.BinarySearchFunc(srcs, me, func(s sample, e int64) int { return cmp.Compare(s.end, e) })
		r.delays = append(r.delays, now.Sub(srcs[i].t))
	}
	r.mbps = float64(produced.Load()) * float64(size) / 1e6 / time.Since(start).Seconds()
	r.sourceEnd = endSum(ctx, src, "bench")
	for endSum(ctx, dst, topic) < r.sourceEnd {
		time.Sleep(20 * time.Millisecond)
	}
	log.Printf("live phase: %.1f MB/s produced for %v, %d lag samples; caught up again", r.mbps, d, len(r.lags))
	return r
}

// endSum is the sum of a topic's end offsets; 0 while it does not exist.
func endSum(ctx context.Context, cl *kgo.Client, topic string) int64 {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			sum += o.Offset
		}
	})
	return sum
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startGregor starts a Gregor of n nodes (n clustered processes, each
// with its embedded etcd member, as cmd/cluster-bench starts them) with
// data under dir and waits until it lists every node; it returns the
// nodes' addresses, comma-separated, and how to stop them.
func startGregor(ctx context.Context, bin, dir string, n int) (string, func()) {
	addrs, peers := make([]string, n), make([]string, n)
	var voters []string
	for i := range n {
		addrs[i], peers[i] = freeAddr(), freeAddr()
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, peers[i]))
	}
	var cmds []*exec.Cmd
	for i := range n {
		args := []string{"--data-dir", dir, "--listen", addrs[i], "--log-level", "warn"}
		if n > 1 {
			args = []string{"--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", i+1)), "--listen", addrs[i], "--log-level", "warn",
				"--set", fmt.Sprintf("node.id=%d", i+1), "--set", "controller.quorum.voters=" + strings.Join(voters, ","),
				"--set", fmt.Sprintf("default.replication.factor=%d", min(n, 3)), "--set", fmt.Sprintf("min.insync.replicas=%d", min(n, 2))}
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	// Metadata sent as is: kadm's BrokerMetadata answers from the client's
	// cached metadata, which franz-go refreshes only every
	// metadata.max.age (5 min) while no topic is in use, so a client that
	// first saw the cluster while its nodes registered kept seeing fewer.
	for began := time.Now(); ; {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Brokers) == n && resp.ControllerID >= 0 {
			break
		}
		if time.Since(began) > time.Minute {
			log.Fatalf("Gregor did not list its %d nodes and a controller in a minute: %+v, %v", n, resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return strings.Join(addrs, ","), func() {
		for _, cmd := range cmds {
			cmd.Process.Signal(os.Interrupt)
		}
		for _, cmd := range cmds {
			cmd.Wait()
		}
	}
}

func run(ctx context.Context, bin string, args ...string) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		log.Fatalf("gregor %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// startMM2 runs MirrorMaker 2 in dedicated mode from Kafka (A) to Gregor
// (B) for the topic bench, with compat/java's connect classpath.
func startMM2(ctx context.Context, dir, kafkaAddr, gregorAddr string) func() {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	cpFile := filepath.Join(dir, "mm2.cp")
	mvn := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", "../compat/java/pom.xml", "-Pconnect", "dependency:build-classpath",
		"-Dmdep.outputFile="+cpFile, "-Dmdep.includeScope=test")
	if out, err := mvn.CombinedOutput(); err != nil {
		log.Fatalf("MirrorMaker 2's classpath: %v\n%s", err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		log.Fatal(err)
	}
	props := filepath.Join(dir, "mm2.properties")
	conf := strings.Join([]string{
		"clusters=A,B",
		"A.bootstrap.servers=" + kafkaAddr,
		"B.bootstrap.servers=" + gregorAddr,
		"A->B.enabled=true",
		"A->B.topics=bench",
		"B->A.enabled=false",
		"replication.factor=1",
		"checkpoints.topic.replication.factor=1",
		"heartbeats.topic.replication.factor=1",
		"offset-syncs.topic.replication.factor=1",
		"offset.storage.replication.factor=1",
		"status.storage.replication.factor=1",
		"config.storage.replication.factor=1",
		"sync.topic.acls.enabled=false",
		"emit.heartbeats.enabled=false",
		"tasks.max=" + "4",
	}, "\n") + "\n"
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		log.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "mm2.log"))
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "java", "-Xmx1g", "-cp", strings.TrimSpace(string(cp)), "org.apache.kafka.connect.mirror.MirrorMaker", props)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	}
}
