package main

import (
	"math"
	"strings"
	"testing"
)

// The summary formats of ProducerPerformance and ConsumerPerformance in
// kafka-tools 4.4.0 (their format strings, filled in).
const producerPerfOut = `49985 records sent, 9997.0 records/sec (0.95 MB/sec), 1404.2 ms avg latency, 2302.0 ms max latency.
100000 records sent, 12965.123456 records/sec (1.24 MB/sec), 2972.41 ms avg latency, 4009.00 ms max latency, 3535 ms 50th, 3852 ms 95th, 3952 ms 99th, 4008 ms 99.9th.
`

const consumerPerfOut = `start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-12-01 13:15:12:123, 2026-12-01 13:15:16:456, 9.5367, 2.2011, 100000, 23077.7753, 877, 3456, 2.7595, 28935.1852
`

func TestParseProducerPerf(t *testing.T) {
	r, err := parseProducerPerf(producerPerfOut)
	if err != nil {
		t.Fatal(err)
	}
	want := toolResult{"kt_prod_n": 100000, "kt_prod_rps": 12965.123456, "kt_prod_mibps": 1.24,
		"kt_prod_avg_ms": 2972.41, "kt_prod_max_ms": 4009, "kt_prod_p50_ms": 3535, "kt_prod_p95_ms": 3852,
		"kt_prod_p99_ms": 3952, "kt_prod_p999_ms": 4008}
	if len(r) != len(want) {
		t.Fatalf("got %v, want %v", r, want)
	}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s = %v, want %v", k, r[k], v)
		}
	}
	// Only the intermediate line: no summary.
	first, _, _ := strings.Cut(producerPerfOut, "\n")
	if _, err := parseProducerPerf(first); err == nil {
		t.Error("an intermediate line parsed as the summary")
	}
}

func TestParseConsumerPerf(t *testing.T) {
	r, err := parseConsumerPerf("some log line\n" + consumerPerfOut)
	if err != nil {
		t.Fatal(err)
	}
	want := toolResult{"kt_cons_n": 100000, "kt_cons_mibps": 2.2011, "kt_cons_rps": 23077.7753,
		"kt_cons_rebalance_ms": 877, "kt_cons_fetch_ms": 3456, "kt_cons_fetch_mibps": 2.7595, "kt_cons_fetch_rps": 28935.1852}
	if len(r) != len(want) {
		t.Fatalf("got %v, want %v", r, want)
	}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s = %v, want %v", k, r[k], v)
		}
	}
	if _, err := parseConsumerPerf("WARNING: Exiting before consuming the expected number of records\n"); err == nil {
		t.Error("no header: want an error")
	}
}

func TestParseLists(t *testing.T) {
	var c config
	if err := c.parseLists("gregor, kafka,gregor", "throughput,tools"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.targets, ",") != "gregor,kafka" || !c.has("tools") || c.has("latency") {
		t.Fatalf("targets %v phases %v", c.targets, c.phases)
	}
	for _, bad := range [][2]string{{"kafka", "throughput"}, {"gregor,redpanda", ""}, {"gregor", "warp"}} {
		var c config
		if err := c.parseLists(bad[0], bad[1]); err == nil {
			t.Errorf("parseLists(%q, %q): want an error", bad[0], bad[1])
		}
	}
}

// TestTable_KafkaTargets checks the Gregor/Kafka columns: the ratio, the
// issue-16 target and its verdict, beside Gregor/kfake.
func TestTable_KafkaTargets(t *testing.T) {
	rs := newResults(1)
	rs.targets = []string{"gregor", "kfake", "kafka"}
	rs.set("gregor", "start_empty_ms", 0, 50)
	rs.set("kfake", "start_empty_ms", 0, 20)
	rs.set("kafka", "start_empty_ms", 0, 6000)
	rs.set("gregor", "rss_end_mb", 0, 50)
	rs.set("kfake", "rss_end_mb", 0, 200)
	rs.set("kafka", "rss_end_mb", 0, 400)
	tab := rs.table(metrics())
	lines := strings.Split(tab, "\n")
	if want := "| metric | unit | Gregor | kfake | Kafka | Gregor/kfake | target | met | Gregor/Kafka | target | met |"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	var start, rss string
	for _, l := range lines {
		if strings.HasPrefix(l, "| start to first ApiVersions, empty dir |") {
			start = l
		}
		if strings.HasPrefix(l, "| RSS after the run |") {
			rss = l
		}
	}
	// 50/6000 = 0.00833 ≤ 0.01: met; against kfake 50 ms > 10 ms: not met.
	if want := "| start to first ApiVersions, empty dir | ms | 50.0 | 20.0 | 6000 | 2.50 | ≤ 10 | no | 0.00833 | ratio ≤ 0.01 | **yes** |"; start != want {
		t.Errorf("start row\n%q, want\n%q", start, want)
	}
	// 50/400 = 0.125 > 0.1: not met against Kafka.
	if want := "| RSS after the run | MB | 50.0 | 200 | 400 | 0.25 | ≤ 100 | **yes** | 0.12 | ratio ≤ 0.1 | no |"; rss != want {
		t.Errorf("RSS row\n%q, want\n%q", rss, want)
	}
	if strings.Contains(tab, "produce 100 B") {
		t.Error("rows nobody measured are left out")
	}
	if math.IsNaN(summarize(rs.ratios("rss_end_mb", "kafka")).med) {
		t.Error("ratio not computed")
	}
}

func TestSVGPath(t *testing.T) {
	c := config{svgOut: "results/ratios.svg", targets: []string{"gregor", "kfake", "kafka"}}
	if a, b := c.svgPath("kfake"), c.svgPath("kafka"); a != "results/ratios.svg" || b != "results/ratios-kafka.svg" {
		t.Errorf("three targets: %s, %s", a, b)
	}
	c.targets = []string{"gregor", "kafka"}
	if p := c.svgPath("kafka"); p != "results/ratios.svg" {
		t.Errorf("without kfake: %s", p)
	}
}

func TestToolTable_NoKfake(t *testing.T) {
	rs := newResults(1)
	rs.targets = []string{"gregor", "kfake", "kafka"}
	rs.set("gregor", "kt_prod_rps", 0, 30000)
	rs.set("kafka", "kt_prod_rps", 0, 20000)
	lines := strings.Split(rs.toolTable(), "\n")
	if want := "| metric | unit | Gregor | Kafka | Gregor/Kafka | target | met |"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	if want := "| producer-perf-test throughput | rec/s | 30k | 20k | 1.50 | ratio ≥ 1 | **yes** |"; lines[2] != want {
		t.Errorf("row %q, want %q", lines[2], want)
	}
}
