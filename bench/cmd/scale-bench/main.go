// Command scale-bench measures one broker at many partitions (issue #22):
// Gregor beside Apache Kafka 4.4.0 (compat/kafkaref: KRaft, one JVM that is
// both broker and controller), one after the other on the same machine.
//
//	make bench-scale                 # or:
//	cd bench && go run ./cmd/scale-bench -bin /tmp/gregor [-partitions 10000] [-conns 4000] [-targets gregor,kafka] [-out FILE]
//
// For each target it starts a fresh broker and measures, with its own
// protocol client (no client library's batching or retries in the
// figures):
//
//   - creating -partitions partitions, -partitions/10 topics of 10 at
//     replication factor 1, in CreateTopics requests of 100 topics sent one
//     after another, timed in thirds: 0 → N/10, → N/2, → N partitions (a part
//     is done when every answer is back without error);
//   - then every partition writable: an acks=1 Produce of one record to
//     every partition (all partitions of 100 topics per request, -inflight
//     requests in flight on as many connections), repeated for the
//     partitions that failed until all have succeeded;
//   - the broker's RSS, its open files and its idle CPU over -idle
//     (utime+stime from /proc);
//   - the median of 5 Metadata requests for all topics;
//   - RSS per idle connection: -conns connections each answered one
//     ApiVersions and left open -conn-settle, (RSS after − RSS before) /
//     -conns;
//   - a clean stop, SIGTERM to exit, and a restart: process start → the first
//     ApiVersions answer (a new connection every 2 ms) and → every partition
//     writable (the probe above);
//   - one more record to every partition, kill -9 and a restart, timed the
//     same way.
//
// -v logs every round of the writable probe. It prints a markdown table
// (and writes it to -out), with the command line and the machine above it.
// Every process it starts is killed when it ends, fails, runs out of
// -timeout or is interrupted, and its temporary directory (data and logs)
// is removed unless -keep.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/bench/internal/procstat"
	"github.com/gregor-broker/gregor/compat/kafkaref"
)

var (
	bin         = flag.String("bin", "", "the gregor binary (make bench-scale builds bin/gregor)")
	partitions  = flag.Int("partitions", 10000, "partitions: this/10 topics of 10 partitions, replication factor 1 (a multiple of 10)")
	nconns      = flag.Int("conns", 4000, "idle connections for the RSS per connection")
	targets     = flag.String("targets", "gregor,kafka", "comma-separated: gregor, kafka")
	inflight    = flag.Int("inflight", 4, "Produce requests in flight in the writable probe, one per connection")
	idle        = flag.Duration("idle", 10*time.Second, "how long idle CPU is measured")
	kafkaHeap   = flag.String("kafka-heap", "1g", "Kafka's -Xmx and -Xms (kafka-server-start.sh's default)")
	out         = flag.String("out", "", "also write the report to this file")
	keep        = flag.Bool("keep", false, "keep the temporary directory (data and logs)")
	stepTimeout = flag.Duration("step-timeout", 10*time.Minute, "bound on each step: a start, a third of the creation, a probe, a stop")
	timeout     = flag.Duration("timeout", 90*time.Minute, "bound on the whole run")
	verbose     = flag.Bool("v", false, "log every round of the writable probe")
	connSettle  = flag.Duration("conn-settle", time.Second, "how long the idle connections stay open before the RSS is read (Go returns freed memory after its forced GC, every 2 minutes)")
)

// settle is the pause before the idle CPU and RSS figures, after the probe
// that ended the creation.
const settle = 2 * time.Second

