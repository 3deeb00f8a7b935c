package main

import (
	"bytes"
	"fmt"
	"log"
	"math"
	"os"
	"runtime"
	"strings"
)

// goal is a target for one metric: of issue 6 against kfake, of issue 16
// against Apache Kafka.
type goal struct {
	ratio  bool // compare the Gregor/other ratio (else Gregor's value)
	atMost bool // the value must be ≤ limit (else ≥)
	limit  float64
}

func (g goal) String() string {
	op := "≥"
	if g.atMost {
		op = "≤"
	}
	if g.ratio {
		return fmt.Sprintf("ratio %s %s", op, trimFloat(g.limit))
	}
	return fmt.Sprintf("%s %s", op, trimFloat(g.limit))
}

func (g goal) met(gregor, ratio summary) (bool, bool) {
	s := gregor
	if g.ratio {
		s = ratio
	}
	if s.n == 0 {
		return false, false
	}
	if g.atMost {
		return s.med <= g.limit, true
	}
	return s.med >= g.limit, true
}

// metric describes one reported number.
type metric struct {
	key    string
	label  string
	unit   string
	higher bool  // higher is better (for the chart's colours)
	goal   *goal // target against kfake; nil: none
	kgoal  *goal // target against Kafka (issue 16); nil: none
	onlyG  bool  // measured for Gregor only
}

// Targets of issue 16 against Apache Kafka, as ratios Gregor/Kafka.
var (
	kAtLeast   = &goal{ratio: true, limit: 1}                  // throughput ≥ Kafka's
	kHalfCPU   = &goal{ratio: true, atMost: true, limit: 0.5}  // CPU/GB ≤ ½
	kTenthRSS  = &goal{ratio: true, atMost: true, limit: 0.1}  // RSS ≤ 1/10
	kAtMost    = &goal{ratio: true, atMost: true, limit: 1}    // latency ≤ Kafka's
	kHundredth = &goal{ratio: true, atMost: true, limit: 0.01} // start ≥ 100× faster
)

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

// metrics lists every reported metric in table order.
func metrics() []metric {
	var ms []metric
	for _, r := range rows {
		l := r.label()
		k := r.topic()
		ms = append(ms,
			metric{key: "prod_rps/" + k, label: "produce " + l, unit: "rec/s", higher: true, goal: &goal{ratio: true, limit: 1}, kgoal: kAtLeast},
			metric{key: "prod_mbps/" + k, label: "produce " + l, unit: "MB/s", higher: true},
			metric{key: "cons_rps/" + k, label: "consume " + l, unit: "rec/s", higher: true, goal: &goal{ratio: true, limit: 1}, kgoal: kAtLeast},
			metric{key: "cons_mbps/" + k, label: "consume " + l, unit: "MB/s", higher: true},
			metric{key: "cpu_in/" + k, label: "broker CPU, produce " + l, unit: "s/GB", goal: &goal{ratio: true, atMost: true, limit: 0.5}, kgoal: kHalfCPU},
			metric{key: "cpu_out/" + k, label: "broker CPU, consume " + l, unit: "s/GB", goal: &goal{ratio: true, atMost: true, limit: 0.25}, kgoal: kHalfCPU},
		)
	}
	ms = append(ms,
		metric{key: "cons_loopback_frac", label: "consume 1 KiB × 1p / loopback limit", unit: "fraction", higher: true, goal: &goal{limit: 0.25}},
		metric{key: "cons_raw_loopback_frac", label: "raw Fetch (no record decoding) 1 KiB × 1p / loopback limit", unit: "fraction", higher: true, goal: &goal{limit: 0.25}},
		metric{key: "ack_p50", label: "produce-ack latency p50", unit: "ms"},
		metric{key: "ack_p99", label: "produce-ack latency p99", unit: "ms"},
		metric{key: "ack_p999", label: "produce-ack latency p99.9", unit: "ms"},
		metric{key: "e2e_p50", label: "end-to-end latency p50", unit: "ms"},
		metric{key: "e2e_p99", label: "end-to-end latency p99", unit: "ms", goal: &goal{atMost: true, limit: 1}, kgoal: kAtMost},
		metric{key: "e2e_p999", label: "end-to-end latency p99.9", unit: "ms", kgoal: kAtMost},
		metric{key: "group_stable_ms", label: "group of 4 on 8p: time to stable", unit: "ms"},
		metric{key: "group_drain_rps", label: "group of 4 on 8p: drain 100 B", unit: "rec/s", higher: true, kgoal: kAtLeast},
		metric{key: "start_empty_ms", label: "start to first ApiVersions, empty dir", unit: "ms", goal: &goal{atMost: true, limit: 10}, kgoal: kHundredth},
		metric{key: "start_self_ms", label: "↳ of which the broker's own main → listening (its log)", unit: "ms"},
		metric{key: "start_full_ms", label: "start to first ApiVersions, existing segments", unit: "ms", goal: &goal{atMost: true, limit: 100}, onlyG: true},
		metric{key: "start_full_self_ms", label: "↳ of which the broker's own main → listening (its log)", unit: "ms", onlyG: true},
		metric{key: "rss_idle_mb", label: "RSS idle (after start)", unit: "MB", goal: &goal{atMost: true, limit: 20}},
		metric{key: "rss_end_mb", label: "RSS after the run", unit: "MB", goal: &goal{atMost: true, limit: 100}, kgoal: kTenthRSS},
		metric{key: "rss_peak_mb", label: "peak RSS (VmHWM)", unit: "MB"},
		metric{key: "kcat_prod_rps", label: "kcat produce 100 B × 1p", unit: "rec/s", higher: true, kgoal: kAtLeast},
		metric{key: "kcat_cons_rps", label: "kcat consume 100 B × 1p (best of 3, a queue for every record)", unit: "rec/s", higher: true, kgoal: kAtLeast},
		metric{key: "kcat_cons_default_rps", label: "↳ kcat's defaults, once (librdkafka's queue-full pause)", unit: "rec/s", higher: true},
	)
	return ms
}

