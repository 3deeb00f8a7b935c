package compat

// __consumer_offsets as Kafka's tools see it: an internal topic, in Kafka's
// record formats (a lag tool that reads it finds every commit), and the
// replicated home of a group's state, so that a group survives kill -9 of
// its coordinator without a committed offset going backwards.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type decodedCommit struct {
	topic     string
	partition int32
	offset    int64
	metadata  string
}

// decodeCommits reads __consumer_offsets from the start with cl until fn
// is satisfied, decoding every record with kmsg, and returns group's
// commits in log order per partition.
func decodeCommits(t *testing.T, ctx context.Context, cl *kgo.Client, group string, done func([]decodedCommit) bool) []decodedCommit {
	t.Helper()
	var got []decodedCommit
	for !done(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("decoded %d commits of %s before the deadline: %v", len(got), group, got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Key) < 2 {
				t.Fatalf("record at %d has a key of %d bytes", r.Offset, len(r.Key))
			}
			switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); version {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Fatalf("OffsetCommitKey at %d: %v", r.Offset, err)
				}
				if k.Group != group || r.Value == nil {
					return
				}
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatalf("OffsetCommitValue at %d: %v", r.Offset, err)
				}
				got = append(got, decodedCommit{k.Topic, k.Partition, v.Offset, v.Metadata})
			case 2:
				var k kmsg.GroupMetadataKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Fatalf("GroupMetadataKey at %d: %v", r.Offset, err)
				}
				if r.Value != nil {
					var v kmsg.GroupMetadataValue
					if err := v.ReadFrom(r.Value); err != nil {
						t.Fatalf("GroupMetadataValue at %d: %v", r.Offset, err)
					}
				}
			default:
				t.Fatalf("record at %d has key version %d", r.Offset, version)
			}
		})
	}
	return got
}

