package kafkaref

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Cluster is n Kafka processes forming one KRaft cluster on loopback: every
// node a combined broker and controller, all of them voters of a static
// quorum (controller.quorum.voters), one cluster id, the internal topics at
// replication factor min(n, 3) and min.insync.replicas one less.
//
//	c, err := kafkaref.StartCluster(ctx, 3, kafkaref.Options{})
//	...
//	defer c.Stop()
//	client := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
type Cluster struct {
	// Brokers[i] is the node with node.id i+1; Restart replaces it. Each
	// one's Dir is Dir/node-<id>.
	Brokers []*Broker
	// ClusterID is the id every node was formatted with.
	ClusterID string
	// Version is the kafka_2.13 version from pom.xml.
	Version string
	// Dir holds the nodes' directories (see Options.Dir).
	Dir string

	cp        string
	opts      Options
	removeDir bool
	mu        sync.Mutex // guards Brokers after start
	stopOnce  sync.Once
	stopErr   error
}

// StartCluster formats n fresh KRaft nodes and starts them, returning once
// the first node's Metadata lists all n brokers. opts apply to every node
// (opts.Props to each one's server.properties; opts.StartTimeout bounds the
// whole start). On error nothing is left running.
func StartCluster(ctx context.Context, n int, opts Options) (c *Cluster, err error) {
	if n < 1 {
		return nil, fmt.Errorf("kafkaref: a cluster of %d nodes", n)
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	version, cp, err := prepare(ctx)
	if err != nil {
		return nil, err
	}
	c = &Cluster{ClusterID: newClusterID(), Version: version, cp: cp, opts: opts}
	if c.Dir, c.removeDir, err = workDir(opts.Dir, "kafkaref-cluster-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	ports, err := freePorts(2 * n)
	if err != nil {
		return c, err
	}
	var voters []string
	for i := 0; i < n; i++ {
		b := &Broker{Version: version, ClusterID: c.ClusterID,
			Dir:            filepath.Join(c.Dir, fmt.Sprintf("node-%d", i+1)),
			Addr:           fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			ControllerAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		if err := os.MkdirAll(b.Dir, 0o755); err != nil {
			return c, err
		}
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, b.ControllerAddr))
		c.Brokers = append(c.Brokers, b)
	}
	// Format the nodes side by side (a JVM start each).
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.Brokers {
		props := nodeProps(i+1, b.Addr, b.ControllerAddr, strings.Join(voters, ","), b.Dir, min(n, 3))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.setup(ctx, cp, props, opts)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	started := make([]time.Time, n)
	for i, b := range c.Brokers {
		if started[i], err = b.launch(cp, opts); err != nil {
			return c, err
		}
	}
	for i, b := range c.Brokers {
		if err := b.waitAnswer(ctx, started[i]); err != nil {
			return c, fmt.Errorf("%w (see %s)", err, b.LogFile)
		}
	}
	if err := waitBrokers(ctx, c.Brokers[0].Addr, n, -1, c.Brokers); err != nil {
		return c, err
	}
	for i, b := range c.Brokers {
		b.StartDuration = time.Since(started[i])
	}
	return c, nil
}

// Addrs are the nodes' PLAINTEXT listeners, the bootstrap addresses.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var a []string
	for _, b := range c.Brokers {
		a = append(a, b.Addr)
	}
	return a
}

// Pids are the nodes' JVM process ids (0 for a node not started).
func (c *Cluster) Pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p []int
	for _, b := range c.Brokers {
		p = append(p, b.Pid())
	}
	return p
}

// Kill sends SIGKILL to node i's process group (node.id i+1) and waits for
// the JVM to exit; the node can be started again with Restart.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	b := c.Brokers[i]
	c.mu.Unlock()
	b.Kill()
	select {
	case <-b.exited:
	case <-time.After(killTimeout):
		return fmt.Errorf("kafkaref: pid %d still running %v after SIGKILL", b.Pid(), killTimeout)
	}
	return b.Stop()
}

// StopNode ends node i as an operator does (SIGTERM to its process group,
// SIGKILL after 20 s) and waits for the JVM to exit; the node can be
// started again with Restart.
func (c *Cluster) StopNode(i int) error {
	c.mu.Lock()
	b := c.Brokers[i]
	c.mu.Unlock()
	return b.Stop()
}

// KillAll sends SIGKILL to every node's process group at once, without
// waiting; for interrupted programs. Stop must still be called to clean up.
func (c *Cluster) KillAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.Brokers {
		b.Kill()
	}
}

// Restart starts node i again on its data after Kill (or after it exited),
// without formatting, and returns once another node's Metadata lists it
// (registered and unfenced) or, in a one-node cluster, it lists itself.
// Another node lists a killed node until the controller has fenced it
// (broker.session.timeout.ms, 9 s by default), so Restart can return early
// when called sooner.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	c.mu.Lock()
	old := c.Brokers[i]
	c.mu.Unlock()
	select {
	case <-old.exited:
	default:
		return fmt.Errorf("kafkaref: node %d is still running", i+1)
	}
	b := &Broker{Addr: old.Addr, ControllerAddr: old.ControllerAddr, ClusterID: old.ClusterID,
		Version: old.Version, Dir: old.Dir}
	if err := b.openLog(c.opts.Log, os.O_APPEND); err != nil {
		return err
	}
	started, err := b.launch(c.cp, c.opts)
	c.mu.Lock()
	c.Brokers[i] = b
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := b.waitAnswer(ctx, started); err != nil {
		return fmt.Errorf("%w (see %s)", err, b.LogFile)
	}
	ask := c.Addrs()[(i+1)%len(c.Addrs())]
	if err := waitBrokers(ctx, ask, 1, int32(i+1), []*Broker{b}); err != nil {
		return fmt.Errorf("%w (see %s)", err, b.LogFile)
	}
	b.StartDuration = time.Since(started)
	return nil
}

// Stop ends every node at once (SIGTERM to each process group, SIGKILL
// after 20 s) and removes a temporary Dir. It is safe to call more than
// once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		bs := append([]*Broker(nil), c.Brokers...)
		c.mu.Unlock()
		errs := make([]error, len(bs))
		var wg sync.WaitGroup
		for i, b := range bs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = b.Stop()
			}()
		}
		wg.Wait()
		c.stopErr = errors.Join(errs...)
		if c.removeDir && c.stopErr == nil {
			os.RemoveAll(c.Dir)
		}
	})
	return c.stopErr
}
