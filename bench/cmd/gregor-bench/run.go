package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/bench/internal/procstat"
)

// runTarget measures one target for run r on a fresh process and dataDir.
// Failures are recorded in rs.errs; the phases that do not depend on a
// failed one still run.
func runTarget(ctx context.Context, c *config, rs *results, t target, r int, dataDir, kcatFile string, loopbackBps float64) {
	fail := func(phase string, err error) {
		msg := fmt.Sprintf("run %d %s %s: %v", r+1, t.name, phase, err)
		log.Print(msg)
		rs.errs = append(rs.errs, msg)
	}
	if ctx.Err() != nil {
		return
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		fail("mkdir", err)
		return
	}
	p, took, err := startProc(ctx, t, dataDir, c.phaseTimeout)
	if err != nil {
		fail("start", err)
		return
	}
	defer func() {
		if err := p.stop(15 * time.Second); err != nil {
			fail("stop", err)
		}
	}()
	rs.set(t.name, "start_empty_ms", r, ms(took))
	if d := p.startup(); d > 0 {
		rs.set(t.name, "start_self_ms", r, ms(d))
	}
	time.Sleep(300 * time.Millisecond)
	if rss, _, err := memKB(p.pid); err == nil {
		rs.set(t.name, "rss_idle_mb", r, float64(rss)/1e3)
	}
	log.Printf("run %d %s: pid %d on %s, ApiVersions after %v", r+1, t.name, p.pid, p.addr, took.Round(time.Microsecond))

	// phase runs f bounded by the phase timeout unless the broker is gone.
	phase := func(name string, f func(ctx context.Context) error) bool {
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-p.exited:
			fail(name, fmt.Errorf("broker exited: %s", p.lastLines()))
			return false
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, c.phaseTimeout)
		defer cancel()
		if err := f(pctx); err != nil {
			fail(name, err)
			return false
		}
		return true
	}

	// inTopic is the number of records each throughput topic holds.
	inTopic := map[string]int{}
	tputRows := rows
	if !c.has("throughput") {
		tputRows = nil
	}
	for _, row := range tputRows {
		k := row.topic()
		phase("produce "+row.label(), func(ctx context.Context) error {
			if err := createTopic(ctx, p.addr, k, row.parts); err != nil {
				return err
			}
			cpu0, self0, mach0, wall0 := cpuSeconds(p.pid), selfCPU(), machineBusy(), time.Now()
			res, err := produceN(ctx, p.addr, k, c.n, row.size, c.bound())
			if err != nil {
				return err
			}
			cpu := cpuSeconds(p.pid) - cpu0
			wall := time.Since(wall0).Seconds()
			rs.set(t.name, "cores_broker_prod/"+k, r, cpu/wall)
			rs.set(t.name, "cores_client_prod/"+k, r, (selfCPU()-self0)/wall)
			rs.set(t.name, "cores_machine_prod/"+k, r, (machineBusy()-mach0)/wall)
			bytes := float64(res.acked) * float64(row.size)
			rate := float64(res.acked) / res.took.Seconds()
			rs.set(t.name, "prod_rps/"+k, r, rate)
			rs.set(t.name, "prod_mbps/"+k, r, rate*float64(row.size)/1e6)
			rs.set(t.name, "cpu_in/"+k, r, cpu/(bytes/1e9))
			inTopic[k] = res.acked
			if res.cut {
				rs.note(fmt.Sprintf("run %d %s produce %s: stopped at the %v cap with %d of %d records acknowledged",
					r+1, t.name, row.label(), c.rowMax, res.acked, c.n))
			}
			log.Printf("run %d %s: produce %s: %.0f rec/s, %.1f MB/s, broker CPU %.2fs", r+1, t.name, row.label(),
				rate, rate*float64(row.size)/1e6, cpu)
			return nil
		})
		if inTopic[k] == 0 {
			continue
		}
		phase("consume "+row.label(), func(ctx context.Context) error {
			cpu0, self0, mach0 := cpuSeconds(p.pid), selfCPU(), machineBusy()
			n := inTopic[k]
			el, nb, err := consumeN(ctx, p.addr, k, n)
			if err != nil {
				return err
			}
			cpu := cpuSeconds(p.pid) - cpu0
			rs.set(t.name, "cores_broker_cons/"+k, r, cpu/el.Seconds())
			rs.set(t.name, "cores_client_cons/"+k, r, (selfCPU()-self0)/el.Seconds())
			rs.set(t.name, "cores_machine_cons/"+k, r, (machineBusy()-mach0)/el.Seconds())
			rs.set(t.name, "cons_rps/"+k, r, float64(n)/el.Seconds())
			rs.set(t.name, "cons_mbps/"+k, r, float64(nb)/1e6/el.Seconds())
			rs.set(t.name, "cpu_out/"+k, r, cpu/(float64(nb)/1e9))
			if row.size == 1024 && row.parts == 1 && loopbackBps > 0 {
				rs.set(t.name, "cons_loopback_frac", r, float64(nb)/el.Seconds()/loopbackBps)
			}
			log.Printf("run %d %s: consume %s: %.0f rec/s, %.1f MB/s, broker CPU %.2fs", r+1, t.name, row.label(),
				float64(n)/el.Seconds(), float64(nb)/1e6/el.Seconds(), cpu)
			return nil
		})
		if row.size == 1024 && row.parts == 1 && loopbackBps > 0 {
			phase("raw fetch "+row.label(), func(ctx context.Context) error {
				cpu0 := cpuSeconds(p.pid)
				el, nb, err := rawFetchN(ctx, p.addr, k, int64(inTopic[k]))
				if err != nil {
					return err
				}
				rs.set(t.name, "cons_raw_loopback_frac", r, float64(nb)/el.Seconds()/loopbackBps)
				log.Printf("run %d %s: raw fetch %s: %.1f MB/s of record batches, broker CPU %.2fs", r+1, t.name, row.label(),
					float64(nb)/1e6/el.Seconds(), cpuSeconds(p.pid)-cpu0)
				return nil
			})
		}
	}

	latency := phase
	if !c.has("latency") {
		latency = func(string, func(context.Context) error) bool { return false }
	}
	latency("latency", func(ctx context.Context) error {
		l, err := fixedRate(ctx, p.addr, "latency", c.rate, c.latencyFor, c.rate/10)
		if err != nil {
			return err
		}
		for _, q := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p99", 0.99}, {"p999", 0.999}} {
			rs.set(t.name, "ack_"+q.name, r, ms(percentile(l.ack, q.q)))
			rs.set(t.name, "e2e_"+q.name, r, ms(percentile(l.e2e, q.q)))
		}
		log.Printf("run %d %s: latency at %d rec/s: ack p50 %v p99 %v, e2e p50 %v p99 %v p99.9 %v", r+1, t.name, c.rate,
			percentile(l.ack, 0.5), percentile(l.ack, 0.99), percentile(l.e2e, 0.5), percentile(l.e2e, 0.99), percentile(l.e2e, 0.999))
		return nil
	})

	if gt := (row{100, 8}).topic(); inTopic[gt] > 0 && c.has("group") {
		phase("group", func(ctx context.Context) error {
			g, err := groupDrain(ctx, p.addr, gt, 8, 4, inTopic[gt], c.heartbeat)
			if err != nil {
				return err
			}
			rs.set(t.name, "group_stable_ms", r, ms(g.stable))
			rs.set(t.name, "group_drain_rps", r, float64(g.n)/g.drain.Seconds())
			log.Printf("run %d %s: group stable after %v, drained %d in %v", r+1, t.name, g.stable.Round(time.Millisecond), g.n, g.drain.Round(time.Millisecond))
			return nil
		})
	}

	if kcatFile != "" {
		phase("kcat", func(ctx context.Context) error {
			const topic = "kcat"
			if err := createTopic(ctx, p.addr, topic, 1); err != nil {
				return err
			}
			pe, err := kcatProduce(ctx, p.addr, topic, kcatFile)
			if err != nil {
				return err
			}
			ce, _, err := kcatConsume(ctx, p.addr, topic, c.kcatRecords)
			if err != nil {
				return err
			}
			// Best of three with a queue that holds every record: kcat's
			// start-up (a partition joining its broker thread waits up to
			// 500 ms for a wake-up) and its queue-full pause (kcatQueue)
			// are client timers, not the broker.
			var best time.Duration
			for i := 0; i < 3; i++ {
				d, _, err := kcatConsume(ctx, p.addr, topic, c.kcatRecords, kcatQueue(c.kcatRecords, 100)...)
				if err != nil {
					return err
				}
				if best == 0 || d < best {
					best = d
				}
			}
			rs.set(t.name, "kcat_prod_rps", r, float64(c.kcatRecords)/pe.Seconds())
			rs.set(t.name, "kcat_cons_default_rps", r, float64(c.kcatRecords)/ce.Seconds())
			rs.set(t.name, "kcat_cons_rps", r, float64(c.kcatRecords)/best.Seconds())
			log.Printf("run %d %s: kcat produce %v, consume %v (defaults), best of 3 with a queue for every record %v", r+1, t.name,
				pe.Round(time.Millisecond), ce.Round(time.Millisecond), best.Round(time.Millisecond))
			return nil
		})
	}

	// RSS after the run is taken before Kafka's tools, which only Gregor
	// and Kafka run, so that the row stays comparable with kfake's.
	time.Sleep(500 * time.Millisecond)
	if rss, hwm, err := memKB(p.pid); err == nil {
		rs.set(t.name, "rss_end_mb", r, float64(rss)/1e3)
		rs.set(t.name, "rss_peak_mb", r, float64(hwm)/1e3)
	}

	if c.has("tools") && c.kafkaCP != "" && t.name != "kfake" {
		phase("kafka-perf-test", func(ctx context.Context) error {
			res, err := kafkaTools(ctx, c.kafkaCP, p.addr, c.toolRecords, c.toolSize)
			for k, v := range res {
				rs.set(t.name, k, r, v)
			}
			if err != nil {
				return err
			}
			log.Printf("run %d %s: producer-perf-test %.0f rec/s, p99 %.0f ms; consumer-perf-test %.0f rec/s", r+1, t.name,
				res["kt_prod_rps"], res["kt_prod_p99_ms"], res["kt_cons_rps"])
			return nil
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fill starts Gregor on dir, produces c.recoveryBytes of 1 KiB records to
// an 8-partition topic and stops it gracefully, leaving segments for
// measureStart. It produces without idempotence: only the bytes on disk
// matter here.
func fill(ctx context.Context, c *config, t target, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p, _, err := startProc(ctx, t, dir, c.phaseTimeout)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, c.phaseTimeout)
	defer cancel()
	n := int(c.recoveryBytes / 1024)
	start := time.Now()
	err = createTopic(pctx, p.addr, "full", 8)
	var res produced
	if err == nil {
		res, err = produceN(pctx, p.addr, "full", n, 1024, bound{maxFor: c.phaseTimeout / 2, flushFor: c.flushFor})
	}
	if err == nil && res.cut {
		err = fmt.Errorf("only %d of %d records acknowledged", res.acked, n)
	}
	if serr := p.stop(30 * time.Second); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	log.Printf("filled %s with %d MB of segments in %v", dir, c.recoveryBytes/1e6, time.Since(start).Round(time.Millisecond))
	return nil
}

// measureStart restarts t on the filled dir and records the time to its
// first ApiVersions answer.
func measureStart(ctx context.Context, c *config, rs *results, t target, r int, dir string) {
	p, took, err := startProc(ctx, t, dir, c.phaseTimeout)
	if err != nil {
		rs.errs = append(rs.errs, fmt.Sprintf("run %d %s restart on %d MB: %v", r+1, t.name, c.recoveryBytes/1e6, err))
		return
	}
	rs.set(t.name, "start_full_ms", r, ms(took))
	if d := p.startup(); d > 0 {
		rs.set(t.name, "start_full_self_ms", r, ms(d))
	}
	log.Printf("run %d %s: restart on %d MB of segments: ApiVersions after %v", r+1, t.name, c.recoveryBytes/1e6, took.Round(time.Microsecond))
	if err := p.stop(30 * time.Second); err != nil {
		rs.errs = append(rs.errs, err.Error())
	}
}

// zeroCopy is what strace counted in a broker during one consume.
type zeroCopy struct {
	target  string
	records int
	bytes   int64 // record bytes consumed
	took    time.Duration
	stats   map[string]sysStat
}

// straceConsume produces c.straceRecords 1 KiB records to t on a fresh
// process and consumes them once under strace.
func straceConsume(ctx context.Context, c *config, t target, dataDir, tmp string) (zeroCopy, error) {
	z := zeroCopy{target: t.name}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return z, err
	}
	defer os.RemoveAll(dataDir)
	p, _, err := startProc(ctx, t, dataDir, c.phaseTimeout)
	if err != nil {
		return z, err
	}
	defer p.stop(15 * time.Second)
	pctx, cancel := context.WithTimeout(ctx, c.phaseTimeout)
	defer cancel()
	const topic = "zerocopy"
	if err := createTopic(pctx, p.addr, topic, 1); err != nil {
		return z, err
	}
	res, err := produceN(pctx, p.addr, topic, c.straceRecords, 1024, c.bound())
	if err != nil {
		return z, err
	}
	z.records = res.acked
	z.stats, err = straceDuring(pctx, p.pid, tmp, func() error {
		el, nb, err := consumeN(pctx, p.addr, topic, res.acked)
		z.took, z.bytes = el, nb
		return err
	})
	log.Printf("strace %s: %v", t.name, z.stats)
	return z, err
}

// profile perf-records Gregor during each throughput row (produce and
// consume separately) and copies the reports to c.profileDir.
func profile(ctx context.Context, c *config, t target, dataDir string) error {
	if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	p, _, err := startProc(ctx, t, dataDir, c.phaseTimeout)
	if err != nil {
		return err
	}
	defer p.stop(15 * time.Second)
	for _, row := range rows {
		pctx, cancel := context.WithTimeout(ctx, c.phaseTimeout)
		k := row.topic()
		err := createTopic(pctx, p.addr, k, row.parts)
		if err == nil {
			var res produced
			err = perfDuring(pctx, p.pid, c.profileDir, "produce-"+k, func() error {
				var err error
				res, err = produceN(pctx, p.addr, k, c.n, row.size, c.bound())
				return err
			})
			if err == nil {
				err = perfDuring(pctx, p.pid, c.profileDir, "consume-"+k, func() error {
					_, _, err := consumeN(pctx, p.addr, k, res.acked)
					return err
				})
			}
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		log.Printf("profiled %s into %s", k, c.profileDir)
	}
	return nil
}

// render returns the generated part of docs/benchmarks.md.
func render(c *config, rs *results, zc []zeroCopy, took time.Duration) string {
	var b bytes.Buffer
	cmd := "make bench"
	if args := os.Args[1:]; len(args) > 0 {
		cmd = "cd bench && go run ./cmd/gregor-bench " + strings.Join(args, " ")
	}
	fmt.Fprintf(&b, "Generated by `%s` on %s in %v.\n\n", cmd, time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s; 1-minute load average %s before and %s after (the machine is shared, so absolute numbers move; the ratios are computed run by run).\n\n",
		procstat.Machine(), c.loadBefore, loadAvg())
	fmt.Fprintf(&b, "Gregor: %s, `--set group.initial.rebalance.delay.ms=0` (kfake has no such delay), default flush policy (no fsync per produce).", c.revision)
	if rs.has("kfake") {
		b.WriteString(" kfake: `bench/cmd/kfakeserver`, one in-memory broker.")
	}
	if rs.has("kafka") {
		fmt.Fprintf(&b, " Apache Kafka %s (`compat/kafkaref`: jars from Maven Central, one KRaft node in combined broker and controller mode, log dirs in a temporary directory) on %s with `-Xmx%s -Xms%s %s` (kafka-server-start.sh's options) and `group.initial.rebalance.delay.ms=0` (as Kafka's own config/server.properties), its defaults otherwise: the flush policy leaves fsync to the OS page cache like Gregor's, 1 GiB segments. Its start time runs from exec of the broker's JVM (after the one-off `kafka-storage format`) to its first ApiVersions answer.",
			c.kafkaVer, c.javaVer, c.kafkaHeap, c.kafkaHeap, strings.Join(kafkaJVMArgs, " "))
	}
	b.WriteString("\n\n")
	if lb := summarize(rs.loopback); lb.n > 0 {
		fmt.Fprintf(&b, "Loopback limit (one TCP connection on 127.0.0.1, %d MB per run, 1 MiB writes): **%s GB/s** (median of %d runs, %s–%s).\n\n",
			c.loopbackBytes/1e6, fmt.Sprintf("%.2f", lb.med/1e9), lb.n, fmt.Sprintf("%.2f", lb.min/1e9), fmt.Sprintf("%.2f", lb.max/1e9))
	}
	var off []string
	for _, ph := range allPhases {
		if !c.has(ph) {
			off = append(off, ph)
		}
	}
	if len(off) > 0 {
		fmt.Fprintf(&b, "Phases left out of this run: %s.\n\n", strings.Join(off, ", "))
	}
	fmt.Fprintf(&b, "%d runs per target, interleaved (%s, %s, …), each on a fresh process; "+
		"%d records per throughput row (franz-go, acks=all, idempotent=%v, no compression, linger 10 ms; a produce phase stops issuing at %v and its rate counts what was acknowledged); "+
		"latency at %d rec/s for %v with linger 0; consumer group heartbeat %v. "+
		"Cells: median (min–max) of the runs; a ratio is Gregor/other computed run by run, then its median (min–max); targets against kfake are issue 6's, against Kafka issue 16's. "+
		"MB = 10⁶ bytes of record values; CPU is the broker process's utime+stime over the phase divided by the GB of values moved.\n\n",
		c.runs, strings.Join(rs.targets, ", "), rs.targets[0], c.n, c.idempotent, c.rowMax, c.rate, c.latencyFor, c.heartbeat)
	if c.recoveryBytes > 0 {
		fmt.Fprintf(&b, "\"Existing segments\": Gregor restarted on %d MB of 1 KiB records in an 8-partition topic, written once before the runs and stopped with SIGTERM (a clean shutdown). "+
			"Start times run from just before exec to the first ApiVersions answer on a new connection; they include exec and the Go runtime's start on this machine.\n\n", c.recoveryBytes/1e6)
	}
	b.WriteString(rs.table(metrics()))
	fmt.Fprintf(&b, "\nWhere the CPU went in the throughput phases (medians): cores busy (CPU seconds / wall seconds) in the broker process, in the benchmark process (the franz-go client), and on the whole machine (/proc/stat, everything not idle, including other users of this shared machine). "+
		"\"Likely limit\" is a rule of thumb: machine if the whole machine was ≥ 85%% busy (%d cores), else client or broker if one of them kept ≥ 0.85 cores busy (a client's decode and a broker's connection loop run mostly on one goroutine each), else round trips (both wait on each other).\n\n", runtime.NumCPU())
	b.WriteString(rs.utilTable())
	b.WriteString("\n")
	for _, o := range rs.others() {
		fmt.Fprintf(&b, "![Gregor/%s ratios](%s)\n\n", displayName(o), relPath(filepath.Dir(c.out), c.svgPath(o)))
	}
	if c.has("tools") && c.kafkaCP != "" {
		fmt.Fprintf(&b, "Kafka's own tools, run against Gregor and against Kafka in the same runs (after the RSS reading): "+
			"`kafka-producer-perf-test` (org.apache.kafka.tools.ProducerPerformance of kafka-tools %s, JVM `%s %s`) "+
			"`--num-records %d --record-size %d --throughput -1 --command-property acks=all` to a new one-partition topic "+
			"(the Java producer's defaults otherwise: idempotent, linger.ms 5, batch.size 16 KiB, no compression), "+
			"then `kafka-consumer-perf-test --num-records %d` reading them back in a new group. Their summary lines, parsed; MiB = 1,048,576 bytes, the tools' \"MB\":\n\n",
			c.kafkaVer, toolHeap, strings.Join(kafkaJVMArgs, " "), c.toolRecords, c.toolSize, c.toolRecords)
		b.WriteString(rs.toolTable())
		b.WriteString("\n")
	}
	if len(zc) > 0 {
		fmt.Fprintf(&b, "Zero-copy check: system calls of the broker process (all threads, `strace -f -e trace=sendfile,write,writev`) while one client consumed the records of 1 KiB it had produced to one partition (%d MB of values):\n\n", int64(c.straceRecords)*1024/1e6)
		fmt.Fprintln(&b, "| target | sendfile calls | sendfile MB | write calls | write MB | writev calls | writev MB |")
		fmt.Fprintln(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, z := range zc {
			s, w, v := z.stats["sendfile"], z.stats["write"], z.stats["writev"]
			fmt.Fprintf(&b, "| %s | %d | %.1f | %d | %.1f | %d | %.1f |\n", z.target,
				s.calls, float64(s.bytes)/1e6, w.calls, float64(w.bytes)/1e6, v.calls, float64(v.bytes)/1e6)
		}
		b.WriteString("\n")
	}
	if len(rs.notes) > 0 {
		b.WriteString("Notes from this run:\n\n")
		for _, e := range rs.notes {
			fmt.Fprintf(&b, "- %s\n", e)
		}
		b.WriteString("\n")
	}
	if len(rs.errs) > 0 {
		b.WriteString("Errors during this run (their cells are missing above):\n\n")
		for _, e := range rs.errs {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(e, "\n", " "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func relPath(from, to string) string {
	if r, err := filepath.Rel(from, to); err == nil {
		return filepath.ToSlash(r)
	}
	return to
}
