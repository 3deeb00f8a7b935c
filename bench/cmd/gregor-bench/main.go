// Command gregor-bench runs Gregor, franz-go's kfake and Apache Kafka side by
// side, each as its own process on 127.0.0.1, and writes a comparison to
// docs/benchmarks.md. Kafka is started by compat/kafkaref (a JDK and Maven
// are needed; without them it is skipped with a note); -targets and -phases
// choose what runs.
//
//	cd bench && go run ./cmd/gregor-bench [flags]
//
// It builds both brokers (unless --gregor-bin and --kfake-bin name them),
// measures the loopback limit, then runs the targets in turn, run by run
// (gregor, kfake, kafka, gregor, …), each on a fresh process and data
// directory: start to first ApiVersions, idle RSS, produce then consume
// throughput for 100 B and 1 KiB records on 1 and 8 partitions with broker
// CPU around each phase, produce-ack and end-to-end latency at a fixed rate,
// a 4-member consumer group on 8 partitions, kcat, RSS after the run, and
// Kafka's kafka-producer-perf-test and kafka-consumer-perf-test (Gregor and
// Kafka only).
// Gregor is also restarted on a data directory filled once with
// --recovery-bytes of segments. After the measured runs it counts the
// broker's sendfile/write/writev calls during a consume with strace, and with
// --profile DIR it records perf profiles of Gregor for every throughput row.
//
// Every phase is bounded by --phase-timeout and the whole run by --timeout;
// every process it started is killed when it exits or is interrupted.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

type config struct {
	root          string
	gregorBin     string
	gregorRev     string
	kfakeBin      string
	runs          int
	n             int
	rate          int
	latencyFor    time.Duration
	heartbeat     time.Duration
	recoveryBytes int64
	kcatRecords   int
	loopbackBytes int64
	straceRecords int
	phaseTimeout  time.Duration
	rowMax        time.Duration
	flushFor      time.Duration
	idempotent    bool
	loadBefore    string // 1-minute load average before the first run
	revision      string // what Gregor was built from
	timeout       time.Duration
	budget        time.Duration
	out           string
	svgOut        string
	jsonOut       string
	profileDir    string
	noStrace      bool
	keep          bool

	targets     []string        // names of the targets to run, in run order
	phases      map[string]bool // phases to run (see allPhases)
	kafkaHeap   string          // Kafka's -Xmx and -Xms
	kafkaCP     string          // Kafka's classpath (broker and tools)
	kafkaVer    string
	javaVer     string
	toolRecords int // records of kafka-producer/consumer-perf-test
	toolSize    int
}

// allPhases are the phases -phases can name, in the order they run.
var allPhases = []string{"loopback", "throughput", "latency", "group", "kcat", "tools", "recovery", "strace"}

// has reports whether phase is on.
func (c *config) has(phase string) bool { return c.phases[phase] }

