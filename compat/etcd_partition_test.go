package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// etcdPartitionBound bounds each wait of TestEtcdPartition.
const etcdPartitionBound = 60 * time.Second

// TestEtcdPartition_IsolatedLeaderFenced cuts the etcd peer link of a
// partition leader while its Kafka listener stays reachable, the failure
// the fencing of cluster/doc.go (# Fencing) exists for. Three nodes, one
// partition with RF=3 and min.insync.replicas=2, a synchronous acks=all
// producer writing throughout. It checks that leadership moves to another
// node, that the isolated broker answers a Produce sent straight to it
// with a Kafka error code (NOT_LEADER_OR_FOLLOWER), that writes resume
// through the new leader, that the old leader rejoins the ISR once healed,
// and that every acknowledged record is read back exactly once at its
// acknowledged offset (acknowledged ⊆ read, no value twice).
func TestEtcdPartition_IsolatedLeaderFenced(t *testing.T) {
	c := startCluster(t, 3, withSet("min.insync.replicas=2", "replica.lag.time.max.ms=5000", "replica.fetch.wait.max.ms=100"))
	ctx := testCtx(t, 4*time.Minute)
	topic := topicName(t, "")
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	old := c.WaitLeader(topic, 0)
	waitFullISRs(c)

	// The producer: one record at a time, each ProduceSync bounded, so that
	// every record is either acknowledged at an offset or not.
	type ack struct {
		value  string
		offset int64
		at     time.Time
	}
	var (
		mu      sync.Mutex
		acked   []ack
		failed  int
		lastErr error
	)
	ackedN := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(8*time.Second))
	pctx, stopProducer := context.WithCancel(ctx)
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for seq := 0; pctx.Err() == nil; seq++ {
			v := "v-" + strconv.Itoa(seq)
			rctx, cancel := context.WithTimeout(pctx, 10*time.Second)
			r, err := cl.ProduceSync(rctx, &kgo.Record{Value: []byte(v)}).First()
			cancel()
			mu.Lock()
			if err == nil {
				acked = append(acked, ack{v, r.Offset, time.Now()})
			} else {
				failed++
				lastErr = err
			}
			mu.Unlock()
		}
	}()
	defer func() { stopProducer(); <-producerDone }()
	waitCond(t, "20 acknowledged records before the cut", func() error {
		if n := ackedN(); n < 20 {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})

	// Cut the leader's etcd peer link; its Kafka listener stays up.
	before := ackedN()
	cutAt := time.Now()
	c.Node(old).CutEtcd()
	t.Logf("node %d (leader of %s/0) cut from etcd's peers after %d acknowledged records", old, topic, before)

	var leader int32
	waitCond(t, "another node naming a new leader", func() error {
		for _, nd := range c.Nodes() {
			if nd.ID() == old {
				continue
			}
			l, err := c.nodeLeader(nd.Addr(), topic, 0)
			if err != nil {
				return fmt.Errorf("node %d: %w", nd.ID(), err)
			}
			if l == old {
				return fmt.Errorf("node %d still names %d", nd.ID(), l)
			}
			leader = l
		}
		return nil
	})
	moved := time.Since(cutAt)
	t.Logf("leadership moved from %d to %d %v after the cut", old, leader, moved.Round(time.Millisecond))

	// The isolated broker refuses writes: a Produce sent straight to it.
	code, msg, err := produceDirect(c.Node(old).Addr(), topic, "direct-to-isolated")
	if err != nil {
		t.Fatalf("Produce to isolated node %d: %v", old, err)
	}
	if code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("isolated node %d answers a Produce after node %d became leader with %v (%q), want NOT_LEADER_OR_FOLLOWER", old, leader, kerr.ErrorForCode(code), msg)
	}
	t.Logf("isolated node %d answers Produce with NOT_LEADER_OR_FOLLOWER: %q", old, msg)
	// And says so in its log.
	waitCond(t, fmt.Sprintf("node %d logging that it is fenced", old), func() error {
		b, err := os.ReadFile(c.Node(old).logPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "msg=\"fenced: ") {
			return errors.New("no fenced line yet")
		}
		return nil
	})

	// Writes resume through the new leader.
	resumeFrom := ackedN()
	waitCond(t, "20 more acknowledged records after the move", func() error {
		if n := ackedN(); n < resumeFrom+20 {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("%d acknowledged since (failed %d, last error %v)", n-resumeFrom, failed, lastErr)
		}
		return nil
	})
	resumed := time.Since(cutAt)

	// Heal; the old leader rejoins the ISR.
	c.Node(old).Heal()
	waitCond(t, fmt.Sprintf("node %d back in the ISR", old), func() error {
		md, err := metadataFrom(c.Node(leader).Addr(), topic)
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
			return fmt.Errorf("no %s/0 in Metadata", topic)
		}
		p := md.Topics[0].Partitions[0]
		if !slices.Contains(p.ISR, old) {
			return fmt.Errorf("leader %d, ISR %v", p.Leader, p.ISR)
		}
		return nil
	})
	healed := time.Since(cutAt)
	stopProducer()
	<-producerDone

	// Read the partition back to its high watermark.
	end := listEnd(t, ctx, c, topic)
	rcl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, etcdPartitionBound)
	defer cancel()
	byValue := map[string][]int64{}
	next := int64(0)
	for next < end {
		fs := rcl.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("reading %s/0: at offset %d of %d: %v", topic, next, end, rctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next {
				t.Errorf("offset %d read after %d", r.Offset, next-1)
			}
			next = r.Offset + 1
			byValue[string(r.Value)] = append(byValue[string(r.Value)], r.Offset)
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for v, offs := range byValue {
		if len(offs) > 1 {
			t.Errorf("%s read %d times, at offsets %v", v, len(offs), offs)
		}
	}
	if _, ok := byValue["direct-to-isolated"]; ok {
		t.Errorf("the record the isolated node refused is in the log")
	}
	lost, gap := 0, time.Duration(0)
	for i, a := range acked {
		if i > 0 {
			gap = max(gap, a.at.Sub(acked[i-1].at))
		}
		if i > 0 && a.offset <= acked[i-1].offset {
			t.Errorf("%s acknowledged at offset %d, not after %s at %d", a.value, a.offset, acked[i-1].value, acked[i-1].offset)
		}
		offs := byValue[a.value]
		if len(offs) == 0 {
			lost++
			t.Errorf("acknowledged %s at offset %d is not in the log", a.value, a.offset)
			continue
		}
		if offs[0] != a.offset {
			t.Errorf("acknowledged %s at offset %d, read at %d", a.value, a.offset, offs[0])
		}
	}
	t.Logf("leadership moved %v after the cut, writes resumed by %v, ISR full again by %v; longest gap between acks %v; %d acknowledged (%d after the move), %d failed, %d read up to offset %d, %d lost",
		moved.Round(time.Millisecond), resumed.Round(time.Millisecond), healed.Round(time.Millisecond), gap.Round(time.Millisecond), len(acked), len(acked)-resumeFrom, failed, len(byValue), end, lost)
}

// produceDirect sends one acks=all record to partition 0 of topic at the
// broker at addr (not routed by metadata) and returns the partition's
// error code and message.
func produceDirect(addr, topic, value string) (int16, string, error) {
	raw := buildBatch(-1, -1, -1, time.Now(), rawRecord{value: []byte(value)})
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := requestWithin(addr, req, 10*time.Second)
	if err != nil {
		return 0, "", err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return 0, "", fmt.Errorf("Produce response %+v", pr)
	}
	p := pr.Topics[0].Partitions[0]
	msg := ""
	if p.ErrorMessage != nil {
		msg = *p.ErrorMessage
	}
	return p.ErrorCode, msg, nil
}

// listEnd returns partition 0's high watermark, asked of its leader.
func listEnd(t *testing.T, ctx context.Context, c *cluster, topic string) int64 {
	t.Helper()
	ends, err := c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("ListEndOffsets %s/0: %+v", topic, o)
	}
	return o.Offset
}

// waitCond waits, bounded by etcdPartitionBound, until f returns nil.
func waitCond(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := waitUntil(etcdPartitionBound, f); err != nil {
		t.Fatalf("%s: not within %v: %v", what, etcdPartitionBound, err)
	}
}
