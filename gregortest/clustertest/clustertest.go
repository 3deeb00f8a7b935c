// Package clustertest starts a cluster of real Gregor brokers inside one
// Go test: every broker is a broker.Broker in this process with its own
// data directory and an embedded etcd voter, as `gregor --node-id N
// --voters …` runs each one, so replication, leader elections, ISR
// changes and coordinator failover are the production code's.
//
//	func TestFailover(t *testing.T) {
//		c := clustertest.Start(t, 3)
//		cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
//		…
//		c.Stop(c.LeaderOf("orders", 0)) // a clean shutdown; Restart brings it back
//	}
//
// Unlike gregortest, which starts one broker and links no etcd, this
// package links the etcd server (a larger build): use it for tests that
// need several brokers.
//
// # Defaults
//
// As gregortest: group.initial.rebalance.delay.ms=0, no logging unless
// Logger is given. For a cluster: default.replication.factor and
// offsets.topic.replication.factor are the number of brokers (at most 3),
// and broker.session.timeout.ms is 3000, so a stopped broker's partitions
// move within seconds. Prop sets any property by its Kafka name.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/cluster"
	"github.com/gregor-broker/gregor/metadata"
)

// Opt configures a cluster.
type Opt func(*cfg)

type cfg struct {
	props  map[string]string
	logger *slog.Logger
}

// Prop sets a broker property (its Kafka name) on every broker.
func Prop(name, value string) Opt { return func(c *cfg) { c.props[name] = value } }

// Logger sends every broker's log to l (each line carries its node id).
func Logger(l *slog.Logger) Opt { return func(c *cfg) { c.logger = l } }

// Cluster is a running cluster.
type Cluster struct {
	t      testing.TB
	cfg    cfg
	voters string
	mu     sync.Mutex
	nodes  []*Node // by node id - 1
}

// Node is one broker of a cluster. Broker is nil while it is stopped.
type Node struct {
	*broker.Broker
	ID     int32
	dir    string
	addr   string // the client listener, kept across restarts
	served chan error
}

// Addr returns the broker's client address, host:port on 127.0.0.1.
func (n *Node) Addr() string { return n.addr }

// DataDir returns the broker's data directory.
func (n *Node) DataDir() string { return n.dir }

// timeout bounds the start of a cluster and each wait of this package.
const timeout = 60 * time.Second

// Start starts n brokers (node ids 1 to n, every one an etcd voter) and
// returns once each of them sees all n live; it fails the test if they
// cannot start, and stops them in t.Cleanup.
func Start(t testing.TB, n int, opts ...Opt) *Cluster {
	t.Helper()
	rf := strconv.Itoa(min(n, 3))
	c := &Cluster{t: t, cfg: cfg{props: map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"default.replication.factor":       rf,
		"offsets.topic.replication.factor": rf,
		"broker.session.timeout.ms":        "3000",
	}}}
	for _, o := range opts {
		o(&c.cfg)
	}
	if c.cfg.logger == nil {
		c.cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i]))
	}
	c.voters = strings.Join(voters, ",")
	for i := range n {
		c.nodes = append(c.nodes, &Node{ID: int32(i + 1), dir: t.TempDir(), addr: fmt.Sprintf("127.0.0.1:%d", ports[n+i])})
	}
	t.Cleanup(c.close)
	// The voters start together: each waits for a quorum to join.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(nd)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	c.waitLive(n)
	return c
}

// join is package cluster's etcd store, as cmd/gregor wires it.
func join(ctx context.Context, cfg metadata.JoinConfig) (broker.Cluster, error) {
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return n, nil
}

func (c *Cluster) start(nd *Node) error {
	props := maps.Clone(c.cfg.props)
	props["node.id"] = strconv.Itoa(int(nd.ID))
	props["controller.quorum.voters"] = c.voters
	b, err := broker.New(broker.Config{
		Listen: nd.addr, DataDir: nd.dir, Props: props,
		Logger: c.cfg.logger.With("node", nd.ID), JoinCluster: join,
	})
	if err != nil {
		return fmt.Errorf("node %d: %w", nd.ID, err)
	}
	if _, err := b.Listen(); err != nil {
		b.Close()
		return fmt.Errorf("node %d: %w", nd.ID, err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	c.mu.Lock()
	nd.Broker, nd.served = b, served
	c.mu.Unlock()
	return nil
}

// Seeds returns every broker's address, to bootstrap a client with.
func (c *Cluster) Seeds() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.addr
	}
	return out
}

// Node returns the broker with node id id (1 to n).
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("clustertest: no node %d in a cluster of %d", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// running returns a running broker, to ask it about the cluster.
func (c *Cluster) running() *broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nd := range c.nodes {
		if nd.Broker != nil {
			return nd.Broker
		}
	}
	c.t.Fatal("clustertest: every broker is stopped")
	return nil
}

// LeaderOf returns the node id of the partition's leader as a running
// broker sees it now, -1 when it has none (or the partition is unknown).
func (c *Cluster) LeaderOf(topic string, partition int32) int32 {
	for _, p := range c.running().ClusterInfo().Partitions {
		if p.Topic == topic && p.Partition == partition {
			return p.Leader
		}
	}
	return -1
}

// Stop shuts a broker down cleanly (a controlled shutdown: its
// partitions' leadership moves first), keeping its data for Restart.
func (c *Cluster) Stop(id int32) {
	c.t.Helper()
	nd := c.Node(id)
	c.mu.Lock()
	b, served := nd.Broker, nd.served
	nd.Broker = nil
	c.mu.Unlock()
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := b.ControlledShutdown(ctx); err != nil {
		c.t.Logf("clustertest: node %d: controlled shutdown: %v", id, err)
	}
	if err := b.Close(); err != nil {
		c.t.Errorf("clustertest: node %d: close: %v", id, err)
	}
	<-served
}

// Restart starts a stopped broker again on its data directory and
// address, and returns once every running broker sees it live.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	nd := c.Node(id)
	if nd.Broker != nil {
		c.t.Fatalf("clustertest: node %d is running", id)
	}
	if err := c.start(nd); err != nil {
		c.t.Fatalf("clustertest: restart: %v", err)
	}
	c.waitLive(c.runningCount())
}

func (c *Cluster) runningCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, nd := range c.nodes {
		if nd.Broker != nil {
			n++
		}
	}
	return n
}

// waitLive waits until every running broker sees n live brokers.
func (c *Cluster) waitLive(n int) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok := true
		c.mu.Lock()
		for _, nd := range c.nodes {
			if nd.Broker != nil && len(nd.ClusterInfo().Brokers) != n {
				ok = false
			}
		}
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: the brokers did not all see %d live brokers within %v", n, timeout)
		}
		<-tick.C
	}
}

// close stops every running broker, the last ones together (a broker
// that is not the last voter standing needs a quorum to leave cleanly).
func (c *Cluster) close() {
	c.mu.Lock()
	var running []*Node
	for _, nd := range c.nodes {
		if nd.Broker != nil {
			running = append(running, nd)
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, nd := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.Broker.Close()
			<-nd.served
		}()
	}
	wg.Wait()
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
