package compat

// The cluster harness: n real gregor processes on loopback, each behind an
// in-process Toxiproxy proxy that it advertises, so that every client and
// every replica connection to a broker passes through the proxy and can be
// cut, delayed or dropped one way.
//
//	c := startCluster(t, 3)
//	n := c.Node(2)
//	n.Kill(); n.Restart()      // SIGKILL; start again on the same dir and ports
//	n.Stop(); n.Cont()         // SIGSTOP / SIGCONT
//	n.Cut(); n.Heal()          // proxy disabled (connections refused and closed) / everything undone
//	n.Delay(200*time.Millisecond)
//	n.OneWay(inbound)          // requests to the broker dropped, responses pass (or outbound)
//	n.CutEtcd()                // the etcd peer proxy stopped; Kafka traffic untouched
//	c.WaitAPIVersions(); c.WaitBrokers(3); c.WaitLeader(topic, 0)
//
// With embedded etcd each node's etcd peer link has a proxy of its own:
// controller.quorum.voters lists the peer proxies, and each node binds its
// CONTROLLER listener (listeners=PLAINTEXT://…,CONTROLLER://…, the KRaft
// way) on a private port the proxy forwards to, through an etcdGate
// (etcd_gate_test.go) that can refuse a cut member's outbound raft
// traffic. Cut isolates a node's Kafka traffic (clients, and replicas
// fetching from it) but not its etcd membership; CutEtcd the reverse;
// SIGSTOP and kill -9 both.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster harness timeouts.
const (
	clusterListenTimeout = 60 * time.Second // process start to msg=listening (etcd may wait for its peers)
	clusterWaitTimeout   = 60 * time.Second // default bound of the Wait helpers
	clusterMaxLifetime   = 30 * time.Minute // a process is killed after this even if the test hangs
	clusterLogTail       = 80               // lines of each node's log printed when a test fails
)

// clusterOpt configures startCluster.
type clusterOpt interface{ apply(*clusterCfg) }

type clusterCfg struct {
	single bool
	sets   []string
	etcd   string // etcd.endpoints of an external etcd; empty: embedded members
	// nodeSets are --set key=value for one node, after sets.
	nodeSets map[int32][]string
}

type clusterOptFunc func(*clusterCfg)

func (f clusterOptFunc) apply(c *clusterCfg) { f(c) }

// withSingleNode starts one broker without controller.quorum.voters: today's
// single-node gregor, still behind its proxy (n must be 1).
func withSingleNode() clusterOpt { return clusterOptFunc(func(c *clusterCfg) { c.single = true }) }

// withSet passes --set key=value to every node.
// withExternalEtcd makes the nodes join the etcd cluster at endpoints
// (etcd.endpoints) instead of running embedded members.
func withExternalEtcd(endpoints string) clusterOpt {
	return clusterOptFunc(func(c *clusterCfg) { c.etcd = endpoints })
}

func withSet(kv ...string) clusterOpt {
	return clusterOptFunc(func(c *clusterCfg) { c.sets = append(c.sets, kv...) })
}

// withNodeSet passes --set key=value to node id only (broker.rack, say).
func withNodeSet(id int32, kv ...string) clusterOpt {
	return clusterOptFunc(func(c *clusterCfg) {
		if c.nodeSets == nil {
			c.nodeSets = map[int32][]string{}
		}
		c.nodeSets[id] = append(c.nodeSets[id], kv...)
	})
}

// cluster is n gregor processes and their proxies.
type cluster struct {
	t      testing.TB
	cfg    clusterCfg
	nodes  []*clusterNode
	voters string // controller.quorum.voters, empty in single-node mode
	server *toxiproxy.ApiServer
	logDir string
	end    time.Time // processes are killed at this time

	etcdMu  sync.Mutex
	etcdCut map[string]bool // peer URLs (http://peerAddr) of the nodes CutEtcd isolated
}