// result is one target's figures.
type result struct {
	name       string
	created    [3]time.Duration // 0 → N/10, → N/2, → N partitions
	bounds     [3]int           // partitions after each third
	writable   time.Duration    // creation done → every partition writable
	rssMiB     float64
	idleCPU    float64 // percent of one core
	fds        int     // open file descriptors at N partitions
	metadata   time.Duration
	metadataKB float64
	stop       time.Duration
	cleanFirst time.Duration
	cleanAll   time.Duration
	killFirst  time.Duration
	killAll    time.Duration
	connKB     float64
}

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	if *partitions < 10 || *partitions%partitionsPerTopic != 0 {
		log.Fatalf("-partitions %d: want a positive multiple of %d", *partitions, partitionsPerTopic)
	}
	names := chooseTargets()
	if *bin != "" {
		abs, err := filepath.Abs(*bin)
		if err != nil {
			log.Fatal(err)
		}
		*bin = abs
	}
	nofile := raiseNofile()
	if uint64(*nconns)+200 > nofile {
		log.Fatalf("-conns %d: the open files limit is %d", *nconns, nofile)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	time.AfterFunc(*timeout, func() { fatalf("scale-bench: -timeout %v reached", *timeout) })
	sig := make(chan os.Signal, 1)
	// SIGPIPE too: a closed stdout or stderr (| head) ends the run through
	// the cleanup rather than killing it.
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() { s := <-sig; fatalf("scale-bench: %v", s) }()

	tmp, err := os.MkdirTemp("", "scale-bench-")
	if err != nil {
		log.Fatal(err)
	}
	atExit(func() {
		if *keep {
			log.Printf("kept %s", tmp)
			return
		}
		os.RemoveAll(tmp)
	})
	load0 := loadAvg()
	var rs []*result
	for _, name := range names {
		rs = append(rs, run(ctx, name, tmp))
	}
	report := header(names, load0, nofile) + table(rs) + notes()
	fmt.Print(report)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	cleanup()
}

// chooseTargets reads -targets.
func chooseTargets() []string {
	var names []string
	for _, s := range strings.Split(*targets, ",") {
		switch strings.TrimSpace(strings.ToLower(s)) {
		case "gregor":
			if *bin == "" {
				log.Fatal("-bin: the gregor binary is needed (go build -o /tmp/gregor ./cmd/gregor)")
			}
			names = append(names, "Gregor")
		case "kafka":
			if err := kafkaref.Available(); err != nil {
				log.Fatalf("-targets kafka: %v (or -targets gregor)", err)
			}
			names = append(names, "Kafka")
		default:
			log.Fatalf("-targets: unknown target %q (gregor, kafka)", s)
		}
	}
	if len(names) == 0 {
		log.Fatal("-targets: none")
	}
	return names
}