// toolMetrics lists what kafka-producer-perf-test and
// kafka-consumer-perf-test print, in table order (MiB: 1,048,576 bytes, the
// tools' "MB").
func toolMetrics() []metric {
	return []metric{
		{key: "kt_prod_rps", label: "producer-perf-test throughput", unit: "rec/s", higher: true, kgoal: kAtLeast},
		{key: "kt_prod_mibps", label: "producer-perf-test throughput", unit: "MiB/s", higher: true},
		{key: "kt_prod_avg_ms", label: "producer-perf-test latency avg", unit: "ms"},
		{key: "kt_prod_p50_ms", label: "producer-perf-test latency p50", unit: "ms"},
		{key: "kt_prod_p95_ms", label: "producer-perf-test latency p95", unit: "ms"},
		{key: "kt_prod_p99_ms", label: "producer-perf-test latency p99", unit: "ms"},
		{key: "kt_prod_p999_ms", label: "producer-perf-test latency p99.9", unit: "ms"},
		{key: "kt_prod_max_ms", label: "producer-perf-test latency max", unit: "ms"},
		{key: "kt_cons_rps", label: "consumer-perf-test throughput", unit: "rec/s", higher: true, kgoal: kAtLeast},
		{key: "kt_cons_mibps", label: "consumer-perf-test throughput", unit: "MiB/s", higher: true},
		{key: "kt_cons_fetch_rps", label: "consumer-perf-test fetch throughput (after the group join)", unit: "rec/s", higher: true, kgoal: kAtLeast},
		{key: "kt_cons_fetch_mibps", label: "consumer-perf-test fetch throughput (after the group join)", unit: "MiB/s", higher: true},
		{key: "kt_cons_rebalance_ms", label: "consumer-perf-test rebalance (group join)", unit: "ms"},
	}
}

// displayName is how the report names a target.
func displayName(t string) string {
	return map[string]string{"gregor": "Gregor", "kfake": "kfake", "kafka": "Kafka"}[t]
}

// fmtValue formats v for unit.
func fmtValue(v float64, unit string) string {
	switch unit {
	case "rec/s":
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2fM", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.0fk", v/1e3)
		}
		return fmt.Sprintf("%.0f", v)
	case "ms":
		switch {
		case v >= 100:
			return fmt.Sprintf("%.0f", v)
		case v >= 10:
			return fmt.Sprintf("%.1f", v)
		}
		return fmt.Sprintf("%.2f", v)
	case "MB", "MB/s", "MiB/s":
		if v >= 100 {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.1f", v)
	case "fraction":
		return fmt.Sprintf("%.0f%%", v*100)
	case "cores":
		return fmt.Sprintf("%.2f", v)
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	if v >= 1 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func fmtSummary(s summary, unit string) string {
	if s.n == 0 {
		return "—"
	}
	if s.n == 1 || s.min == s.max {
		return fmtValue(s.med, unit)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtValue(s.med, unit), fmtValue(s.min, unit), fmtValue(s.max, unit))
}

func fmtRatio(s summary) string {
	if s.n == 0 {
		return "—"
	}
	f := func(v float64) string {
		switch {
		case v >= 10:
			return fmt.Sprintf("%.0f", v)
		case v > 0 && v < 0.1:
			// Three significant digits, to judge "≤ 0.01" (100× faster).
			return fmt.Sprintf("%.*f", 2-int(math.Floor(math.Log10(v))), v)
		}
		return fmt.Sprintf("%.2f", v)
	}
	if s.n == 1 {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.min), f(s.max))
}

