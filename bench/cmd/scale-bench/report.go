package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/bench/internal/procstat"
	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// header is the report's title, command line and machine.
func header(names []string, load0 string, nofile uint64) string {
	var b strings.Builder
	nt := *partitions / partitionsPerTopic
	fmt.Fprintf(&b, "## Many partitions on one node\n\n")
	fmt.Fprintf(&b, "`cd bench && go run ./cmd/scale-bench %s` on %s: %d partitions (%d topics × %d, replication factor 1) on one broker, ",
		strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02 15:04 UTC"), *partitions, nt, partitionsPerTopic)
	var d []string
	for _, n := range names {
		switch n {
		case "Gregor":
			d = append(d, fmt.Sprintf("a gregor process (`%s`, `--log-level warn`)", *bin))
		case "Kafka":
			v, _ := kafkaref.Version()
			d = append(d, fmt.Sprintf("an Apache Kafka %s JVM (KRaft, combined broker and controller, -Xmx%s with kafka-server-start.sh's G1 flags, %s)", v, *kafkaHeap, kafkaref.JavaVersion()))
		}
	}
	fmt.Fprintf(&b, "%s, one after the other, each fresh, with the benchmark's client on the same machine.\n\n", strings.Join(d, " and then "))
	fmt.Fprintf(&b, "Machine: %s; open files limit %d; load average (1, 5, 15 min) %s at the start, %s at the end.\n\n", procstat.Machine(), nofile, load0, loadAvg())
	return b.String()
}

// row is one line of the table: all its figures are lower-is-better, so a
// Gregor / Kafka ratio below 1 favours Gregor.
type row struct {
	name string
	v    func(*result) float64
}

func table(rs []*result) string {
	sec := func(f func(*result) time.Duration) func(*result) float64 {
		return func(r *result) float64 { return f(r).Seconds() }
	}
	b0, b1, b2 := rs[0].bounds[0], rs[0].bounds[1], rs[0].bounds[2]
	rows := []row{
		{fmt.Sprintf("create partitions 0 → %d, s", b0), sec(func(r *result) time.Duration { return r.created[0] })},
		{fmt.Sprintf("create partitions %d → %d, s", b0, b1), sec(func(r *result) time.Duration { return r.created[1] })},
		{fmt.Sprintf("create partitions %d → %d, s", b1, b2), sec(func(r *result) time.Duration { return r.created[2] })},
		{"creation done → every partition writable, s", sec(func(r *result) time.Duration { return r.writable })},
		{fmt.Sprintf("RSS at %d partitions, MiB", b2), func(r *result) float64 { return r.rssMiB }},
		{fmt.Sprintf("open files at %d partitions", b2), func(r *result) float64 { return float64(r.fds) }},
		{fmt.Sprintf("idle CPU at %d partitions, %% of a core over %v", b2, *idle), func(r *result) float64 { return r.idleCPU }},
		{"Metadata of all topics, ms (median of 5)", func(r *result) float64 { return ms(r.metadata) }},
		{"Metadata of all topics, answer KiB", func(r *result) float64 { return r.metadataKB }},
		{"clean stop: SIGTERM → exit, s", sec(func(r *result) time.Duration { return r.stop })},
		{"restart after a clean stop → first ApiVersions answer, s", sec(func(r *result) time.Duration { return r.cleanFirst })},
		{"restart after a clean stop → every partition writable, s", sec(func(r *result) time.Duration { return r.cleanAll })},
		{"restart after kill -9 → first ApiVersions answer, s", sec(func(r *result) time.Duration { return r.killFirst })},
		{"restart after kill -9 → every partition writable, s", sec(func(r *result) time.Duration { return r.killAll })},
		{fmt.Sprintf("RSS per idle connection (%d connections), KB", *nconns), func(r *result) float64 { return r.connKB }},
	}
	var b strings.Builder
	b.WriteString("| |")
	for _, r := range rs {
		b.WriteString(" " + displayName(r.name) + " |")
	}
	ratio := len(rs) == 2
	if ratio {
		fmt.Fprintf(&b, " %s / %s |", rs[0].name, rs[1].name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(rs)))
	if ratio {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, rw := range rows {
		fmt.Fprintf(&b, "| %s |", rw.name)
		for _, r := range rs {
			fmt.Fprintf(&b, " %s |", num(rw.v(r)))
		}
		if ratio {
			x, y := rw.v(rs[0]), rw.v(rs[1])
			if y > 0 && x >= 0 {
				fmt.Fprintf(&b, " %s |", num(x/y))
			} else {
				b.WriteString(" — |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func displayName(name string) string {
	if name == "Kafka" {
		if v, err := kafkaref.Version(); err == nil {
			return "Kafka " + v
		}
	}
	return name
}

// num prints v with about three significant digits.
func num(v float64) string {
	switch a := max(v, -v); {
	case a >= 100 || a >= 10 && v == float64(int64(v)):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1 || a == 0:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func notes() string {
	return fmt.Sprintf(`
Every figure is lower-is-better; a ratio below 1 favours Gregor. The
requests are the benchmark's own (kmsg on plain connections: CreateTopics
v%d, Produce v%d, Metadata v%d), so no client library's batching, retries or
metadata refreshes are in them. Creation: CreateTopics requests of %d
topics, one at a time on one connection; a third is done when every answer
is back without error. "Every partition writable": an acks=1 Produce of one
record to every partition, all partitions of %d topics per request, %d
requests in flight on as many connections, repeated every 20 ms for the
partitions whose answer was an error until all have succeeded. Idle CPU is
utime+stime of the broker process from /proc over %v, %v after that probe;
RSS is VmRSS then and open files the entries of /proc/PID/fd (the broker
inherits the benchmark's open files limit, raised to its hard limit). A
restart is timed from just before the process is started: to its first
ApiVersions answer (a new connection every 2 ms; for Kafka kafkaref's
Restart polls beside it) and to every partition writable. Before kill -9,
one more record went to every partition. RSS per idle connection: (VmRSS
%v after %d connections each had one ApiVersions answer − VmRSS before) /
%d; Kafka's heap is committed at start (-Xms = -Xmx), so what its
connections allocate on the heap shows in its RSS only where it touches
pages not touched before.
`, createTopicsVersion, produceVersion, metadataVersion, topicsPerRequest, topicsPerRequest, *inflight, *idle, settle, *connSettle, *nconns, *nconns)
}
