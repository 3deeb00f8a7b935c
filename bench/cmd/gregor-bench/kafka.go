package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// kafkaJVMArgs are the JVM options kafka-server-start.sh gives the broker
// (KAFKA_JVM_PERFORMANCE_OPTS of kafka-run-class.sh); the heap comes from
// --kafka-heap (the script's default is -Xmx1G -Xms1G).
var kafkaJVMArgs = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent"}

// kafkaProps are the broker properties set beyond kafkaref's single-node
// KRaft ones; everything else (flush policy, segment size, threads, ...) is
// Kafka's default. group.initial.rebalance.delay.ms=0 is what Kafka's own
// config/server.properties ships, and what Gregor is given here.
var kafkaProps = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"num.partitions":                   "1",
}

// toolHeap is the heap kafka-producer-perf-test.sh and
// kafka-consumer-perf-test.sh give their JVM.
const toolHeap = "-Xmx512M"

// startKafka starts Apache Kafka on dataDir with kafkaref and returns the
// time from exec of the broker's JVM to its first ApiVersions answer (the
// storage format, a separate short JVM run before it, is not counted).
func startKafka(ctx context.Context, t target, dataDir string, timeout time.Duration) (*proc, time.Duration, error) {
	opts := *t.kafka
	opts.Dir = dataDir
	opts.StartTimeout = timeout
	b, err := kafkaref.Start(ctx, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", t.name, err)
	}
	trackKill(b, b.Kill)
	p := &proc{broker: b, pid: b.Pid(), addr: b.Addr, exited: b.Exited()}
	return p, b.FirstAnswer, nil
}

// kafkaLogTail returns the last lines of Kafka's output file.
func kafkaLogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, " | ")
}

// runJava runs a Java main class on the classpath cp, bounded by ctx, and
// returns its stdout.
func runJava(ctx context.Context, cp, class string, args ...string) (string, error) {
	jargs := append([]string{toolHeap}, kafkaJVMArgs...)
	jargs = append(jargs, "-Djava.awt.headless=true", "-cp", cp, class)
	jargs = append(jargs, args...)
	cmd := exec.CommandContext(ctx, "java", jargs...)
	cmd.SysProcAttr = childAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	track(cmd)
	err := cmd.Wait()
	untrack(cmd)
	if err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", class[strings.LastIndexByte(class, '.')+1:], err, lastLine(stderr.String()))
	}
	return stdout.String(), nil
}

// toolResult holds the summary of kafka-producer-perf-test and
// kafka-consumer-perf-test, keyed by metric key (see toolMetrics).
type toolResult map[string]float64

// perfProducerRE matches ProducerPerformance's final summary line:
// "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max
// latency, P ms 50th, P ms 95th, P ms 99th, P ms 99.9th."
var perfProducerRE = regexp.MustCompile(`(\d+)(?: steady state)? records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th`)

// parseProducerPerf reads the last summary line of ProducerPerformance's
// output (MB there is MiB, 1,048,576 bytes).
func parseProducerPerf(out string) (toolResult, error) {
	all := perfProducerRE.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		return nil, fmt.Errorf("producer-perf-test: no summary line in %q", lastLine(out))
	}
	m := all[len(all)-1]
	keys := []string{"kt_prod_n", "kt_prod_rps", "kt_prod_mibps", "kt_prod_avg_ms", "kt_prod_max_ms",
		"kt_prod_p50_ms", "kt_prod_p95_ms", "kt_prod_p99_ms", "kt_prod_p999_ms"}
	r := toolResult{}
	for i, k := range keys {
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("producer-perf-test: %s: %w", k, err)
		}
		r[k] = v
	}
	return r, nil
}

// consumerPerfCols maps ConsumerPerformance's CSV columns to metric keys.
var consumerPerfCols = map[string]string{
	"data.consumed.in.nMsg": "kt_cons_n",
	"MB.sec":                "kt_cons_mibps",
	"nMsg.sec":              "kt_cons_rps",
	"rebalance.time.ms":     "kt_cons_rebalance_ms",
	"fetch.time.ms":         "kt_cons_fetch_ms",
	"fetch.MB.sec":          "kt_cons_fetch_mibps",
	"fetch.nMsg.sec":        "kt_cons_fetch_rps",
}

// parseConsumerPerf reads ConsumerPerformance's header line
// ("start.time, end.time, data.consumed.in.MB, MB.sec, ...") and the line of
// values after it.
func parseConsumerPerf(out string) (toolResult, error) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "start.time") || i+1 >= len(lines) {
			continue
		}
		hdr := strings.Split(l, ",")
		vals := strings.Split(lines[i+1], ",")
		if len(vals) != len(hdr) {
			return nil, fmt.Errorf("consumer-perf-test: %d values under %d columns: %q", len(vals), len(hdr), lines[i+1])
		}
		r := toolResult{}
		for j, h := range hdr {
			k, ok := consumerPerfCols[strings.TrimSpace(h)]
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(vals[j]), 64)
			if err != nil {
				return nil, fmt.Errorf("consumer-perf-test: %s: %w", h, err)
			}
			r[k] = v
		}
		return r, nil
	}
	return nil, errors.New("consumer-perf-test: no start.time header in its output")
}

// kafkaTools runs kafka-producer-perf-test (n records of size bytes, acks=all,
// no throttle, the Java producer's defaults otherwise) against addr on a new
// one-partition topic, then kafka-consumer-perf-test reading them back.
func kafkaTools(ctx context.Context, cp, addr string, n, size int) (toolResult, error) {
	const topic = "perf-test"
	if err := createTopic(ctx, addr, topic, 1); err != nil {
		return nil, err
	}
	out, err := runJava(ctx, cp, "org.apache.kafka.tools.ProducerPerformance",
		"--bootstrap-server", addr, "--topic", topic, "--num-records", strconv.Itoa(n),
		"--record-size", strconv.Itoa(size), "--throughput", "-1", "--command-property", "acks=all")
	if err != nil {
		return nil, err
	}
	r, err := parseProducerPerf(out)
	if err != nil {
		return nil, err
	}
	if got := int(r["kt_prod_n"]); got != n {
		return r, fmt.Errorf("producer-perf-test sent %d of %d records", got, n)
	}
	out, err = runJava(ctx, cp, "org.apache.kafka.tools.ConsumerPerformance",
		"--bootstrap-server", addr, "--topic", topic, "--num-records", strconv.Itoa(n), "--timeout", "30000")
	if err != nil {
		return r, err
	}
	cr, err := parseConsumerPerf(out)
	if err != nil {
		return r, err
	}
	for k, v := range cr {
		r[k] = v
	}
	if got := int(r["kt_cons_n"]); got < n {
		return r, fmt.Errorf("consumer-perf-test read %d of %d records", got, n)
	}
	return r, nil
}