// clusterNode is one broker: its process (and successors after restarts),
// data directory, fixed ports and proxy.
type clusterNode struct {
	c          *cluster
	id         int32
	dataDir    string
	listenAddr string // the broker's own listener, 127.0.0.1:PORT
	peerAddr   string // its etcd peer address as the voters list it: the peer proxy (cluster mode)
	peerBind   string // where its CONTROLLER listener binds, behind peerProxy
	proxy      *toxiproxy.Proxy
	peerProxy  *toxiproxy.Proxy // nil without embedded etcd
	gate       *etcdGate        // between peerProxy and peerBind
	addr       string           // the proxy's address, fixed once it first listened
	logPath    string

	mu        sync.Mutex
	runs      int
	cmd       *exec.Cmd
	exited    chan struct{}
	waitErr   error
	listening chan struct{}
	stopped   bool // SIGSTOPped
	noCluster bool // the binary ignored controller.quorum.voters
	logFile   *os.File
}

// startCluster starts n brokers with node ids 1..n on loopback, each behind
// its own proxy, and waits until every node answers ApiVersions through its
// proxy and (in cluster mode) Metadata lists n brokers. Everything is killed
// at cleanup; if the test failed, the tail of each node's log is printed.
func startCluster(t testing.TB, n int, opts ...clusterOpt) *cluster {
	t.Helper()
	c := &cluster{t: t, logDir: t.TempDir(), end: time.Now().Add(clusterMaxLifetime)}
	if d := os.Getenv("GREGOR_CLUSTER_LOGDIR"); d != "" {
		// The nodes' whole logs, kept after the test (a new directory
		// under d per cluster), for failures the log tails do not explain.
		dir, err := os.MkdirTemp(d, "logs")
		if err != nil {
			t.Fatalf("GREGOR_CLUSTER_LOGDIR: %v", err)
		}
		c.logDir = dir
	}
	for _, o := range opts {
		o.apply(&c.cfg)
	}
	if c.cfg.single && n != 1 {
		t.Fatalf("startCluster: withSingleNode needs n=1, got %d", n)
	}
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok && dl.Before(c.end) {
			c.end = dl
		}
	}
	c.server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	t.Cleanup(c.cleanup)

	embedded := !c.cfg.single && c.cfg.etcd == ""
	ports := freePorts(t, 3*n)
	var voters []string
	for i := 0; i < n; i++ {
		id := int32(i + 1)
		nd := &clusterNode{
			c:          c,
			id:         id,
			dataDir:    t.TempDir(),
			listenAddr: fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
			peerAddr:   fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			peerBind:   fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]),
			logPath:    filepath.Join(c.logDir, fmt.Sprintf("node-%d.log", id)),
		}
		nd.proxy = toxiproxy.NewProxy(c.server, fmt.Sprintf("node-%d", id), "127.0.0.1:0", nd.listenAddr)
		if err := nd.proxy.Start(); err != nil {
			t.Fatalf("node %d: starting its proxy: %v", id, err)
		}
		nd.addr = nd.proxy.Listen
		if embedded {
			g, err := newEtcdGate(nd.peerBind, c.etcdIsCut)
			if err != nil {
				t.Fatalf("node %d: starting its etcd gate: %v", id, err)
			}
			nd.gate = g
			nd.peerProxy = toxiproxy.NewProxy(c.server, fmt.Sprintf("node-%d-etcd", id), nd.peerAddr, g.Addr())
			if err := nd.peerProxy.Start(); err != nil {
				t.Fatalf("node %d: starting its etcd peer proxy: %v", id, err)
			}
		}
		c.nodes = append(c.nodes, nd)
		voters = append(voters, fmt.Sprintf("%d@%s", id, nd.peerAddr))
	}
	if embedded {
		c.voters = strings.Join(voters, ",")
	}
	// Start every process before waiting for any: a member of a new etcd
	// cluster may not listen before a quorum of its peers is up.
	for _, nd := range c.nodes {
		nd.start()
	}
	for _, nd := range c.nodes {
		if err := nd.waitListening(clusterListenTimeout); err != nil {
			t.Fatalf("node %d: %v", nd.id, err)
		}
	}
	c.WaitAPIVersions()
	if !c.cfg.single {
		c.WaitBrokers(n)
	}
	return c
}