// hasTarget reports whether target name is run.
func (c *config) hasTarget(name string) bool {
	for _, t := range c.targets {
		if t == name {
			return true
		}
	}
	return false
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("gregor-bench: ")
	var c config
	flag.StringVar(&c.root, "root", "", "Gregor's module root (default: found upward from the working directory)")
	flag.StringVar(&c.gregorBin, "gregor-bin", "", "gregor binary (default: built from ROOT/cmd/gregor)")
	flag.StringVar(&c.gregorRev, "gregor-rev", "", "build Gregor from this git revision (git archive) instead of the working tree")
	flag.StringVar(&c.kfakeBin, "kfake-bin", "", "kfakeserver binary (default: built from ROOT/bench/cmd/kfakeserver)")
	flag.IntVar(&c.runs, "runs", 5, "runs per target (fewer if --budget runs out)")
	flag.IntVar(&c.n, "n", 1_000_000, "records per throughput row (and for the consumer group)")
	flag.IntVar(&c.rate, "rate", 10_000, "records/s of the latency phase")
	flag.DurationVar(&c.latencyFor, "latency-duration", 3*time.Second, "length of the latency phase")
	flag.DurationVar(&c.heartbeat, "group-heartbeat", 250*time.Millisecond, "heartbeat interval of the group members")
	flag.Int64Var(&c.recoveryBytes, "recovery-bytes", 1<<30, "bytes of 1 KiB records Gregor's restart is measured on (0: skip)")
	flag.IntVar(&c.kcatRecords, "kcat-records", 1_000_000, "100 B records kcat produces and consumes (0: skip)")
	flag.Int64Var(&c.loopbackBytes, "loopback-bytes", 2<<30, "bytes moved over 127.0.0.1 per run to measure the loopback limit")
	flag.IntVar(&c.straceRecords, "strace-records", 200_000, "1 KiB records consumed under strace")
	flag.BoolVar(&c.noStrace, "no-strace", false, "skip the strace zero-copy check")
	flag.DurationVar(&c.phaseTimeout, "phase-timeout", 90*time.Second, "bound of every phase")
	flag.DurationVar(&c.rowMax, "row-max", 8*time.Second, "a produce phase stops issuing records after this and reports the rate of what was acknowledged")
	flag.DurationVar(&c.flushFor, "flush-max", 5*time.Second, "how long a produce phase then waits for outstanding acknowledgements")
	flag.BoolVar(&c.idempotent, "idempotent", true, "produce with franz-go's idempotent producer (its default)")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "hard bound of the whole benchmark")
	flag.DurationVar(&c.budget, "budget", 15*time.Minute, "start another run only if it is expected to end within this time from the start")
	flag.StringVar(&c.out, "out", "", "markdown file to write (default ROOT/docs/benchmarks.md; - for stdout only)")
	flag.StringVar(&c.svgOut, "svg", "", "SVG chart of the ratios (default ROOT/bench/results/ratios.svg)")
	flag.StringVar(&c.jsonOut, "json", "", "raw per-run numbers (default ROOT/bench/results/last.json)")
	flag.StringVar(&c.profileDir, "profile", "", "after the runs, perf-record Gregor during each throughput row into this directory")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	targets := flag.String("targets", "gregor,kfake,kafka", "targets to run, among gregor, kfake and kafka (Apache Kafka, needs java and mvn; skipped with a note if missing)")
	phases := flag.String("phases", strings.Join(allPhases, ","), "phases to run, among "+strings.Join(allPhases, ", ")+" (start and RSS are always measured; group needs throughput)")
	flag.StringVar(&c.kafkaHeap, "kafka-heap", "1g", "Kafka's heap, -Xmx and -Xms (kafka-server-start.sh's default)")
	flag.IntVar(&c.toolRecords, "tool-records", 1_000_000, "records kafka-producer-perf-test sends and kafka-consumer-perf-test reads")
	flag.IntVar(&c.toolSize, "tool-size", 100, "record size of kafka-producer-perf-test")
	flag.Parse()
	if err := c.parseLists(*targets, *phases); err != nil {
		fmt.Fprintln(os.Stderr, "gregor-bench:", err)
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		log.Printf("%v: stopping every process", s)
		cancel()
		killAll()
		// run returns promptly once its context is done and removes its
		// temporary directory; this is only the backstop.
		time.Sleep(30 * time.Second)
		os.Exit(130)
	}()
	err := run(ctx, &c)
	cancel()
	killAll()
	if err != nil {
		log.Fatal(err)
	}
}

