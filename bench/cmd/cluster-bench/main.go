// Command cluster-bench measures a three-node Gregor cluster on one
// machine: acks=all produce throughput of a replication factor 3 topic
// beside a replication factor 1 topic on the same cluster (interleaved, run
// by run), and failover time: from kill -9 of a partition's leader to the
// first acknowledged produce on its new leader, with default settings.
//
//	make bench-cluster                      # or:
//	cd bench && go run ./cmd/cluster-bench -runs 3 -n 1000000 -failovers 5
//
// It builds gregor from the working tree, starts the nodes on free loopback
// ports in temporary directories, and kills every process it started when
// it ends. Results go to standard output as markdown.
package main

import (
	"context"
	crand "crypto/rand"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	runs      = flag.Int("runs", 3, "throughput runs per replication factor")
	records   = flag.Int("n", 1000000, "records per throughput run")
	size      = flag.Int("size", 100, "record value size in bytes")
	failovers = flag.Int("failovers", 5, "failover measurements")
	timeout   = flag.Duration("timeout", 15*time.Minute, "bound on the whole run")
)

type node struct {
	id       int
	kafka    string
	peer     int
	dir      string
	cmd      *exec.Cmd
	logFile  *os.File
	binary   string
	voters   string
	alive    bool
	restarts int
}

func (n *node) start() {
	args := []string{"--listen", n.kafka, "--data-dir", n.dir, "--set", "node.id=" + strconv.Itoa(n.id),
		"--set", "controller.quorum.voters=" + n.voters, "--log-level", "warn"}
	n.cmd = exec.Command(n.binary, args...)
	n.cmd.Stdout, n.cmd.Stderr = n.logFile, n.logFile
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		log.Fatalf("start node %d: %v", n.id, err)
	}
	n.alive = true
}

func (n *node) kill() {
	if n.alive {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		n.alive = false
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func main() {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "cluster-bench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "gregor")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gregor")
	build.Dir = ".."
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		log.Fatalf("build gregor: %v", err)
	}
	var nodes []*node
	var voters []string
	for id := 1; id <= 3; id++ {
		n := &node{id: id, kafka: "127.0.0.1:" + strconv.Itoa(freePort()), peer: freePort(), dir: filepath.Join(tmp, "node-"+strconv.Itoa(id)), binary: bin}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", id, n.peer))
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		n.voters = strings.Join(voters, ",")
		if n.logFile, err = os.Create(n.dir + ".log"); err != nil {
			log.Fatal(err)
		}
		n.start()
	}
	stopAll := func() {
		for _, n := range nodes {
			n.kill()
		}
	}
	defer stopAll()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; stopAll(); os.Exit(1) }()

	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.kafka)
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		log.Fatal(err)
	}
	admin := kadm.NewClient(adm)
	waitBrokers(ctx, admin, 3)

	fmt.Printf("## A three-node cluster\n\n`cd bench && go run ./cmd/cluster-bench -runs %d -n %d -size %d -failovers %d` on %s; three gregor processes, the client and etcd on one machine (%d cores).\n\n",
		*runs, *records, *size, *failovers, time.Now().UTC().Format("2006-01-02 15:04 UTC"), numCPU())
	fmt.Printf("| run | RF=1 acks=all rec/s | RF=3 acks=all rec/s | RF=3 / RF=1 |\n|---|---|---|---|\n")
	var r1s, r3s []float64
	for run := 1; run <= *runs; run++ {
		r1 := produceRun(ctx, admin, seeds, 1, run)
		r3 := produceRun(ctx, admin, seeds, 3, run)
		r1s, r3s = append(r1s, r1), append(r3s, r3)
		fmt.Printf("| %d | %.0f | %.0f | %.2f |\n", run, r1, r3, r3/r1)
	}
	fmt.Printf("| median | %.0f | %.0f | %.2f |\n\n", median(r1s), median(r3s), median(r3s)/median(r1s))

	fmt.Printf("Failover, kill -9 of the leader of a RF=3 partition (min.insync.replicas=2) under one synchronous acks=all producer → its first acknowledged produce after the kill:\n\n")
	var fos []float64
	for i := 1; i <= *failovers; i++ {
		d := failover(ctx, admin, seeds, nodes, i)
		fos = append(fos, d.Seconds())
		fmt.Printf("- %d: %.2f s\n", i, d.Seconds())
	}
	fmt.Printf("\nmedian %.2f s, max %.2f s\n", median(fos), slices.Max(fos))
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
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func waitBrokers(ctx context.Context, admin *kadm.Client, n int) {
	for ctx.Err() == nil {
		if md, err := admin.BrokerMetadata(ctx); err == nil && len(md.Brokers) == n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatal("cluster did not form")
}

func createTopic(ctx context.Context, admin *kadm.Client, name string, rf int16) {
	minISR := strconv.Itoa(int(min(rf, 2)))
	if _, err := admin.CreateTopic(ctx, 1, rf, map[string]*string{"min.insync.replicas": &minISR}, name); err != nil {
		log.Fatalf("create %s: %v", name, err)
	}
	for ctx.Err() == nil {
		md, err := admin.Metadata(ctx, name)
		if err == nil {
			if p, ok := md.Topics[name].Partitions[0]; ok && p.Leader >= 0 && len(p.ISR) == int(rf) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// produceRun writes *records records of *size random bytes with an
// idempotent acks=all producer and returns records per second.
func produceRun(ctx context.Context, admin *kadm.Client, seeds []string, rf int16, run int) float64 {
	topic := fmt.Sprintf("bench-rf%d-%d", rf, run)
	createTopic(ctx, admin, topic, rf)
	vals := make([][]byte, 4096)
	for i := range vals {
		vals[i] = make([]byte, *size)
		crand.Read(vals[i])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	var errOnce sync.Once
	start := time.Now()
	for i := 0; i < *records; i++ {
		cl.Produce(ctx, &kgo.Record{Value: vals[i%len(vals)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { log.Printf("produce: %v", err) })
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	return float64(*records) / time.Since(start).Seconds()
}

// failover kills the leader of a fresh RF=3 partition while a producer
// writes to it and returns the time from the kill to the first
// acknowledgement of a produce sent after it.
func failover(ctx context.Context, admin *kadm.Client, seeds []string, nodes []*node, i int) time.Duration {
	topic := fmt.Sprintf("failover-%d", i)
	createTopic(ctx, admin, topic, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	for j := 0; j < 100; j++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			log.Fatalf("warm-up: %v", err)
		}
	}
	md, err := admin.Metadata(ctx, topic)
	if err != nil {
		log.Fatal(err)
	}
	leader := md.Topics[topic].Partitions[0].Leader
	victim := nodes[leader-1]
	victim.kill()
	killed := time.Now()
	var d time.Duration
	for ctx.Err() == nil {
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err == nil && sent.After(killed) {
			d = time.Since(killed)
			break
		}
	}
	victim.start()
	waitBrokers(ctx, admin, 3)
	// Back to a full ISR before the next measurement.
	for ctx.Err() == nil {
		md, err := admin.Metadata(ctx, topic)
		if err == nil && len(md.Topics[topic].Partitions[0].ISR) == 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return d
}
