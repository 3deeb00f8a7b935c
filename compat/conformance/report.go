package conformance

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReportInfo is what the report says about the run besides the outcomes.
type ReportInfo struct {
	KafkaVersion string
	Versions     map[int16]int16
	Notes        map[string]string // scenario "API: name" → a known-difference note
}

// WriteReport writes the Markdown report: summary, per-scenario table, and
// each difference in full.
func WriteReport(w io.Writer, info ReportInfo, outs []Outcome) {
	m, n := Summary(outs)
	pct := 0.0
	if n > 0 {
		pct = 100 * float64(m) / float64(n)
	}
	fmt.Fprintf(w, "# Conformance: Gregor beside Apache Kafka %s\n\n", info.KafkaVersion)
	fmt.Fprintf(w, "Written by `make conformance` (compat/conformance). Each scenario sends the same\n")
	fmt.Fprintf(w, "requests, built with kmsg at the same version (the highest both brokers support), to a\n")
	fmt.Fprintf(w, "fresh single-node Apache Kafka %s (KRaft, compat/kafkaref) and to a fresh Gregor, both\n", info.KafkaVersion)
	fmt.Fprintf(w, "with node.id=1 and the same properties (conformance.CommonProps). Answers are compared\n")
	fmt.Fprintf(w, "after normalisation: throttle times, error messages and documentation are dropped; hosts,\n")
	fmt.Fprintf(w, "ports, cluster ids, topic ids (zero or not), producer ids, member ids, session ids, sizes and\n")
	fmt.Fprintf(w, "broker-clock timestamps become markers; arrays of topics, partitions, configs and groups are\n")
	fmt.Fprintf(w, "keyed by name, so order is not compared. Everything else (error codes per topic and partition,\n")
	fmt.Fprintf(w, "offsets, record contents, which fields are set or null) must be equal.\n\n")
	fmt.Fprintf(w, "**%d of %d scenarios match (%.0f%%)**, over %d APIs.\n\n", m, n, pct, len(apisOf(outs)))

	fmt.Fprintf(w, "| API | Scenario | Kafka | Gregor | Match |\n|---|---|---|---|---|\n")
	for _, o := range outs {
		k, g := o.Kafka, o.Gregor
		mark := "same"
		if !o.Match {
			k, g = diffLines(o.Kafka, o.Gregor)
			mark = "**differs**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", o.API, o.Name, cell(k, 300), cell(g, 300), mark)
	}
	fmt.Fprintf(w, "\nFor a differing scenario the table shows only the lines that differ; the full answers follow.\n")

	fmt.Fprintf(w, "\n## Differences in full\n\n")
	for _, o := range outs {
		if o.Match {
			continue
		}
		fmt.Fprintf(w, "### %s: %s\n\n", o.API, o.Name)
		if note := info.Notes[o.API+": "+o.Name]; note != "" {
			fmt.Fprintf(w, "%s\n\n", note)
		}
		onlyK, onlyG := diffLines(o.Kafka, o.Gregor)
		fmt.Fprintf(w, "```diff\n")
		for _, l := range onlyK {
			fmt.Fprintf(w, "- kafka:  %s\n", l)
		}
		for _, l := range onlyG {
			fmt.Fprintf(w, "+ gregor: %s\n", l)
		}
		fmt.Fprintf(w, "```\n\n")
	}

	fmt.Fprintf(w, "## Versions used\n\nThe version each API was sent at (the highest both advertise and kmsg encodes):\n\n")
	var keys []int
	for k := range info.Versions {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s v%d", kmsg.NameForKey(int16(k)), info.Versions[int16(k)]))
	}
	fmt.Fprintf(w, "%s.\n", strings.Join(parts, ", "))
}

func apisOf(outs []Outcome) map[string]bool {
	m := map[string]bool{}
	for _, o := range outs {
		m[o.API] = true
	}
	return m
}