// TestConsumerOffsetsTopicDecodes: a group's commits are records of
// __consumer_offsets that a real client consumes and kmsg decodes, every
// one of them, in commit order; the topic is internal with 50 partitions.
func TestConsumerOffsetsTopicDecodes(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	createTopic(t, ctx, adm, topic, 3, nil)
	group := "decode-" + topic

	var want []decodedCommit
	for i := int64(1); i <= 5; i++ {
		os := make(kadm.Offsets)
		for p := int32(0); p < 3; p++ {
			md := fmt.Sprintf("commit-%d", i)
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: i*10 + int64(p), LeaderEpoch: -1, Metadata: md})
			want = append(want, decodedCommit{topic, p, i*10 + int64(p), md})
		}
		if err := adm.CommitAllOffsets(ctx, group, os); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}

	md := metadata(t, ctx, newClient(t, b), "__consumer_offsets")
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || !md.Topics[0].IsInternal || len(md.Topics[0].Partitions) != 50 {
		t.Fatalf("__consumer_offsets in Metadata: %+v", md.Topics)
	}

	cl := newClient(t, b, kgo.ConsumeTopics("__consumer_offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	got := decodeCommits(t, ctx, cl, group, func(got []decodedCommit) bool { return len(got) >= len(want) })
	// One group lives in one partition: the commits of each of its
	// partitions are in commit order (within one request, in any order).
	if len(got) != len(want) {
		t.Fatalf("decoded %d commits, want %d: %v", len(got), len(want), got)
	}
	byPartition := func(cs []decodedCommit) map[int32][]decodedCommit {
		m := map[int32][]decodedCommit{}
		for _, c := range cs {
			m[c.partition] = append(m[c.partition], c)
		}
		return m
	}
	g, w := byPartition(got), byPartition(want)
	for p := range w {
		if fmt.Sprint(g[p]) != fmt.Sprint(w[p]) {
			t.Fatalf("partition %d: decoded %v, want %v", p, g[p], w[p])
		}
	}
}

// TestClusterGroupCoordinatorFailover: a group commits synchronously on a
// three-node cluster; its coordinator is killed -9; the group's committed
// offsets are served by the new coordinator exactly (none lost, none
// backwards), and a consumer of the group resumes from exactly them.
func TestClusterGroupCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, withSet("group.initial.rebalance.delay.ms=0"))
	c.WaitBrokers(3)
	ctx := testCtx(t, 4*time.Minute)
	adm := c.Admin()
	topic := topicName(t, "")
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		c.WaitLeader(topic, p)
	}
	produced := keyedRecords(topic, testKeys, 100)
	produceAll(t, ctx, c.Client(), produced)
	group := "failover-" + topic

	// Consume about half, committing every poll synchronously.
	cons := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxPartitionBytes(2000))
	committed := map[int32]int64{}
	var latencies []time.Duration
	n := 0
	for n < len(produced)/2 {
		fs := cons.PollRecords(ctx, 20)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d before the deadline", n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s[%d]: %v", topic, p, err) })
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		start := time.Now()
		if err := cons.CommitRecords(ctx, recs...); err != nil {
			t.Fatalf("commit: %v", err)
		}
		latencies = append(latencies, time.Since(start))
		for _, r := range recs {
			committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
		}
		n += len(recs)
	}
	cons.Close() // leaves the group: it is Empty, with its offsets
	var total time.Duration
	for _, l := range latencies {
		total += l
	}
	t.Logf("%d synchronous commits, mean latency %v", len(latencies), total/time.Duration(len(latencies)))

	coord := findGroupCoordinator(t, ctx, c, group)
	t.Logf("group %s: coordinator %d, committed %v", group, coord, committed)
	killed := time.Now()
	c.Node(coord).Kill()
	// A dead host refuses connections; the harness's proxy would accept
	// and close them, which clients do not treat as a dead coordinator.
	c.Node(coord).Cut()

	// The offsets are served again, exactly. A fresh client each time:
	// franz-go v1.22's sharded OffsetFetch keeps dialing a cached
	// coordinator that refuses connections.
	var fetched kadm.OffsetResponses
	var lastErr string
	if err := waitUntil(90*time.Second, func() error {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
		if err != nil {
			return err
		}
		defer cl.Close()
		os, err := kadm.NewClient(cl).FetchOffsets(fctx, group)
		if err == nil {
			err = os.Error()
		}
		if err != nil {
			if err.Error() != lastErr {
				t.Logf("%v after the kill: FetchOffsets: %v", time.Since(killed), err)
				lastErr = err.Error()
			}
			return err
		}
		fetched = os
		return nil
	}); err != nil {
		t.Fatalf("fetching the offsets after the kill: %v", err)
	}
	t.Logf("offsets served again %v after kill -9 of coordinator %d", time.Since(killed), coord)
	for p, want := range committed {
		o, ok := fetched.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != want {
			t.Errorf("partition %d: fetched %+v after failover, committed %d", p, o, want)
		}
	}
	if newCoord := findGroupCoordinator(t, ctx, c, group); newCoord == coord {
		t.Errorf("the coordinator is still the killed broker %d", coord)
	}

	// A consumer of the group resumes at exactly the committed offsets.
	resumed := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
	first := map[int32]int64{}
	seen := 0
	for seen < len(produced)-n {
		fs := resumed.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("resumed consumer read %d of %d before the deadline", seen, len(produced)-n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
				if len(first) == 1 {
					t.Logf("group resumed %v after kill -9 of its coordinator", time.Since(killed))
				}
			}
			seen++
		})
	}
	for p, off := range first {
		if want := committed[p]; off != want {
			t.Errorf("partition %d: resumed at %d, committed %d", p, off, want)
		}
	}
	if seen != len(produced)-n {
		t.Errorf("resumed consumer read %d records, want exactly %d", seen, len(produced)-n)
	}
}

// findGroupCoordinator asks the cluster which broker coordinates group.
func findGroupCoordinator(t *testing.T, ctx context.Context, c *cluster, group string) int32 {
	t.Helper()
	var node int32
	if err := waitUntil(60*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		kresp, err := req.RequestWith(fctx, c.Client())
		if err != nil {
			return err
		}
		if kresp.ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator: error %d", kresp.ErrorCode)
		}
		node = kresp.NodeID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return node
}
