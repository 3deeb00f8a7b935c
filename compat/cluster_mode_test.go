package compat

// Cluster mode: with GREGOR_COMPAT_CLUSTER=1 every test that starts its
// broker with newBroker gets a three-node cluster instead (make
// compat-cluster), so the same assertions run against replicated
// partitions, leaders spread over three nodes and a coordinator that is
// one of them. restart and crashRestart stop or kill every node and start
// them all again. Tests that are about one process (kill -9 cycles under
// load, its RSS) call singleNodeOnly and skip there.

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterMode is set by GREGOR_COMPAT_CLUSTER=1.
var clusterMode = os.Getenv("GREGOR_COMPAT_CLUSTER") == "1"

// clusterModeNodes is the size of the cluster newBroker starts in cluster
// mode.
const clusterModeNodes = 3

// clusterModeSets are the properties every node gets in cluster mode,
// before the test's own.
var clusterModeSets = []string{"default.replication.factor=3", "min.insync.replicas=2"}

// singleNodeOnly skips t in cluster mode: the test is about one process.
func singleNodeOnly(t *testing.T, why string) {
	t.Helper()
	if clusterMode {
		t.Skip("single-node only (GREGOR_COMPAT_CLUSTER=1): " + why)
	}
}

// replicationFactor is the replication factor tests create topics with: 1
// on one broker, every node in cluster mode.
func replicationFactor() int16 {
	if clusterMode {
		return clusterModeNodes
	}
	return 1
}

// expectedNodes returns the node ids Metadata lists: [0] for one broker,
// 1..n in cluster mode.
func expectedNodes() []int32 {
	if !clusterMode {
		return []int32{0}
	}
	var ids []int32
	for i := int32(1); i <= clusterModeNodes; i++ {
		ids = append(ids, i)
	}
	return ids
}

// newClusterBroker starts a three-node cluster with clusterModeSets and
// sets, and returns it as a broker: addr is node 1, seeds all three. At
// cleanup the harness kills the nodes: a graceful stop of all three at
// once takes one to six seconds (the last members wait for a quorum that
// has gone to revoke their leases), too long to pay in every test; restart
// stops them gracefully and checks their exit.
func newClusterBroker(t *testing.T, sets ...string) *broker {
	t.Helper()
	c := startCluster(t, clusterModeNodes, withSet(append(append([]string(nil), clusterModeSets...), sets...)...))
	// Every node, not just one, must know every broker: CreateTopics is
	// checked against the receiving node's view of the registered brokers.
	waitAllBrokers(c)
	b := &broker{cluster: c, seeds: c.Seeds(), sets: sets}
	b.addr = b.seeds[0]
	clusterBrokers.Store(t.Name(), b)
	t.Cleanup(func() { clusterBrokers.CompareAndDelete(t.Name(), b) })
	return b
}

// clusterBrokers maps a test's name to the cluster newBroker started for
// it, for helpers that are given a client but not the broker.
var clusterBrokers sync.Map // string → *broker

// clusterBrokerOf returns the cluster-mode broker of t or of a test t is a
// subtest of, nil if there is none.
func clusterBrokerOf(t *testing.T) *broker {
	for name := t.Name(); ; {
		if b, ok := clusterBrokers.Load(name); ok {
			return b.(*broker)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return nil
		}
		name = name[:i]
	}
}

// stopClusterGracefully sends SIGTERM to every running node at once and
// fails t unless each exits with status 0 within shutdownTimeout (the
// harness kills the stragglers afterwards).
func stopClusterGracefully(t *testing.T, c *cluster) {
	var wg sync.WaitGroup
	for _, nd := range c.Nodes() {
		nd.mu.Lock()
		cmd, exited := nd.cmd, nd.exited
		nd.mu.Unlock()
		if cmd == nil || isClosed(exited) {
			continue
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("node %d: SIGTERM: %v", nd.id, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-exited:
				nd.mu.Lock()
				err := nd.waitErr
				nd.mu.Unlock()
				if err != nil {
					t.Errorf("node %d exit after SIGTERM: %v (want status 0)", nd.id, err)
				}
			case <-time.After(shutdownTimeout):
				t.Errorf("node %d did not exit within %v of SIGTERM", nd.id, shutdownTimeout)
			}
		}()
	}
	wg.Wait()
}

