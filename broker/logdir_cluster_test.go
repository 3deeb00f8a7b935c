package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { testIOFaults = true }

// TestCluster_OfflineLogDirMovesLeadership: in a three-broker cluster
// (RF 3, min.insync.replicas 2) the log dir of the broker leading the most
// partitions fills up (every segment write fails with ENOSPC). It says so
// in its registration and the controller moves its partitions' leadership
// to the other replicas and takes it out of their ISRs, as Kafka's
// controller does with offline log dirs: acks=all producers go on, every
// record acknowledged once. When space returns the broker's probe brings
// the dir back, it catches up and rejoins every ISR; every record is read
// back exactly once, in order.
func TestCluster_OfflineLogDirMovesLeadership(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	defer func(d time.Duration) { logDirProbeInterval = d }(logDirProbeInterval)
	logDirProbeInterval = 100 * time.Millisecond
	brokers, addrs, _ := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{"replica.fetch.wait.max.ms": "100"}
	})
	const topic, parts = "offline-dir", 6
	victim := createReplicatedTopic(t, brokers[0], addrs[0], topic, parts)
	leaders := func() map[int32]int32 {
		md := topicPartitionsOf(brokers[0], topic)
		out := map[int32]int32{}
		for _, p := range md {
			out[p.Index] = p.Leader
		}
		return out
	}
	vb := brokers[victim-1]

	cl := newClient(t, addrs[(victim)%3], kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produced := map[int32][]string{}
	produce := func(round string) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for p := range int32(parts) {
			for i := range 20 {
				v := fmt.Sprintf("%s-%d-%02d", round, p, i)
				produced[p] = append(produced[p], v)
				wg.Add(1)
				cl.Produce(testCtx(t), &kgo.Record{Partition: p, Value: []byte(v)}, func(_ *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil && firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", v, err)
					}
				})
			}
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
	}
	produce("before")

	full := func(op, path string) error {
		if op == "write" {
			return syscall.ENOSPC
		}
		return nil
	}
	vb.logDir.ioFault.Store(&full)
	produce("full") // the victim's partitions fail over; the client retries there
	if vb.LogDirError() == nil {
		t.Fatalf("broker %d: log dir online after failed writes", victim)
	}
	waitFor(t, 20*time.Second, fmt.Sprintf("no partition led by broker %d", victim), func() bool {
		for _, l := range leaders() {
			if l == victim || l < 0 {
				return false
			}
		}
		return true
	})
	if b, ok := brokers[0].cluster.node.Metadata().Brokers[victim]; !ok || !b.LogDirOffline {
		t.Fatalf("broker %d's registration: %+v, %v", victim, b, ok)
	}
	produce("moved")

	vb.logDir.ioFault.Store(nil)
	waitFor(t, 20*time.Second, fmt.Sprintf("broker %d back in every ISR", victim), func() bool {
		if vb.LogDirError() != nil {
			return false
		}
		md := topicPartitionsOf(brokers[0], topic)
		for _, p := range md {
			if !slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return !brokers[0].cluster.node.Metadata().Brokers[victim].LogDirOffline
	})
	produce("after")

	for p := range int32(parts) {
		cons := newClient(t, addrs[0], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
		var got []string
		for len(got) < len(produced[p]) {
			fs := cons.PollFetches(testCtx(t))
			if err := fs.Err(); err != nil {
				t.Fatalf("partition %d after %d records: %v", p, len(got), err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		slices.Sort(got)
		want := slices.Clone(produced[p])
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("partition %d: read %d records %s, want %d %s", p, len(got), strings.Join(got, ","), len(want), strings.Join(want, ","))
		}
	}
}

// topicPartitionsOf is topic's partitions in b's cluster metadata.
func topicPartitionsOf(b *Broker, topic string) []metadata.Partition {
	if t := b.cluster.node.Metadata().Topics[topic]; t != nil {
		return t.Partitions
	}
	return nil
}

// createReplicatedTopic creates topic with parts RF=3 partitions and
// min.insync.replicas=2 through addr, waits until b's metadata gives every
// partition a leader and a full ISR, and returns the broker leading the
// most of them (the lowest id of a tie).
func createReplicatedTopic(t *testing.T, b *Broker, addr, topic string, parts int32) (busiest int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, 3
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, c)
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(testCtx(t), newClient(t, addr)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	waitFor(t, 20*time.Second, topic+": every partition led with a full ISR", func() bool {
		md := topicPartitionsOf(b, topic)
		count := map[int32]int{}
		for _, p := range md {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
			count[p.Leader]++
		}
		busiest = 0
		for id, n := range count {
			if busiest == 0 || n > count[busiest] || (n == count[busiest] && id < busiest) {
				busiest = id
			}
		}
		return len(md) == int(parts)
	})
	return busiest
}