// parseLists sets c.targets and c.phases from the comma-separated flags.
func (c *config) parseLists(targets, phases string) error {
	seen := map[string]bool{}
	for _, t := range strings.Split(targets, ",") {
		t = strings.TrimSpace(t)
		switch t {
		case "":
			continue
		case "gregor", "kfake", "kafka":
		default:
			return fmt.Errorf("-targets: unknown target %q (gregor, kfake, kafka)", t)
		}
		if !seen[t] {
			seen[t] = true
			c.targets = append(c.targets, t)
		}
	}
	if !seen["gregor"] {
		return errors.New("-targets must include gregor (every ratio is Gregor's)")
	}
	c.phases = map[string]bool{}
	for _, ph := range strings.Split(phases, ",") {
		ph = strings.TrimSpace(ph)
		if ph == "" {
			continue
		}
		known := false
		for _, a := range allPhases {
			known = known || a == ph
		}
		if !known {
			return fmt.Errorf("-phases: unknown phase %q (%s)", ph, strings.Join(allPhases, ", "))
		}
		c.phases[ph] = true
	}
	return nil
}

func (c *config) bound() bound {
	return bound{maxFor: c.rowMax, flushFor: c.flushFor, idempotent: c.idempotent}
}

// setupKafka checks for java and mvn and resolves Kafka's classpath (the
// broker and its tools) once, with Maven.
func (c *config) setupKafka(ctx context.Context) error {
	if err := kafkaref.Available(); err != nil {
		return err
	}
	var err error
	if c.kafkaVer, err = kafkaref.Version(); err != nil {
		return err
	}
	log.Printf("resolving the classpath of Apache Kafka %s with Maven", c.kafkaVer)
	if c.kafkaCP, err = kafkaref.Classpath(ctx); err != nil {
		return err
	}
	c.javaVer = kafkaref.JavaVersion()
	return nil
}

// svgPath is the chart of the ratios Gregor/other: c.svgOut for kfake (or
// for Kafka if kfake is not run), else with "-kafka" before its extension.
func (c *config) svgPath(other string) string {
	if other == "kfake" || !c.hasTarget("kfake") {
		return c.svgOut
	}
	ext := filepath.Ext(c.svgOut)
	return strings.TrimSuffix(c.svgOut, ext) + "-" + other + ext
}

// dropTarget removes name from c.targets.
func (c *config) dropTarget(name string) {
	var ts []string
	for _, t := range c.targets {
		if t != name {
			ts = append(ts, t)
		}
	}
	c.targets = ts
}

// checkout extracts the tree of git revision rev of root into dir and
// returns the revision's short hash.
func checkout(ctx context.Context, root, rev, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", rev+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s: %w", rev, err)
	}
	short := strings.TrimSpace(string(out))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", short)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := archive.Start(); err != nil {
		return "", err
	}
	xerr := untar(pipe, dir)
	if err := archive.Wait(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", short, err)
	}
	return short, xerr
}

// untar writes the regular files and directories of the tar stream r under
// dir, refusing paths that would leave it.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("untar: unsafe path %q", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// findRoot walks up from the working directory to Gregor's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			sc := bufio.NewScanner(f)
			sc.Scan()
			first := strings.TrimSpace(sc.Text())
			f.Close()
			if first == "module github.com/gregor-broker/gregor" {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside Gregor's module; use --root")
		}
		dir = parent
	}
}