// singleProcess fails t if b is a cluster: restarting or killing "the
// broker" has no meaning there, and the test should have called
// singleNodeOnly.
func (b *broker) singleProcess(t *testing.T) {
	t.Helper()
	if b.cluster != nil {
		t.Fatal("restarting or killing \"the broker\" in cluster mode: the test must call singleNodeOnly")
	}
}

// restartCluster stops every node (SIGKILL if crash, else SIGTERM and a
// clean exit), starts them all again on the same directories and ports, and
// waits until each answers through its proxy and Metadata lists them all.
func (b *broker) restartCluster(t *testing.T, crash bool) {
	t.Helper()
	c := b.cluster
	if crash {
		for _, nd := range c.Nodes() {
			if nd.Running() {
				nd.Kill()
			}
		}
	} else {
		stopClusterGracefully(t, c)
		for _, nd := range c.Nodes() {
			if nd.Running() {
				t.Fatalf("node %d still running after SIGTERM", nd.id)
			}
		}
	}
	// All at once: etcd needs a quorum of its members before any listens.
	for _, nd := range c.Nodes() {
		nd.start()
	}
	for _, nd := range c.Nodes() {
		if err := nd.waitListening(clusterListenTimeout); err != nil {
			t.Fatalf("node %d restart: %v", nd.id, err)
		}
	}
	c.WaitAPIVersions()
	waitAllBrokers(c)
	waitFullISRs(c)
}

// waitFullISRs waits until every node's Metadata shows every partition led
// by a live broker with all its replicas in the ISR: after a restart of
// every node, a leader's ISR is only itself until the others catch up, and
// acks=all produce answers NOT_ENOUGH_REPLICAS until then (as Kafka's does
// with under-replicated partitions).
func waitFullISRs(c *cluster) {
	c.t.Helper()
	c.waitEveryNode("full ISRs", func(md *kmsg.MetadataResponse) error {
		live := map[int32]bool{}
		for _, mb := range md.Brokers {
			live[mb.NodeID] = true
		}
		for _, mt := range md.Topics {
			for _, p := range mt.Partitions {
				if !live[p.Leader] || len(p.ISR) != len(p.Replicas) {
					return fmt.Errorf("%s[%d]: leader %d, replicas %v, isr %v", *mt.Topic, p.Partition, p.Leader, p.Replicas, p.ISR)
				}
			}
		}
		return nil
	})
}

// waitAllBrokers waits until every node's Metadata lists every node.
func waitAllBrokers(c *cluster) {
	c.t.Helper()
	c.waitEveryNode(fmt.Sprintf("%d brokers", len(c.nodes)), func(md *kmsg.MetadataResponse) error {
		if len(md.Brokers) != len(c.nodes) {
			return fmt.Errorf("lists %d brokers", len(md.Brokers))
		}
		return nil
	})
}

// waitEveryNode waits until ok holds for Metadata (for topics, all if none)
// from every node, each asked through its proxy.
func (c *cluster) waitEveryNode(what string, ok func(*kmsg.MetadataResponse) error, topics ...string) {
	c.t.Helper()
	err := waitUntil(clusterWaitTimeout, func() error {
		for _, nd := range c.nodes {
			md, err := metadataFrom(nd.Addr(), topics...)
			if err != nil {
				return fmt.Errorf("node %d: %w", nd.id, err)
			}
			if err := ok(md); err != nil {
				return fmt.Errorf("node %d: %w", nd.id, err)
			}
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("%s: not on every node within %v: %v", what, clusterWaitTimeout, err)
	}
}

// waitTopic waits, in cluster mode, until every node's Metadata lists topic
// with its partitions, each led by a live broker: a topic created through
// one node reaches the others' metadata a moment later, as in Kafka. On one
// broker it returns at once.
func (b *broker) waitTopic(t *testing.T, topic string, partitions int) {
	t.Helper()
	if b.cluster == nil {
		return
	}
	b.cluster.waitEveryNode("topic "+topic, func(md *kmsg.MetadataResponse) error {
		live := map[int32]bool{}
		for _, mb := range md.Brokers {
			live[mb.NodeID] = true
		}
		if len(md.Topics) != 1 {
			return fmt.Errorf("%d topics", len(md.Topics))
		}
		mt := md.Topics[0]
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return err
		}
		if len(mt.Partitions) != partitions {
			return fmt.Errorf("%d partitions, want %d", len(mt.Partitions), partitions)
		}
		for _, p := range mt.Partitions {
			if !live[p.Leader] {
				return fmt.Errorf("partition %d: leader %d is not a live broker", p.Partition, p.Leader)
			}
		}
		return nil
	}, topic)
}
