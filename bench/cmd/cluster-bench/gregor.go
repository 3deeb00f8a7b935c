package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// gregorCluster is three gregor processes, each with its embedded etcd
// member, started from a binary built from the working tree.
type gregorCluster struct {
	nodes []*node
}

type node struct {
	id      int
	kafka   string
	peer    int
	dir     string
	cmd     *exec.Cmd
	logFile *os.File
	binary  string
	voters  string
	alive   bool
}

func (n *node) start() {
	args := []string{"--listen", n.kafka, "--data-dir", n.dir, "--set", "node.id=" + strconv.Itoa(n.id),
		"--set", "controller.quorum.voters=" + n.voters, "--log-level", logLevel()}
	n.cmd = exec.Command(n.binary, args...)
	n.cmd.Stdout, n.cmd.Stderr = n.logFile, n.logFile
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		fatalf("start gregor node %d: %v", n.id, err)
	}
	n.alive = true
}

// stop sends SIGTERM (a clustered broker first hands the leadership of
// its partitions to in-sync followers) and waits for the exit.
func (n *node) stop() {
	if n.alive {
		n.cmd.Process.Signal(syscall.SIGTERM)
		if err := n.cmd.Wait(); err != nil {
			fatalf("gregor node %d after SIGTERM: %v", n.id, err)
		}
		n.alive = false
	}
}

func (n *node) kill() {
	if n.alive {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		n.alive = false
	}
}

// logLevel is the nodes' log level: warn, or GREGOR_BENCH_LOG_LEVEL.
func logLevel() string {
	if l := os.Getenv("GREGOR_BENCH_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startGregor builds gregor into tmp and starts three nodes there; they are
// killed at exit.
func startGregor(tmp string) *gregorCluster {
	bin := filepath.Join(tmp, "gregor")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gregor")
	build.Dir = ".."
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fatalf("build gregor: %v", err)
	}
	c := &gregorCluster{}
	var voters []string
	for id := 1; id <= 3; id++ {
		n := &node{id: id, kafka: "127.0.0.1:" + strconv.Itoa(freePort()), peer: freePort(), dir: filepath.Join(tmp, "node-"+strconv.Itoa(id)), binary: bin}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", id, n.peer))
		c.nodes = append(c.nodes, n)
	}
	atExit(func() {
		for _, n := range c.nodes {
			n.kill()
		}
	})
	for _, n := range c.nodes {
		n.voters = strings.Join(voters, ",")
		var err error
		if n.logFile, err = os.Create(n.dir + ".log"); err != nil {
			fatalf("%v", err)
		}
		n.start()
	}
	return c
}

func (c *gregorCluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.kafka)
	}
	return s
}

func (c *gregorCluster) pids() []int {
	var p []int
	for _, n := range c.nodes {
		if n.alive {
			p = append(p, n.cmd.Process.Pid)
		}
	}
	return p
}

func (c *gregorCluster) kill(nodeID int32) { c.nodes[nodeID-1].kill() }
func (c *gregorCluster) stop(nodeID int32) { c.nodes[nodeID-1].stop() }

func (c *gregorCluster) restart(ctx context.Context, nodeID int32, t *target) {
	c.nodes[nodeID-1].start()
	waitBrokers(ctx, t, 3)
}

// sessionTimeout is Gregor's default broker.session.timeout.ms.
func (c *gregorCluster) sessionTimeout() time.Duration { return 3 * time.Second }