// results holds every run's numbers: per target name, per metric key, one
// value per run (NaN where the run failed to measure it).
type results struct {
	runs     int
	targets  []string // in run order; gregor first
	values   map[string]map[string][]float64
	loopback []float64 // bytes/s, one per run
	errs     []string
	notes    []string
}

// note records a remark for the report, such as a phase cut at its cap.
func (rs *results) note(s string) {
	log.Print(s)
	rs.notes = append(rs.notes, s)
}

func newResults(runs int) *results {
	return &results{runs: runs, values: map[string]map[string][]float64{}}
}

// set records v for target t, metric key, run r.
func (rs *results) set(t, key string, r int, v float64) {
	m := rs.values[t]
	if m == nil {
		m = map[string][]float64{}
		rs.values[t] = m
	}
	vs := m[key]
	if vs == nil {
		vs = make([]float64, rs.runs)
		for i := range vs {
			vs[i] = math.NaN()
		}
		m[key] = vs
	}
	vs[r] = v
}

func (rs *results) get(t, key string) []float64 { return rs.values[t][key] }

// has reports whether target t was run.
func (rs *results) has(t string) bool {
	for _, x := range rs.targets {
		if x == t {
			return true
		}
	}
	return false
}

// others are the targets Gregor is compared with.
func (rs *results) others() []string {
	var o []string
	for _, t := range rs.targets {
		if t != "gregor" {
			o = append(o, t)
		}
	}
	return o
}

// ratios returns gregor/other per run for key.
func (rs *results) ratios(key, other string) []float64 {
	g, k := rs.get("gregor", key), rs.get(other, key)
	out := make([]float64, 0, rs.runs)
	for i := 0; i < len(g) && i < len(k); i++ {
		if k[i] > 0 && !math.IsNaN(g[i]) {
			out = append(out, g[i]/k[i])
		}
	}
	return out
}

// table renders the results of ms as a markdown table: a column per
// target, then per other target the ratio Gregor/other, its target and
// whether it is met (against kfake: metric.goal; against Kafka: kgoal).
// Rows no target measured are left out.
func (rs *results) table(ms []metric) string { return rs.tableOf(ms, rs.targets) }

// toolTable is table for the Kafka tools, which kfake does not run.
func (rs *results) toolTable() string {
	var ts []string
	for _, t := range rs.targets {
		if t != "kfake" {
			ts = append(ts, t)
		}
	}
	return rs.tableOf(toolMetrics(), ts)
}

