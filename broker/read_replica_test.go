package broker

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startRackCluster runs three brokers over embedded etcd in racks a, b and
// c; props[i] adds to broker i+1's properties. stop[i] closes broker i+1
// (once; the test's end closes the others).
func startRackCluster(t *testing.T, props [3]map[string]string) (brokers []*Broker, addrs []string, stop []func()) {
	t.Helper()
	return startEtcdBrokers(t, 3, func(i int, _ string) map[string]string {
		p := map[string]string{
			"broker.rack":               string(rune('a' + i)),
			"replica.fetch.wait.max.ms": "100",
		}
		maps.Copy(p, props[i])
		return p
	})
}

// createAssigned creates a one-partition topic with the given replicas
// (the first leads) and waits until every replica is in the ISR.
func createAssigned(t *testing.T, cl *kgo.Client, brokers []*Broker, name string, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	leader := brokers[replicas[0]-1]
	waitFor(t, 30*time.Second, name+": every replica in the ISR", func() bool {
		p := partitionOf(leader, name)
		if p == nil {
			return false
		}
		ldr := p.leader.Load()
		return ldr != nil && len(ldr.State().ISR) == len(replicas)
	})
	// Brokers without a replica learn of the topic from their own watch of
	// the metadata; until then they answer UNKNOWN_TOPIC_OR_PARTITION, as a
	// Kafka broker whose metadata cache has not caught up does.
	waitFor(t, 30*time.Second, name+": every broker knows the topic", func() bool {
		for _, b := range brokers {
			if b.lookupTopic(name) == nil {
				return false
			}
		}
		return true
	})
}

func partitionOf(b *Broker, topic string) *partition {
	t := b.lookupTopic(topic)
	if t == nil {
		return nil
	}
	parts := b.partitionsOf(t)
	if len(parts) == 0 {
		return nil
	}
	return parts[0]
}

// batchOffsets returns the first and next offset of the record batches
// in raw, and how many batches there are.
func batchOffsets(t *testing.T, raw []byte) (first, next int64, n int) {
	t.Helper()
	first, next = -1, -1
	for len(raw) > 0 {
		if len(raw) < 12 {
			t.Fatalf("%d bytes left, not a batch", len(raw))
		}
		size := 12 + int(binary.BigEndian.Uint32(raw[8:12]))
		var b kmsg.RecordBatch
		if size > len(raw) || b.ReadFrom(raw[:size]) != nil {
			t.Fatalf("bad batch of %d bytes", size)
		}
		if first < 0 {
			first = b.FirstOffset
		}
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		n++
		raw = raw[size:]
	}
	return first, next, n
}

// consumerFetch sends a consumer's Fetch (version at most 12: topics by
// name) for partition 0 of topic and
// returns the partition's answer.
func consumerFetch(t *testing.T, addr string, version int16, topic, rack string, offset int64, leaderEpoch int32, isolation int8) kmsg.FetchResponseTopicPartition {
	t.Helper()
	c := dialRaw(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 10<<20, 1, 0
	req.IsolationLevel = isolation
	req.SessionEpoch = -1
	req.Rack = rack
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = 0, offset, leaderEpoch, 1<<20
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.send(1, req)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.Version = version
	c.recv(1, resp)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// fetchCounts counts, per broker, a client's Fetch requests and the
// record batches it read.
type fetchCounts struct {
	mu               sync.Mutex
	fetches, batches map[int32]int
}

func newFetchCounts() *fetchCounts {
	return &fetchCounts{fetches: map[int32]int{}, batches: map[int32]int{}}
}

func (c *fetchCounts) OnBrokerRead(m kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Fetch) && err == nil {
		c.mu.Lock()
		c.fetches[m.NodeID]++
		c.mu.Unlock()
	}
}

func (c *fetchCounts) OnFetchBatchRead(m kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	c.mu.Lock()
	c.batches[m.NodeID]++
	c.mu.Unlock()
}

func (c *fetchCounts) snapshot() (fetches, batches string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.fetches), fmt.Sprint(c.batches)
}