// Node returns the node with the given id (1..n).
func (c *cluster) Node(id int32) *clusterNode {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("no node %d in a cluster of %d", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// Nodes returns every node, in id order.
func (c *cluster) Nodes() []*clusterNode { return c.nodes }

// Seeds returns every node's advertised (proxy) address.
func (c *cluster) Seeds() []string {
	var s []string
	for _, nd := range c.nodes {
		s = append(s, nd.Addr())
	}
	return s
}

// Client returns a kgo client seeded with every proxy, closed at cleanup.
func (c *cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.RetryTimeout(15 * time.Second)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client over a fresh Client.
func (c *cluster) Admin() *kadm.Client { return kadm.NewClient(c.Client()) }

func (c *cluster) cleanup() {
	for _, nd := range c.nodes {
		nd.mu.Lock()
		running := nd.cmd != nil && !isClosed(nd.exited)
		nd.mu.Unlock()
		if running {
			nd.Kill()
		}
		nd.proxy.Stop()
		if nd.peerProxy != nil {
			nd.peerProxy.Stop()
			nd.gate.Close()
		}
	}
	if c.t.Failed() {
		c.DumpLogs()
		c.keep()
	}
}

// keep copies the nodes' logs and data directories to the directory
// GREGOR_KEEP_FAILED names, if set, before the test's temporary
// directories are removed: a failed Jepsen run's logs and partitions can
// then be read afterwards.
func (c *cluster) keep() {
	dst := os.Getenv("GREGOR_KEEP_FAILED")
	if dst == "" {
		return
	}
	dst = filepath.Join(dst, fmt.Sprintf("%s-%d", strings.ReplaceAll(c.t.Name(), "/", "_"), time.Now().Unix()))
	for _, nd := range c.nodes {
		for _, src := range []string{nd.logPath, nd.dataDir} {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				c.t.Logf("keep: %v", err)
				return
			}
			if out, err := exec.Command("cp", "-a", src, filepath.Join(dst, fmt.Sprintf("node-%d-%s", nd.id, filepath.Base(src)))).CombinedOutput(); err != nil {
				c.t.Logf("keep %s: %v %s", src, err, out)
			}
		}
	}
	c.t.Logf("kept the nodes' logs and data in %s", dst)
}

// DumpLogs logs the tail of every node's stderr.
func (c *cluster) DumpLogs() {
	for _, nd := range c.nodes {
		c.t.Logf("node %d log tail (%s):\n%s", nd.id, nd.logPath, tailFile(nd.logPath, clusterLogTail))
	}
}

// ID returns the node's id.
func (nd *clusterNode) ID() int32 { return nd.id }

// Addr returns the advertised address: the proxy in front of the broker.
func (nd *clusterNode) Addr() string { return nd.addr }

// DirectAddr returns the broker's own listener, bypassing the proxy (for
// observers that must see a node even while it is cut).
func (nd *clusterNode) DirectAddr() string { return nd.listenAddr }

// DataDir returns the node's data directory.
func (nd *clusterNode) DataDir() string { return nd.dataDir }

func (nd *clusterNode) args() []string {
	args := []string{"--data-dir", nd.dataDir, "--set", fmt.Sprintf("node.id=%d", nd.id)}
	if nd.c.voters != "" {
		// The member binds its CONTROLLER listener behind the peer proxy
		// and advertises the proxy (its controller.quorum.voters entry).
		args = append(args, "--set", "controller.quorum.voters="+nd.c.voters,
			"--set", "listeners=PLAINTEXT://"+nd.listenAddr+",CONTROLLER://"+nd.peerBind,
			"--set", "advertised.listeners=PLAINTEXT://"+nd.Addr(),
			"--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"--set", "controller.listener.names=CONTROLLER")
	} else {
		args = append(args, "--listen", nd.listenAddr, "--advertise", nd.Addr())
	}
	if nd.c.cfg.etcd != "" {
		args = append(args, "--set", "etcd.endpoints="+nd.c.cfg.etcd)
	}
	for _, s := range nd.c.cfg.sets {
		args = append(args, "--set", s)
	}
	for _, s := range nd.c.cfg.nodeSets[nd.id] {
		args = append(args, "--set", s)
	}
	return args
}

// start launches the process without waiting for it.
func (nd *clusterNode) start() {
	t := nd.c.t
	t.Helper()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.runs++
	if nd.logFile == nil {
		f, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		nd.logFile = f
		t.Cleanup(func() { f.Close() })
	}
	args := nd.args()
	fmt.Fprintf(nd.logFile, "=== run %d at %s: gregor %s\n", nd.runs, time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	listening := make(chan struct{})
	var once sync.Once
	out := &lineWriter{fn: func(l string) {
		fmt.Fprintln(nd.logFile, l)
		if strings.Contains(l, "msg=listening") {
			once.Do(func() { close(listening) })
		}
		if strings.Contains(l, "unknown configuration") && strings.Contains(l, "controller.quorum.voters") {
			nd.mu.Lock()
			nd.noCluster = true
			nd.mu.Unlock()
		}
	}}
	cmd := exec.Command(gregorBin, args...)
	// The broker dies with the test process, even when a test panics.
	cmd.SysProcAttr = dieWithTest()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("node %d: starting %s: %v", nd.id, gregorBin, err)
	}
	exited := make(chan struct{})
	nd.cmd, nd.exited, nd.listening, nd.stopped = cmd, exited, listening, false
	bound := time.AfterFunc(time.Until(nd.c.end), func() { _ = cmd.Process.Kill() })
	go func() {
		err := cmd.Wait()
		bound.Stop()
		nd.mu.Lock()
		nd.waitErr = err
		nd.mu.Unlock()
		close(exited)
	}()
}

// waitListening waits for the current run's msg=listening line.
func (nd *clusterNode) waitListening(d time.Duration) error {
	nd.mu.Lock()
	listening, exited := nd.listening, nd.exited
	nd.mu.Unlock()
	select {
	case <-listening:
	case <-exited:
		nd.mu.Lock()
		err := nd.waitErr
		nd.mu.Unlock()
		return fmt.Errorf("exited before msg=listening: %v", err)
	case <-time.After(d):
		return fmt.Errorf("no msg=listening line within %v", d)
	}
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.noCluster {
		return errors.New("this gregor binary ignored controller.quorum.voters: it has no cluster support")
	}
	return nil
}

// Running reports whether the node's process is alive (stopped or not).
func (nd *clusterNode) Running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil && !isClosed(nd.exited)
}

func (nd *clusterNode) signal(s syscall.Signal) {
	t := nd.c.t
	t.Helper()
	nd.mu.Lock()
	cmd, exited := nd.cmd, nd.exited
	nd.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		t.Fatalf("node %d: %v sent to a process that is not running", nd.id, s)
	}
	if err := cmd.Process.Signal(s); err != nil {
		t.Fatalf("node %d: %v: %v", nd.id, s, err)
	}
}

// Kill sends SIGKILL and waits until the process is reaped.
func (nd *clusterNode) Kill() {
	nd.c.t.Helper()
	nd.signal(syscall.SIGKILL)
	nd.mu.Lock()
	exited := nd.exited
	nd.mu.Unlock()
	<-exited
}

// Stop sends SIGSTOP: the process freezes with its sockets open.
func (nd *clusterNode) Stop() {
	nd.c.t.Helper()
	nd.signal(sigStop)
	nd.mu.Lock()
	nd.stopped = true
	pid := nd.cmd.Process.Pid
	nd.mu.Unlock()
	// kill(2) only queues the signal: on a busy machine a thread that is
	// running may still answer a request before it stops (make
	// test-stress: "stopped: broker answered ApiVersions"). Return once
	// the kernel reports every thread stopped.
	deadline := time.Now().Add(10 * time.Second)
	for !allThreadsStopped(pid) {
		if time.Now().After(deadline) {
			nd.c.t.Fatalf("node %d (pid %d): not every thread stopped 10 s after SIGSTOP", nd.id, pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// allThreadsStopped reports whether every thread of process pid is in the
// stopped state ('T' in /proc/<pid>/task/<tid>/stat).
func allThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
			return false
		}
	}
	return true
}

// Cont sends SIGCONT to a stopped process.
func (nd *clusterNode) Cont() {
	nd.c.t.Helper()
	nd.signal(sigCont)
	nd.mu.Lock()
	nd.stopped = false
	nd.mu.Unlock()
}

// Restart kills the process if it is running (SIGKILL), starts it again on
// the same data directory and ports, and waits until it listens and answers
// ApiVersions on its own listener.
func (nd *clusterNode) Restart() {
	t := nd.c.t
	t.Helper()
	if nd.Running() {
		nd.Kill()
	}
	nd.start()
	if err := nd.waitListening(clusterListenTimeout); err != nil {
		t.Fatalf("node %d restart: %v", nd.id, err)
	}
	if err := waitUntil(clusterWaitTimeout, func() error { return apiVersions(nd.DirectAddr()) }); err != nil {
		t.Fatalf("node %d restart: ApiVersions: %v", nd.id, err)
	}
}

// Cut disables the node's proxy: new connections to it are refused and the
// open ones closed, so neither clients nor other brokers reach it.
func (nd *clusterNode) Cut() { nd.proxy.Stop() }

// CutEtcd isolates the node's etcd member from its peers while its Kafka
// listener stays reachable: its peer proxy is stopped (the peers'
// connections to it refused, the open ones closed) and the other nodes'
// gates refuse and close its own outbound raft connections. The proxy
// alone would be a one-way, partial cut, and not enough: etcd's rafthttp
// reads a peer's messages from streams it dialed and sends its own by
// POSTs it dials, so a member with only its inbound port closed keeps its
// quorum (see etcdGate).
func (nd *clusterNode) CutEtcd() {
	t := nd.c.t
	t.Helper()
	if nd.peerProxy == nil {
		t.Fatalf("node %d: CutEtcd needs embedded etcd members", nd.id)
	}
	url := "http://" + nd.peerAddr
	nd.c.etcdMu.Lock()
	if nd.c.etcdCut == nil {
		nd.c.etcdCut = map[string]bool{}
	}
	nd.c.etcdCut[url] = true
	nd.c.etcdMu.Unlock()
	nd.peerProxy.Stop()
	for _, o := range nd.c.nodes {
		o.gate.closeCut()
	}
}

// etcdIsCut reports whether the member with these advertised peer URLs
// (an X-PeerURLs header) is cut.
func (c *cluster) etcdIsCut(urls string) bool {
	c.etcdMu.Lock()
	defer c.etcdMu.Unlock()
	for _, u := range strings.Split(urls, ",") {
		if c.etcdCut[strings.TrimSpace(u)] {
			return true
		}
	}
	return false
}

// Heal undoes Cut, CutEtcd, Delay and OneWay: every toxic removed, the
// proxies on again at the same addresses.
func (nd *clusterNode) Heal() {
	t := nd.c.t
	t.Helper()
	nd.proxy.Toxics.ResetToxics(context.Background())
	if err := nd.proxy.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		t.Fatalf("node %d: restarting its proxy on %s: %v", nd.id, nd.addr, err)
	}
	if nd.peerProxy != nil {
		nd.c.etcdMu.Lock()
		delete(nd.c.etcdCut, "http://"+nd.peerAddr)
		nd.c.etcdMu.Unlock()
		if err := nd.peerProxy.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			t.Fatalf("node %d: restarting its etcd peer proxy on %s: %v", nd.id, nd.peerAddr, err)
		}
	}
}

