// Command gregor-conformance runs the conformance scenarios against a real
// Apache Kafka broker and Gregor, both started here, and writes the report
// (make conformance):
//
//	go run ./compat/conformance/cmd/gregor-conformance -out docs/conformance.md
//
// GREGOR_BIN names a gregor binary to use instead of building one. -run
// selects scenarios by a substring of "API: name".
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/compat/conformance"
	"github.com/gregor-broker/gregor/compat/kafkaref"
)

func main() {
	out := flag.String("out", "docs/conformance.md", "report file")
	run := flag.String("run", "", "only scenarios whose \"API: name\" contains this")
	verbose := flag.Bool("v", false, "print the brokers' output")
	flag.Parse()
	if err := kafkaref.Available(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var logs io.Writer = io.Discard
	if *verbose {
		logs = os.Stderr
	}
	start := time.Now()
	p, err := conformance.StartPair(ctx, logs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the brokers:", err)
		os.Exit(1)
	}
	defer p.Stop()
	fmt.Fprintf(os.Stderr, "Kafka %s on %s (JVM ready in %v), Gregor on %s; %v to start both\n",
		p.Kafka.Version, p.Kafka.Addr, p.Kafka.StartDuration.Round(time.Millisecond), p.Gregor.Addr, time.Since(start).Round(time.Millisecond))
	var scenarios []conformance.Scenario
	for _, s := range conformance.All() {
		if strings.Contains(s.API+": "+s.Name, *run) {
			scenarios = append(scenarios, s)
		}
	}
	runStart := time.Now()
	outs, err := conformance.Run(p.Kafka.Addr, p.Gregor.Addr, scenarios, func(o conformance.Outcome) {
		mark := "same"
		if !o.Match {
			mark = "DIFFERS"
		}
		fmt.Fprintf(os.Stderr, "%-8s %s: %s (%v)\n", mark, o.API, o.Name, o.Elapsed.Round(time.Millisecond))
		if !o.Match && *verbose {
			fmt.Fprintf(os.Stderr, "  kafka:  %s\n  gregor: %s\n", strings.Join(o.Kafka, "\n          "), strings.Join(o.Gregor, "\n          "))
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		p.Stop()
		os.Exit(1)
	}
	versions, _ := conformance.Versions(p.Kafka.Addr, p.Gregor.Addr)
	var buf bytes.Buffer
	conformance.WriteReport(&buf, conformance.ReportInfo{KafkaVersion: p.Kafka.Version, Versions: versions, Notes: conformance.Notes}, outs)
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		p.Stop()
		os.Exit(1)
	}
	m, n := conformance.Summary(outs)
	fmt.Fprintf(os.Stderr, "%d of %d scenarios match; scenarios took %v; report in %s\n", m, n, time.Since(runStart).Round(time.Millisecond), *out)
}