// consumeAll reads want records of partition 0 of topic from the start
// with a franz-go consumer in rack, checking their values, and returns
// its fetch counts.
func consumeAll(t *testing.T, seed, topic, rack string, want []string) *fetchCounts {
	t.Helper()
	counts := newFetchCounts()
	cl := newClient(t, seed, kgo.Rack(rack), kgo.WithHooks(counts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx := testCtx(t)
	var got []string
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records read: %v", len(got), len(want), err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("record at offset %d, want %d", r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
	cl.Close()
	return counts
}

func produceValues(t *testing.T, seed, topic string, acks kgo.Acks, values []string) {
	t.Helper()
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(acks)}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := newClient(t, seed, opts...)
	for _, v := range values {
		if err := cl.ProduceSync(testCtx(t), kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	cl.Close()
}

func valuesN(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// KIP-392 in a three-broker cluster in racks a, b and c. Brokers 1 and 2
// run RackAwareReplicaSelector, broker 3 none.
//
//   - Topic near (leader 1 in rack a): the leader sends a consumer in rack
//     b to broker 2 (PreferredReadReplica 2, no records) and serves one in
//     its own rack, or naming none; a franz-go consumer with Rack("b")
//     then reads every record from broker 2.
//   - Topic plain (leader 3, no selector): the same consumer reads
//     everything from the leader.
//   - Broker 2 as a follower: with broker 3 stalled (its fetcher stopped,
//     so the leader's high watermark stays at 100 while broker 2 copies
//     110 records) it serves consumers up to its high watermark 100, an
//     offset between that and its log end offset empty, one beyond its log
//     OFFSET_OUT_OF_RANGE, a newer epoch UNKNOWN_LEADER_EPOCH, a Fetch
//     older than v11 and a ListOffsets NOT_LEADER_OR_FOLLOWER; the leader
//     no longer offers broker 3 for offsets it does not have.
//   - After the leader's failover, the old epoch is FENCED_LEADER_EPOCH
//     on the other replicas.
func TestCluster_FetchFromClosestReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	sel := map[string]string{"replica.selector.class": config.RackAwareReplicaSelector, "replica.lag.time.max.ms": "30000"}
	brokers, addrs, stop := startRackCluster(t, [3]map[string]string{sel, sel, {"replica.lag.time.max.ms": "30000"}})
	admin := newClient(t, addrs[0])
	createAssigned(t, admin, brokers, "near", []int32{1, 2, 3})
	createAssigned(t, admin, brokers, "plain", []int32{3, 1, 2})

	near := valuesN("near", 100)
	produceValues(t, addrs[0], "near", kgo.AllISRAcks(), near)
	waitFor(t, 30*time.Second, "every replica of near with high watermark 100", func() bool {
		for _, b := range brokers {
			if partitionOf(b, "near").log.HighWatermark() != 100 {
				return false
			}
		}
		return true
	})

	// The leader's answers.
	sp := consumerFetch(t, addrs[0], 12, "near", "b", 0, 0, 0)
	if sp.ErrorCode != 0 || sp.PreferredReadReplica != 2 || len(sp.RecordBatches) != 0 || sp.HighWatermark != 100 || sp.LogStartOffset != 0 {
		t.Fatalf("leader to rack b: error %d, preferred %d, %d record bytes, hw %d, log start %d; want 0, 2, 0, 100, 0",
			sp.ErrorCode, sp.PreferredReadReplica, len(sp.RecordBatches), sp.HighWatermark, sp.LogStartOffset)
	}
	for _, rack := range []string{"a", "", "elsewhere"} {
		sp := consumerFetch(t, addrs[0], 12, "near", rack, 0, 0, 0)
		if first, next, _ := batchOffsets(t, sp.RecordBatches); sp.ErrorCode != 0 || sp.PreferredReadReplica != -1 || first != 0 || next != 100 {
			t.Fatalf("leader to rack %q: error %d, preferred %d, batches [%d, %d); want 0, -1, [0, 100)", rack, sp.ErrorCode, sp.PreferredReadReplica, first, next)
		}
	}
	if sp := consumerFetch(t, addrs[0], 10, "near", "", 0, 0, 0); sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
		t.Fatalf("leader to a Fetch v10: preferred %d, %d record bytes", sp.PreferredReadReplica, len(sp.RecordBatches))
	}

	// A franz-go consumer in rack b: one Fetch at the leader, the records
	// from broker 2.
	counts := consumeAll(t, addrs[0], "near", "b", near)
	fetches, batches := counts.snapshot()
	t.Logf("rack b consumer of near: fetches by broker %s, batches by broker %s", fetches, batches)
	counts.mu.Lock()
	fromLeader, fromB, fromC := counts.fetches[1], counts.fetches[2], counts.fetches[3]
	batchesElsewhere := len(counts.batches) != 1 || counts.batches[2] == 0
	counts.mu.Unlock()
	if fromLeader < 1 || fromB < 1 || fromC != 0 || batchesElsewhere {
		t.Fatalf("rack b consumer of near: fetches by broker %s, batches by broker %s; want batches only from broker 2", fetches, batches)
	}

	// Without a selector on the leader, everything comes from it.
	plain := valuesN("plain", 20)
	produceValues(t, addrs[2], "plain", kgo.AllISRAcks(), plain)
	if sp := consumerFetch(t, addrs[2], 12, "plain", "b", 0, 0, 0); sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
		t.Fatalf("leader without a selector: preferred %d, %d record bytes", sp.PreferredReadReplica, len(sp.RecordBatches))
	}
	counts = consumeAll(t, addrs[2], "plain", "b", plain)
	fetches, batches = counts.snapshot()
	counts.mu.Lock()
	onlyLeader := len(counts.fetches) == 1 && counts.fetches[3] > 0 && len(counts.batches) == 1 && counts.batches[3] > 0
	counts.mu.Unlock()
	if !onlyLeader {
		t.Fatalf("rack b consumer of plain: fetches by broker %s, batches by broker %s; want all from broker 3", fetches, batches)
	}

	// Broker 3's fetches from the leader stall (a fault on the leader for
	// its client id: unfollowing on broker 3 would last only until its
	// metadata loop applies the next revision). It stays in the ISR (30 s
	// lag), so the high watermark stays at 100 while broker 2 copies 10
	// more. A fetch of broker 3's already waiting at offset 100 may still
	// bring it records, but the leader learns of them only from its next.
	if _, err := brokers[0].InjectFault(Fault{APIKey: int16(kmsg.Fetch), ClientID: "gregor-replica-3", Latency: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	produceValues(t, addrs[0], "near", kgo.LeaderAck(), valuesN("more", 10))
	follower := partitionOf(brokers[1], "near").log
	waitFor(t, 20*time.Second, "broker 2 to copy offsets 100-109", func() bool { return follower.LogEndOffset() == 110 })
	if hw := follower.HighWatermark(); hw != 100 {
		t.Fatalf("broker 2's high watermark %d, want 100", hw)
	}
	for _, iso := range []int8{0, 1} {
		sp := consumerFetch(t, addrs[1], 12, "near", "b", 0, 0, iso)
		if first, next, _ := batchOffsets(t, sp.RecordBatches); sp.ErrorCode != 0 || first != 0 || next != 100 || sp.HighWatermark != 100 || sp.LastStableOffset != 100 || sp.PreferredReadReplica != -1 {
			t.Fatalf("follower, isolation %d, from 0: error %d, batches [%d, %d), hw %d, lso %d, preferred %d; want 0, [0, 100), 100, 100, -1",
				iso, sp.ErrorCode, first, next, sp.HighWatermark, sp.LastStableOffset, sp.PreferredReadReplica)
		}
	}
	for _, off := range []int64{100, 105, 110} {
		if sp := consumerFetch(t, addrs[1], 12, "near", "b", off, 0, 0); sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 || sp.HighWatermark != 100 {
			t.Fatalf("follower from %d: error %d, %d record bytes, hw %d; want 0, 0, 100", off, sp.ErrorCode, len(sp.RecordBatches), sp.HighWatermark)
		}
	}
	for _, tc := range []struct {
		what    string
		version int16
		offset  int64
		epoch   int32
		want    int16
	}{
		{"beyond its log", 12, 111, 0, kerr.OffsetOutOfRange.Code},
		{"a newer epoch", 12, 0, 1, kerr.UnknownLeaderEpoch.Code},
		{"Fetch v10", 10, 0, 0, kerr.NotLeaderForPartition.Code},
	} {
		if sp := consumerFetch(t, addrs[1], tc.version, "near", "b", tc.offset, tc.epoch, 0); sp.ErrorCode != tc.want {
			t.Errorf("follower, %s: error %d, want %d", tc.what, sp.ErrorCode, tc.want)
		}
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "near"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	rc := dialRaw(t, addrs[1])
	rc.send(2, lo)
	lresp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
	lresp.Version = lo.Version
	rc.recv(2, lresp)
	if code := lresp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("follower's ListOffsets: error %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	// The leader offers broker 3 (rack c, log end offset 100) for offsets
	// it holds, not beyond.
	if sp := consumerFetch(t, addrs[0], 12, "near", "c", 50, 0, 0); sp.PreferredReadReplica != 3 {
		t.Errorf("leader to rack c at 50: preferred %d, want 3", sp.PreferredReadReplica)
	}
	if sp := consumerFetch(t, addrs[0], 12, "near", "c", 105, 0, 0); sp.ErrorCode != 0 || sp.PreferredReadReplica != -1 {
		t.Errorf("leader to rack c at 105: error %d, preferred %d, want 0, -1", sp.ErrorCode, sp.PreferredReadReplica)
	}

	// Failover: broker 1 leaves, the next leader has epoch 1, and the
	// other replica fences epoch 0.
	stop[0]()
	waitFor(t, 30*time.Second, "near's leader epoch 1 on brokers 2 and 3", func() bool {
		return partitionOf(brokers[1], "near").epoch.Load() == 1 && partitionOf(brokers[2], "near").epoch.Load() == 1
	})
	newLeader := partitionOf(brokers[1], "near").meta.Load().Leader
	other := 5 - newLeader // of brokers 2 and 3
	if sp := consumerFetch(t, addrs[other-1], 12, "near", "b", 0, 0, 0); sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Errorf("replica %d with leader %d, epoch 0: error %d, want FENCED_LEADER_EPOCH", other, newLeader, sp.ErrorCode)
	}
	if sp := consumerFetch(t, addrs[other-1], 12, "near", "b", 0, 1, 0); sp.ErrorCode != 0 {
		t.Errorf("replica %d with leader %d, epoch 1: error %d, want 0", other, newLeader, sp.ErrorCode)
	}
}
