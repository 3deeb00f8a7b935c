package compat

// Fetch from the closest replica (KIP-392) with real processes: three
// nodes in racks a, b and c running RackAwareReplicaSelector, a topic led
// by the rack-a node, and a franz-go consumer with Rack("b"): after its
// first Fetch at the leader, every record comes from the rack-b node.

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClusterFetchFromClosestReplica(t *testing.T) {
	const selector = "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"
	c := startCluster(t, 3, withSet(selector),
		withNodeSet(1, "broker.rack=a"), withNodeSet(2, "broker.rack=b"), withNodeSet(3, "broker.rack=c"))
	c.WaitBrokers(3)
	ctx := testCtx(t, 2*time.Minute)
	topic := topicName(t, "")

	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 10000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{1, 2, 3}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	create.Topics = append(create.Topics, ct)
	cresp, err := create.RequestWith(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(cresp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create: %v", err)
	}
	if leader := c.WaitLeader(topic, 0); leader != 1 {
		t.Fatalf("leader %d, want 1", leader)
	}
	if err := waitUntil(30*time.Second, func() error {
		md, err := c.Metadata(topic)
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 || len(md.Topics[0].Partitions[0].ISR) != 3 {
			return fmt.Errorf("metadata %+v", md.Topics)
		}
		return nil
	}); err != nil {
		t.Fatalf("all three replicas in the ISR: %v", err)
	}

	want := make([]string, 200)
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range want {
		want[i] = fmt.Sprintf("rec-%03d", i)
		prod.Produce(ctx, kgo.StringRecord(want[i]), nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	var mu sync.Mutex
	fetches, batches := map[int32]int{}, map[int32]int{}
	hooks := closestHooks{
		read: func(id int32, key int16) {
			if key == int16(kmsg.Fetch) {
				mu.Lock()
				fetches[id]++
				mu.Unlock()
			}
		},
		batch: func(id int32) { mu.Lock(); batches[id]++; mu.Unlock() },
	}
	cons := c.Client(kgo.Rack("b"), kgo.WithHooks(hooks), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records read", len(got), len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("record at offset %d, want %d", r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	cons.Close()
	if !slices.Equal(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("Fetch requests by node %v, record batches by node %v", fetches, batches)
	if fetches[1] < 1 || fetches[2] < 1 || fetches[3] != 0 || len(batches) != 1 || batches[2] == 0 {
		t.Fatalf("Fetch requests by node %v, record batches by node %v; want the batches from node 2 alone", fetches, batches)
	}
}

// closestHooks counts a client's requests and record batches by node.
type closestHooks struct {
	read  func(id int32, key int16)
	batch func(id int32)
}

func (h closestHooks) OnBrokerRead(m kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.read(m.NodeID, key)
	}
}

func (h closestHooks) OnFetchBatchRead(m kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	h.batch(m.NodeID)
}
