package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// kafkaJVMArgs are the JVM options kafka-server-start.sh gives the broker
// (KAFKA_JVM_PERFORMANCE_OPTS of kafka-run-class.sh); kafkaHeap is its
// -Xmx1G -Xms1G.
var kafkaJVMArgs = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent"}

const kafkaHeap = "1g"

// kafkaCluster is three Apache Kafka JVMs in KRaft mode (kafkaref): each a
// combined broker and controller and a voter, the internal topics at
// replication factor 3 and min ISR 2, Kafka's defaults otherwise but for
// group.initial.rebalance.delay.ms=0 (what Kafka's own
// config/server.properties ships).
type kafkaCluster struct {
	c *kafkaref.Cluster
}

// startKafka starts the three nodes under tmp; they are killed (by process
// group) at exit.
func startKafka(ctx context.Context, tmp string) *kafkaCluster {
	opts := kafkaref.Options{
		Dir:          filepath.Join(tmp, "kafka"),
		Heap:         kafkaHeap,
		JVMArgs:      kafkaJVMArgs,
		Props:        map[string]string{"group.initial.rebalance.delay.ms": "0"},
		StartTimeout: 3 * time.Minute,
	}
	c, err := kafkaref.StartCluster(ctx, 3, opts)
	if err != nil {
		fatalf("start Kafka: %v", err)
	}
	atExit(func() {
		c.KillAll()
		c.Stop()
	})
	return &kafkaCluster{c: c}
}

func (k *kafkaCluster) seeds() []string { return k.c.Addrs() }

func (k *kafkaCluster) pids() []int {
	var p []int
	for _, pid := range k.c.Pids() {
		if pid > 0 {
			p = append(p, pid)
		}
	}
	return p
}

func (k *kafkaCluster) kill(nodeID int32) {
	if err := k.c.Kill(int(nodeID) - 1); err != nil {
		fatalf("kill Kafka node %d: %v", nodeID, err)
	}
}

func (k *kafkaCluster) stop(nodeID int32) {
	if err := k.c.StopNode(int(nodeID) - 1); err != nil {
		fatalf("stop Kafka node %d: %v", nodeID, err)
	}
}

func (k *kafkaCluster) restart(ctx context.Context, nodeID int32, t *target) {
	if err := k.c.Restart(ctx, int(nodeID)-1); err != nil {
		fatalf("restart Kafka node %d: %v", nodeID, err)
	}
	waitBrokers(ctx, t, 3)
}

// sessionTimeout is Kafka's default broker.session.timeout.ms.
func (k *kafkaCluster) sessionTimeout() time.Duration { return 9 * time.Second }
