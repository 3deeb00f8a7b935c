package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// loopback moves total bytes over one TCP connection on 127.0.0.1 from a
// sender goroutine to a receiver goroutine in 1 MiB writes and reads, and
// returns the receiver's rate in bytes/s: the machine's limit for moving
// bytes between two processes' sockets.
func loopback(ctx context.Context, total int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		for sent := int64(0); sent < total; {
			n := int64(len(buf))
			if total-sent < n {
				n = total - sent
			}
			w, err := c.Write(buf[:n])
			sent += int64(w)
			if err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	buf := make([]byte, 1<<20)
	start := time.Now()
	var got int64
	for got < total {
		n, err := c.Read(buf)
		got += int64(n)
		if err != nil {
			return 0, fmt.Errorf("loopback: read %d of %d: %w", got, total, err)
		}
	}
	el := time.Since(start)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(total) / el.Seconds(), nil
}

// writeLines writes n lines of size-1 bytes plus a newline to path, for kcat
// -P -l, which sends each line (without its newline) as one record.
func writeLines(path string, n, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := bytes.Repeat([]byte("k"), size)
	line[size-1] = '\n'
	for i := 0; i < n; i++ {
		if _, err := w.Write(line); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runCmd runs name with args, bounded by ctx, killing it if ctx ends, and
// returns its stdout size and stderr.
func runCmd(ctx context.Context, name string, args ...string) (int64, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = childAttr()
	cw := &countWriter{}
	var stderr bytes.Buffer
	cmd.Stdout = cw
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	track(cmd)
	err := cmd.Wait()
	untrack(cmd)
	if err != nil {
		return cw.n, stderr.String(), fmt.Errorf("%s: %w: %s", name, err, lastLine(stderr.String()))
	}
	return cw.n, stderr.String(), nil
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// kcatProduce sends every line of file as a record to topic with kcat
// (librdkafka's defaults: acks=all, not idempotent, linger 5 ms).
func kcatProduce(ctx context.Context, addr, topic, file string) (time.Duration, error) {
	start := time.Now()
	_, _, err := runCmd(ctx, "kcat", "-P", "-q", "-b", addr, "-t", topic, "-p", "0", "-l", file)
	return time.Since(start), err
}

// kcatConsume reads n records of topic from the beginning with kcat and
// returns the time and the bytes kcat printed. extra are -X settings.
func kcatConsume(ctx context.Context, addr, topic string, n int, extra ...string) (time.Duration, int64, error) {
	args := []string{"-C", "-q", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-c", strconv.Itoa(n)}
	for _, x := range extra {
		args = append(args, "-X", x)
	}
	start := time.Now()
	out, _, err := runCmd(ctx, "kcat", args...)
	return time.Since(start), out, err
}

// kcatQueue raises librdkafka's pre-fetch queue above n records of size
// bytes. With its defaults (queued.min.messages 100,000, 64 MiB) a broker
// that answers Fetch faster than kcat prints fills the queue, and
// librdkafka 2.0's fetcher then sleeps until its next wake-up (up to 1 s)
// instead of when the queue drains: a client pause that only a faster
// broker triggers. The raised queue measures the broker, the default row
// shows what a user of kcat's defaults sees.
func kcatQueue(n, size int) []string {
	kb := n*(size+200)/1024 + 1024 // values plus librdkafka's per-message overhead
	return []string{"queued.min.messages=" + strconv.Itoa(2*n), "queued.max.messages.kbytes=" + strconv.Itoa(kb)}
}

// sysStat is what strace saw of one system call.
type sysStat struct {
	calls int64
	bytes int64 // sum of positive return values
}

// straceDuring attaches strace to pid (all threads), runs f, detaches, and
// returns the count and bytes of sendfile, write and writev calls.
func straceDuring(ctx context.Context, pid int, dir string, f func() error) (map[string]sysStat, error) {
	out := filepath.Join(dir, fmt.Sprintf("strace-%d.txt", pid))
	cmd := exec.CommandContext(ctx, "strace", "-f", "-qq", "-e", "trace=sendfile,write,writev", "-o", out, "-p", strconv.Itoa(pid))
	cmd.SysProcAttr = childAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	track(cmd)
	defer untrack(cmd)
	// strace attaches thread by thread; give it a moment.
	time.Sleep(500 * time.Millisecond)
	ferr := f()
	interruptAndWait(cmd, 10*time.Second)
	if ferr != nil {
		return nil, ferr
	}
	return parseStrace(out)
}

// parseStrace sums calls and returned bytes per system call in an strace -f
// output file, joining "<unfinished ...>" lines with their "resumed" ends.
func parseStrace(path string) (map[string]sysStat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	stats := map[string]sysStat{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(line, "<unfinished ...>") {
			continue
		}
		var name string
		if i := strings.Index(line, "<... "); i >= 0 {
			rest := line[i+5:]
			name, _, _ = strings.Cut(rest, " ")
		} else {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			name, _, _ = strings.Cut(fields[1], "(")
		}
		if name != "sendfile" && name != "write" && name != "writev" {
			continue
		}
		i := strings.LastIndex(line, " = ")
		if i < 0 {
			continue
		}
		retStr, _, _ := strings.Cut(line[i+3:], " ")
		s := stats[name]
		s.calls++
		if v, err := strconv.ParseInt(retStr, 10, 64); err == nil && v > 0 {
			s.bytes += v
		}
		stats[name] = s
	}
	return stats, sc.Err()
}

// perfDuring samples pid with perf record (software cpu-clock, call graphs)
// while f runs and writes perf report's flat top to dir/name.txt.
func perfDuring(ctx context.Context, pid int, dir, name string, f func() error) error {
	data := filepath.Join(dir, name+".perf.data")
	cmd := exec.CommandContext(ctx, "perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-p", strconv.Itoa(pid), "-o", data)
	cmd.SysProcAttr = childAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	track(cmd)
	defer untrack(cmd)
	time.Sleep(300 * time.Millisecond)
	ferr := f()
	interruptAndWait(cmd, 30*time.Second)
	if ferr != nil {
		return ferr
	}
	var rep bytes.Buffer
	for _, mode := range [][]string{
		{"--no-children", "--sort", "symbol"},
		{"--children", "--sort", "symbol"},
	} {
		args := append([]string{"report", "--stdio", "-i", data, "-g", "none", "--percent-limit", "0.7"}, mode...)
		out, err := exec.CommandContext(ctx, "perf", args...).Output()
		if err != nil {
			return fmt.Errorf("perf report: %w (%s)", err, stderr.String())
		}
		fmt.Fprintf(&rep, "## perf report %s\n", strings.Join(mode, " "))
		rep.Write(out)
	}
	return os.WriteFile(filepath.Join(dir, name+".txt"), rep.Bytes(), 0o644)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// interruptAndWait stops an attached tracer (strace, perf) with SIGINT so it
// writes its summary, and kills it if it has not exited after grace.
func interruptAndWait(cmd *exec.Cmd, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGINT)
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	select {
	case <-waitc:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-waitc
	}
}
