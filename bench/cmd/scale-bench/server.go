package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// server is one broker process on one data directory that outlives its
// restarts.
type server interface {
	addr() string
	pid() int
	// launch starts the process again on its data after stop or kill and
	// returns at once; the channel gets one value when the launcher is done
	// with it (Kafka: kafkaref's Restart, which waits until the broker lists
	// itself), an error if the process could not be started.
	launch(ctx context.Context) <-chan error
	// stop sends SIGTERM and waits up to bound for the process to exit;
	// past it the process is killed and an error returned.
	stop(bound time.Duration) error
	// kill sends SIGKILL and waits for the process to exit.
	kill()
	// exited is closed when the process last launched exits (nil: not
	// watched; kafkaref's Restart fails by itself when the JVM exits).
	exited() <-chan struct{}
	// logTail is the end of the process's output, for error messages.
	logTail() string
}

// gregorServer is a gregor process started from -bin.
type gregorServer struct {
	bin, dir, listen, logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// startGregor starts gregor on a new data directory under tmp and waits for
// its first answer; it is killed at exit.
func startGregor(ctx context.Context, tmp, bin string) *gregorServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	listen := l.Addr().String()
	l.Close()
	g := &gregorServer{bin: bin, dir: filepath.Join(tmp, "gregor-data"), listen: listen, logPath: filepath.Join(tmp, "gregor.log")}
	atExit(g.kill)
	if err := <-g.launch(ctx); err != nil {
		fatalf("gregor: %v", err)
	}
	actx, cancel := context.WithTimeout(ctx, *stepTimeout)
	defer cancel()
	if err := firstAnswer(actx, g.listen); err != nil {
		fatalf("gregor: %v: %s", err, g.logTail())
	}
	return g
}

func (g *gregorServer) addr() string { return g.listen }

func (g *gregorServer) pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

func (g *gregorServer) launch(context.Context) <-chan error {
	errc := make(chan error, 1)
	f, err := os.OpenFile(g.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		errc <- err
		return errc
	}
	cmd := exec.Command(g.bin, "--listen", g.listen, "--data-dir", g.dir, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		errc <- fmt.Errorf("start %s: %w", g.bin, err)
		return errc
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	g.mu.Lock()
	g.cmd, g.done = cmd, exited
	g.mu.Unlock()
	errc <- nil
	return errc
}

func (g *gregorServer) running() (*exec.Cmd, chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cmd, g.done
}

func (g *gregorServer) stop(bound time.Duration) error {
	cmd, exited := g.running()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(bound):
		g.kill()
		return fmt.Errorf("gregor pid %d did not exit within %v of SIGTERM; killed", cmd.Process.Pid, bound)
	}
}

func (g *gregorServer) kill() {
	cmd, exited := g.running()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

func (g *gregorServer) exited() <-chan struct{} {
	_, exited := g.running()
	return exited
}

func (g *gregorServer) logTail() string { return tail(g.logPath) }

// tail is the last lines of the file at path.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "(" + path + ") " + strings.Join(lines, " | ")
}

// kafkaJVMArgs are the JVM options kafka-server-start.sh gives the broker
// (KAFKA_JVM_PERFORMANCE_OPTS of kafka-run-class.sh), as in cluster-bench.
var kafkaJVMArgs = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent"}

// kafkaServer is one Apache Kafka JVM in KRaft mode, a combined broker and
// controller (kafkaref.StartCluster with one node, so that it can be killed
// and restarted on its data).
type kafkaServer struct {
	c *kafkaref.Cluster
}

// startKafka formats and starts Kafka under tmp; it is killed (by process
// group) at exit.
func startKafka(ctx context.Context, tmp string) *kafkaServer {
	opts := kafkaref.Options{
		Dir:          filepath.Join(tmp, "kafka"),
		Heap:         *kafkaHeap,
		JVMArgs:      kafkaJVMArgs,
		StartTimeout: *stepTimeout,
	}
	c, err := kafkaref.StartCluster(ctx, 1, opts)
	if err != nil {
		fatalf("start Kafka: %v", err)
	}
	atExit(func() {
		c.KillAll()
		c.Stop()
	})
	return &kafkaServer{c: c}
}

func (k *kafkaServer) addr() string { return k.c.Addrs()[0] }
func (k *kafkaServer) pid() int     { return k.c.Pids()[0] }

// launch runs kafkaref's Restart in the background: it starts the JVM at
// once and then polls until the broker lists itself in Metadata (every
// 200 ms), which the measurements do not wait for.
func (k *kafkaServer) launch(ctx context.Context) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- k.c.Restart(ctx, 0) }()
	return errc
}

// stop sends SIGTERM to the JVM's process group itself: kafkaref's Stop
// gives it 20 s before SIGKILL, and Kafka takes longer with many
// partitions.
func (k *kafkaServer) stop(bound time.Duration) error {
	b := k.c.Brokers[0]
	_ = syscall.Kill(-b.Pid(), syscall.SIGTERM)
	select {
	case <-b.Exited():
		return b.Stop() // closes its log; the group is gone
	case <-time.After(bound):
		k.kill()
		return fmt.Errorf("kafka pid %d did not exit within %v of SIGTERM; killed", b.Pid(), bound)
	}
}

func (k *kafkaServer) kill() {
	if err := k.c.Kill(0); err != nil {
		fatalf("kill Kafka: %v", err)
	}
}

func (k *kafkaServer) exited() <-chan struct{} { return nil }

func (k *kafkaServer) logTail() string { return tail(k.c.Brokers[0].LogFile) }