// run starts target name fresh and takes its figures; the broker is killed
// at the end (its data is not needed again).
func run(ctx context.Context, name, tmp string) *result {
	log.Printf("%s: starting", name)
	var s server
	switch name {
	case "Gregor":
		s = startGregor(ctx, tmp, *bin)
	case "Kafka":
		s = startKafka(ctx, tmp)
	}
	fail := func(what string, err error) {
		fatalf("%s: %s: %v\n%s", name, what, err, s.logTail())
	}
	r := &result{name: name}
	nt := *partitions / partitionsPerTopic
	topics := make([]string, nt)
	for i := range topics {
		topics[i] = topicName(i)
	}

	// Creation, in thirds.
	c, err := dial(ctx, s.addr())
	if err != nil {
		fail("dial", err)
	}
	from := 0
	for i, to := range []int{nt / 10, nt / 2, nt} {
		sctx, cancel := step(ctx, s)
		start := time.Now()
		if err := createTopics(sctx, c, topics[from:to]); err != nil {
			fail(fmt.Sprintf("creating topics %d to %d", from, to), err)
		}
		r.created[i] = time.Since(start)
		r.bounds[i] = to * partitionsPerTopic
		cancel()
		log.Printf("%s: partitions %d → %d created in %.2f s", name, from*partitionsPerTopic, to*partitionsPerTopic, r.created[i].Seconds())
		from = to
	}
	c.close()
	start := time.Now()
	probe(ctx, s, topics, name+" after creation")
	r.writable = time.Since(start)
	log.Printf("%s: every partition writable %.2f s after the creation", name, r.writable.Seconds())

	// Idle CPU and RSS.
	time.Sleep(settle)
	pid := s.pid()
	cpu0 := procstat.CPUSeconds(pid)
	time.Sleep(*idle)
	r.idleCPU = (procstat.CPUSeconds(pid) - cpu0) / idle.Seconds() * 100
	r.rssMiB = float64(procstat.RSSKB(pid)) / 1024
	r.fds = openFiles(pid)
	log.Printf("%s: idle CPU %.1f%% of a core, RSS %.0f MiB, %d open files", name, r.idleCPU, r.rssMiB, r.fds)

	// Metadata of all topics.
	sctx, cancel := step(ctx, s)
	md, size, err := metadataAll(sctx, s.addr(), nt)
	cancel()
	if err != nil {
		fail("Metadata", err)
	}
	r.metadata, r.metadataKB = md, float64(size)/1024
	log.Printf("%s: Metadata of all topics %.1f ms (%.0f KiB)", name, ms(md), r.metadataKB)

	// RSS per idle connection.
	before := procstat.RSSKB(pid)
	sctx, cancel = step(ctx, s)
	conns, err := idleConns(sctx, s.addr(), *nconns)
	cancel()
	if err != nil {
		fail("idle connections", err)
	}
	time.Sleep(*connSettle)
	after := procstat.RSSKB(pid)
	closeAll(conns)
	r.connKB = float64(after-before) / float64(*nconns)
	log.Printf("%s: RSS %d → %d kB with %d idle connections: %.1f KB each", name, before, after, *nconns, r.connKB)
	time.Sleep(time.Second) // the broker notices the closes

	// Clean stop and restart.
	start = time.Now()
	if err := s.stop(*stepTimeout); err != nil {
		fail("clean stop", err)
	}
	r.stop = time.Since(start)
	log.Printf("%s: clean stop %.2f s", name, r.stop.Seconds())
	r.cleanFirst, r.cleanAll = restart(ctx, s, topics, name+" after a clean stop")

	// kill -9 on dirty logs and restart.
	probe(ctx, s, topics, name+" before kill -9")
	s.kill()
	r.killFirst, r.killAll = restart(ctx, s, topics, name+" after kill -9")
	s.kill()
	return r
}

// step bounds one step by -step-timeout and ends it early when the
// broker's process exits.
func step(ctx context.Context, s server) (context.Context, context.CancelFunc) {
	cctx, cancelCause := context.WithCancelCause(ctx)
	tctx, cancelTimeout := context.WithTimeoutCause(cctx, *stepTimeout, fmt.Errorf("-step-timeout %v reached", *stepTimeout))
	exited := s.exited()
	go func() {
		select {
		case <-exited:
			cancelCause(errors.New("the broker process exited"))
		case <-tctx.Done():
		}
	}()
	return tctx, func() {
		cancelTimeout()
		cancelCause(nil)
	}
}

// probe runs writable as a step.
func probe(ctx context.Context, s server, topics []string, when string) {
	sctx, cancel := step(ctx, s)
	defer cancel()
	if err := writable(sctx, s.addr(), topics); err != nil {
		fatalf("writable probe %s: %v\n%s", when, err, s.logTail())
	}
}

// restart launches the stopped or killed broker and returns the time from
// the launch to its first ApiVersions answer and to every partition
// writable.
func restart(ctx context.Context, s server, topics []string, when string) (first, all time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, *stepTimeout)
	defer cancel()
	start := time.Now()
	launched := s.launch(ctx)
	sctx, cancelStep := step(ctx, s)
	defer cancelStep()
	var launchErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if launchErr = <-launched; launchErr != nil {
			cancelStep()
		}
	}()
	failed := func(err error) {
		<-done
		fatalf("restart %s: %v\n%s", when, errors.Join(err, launchErr), s.logTail())
	}
	if err := firstAnswer(sctx, s.addr()); err != nil {
		failed(err)
	}
	first = time.Since(start)
	if err := writable(sctx, s.addr(), topics); err != nil {
		failed(err)
	}
	all = time.Since(start)
	<-done
	if launchErr != nil {
		failed(nil)
	}
	log.Printf("restart %s: first answer %.2f s, every partition writable %.2f s", when, first.Seconds(), all.Seconds())
	return first, all
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