func build(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

func run(ctx context.Context, c *config) error {
	if c.runs < 1 || c.n < 2 {
		return errors.New("--runs must be ≥ 1 and --n ≥ 2")
	}
	var err error
	if c.root == "" {
		if c.root, err = findRoot(); err != nil {
			return err
		}
	}
	if c.out == "" {
		c.out = filepath.Join(c.root, "docs", "benchmarks.md")
	}
	if c.svgOut == "" {
		c.svgOut = filepath.Join(c.root, "bench", "results", "ratios.svg")
	}
	if c.jsonOut == "" {
		c.jsonOut = filepath.Join(c.root, "bench", "results", "last.json")
	}
	tmp, err := os.MkdirTemp("", "gregor-bench-")
	if err != nil {
		return err
	}
	if c.keep {
		log.Printf("temporary directory %s kept", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	began := time.Now()
	c.loadBefore = loadAvg()
	switch {
	case c.gregorBin != "":
		c.revision = "prebuilt binary " + c.gregorBin
	case c.gregorRev != "":
		src := filepath.Join(tmp, "gregor-src")
		if c.revision, err = checkout(ctx, c.root, c.gregorRev, src); err != nil {
			return err
		}
		c.gregorBin = filepath.Join(tmp, "gregor")
		log.Printf("building gregor at %s", c.revision)
		if err := build(ctx, src, c.gregorBin, "./cmd/gregor"); err != nil {
			return err
		}
	default:
		c.revision = gregorRevision(c.root)
		c.gregorBin = filepath.Join(tmp, "gregor")
		log.Printf("building gregor at %s", c.revision)
		if err := build(ctx, c.root, c.gregorBin, "./cmd/gregor"); err != nil {
			return err
		}
	}
	if !c.has("recovery") {
		c.recoveryBytes = 0
	}
	if !c.has("kcat") {
		c.kcatRecords = 0
	}
	if !c.has("strace") {
		c.noStrace = true
	}
	rs := newResults(c.runs)
	if c.hasTarget("kafka") || c.has("tools") {
		if err := c.setupKafka(ctx); err != nil {
			rs.note(fmt.Sprintf("Apache Kafka skipped (its target and kafka-*-perf-test): %v", err))
			c.dropTarget("kafka")
			c.phases["tools"] = false
		}
	}
	if c.hasTarget("kfake") && c.kfakeBin == "" {
		c.kfakeBin = filepath.Join(tmp, "kfakeserver")
		log.Print("building kfakeserver")
		if err := build(ctx, filepath.Join(c.root, "bench"), c.kfakeBin, "./cmd/kfakeserver"); err != nil {
			return err
		}
	}
	// Gregor runs at its default log level (info): the listening line is
	// logged at info. group.initial.rebalance.delay.ms=0 because kfake has
	// no such delay; Gregor's default (Kafka's) is 3000.
	gregor := target{name: "gregor", bin: c.gregorBin, args: func(dir string) []string {
		return []string{"--listen", "127.0.0.1:0", "--data-dir", dir,
			"--set", "group.initial.rebalance.delay.ms=0"}
	}}
	kfake := target{name: "kfake", bin: c.kfakeBin, args: func(string) []string {
		return []string{"--listen", "127.0.0.1:0", "--partitions", "1"}
	}}
	kafka := target{name: "kafka", kafka: &kafkaref.Options{Heap: c.kafkaHeap, JVMArgs: kafkaJVMArgs, Props: kafkaProps}}
	var targets []target
	for _, name := range c.targets {
		targets = append(targets, map[string]target{"gregor": gregor, "kfake": kfake, "kafka": kafka}[name])
	}
	rs.targets = c.targets

	kcatFile := ""
	if c.kcatRecords > 0 {
		if _, err := exec.LookPath("kcat"); err != nil {
			log.Print("kcat not on PATH; the kcat check is skipped")
			c.kcatRecords = 0
		} else {
			kcatFile = filepath.Join(tmp, "kcat-100.txt")
			if err := writeLines(kcatFile, c.kcatRecords, 100); err != nil {
				return err
			}
		}
	}

	fullDir := ""
	if c.recoveryBytes > 0 {
		fullDir = filepath.Join(tmp, "full")
		if err := fill(ctx, c, gregor, fullDir); err != nil {
			return fmt.Errorf("filling %s: %w", fullDir, err)
		}
	}

	runsStart := time.Now()
	for r := 0; r < c.runs; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r > 0 {
			perRun := time.Since(runsStart) / time.Duration(r)
			if time.Since(began)+perRun > c.budget {
				rs.note(fmt.Sprintf("only %d of %d runs fitted in the %v budget (a run took %v)", r, c.runs, c.budget, perRun.Round(time.Second)))
				break
			}
		}
		var bps float64
		if c.has("loopback") && c.loopbackBytes > 0 {
			lctx, cancel := context.WithTimeout(ctx, c.phaseTimeout)
			bps, err = loopback(lctx, c.loopbackBytes)
			cancel()
			if err != nil {
				rs.errs = append(rs.errs, fmt.Sprintf("run %d loopback: %v", r+1, err))
			} else {
				rs.loopback = append(rs.loopback, bps)
				log.Printf("run %d: loopback %.2f GB/s", r+1, bps/1e9)
			}
		}
		for _, t := range targets {
			dir := filepath.Join(tmp, fmt.Sprintf("%s-%d", t.name, r+1))
			runTarget(ctx, c, rs, t, r, dir, kcatFile, bps)
			os.RemoveAll(dir)
			if t.name == "gregor" && fullDir != "" {
				measureStart(ctx, c, rs, t, r, fullDir)
			}
		}
	}

	if err := ctx.Err(); err != nil {
		return err
	}
	var zc []zeroCopy
	if !c.noStrace {
		if _, err := exec.LookPath("strace"); err != nil {
			rs.errs = append(rs.errs, "strace not on PATH (apt-get install -y strace): zero-copy check skipped")
		} else {
			for _, t := range targets {
				z, err := straceConsume(ctx, c, t, filepath.Join(tmp, "strace-"+t.name), tmp)
				if err != nil {
					rs.errs = append(rs.errs, fmt.Sprintf("strace %s: %v", t.name, err))
					continue
				}
				zc = append(zc, z)
			}
		}
	}
	if c.profileDir != "" {
		if err := profile(ctx, c, gregor, filepath.Join(tmp, "profile")); err != nil {
			rs.errs = append(rs.errs, fmt.Sprintf("profile: %v", err))
		}
	}

	took := time.Since(began)
	doc := render(c, rs, zc, took)
	fmt.Print(rs.table(metrics()))
	if c.has("tools") && c.kafkaCP != "" {
		fmt.Print("\n" + rs.toolTable())
	}
	for _, e := range rs.errs {
		log.Print("error: ", e)
	}
	if c.out == "-" {
		fmt.Print(doc)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.svgOut), 0o755); err != nil {
		return err
	}
	for _, o := range rs.others() {
		if err := writeFile(c.svgPath(o), rs.svg(o)); err != nil {
			return err
		}
	}
	raw, _ := json.MarshalIndent(struct {
		Values   map[string]map[string][]float64 `json:"values"`
		Loopback []float64                       `json:"loopback_bytes_per_s"`
		Errors   []string                        `json:"errors"`
	}{nanToNeg(rs.values), rs.loopback, rs.errs}, "", " ")
	if err := writeFile(c.jsonOut, string(raw)+"\n"); err != nil {
		return err
	}
	if err := writeDoc(c.out, doc); err != nil {
		return err
	}
	log.Printf("wrote %s, the charts and %s in %v", c.out, c.jsonOut, took.Round(time.Second))
	return nil
}

// nanToNeg replaces NaN (not measured) by -1 so that the values encode as JSON.
func nanToNeg(v map[string]map[string][]float64) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	for t, m := range v {
		out[t] = map[string][]float64{}
		for k, vs := range m {
			c := make([]float64, len(vs))
			for i, x := range vs {
				if x != x {
					x = -1
				}
				c[i] = x
			}
			out[t][k] = c
		}
	}
	return out
}

// loadAvg returns the 1-minute load average, which tells how much else the
// machine was doing.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// gregorRevision describes the commit of root and whether its tree had
// uncommitted changes.
func gregorRevision(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	rev := strings.TrimSpace(string(out))
	// Only changes that can reach the broker binary count.
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no",
		"--", "*.go", "go.mod", "go.sum", ":(exclude)bench").Output()
	if err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += " with uncommitted changes"
	}
	return rev
}
