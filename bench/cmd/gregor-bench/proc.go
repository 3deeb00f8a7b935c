package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// target is one broker implementation under test: how to start it.
type target struct {
	name string // "gregor", "kfake" or "kafka"
	bin  string
	// args returns the command line for a fresh process on dataDir (kfake
	// ignores dataDir).
	args func(dataDir string) []string
	// kafka, if set, makes this target Apache Kafka started by kafkaref
	// with these options (Dir and StartTimeout are set per start); bin and
	// args are unused.
	kafka *kafkaref.Options
}

// proc is one running broker process.
type proc struct {
	cmd    *exec.Cmd        // nil for Kafka
	broker *kafkaref.Broker // Kafka's
	pid    int
	addr   string
	exited <-chan struct{}

	// selfStartup is the startup=DURATION the broker logged with its
	// listening line (its own time from main to listening), or 0.
	selfStartup time.Duration

	mu   sync.Mutex
	tail []string // last stderr lines, for error messages
}

var (
	procsMu sync.Mutex
	procs   = map[any]func(){} // key: *exec.Cmd or *kafkaref.Broker
)

// track records cmd so that killAll can end it if the benchmark is
// interrupted; untrack forgets it once it has exited.
func track(cmd *exec.Cmd) {
	trackKill(cmd, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
}

func untrack(key any) {
	procsMu.Lock()
	delete(procs, key)
	procsMu.Unlock()
}

// trackKill records how killAll ends the process behind key.
func trackKill(key any, kill func()) {
	procsMu.Lock()
	procs[key] = kill
	procsMu.Unlock()
}

// killAll sends SIGKILL to every process the benchmark started and has not
// yet seen exit, each by its own pid (Kafka: its process group).
func killAll() {
	procsMu.Lock()
	defer procsMu.Unlock()
	for _, kill := range procs {
		kill()
	}
}

// childAttr makes a child die with the benchmark even if the benchmark is
// killed without a chance to clean up.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// startProc starts t on dataDir and waits for its msg=listening line and for
// a first answer to ApiVersions. It returns the process and the time from
// just before exec to that answer.
func startProc(ctx context.Context, t target, dataDir string, timeout time.Duration) (*proc, time.Duration, error) {
	if t.kafka != nil {
		return startKafka(ctx, t, dataDir, timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(t.bin, t.args(dataDir)...)
	cmd.SysProcAttr = childAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, 0, err
	}
	exited := make(chan struct{})
	p := &proc{cmd: cmd, exited: exited}
	addrc := make(chan string, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", t.name, err)
	}
	track(cmd)
	p.pid = cmd.Process.Pid
	go p.readLog(stderr, addrc)
	go func() {
		_ = cmd.Wait()
		untrack(cmd)
		close(exited)
	}()

	select {
	case p.addr = <-addrc:
	case <-p.exited:
		return nil, 0, fmt.Errorf("%s exited before listening: %s", t.name, p.lastLines())
	case <-ctx.Done():
		p.kill()
		return nil, 0, fmt.Errorf("%s: no msg=listening line within %v: %s", t.name, timeout, p.lastLines())
	}
	for {
		err := kafkaref.APIVersions(ctx, p.addr)
		if err == nil {
			return p, time.Since(start), nil
		}
		select {
		case <-p.exited:
			return nil, 0, fmt.Errorf("%s exited: %s", t.name, p.lastLines())
		case <-ctx.Done():
			p.kill()
			return nil, 0, fmt.Errorf("%s: no ApiVersions answer within %v: %v", t.name, timeout, err)
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// readLog scans the process's stderr, sends the addr of the first
// msg=listening line on addrc, and keeps the last lines.
func (p *proc) readLog(r io.Reader, addrc chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		if len(p.tail) == 20 {
			p.tail = p.tail[1:]
		}
		p.tail = append(p.tail, line)
		p.mu.Unlock()
		if !sent && strings.Contains(line, "msg=listening") {
			var addr string
			for _, f := range strings.Fields(line) {
				if a, ok := strings.CutPrefix(f, "addr="); ok {
					addr = a
				}
				if v, ok := strings.CutPrefix(f, "startup="); ok {
					if d, err := time.ParseDuration(v); err == nil {
						p.mu.Lock()
						p.selfStartup = d
						p.mu.Unlock()
					}
				}
			}
			if addr != "" {
				addrc <- addr
				sent = true
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (p *proc) startup() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.selfStartup
}

func (p *proc) lastLines() string {
	if p.broker != nil {
		return kafkaLogTail(p.broker.LogFile)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " | ")
}

func (p *proc) kill() {
	if p.broker != nil {
		p.broker.Kill()
		err := p.broker.Stop()
		untrack(p.broker)
		if err != nil {
			log.Print(err)
		}
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop sends SIGTERM and waits up to timeout for the process to exit, then
// kills it. Kafka gets kafkaref's own bound (20 s, then SIGKILL).
func (p *proc) stop(timeout time.Duration) error {
	if p.broker != nil {
		err := p.broker.Stop()
		untrack(p.broker)
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("pid %d did not stop within %v of SIGTERM; killed", p.pid, timeout)
	}
}

// cpuTicks returns utime+stime of pid in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("stat: no ')'")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("stat: short")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return ut + st, nil
}

// cpuSeconds is cpuTicks in seconds; 0 if the process is gone.
func cpuSeconds(pid int) float64 {
	t, err := cpuTicks(pid)
	if err != nil {
		return 0
	}
	return float64(t) / clockTicks
}

// memKB returns VmRSS and VmHWM of pid in kB.
func memKB(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		if *dst, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, 0, err
		}
	}
	return rss, hwm, nil
}

// selfCPU returns the user+system CPU seconds of the benchmark process.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// machineBusy returns the CPU seconds all cores of the machine spent not
// idle (nor waiting for I/O) since boot, from /proc/stat.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		// Fields: user nice system idle iowait irq softirq steal guest
		// guest_nice; guest time is already counted in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += n
	}
	return float64(busy) / clockTicks
}