// Delay adds d of latency to both directions of every link of the node.
func (nd *clusterNode) Delay(d time.Duration) {
	nd.c.t.Helper()
	for _, s := range []string{"upstream", "downstream"} {
		nd.addToxic(fmt.Sprintf(`{"name":"delay_%s","type":"latency","stream":%q,"attributes":{"latency":%d}}`, s, s, d.Milliseconds()))
	}
}

// linkDirection names one direction of the links through a node's proxy.
type linkDirection string

const (
	inbound  linkDirection = "upstream"   // toward the broker: requests from clients and from replicas fetching from it
	outbound linkDirection = "downstream" // from the broker: its responses
)

// OneWay drops everything sent in one direction through the node's proxy
// (Toxiproxy's timeout toxic with timeout 0: data vanishes, connections stay
// open), the other direction still flowing.
func (nd *clusterNode) OneWay(dir linkDirection) {
	nd.c.t.Helper()
	nd.addToxic(fmt.Sprintf(`{"name":"drop_%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, dir, dir))
}

func (nd *clusterNode) addToxic(js string) {
	t := nd.c.t
	t.Helper()
	if _, err := nd.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Fatalf("node %d: adding toxic %s: %v", nd.id, js, err)
	}
}

// HealAll heals every proxy, resumes stopped processes and restarts dead
// ones.
func (c *cluster) HealAll() {
	c.t.Helper()
	for _, nd := range c.nodes {
		nd.Heal()
		nd.mu.Lock()
		stopped := nd.stopped
		nd.mu.Unlock()
		if stopped && nd.Running() {
			nd.Cont()
		}
		if !nd.Running() {
			nd.Restart()
		}
	}
}

// WaitAPIVersions waits until every node answers ApiVersions through its
// proxy.
func (c *cluster) WaitAPIVersions() {
	c.t.Helper()
	for _, nd := range c.nodes {
		if err := waitUntil(clusterWaitTimeout, func() error { return apiVersions(nd.Addr()) }); err != nil {
			c.t.Fatalf("node %d did not answer ApiVersions through %s within %v: %v", nd.id, nd.Addr(), clusterWaitTimeout, err)
		}
	}
}

// WaitBrokers waits until Metadata from some node lists n brokers.
func (c *cluster) WaitBrokers(n int) {
	c.t.Helper()
	err := waitUntil(clusterWaitTimeout, func() error {
		// Every running node must list them: requests that check the
		// live brokers (CreateTopics' replication factor) may go to any.
		for _, nd := range c.nodes {
			if !nd.Running() {
				continue
			}
			md, err := metadataFrom(nd.Addr())
			if err != nil {
				return fmt.Errorf("node %d: %w", nd.id, err)
			}
			if len(md.Brokers) != n {
				return fmt.Errorf("node %d lists %d brokers", nd.id, len(md.Brokers))
			}
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("Metadata never listed %d brokers within %v: %v", n, clusterWaitTimeout, err)
	}
}

// WaitLeader waits until Metadata names a live leader for the partition and
// returns its id.
func (c *cluster) WaitLeader(topic string, partition int32) int32 {
	c.t.Helper()
	var leader int32
	err := waitUntil(clusterWaitTimeout, func() error {
		var err error
		if leader, err = c.leader(topic, partition); err != nil {
			return err
		}
		// Another broker can report a leader before the leader itself has
		// applied the metadata (and would answer UNKNOWN_TOPIC_ID); wait
		// for the leader's own view too.
		own, err := c.nodeLeader(c.Node(leader).Addr(), topic, partition)
		if err != nil {
			return fmt.Errorf("node %d: %w", leader, err)
		}
		if own != leader {
			return fmt.Errorf("node %d reports leader %d", leader, own)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("%s/%d has no leader after %v: %v", topic, partition, clusterWaitTimeout, err)
	}
	return leader
}

// Leader returns the partition's leader as Metadata from any reachable node
// reports it.
func (c *cluster) Leader(topic string, partition int32) (int32, error) {
	return c.leader(topic, partition)
}

func (c *cluster) leader(topic string, partition int32) (int32, error) {
	md, err := c.anyMetadata(topic)
	if err != nil {
		return -1, err
	}
	return leaderIn(md, topic, partition)
}

// nodeLeader is the partition's leader as the node at addr reports it.
func (c *cluster) nodeLeader(addr, topic string, partition int32) (int32, error) {
	md, err := metadataFrom(addr, topic)
	if err != nil {
		return -1, err
	}
	return leaderIn(md, topic, partition)
}

func leaderIn(md *kmsg.MetadataResponse, topic string, partition int32) (int32, error) {
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	for _, tp := range md.Topics {
		if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
			return -1, err
		}
		for _, p := range tp.Partitions {
			if p.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return -1, err
			}
			if p.Leader < 0 || !live[p.Leader] {
				return -1, fmt.Errorf("leader %d is not a live broker", p.Leader)
			}
			return p.Leader, nil
		}
	}
	return -1, fmt.Errorf("no partition %d in Metadata for %s", partition, topic)
}

// Leaders returns partition → leader for a topic, from any reachable node.
func (c *cluster) Leaders(topic string) (map[int32]int32, error) {
	md, err := c.anyMetadata(topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for _, tp := range md.Topics {
		for _, p := range tp.Partitions {
			out[p.Partition] = p.Leader
		}
	}
	return out, nil
}

// anyMetadata asks the nodes in turn, through their proxies, for topics'
// metadata; the first answer wins.
func (c *cluster) anyMetadata(topics ...string) (*kmsg.MetadataResponse, error) {
	var last error
	for _, nd := range c.nodes {
		md, err := metadataFrom(nd.Addr(), topics...)
		if err == nil {
			return md, nil
		}
		last = fmt.Errorf("node %d: %w", nd.id, err)
	}
	return nil, last
}

// Metadata returns Metadata for topics (all if none) from any node.
func (c *cluster) Metadata(topics ...string) (*kmsg.MetadataResponse, error) {
	return c.anyMetadata(topics...)
}

// Controller returns the controller id DescribeCluster reports from any
// node.
func (c *cluster) Controller() (int32, error) {
	var last error
	for _, nd := range c.nodes {
		resp, err := requestTo(nd.Addr(), kmsg.NewPtrDescribeClusterRequest())
		if err != nil {
			last = err
			continue
		}
		dc := resp.(*kmsg.DescribeClusterResponse)
		if err := kerr.ErrorForCode(dc.ErrorCode); err != nil {
			last = err
			continue
		}
		if dc.ControllerID < 0 {
			last = fmt.Errorf("node %d reports no controller", nd.id)
			continue
		}
		return dc.ControllerID, nil
	}
	return -1, last
}

// requestTo sends one request to the broker at addr (not routed by
// metadata), bounded by five seconds.
func requestTo(addr string, req kmsg.Request) (kmsg.Response, error) {
	return requestWithin(addr, req, 5*time.Second)
}

// requestWithin is requestTo bounded by d.
func requestWithin(addr string, req kmsg.Request, d time.Duration) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// apiVersions returns nil once the broker at addr answers ApiVersions. Any
// answer counts: a newer request version than the broker knows is answered
// with UNSUPPORTED_VERSION, and that is an answer.
func apiVersions(addr string) error {
	_, err := requestTo(addr, kmsg.NewPtrApiVersionsRequest())
	return err
}

func metadataFrom(addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	if len(topics) == 0 {
		req.Topics = nil
	}
	resp, err := requestTo(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// waitUntil polls f every 100ms until it returns nil or d has passed; it
// returns f's last error then.
func waitUntil(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts returns k distinct free loopback ports (all held open at once
// while choosing, so they differ).
func freePorts(t testing.TB, k int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	// Below the kernel's ephemeral range (32768-60999 by default), in this
	// package's band (see broker's freeTCPPorts): a port found free in the
	// ephemeral range can become another process's outgoing connection's
	// local port before the node binds it.
	var ports []int
	for attempt := 0; len(ports) < k; attempt++ {
		if attempt > 10000 {
			t.Fatal("no free loopback port in 29000-32767")
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 29000+rand.IntN(3768)))
		if err != nil {
			continue // taken: try another
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func isClosed(ch chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// envInt reads a positive integer from the environment, def if unset.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
