// Command start-bench measures Gregor's start to first ApiVersions on an
// empty data directory, split into its parts, over many starts:
//
//	cd bench && go run ./cmd/start-bench -bin /path/to/gregor -n 30
//	cd bench && go run ./cmd/start-bench -bin old,new -n 30
//
// It starts each binary -n times (several binaries: in turn, start by
// start, so that the machine's load falls on them alike), each on a new data directory,
// with --listen 127.0.0.1:0 --log-level debug, and splits each start with
// the broker's own clock (its msg=main unix_ns=… and the startup= of its
// msg=listening line) into exec→main (process creation, the Go runtime and
// every package's init), main→listening (flags, broker.New, Listen) and
// listening→answer (the log line through the pipe, the dial and the first
// ApiVersions). Both processes read the same CLOCK_REALTIME.
//
// The embedded start (gregortest) is measured by gregortest's
// TestStart_ReadyTime.
//
// It prints the median, minimum and maximum of each part.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

func main() {
	bin := flag.String("bin", "", "gregor binaries, comma-separated")
	n := flag.Int("n", 30, "starts")
	keep := flag.Bool("keep", false, "keep the data directories")
	flag.Parse()
	log.SetFlags(0)
	root, err := os.MkdirTemp("", "start-bench-")
	if err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer os.RemoveAll(root)
	}
	if *bin == "" {
		log.Fatal("-bin is needed")
	}
	bins := strings.Split(*bin, ",")
	parts := make([]map[string][]time.Duration, len(bins))
	var names []string
	for i := range *n {
		for j, b := range bins {
			if parts[j] == nil {
				parts[j] = map[string][]time.Duration{}
			}
			add := func(name string, d time.Duration) {
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
				parts[j][name] = append(parts[j][name], d)
			}
			dir := filepath.Join(root, strconv.Itoa(j), strconv.Itoa(i))
			if err := startBinary(b, dir, add); err != nil {
				log.Fatalf("%s start %d: %v", b, i+1, err)
			}
		}
	}
	for j, b := range bins {
		fmt.Printf("%s: %d starts on empty data directories; median (min–max)\n", b, *n)
		for _, name := range names {
			ds := slices.Clone(parts[j][name])
			slices.Sort(ds)
			fmt.Printf("  %-20s %8.2f ms (%.2f–%.2f)\n", name, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func startBinary(bin, dir string, add func(string, time.Duration)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--data-dir", dir, "--log-level", "debug")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	var mainAt time.Time
	var startup time.Duration
	var addr string
	sc := bufio.NewScanner(stderr)
	for addr == "" && sc.Scan() {
		line := sc.Text()
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "unix_ns="); ok && strings.Contains(line, "msg=main ") {
				ns, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("%q: %w", line, err)
				}
				mainAt = time.Unix(0, ns)
			}
			if strings.Contains(line, "msg=listening") {
				if v, ok := strings.CutPrefix(f, "addr="); ok {
					addr = v
				}
				if v, ok := strings.CutPrefix(f, "startup="); ok {
					if startup, err = time.ParseDuration(v); err != nil {
						return fmt.Errorf("%q: %w", line, err)
					}
				}
			}
		}
	}
	if addr == "" || mainAt.IsZero() {
		return fmt.Errorf("no msg=main and msg=listening lines (an older binary?): %v", sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	for {
		err := kafkaref.APIVersions(ctx, addr)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Microsecond)
	}
	t3 := time.Now()
	listening := mainAt.Add(startup)
	add("exec→main", mainAt.Sub(t0))
	add("main→listening", startup)
	add("listening→answer", t3.Sub(listening))
	add("total", t3.Sub(t0))
	return nil
}
