// Command link-bench measures mirroring from Apache Kafka 4.4 (compat/kafkaref)
// into Gregor: a cluster link (gregor link) beside MirrorMaker 2, on the
// same machine and the same data, one after the other:
//
//	cd bench && go run ./cmd/link-bench -bin ../bin/gregor -mb 512 -targets link,mm2
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
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bin := flag.String("bin", "../bin/gregor", "the gregor binary")
	mb := flag.Int("mb", 512, "megabytes of record values to mirror")
	size := flag.Int("size", 1000, "record value size")
	partitions := flag.Int("partitions", 8, "partitions of the topic")
	targets := flag.String("targets", "link,mm2", "link, mm2")
	flag.Parse()
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
	for _, target := range strings.Split(*targets, ",") {
		dir := filepath.Join(root, target)
		addr, stop := startGregor(ctx, *bin, dir)
		dst, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(20*time.Millisecond)) // the topic appears while we poll
		if err != nil {
			log.Fatal(err)
		}
		var topic string
		var stopMirror func()
		begin := time.Now()
		switch target {
		case "link":
			topic = "bench"
			run(ctx, *bin, "link", "create", "bench", "--brokers", addr, "--source", kafka.Addr, "--topics", "bench", "--sync-interval", "1s")
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
		promote := "-"
		if target == "link" {
			p := time.Now()
			run(ctx, *bin, "link", "promote", "bench", "--brokers", addr)
			promote = time.Since(p).Round(time.Millisecond).String()
		}
		stopMirror()
		fmt.Printf("| %s | %d | %d | %v | %.0f | %s |\n", target, total, *mb, took.Round(time.Millisecond), float64(*mb)/took.Seconds(), promote)
		dst.Close()
		stop()
	}
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

func startGregor(ctx context.Context, bin, dir string) (string, func()) {
	addr := freeAddr()
	cmd := exec.CommandContext(ctx, bin, "--data-dir", dir, "--listen", addr, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr, func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
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