// tableOf is table for the given targets (gregor first).
func (rs *results) tableOf(ms []metric, targets []string) string {
	var others []string
	for _, t := range targets {
		if t != "gregor" {
			others = append(others, t)
		}
	}
	var b bytes.Buffer
	b.WriteString("| metric | unit |")
	align := "| --- | --- |"
	for _, t := range targets {
		fmt.Fprintf(&b, " %s |", displayName(t))
		align += " ---: |"
	}
	for _, o := range others {
		fmt.Fprintf(&b, " Gregor/%s | target | met |", displayName(o))
		align += " ---: | --- | --- |"
	}
	b.WriteString("\n" + align + "\n")
	for _, m := range ms {
		measured := false
		for _, t := range targets {
			measured = measured || summarize(rs.get(t, m.key)).n > 0
		}
		if !measured {
			continue
		}
		g := summarize(rs.get("gregor", m.key))
		fmt.Fprintf(&b, "| %s | %s |", m.label, m.unit)
		for _, t := range targets {
			cell := fmtSummary(summarize(rs.get(t, m.key)), m.unit)
			if m.onlyG && t != "gregor" {
				cell = "n/a"
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		for _, o := range others {
			r := summarize(rs.ratios(m.key, o))
			gl := m.goal
			if o == "kafka" {
				gl = m.kgoal
			}
			tgt, met := "", ""
			if gl != nil {
				tgt = gl.String()
				met = "not measured"
				if ok, known := gl.met(g, r); known {
					met = "no"
					if ok {
						met = "**yes**"
					}
				}
			}
			fmt.Fprintf(&b, " %s | %s | %s |", fmtRatio(r), tgt, met)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// limit names what most likely bounded a phase from the cores busy in the
// broker, in the client and on the whole machine of nproc cores.
func limit(broker, client, machine float64, nproc int) string {
	switch {
	case machine >= 0.85*float64(nproc):
		return "machine"
	case client >= 0.85 && client >= broker:
		return "client"
	case broker >= 0.85:
		return "broker"
	}
	return "round trips"
}

// utilTable renders the cores busy per throughput phase.
func (rs *results) utilTable() string {
	var b bytes.Buffer
	b.WriteString("| phase |")
	align := "| --- |"
	for _, t := range rs.targets {
		fmt.Fprintf(&b, " %s: broker | client | machine | likely limit |", displayName(t))
		align += " ---: | ---: | ---: | --- |"
	}
	b.WriteString("\n" + align + "\n")
	for _, ph := range []string{"prod", "cons"} {
		for _, r := range rows {
			name := map[string]string{"prod": "produce ", "cons": "consume "}[ph] + r.label()
			fmt.Fprintf(&b, "| %s |", name)
			for _, t := range rs.targets {
				br := summarize(rs.get(t, "cores_broker_"+ph+"/"+r.topic()))
				cl := summarize(rs.get(t, "cores_client_"+ph+"/"+r.topic()))
				ma := summarize(rs.get(t, "cores_machine_"+ph+"/"+r.topic()))
				lim := "—"
				if br.n > 0 && cl.n > 0 && ma.n > 0 {
					lim = limit(br.med, cl.med, ma.med, runtime.NumCPU())
				}
				fmt.Fprintf(&b, " %s | %s | %s | %s |", fmtMed(br), fmtMed(cl), fmtMed(ma), lim)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func fmtMed(s summary) string {
	if s.n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", s.med)
}

// svg draws the median Gregor/other ratio of every metric that has one as a
// horizontal bar on a log scale around 1, green where Gregor is better.
func (rs *results) svg(other string) string {
	type bar struct {
		label string
		ratio float64
		good  bool
	}
	var bars []bar
	for _, m := range metrics() {
		r := summarize(rs.ratios(m.key, other))
		if r.n == 0 || r.med <= 0 || m.unit == "MB/s" { // MB/s repeats rec/s
			continue
		}
		label := m.label
		if strings.HasPrefix(label, "↳") {
			label = "↳ broker's own startup"
		}
		label += " (" + m.unit + ")"
		bars = append(bars, bar{label, r.med, (r.med >= 1) == m.higher})
	}
	const (
		labelW = 330
		plotW  = 420
		rowH   = 18
		top    = 40
	)
	// log10 axis from 1/100 to 100; bars beyond are clipped.
	const decades = 2.0
	x := func(r float64) float64 {
		l := math.Log10(r)
		l = math.Max(-decades, math.Min(decades, l))
		return labelW + plotW/2 + l/decades*plotW/2
	}
	h := top + rowH*len(bars) + 30
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", labelW+plotW+70, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="13" font-weight="bold">Gregor / %s, median of per-run ratios (log scale; green: Gregor better)</text>`+"\n", displayName(other))
	for _, t := range []float64{0.01, 0.1, 1, 10, 100} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x(t), top-6, x(t), h-24, map[bool]string{true: "black", false: "#ddd"}[t == 1])
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(t), h-10, trimFloat(t))
	}
	for i, br := range bars {
		y := top + i*rowH
		x0, x1 := x(1), x(br.ratio)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		col := "#c0392b"
		if br.good {
			col = "#27ae60"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+12, xmlEscape(br.label))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y+2, math.Max(x1-x0, 1), rowH-5, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", math.Max(x(1), x(br.ratio))+4, y+12, fmtRatio(summary{med: br.ratio, n: 1}))
	}
	fmt.Fprintln(&b, "</svg>")
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Markers delimit the generated part of docs/benchmarks.md; text outside them
// is kept when the benchmark rewrites the file.
const (
	beginMarker = "<!-- BEGIN gregor-bench output: generated, do not edit -->"
	endMarker   = "<!-- END gregor-bench output -->"
)

// writeDoc replaces the generated part of path (or creates the file).
func writeDoc(path, generated string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	block := beginMarker + "\n" + generated + endMarker + "\n"
	var out string
	s := string(old)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	switch {
	case i >= 0 && j > i:
		out = s[:i] + block + strings.TrimPrefix(s[j+len(endMarker):], "\n")
	case len(s) > 0:
		out = strings.TrimRight(s, "\n") + "\n\n" + block
	default:
		out = "# Benchmarks: Gregor beside kfake and Apache Kafka\n\n" + block
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
