package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Reassignment test parameters: reassignRecords records of reassignValue
// bytes (about 8 MiB; GREGOR_REASSIGN_RECORDS to change) are in the
// partition when it moves.
const (
	reassignRecords = 8192
	reassignValue   = 1024
	reassignTimeout = 2 * time.Minute
)

// TestReassignPartition_MovesLeaderAndAddsReplica moves a partition of two
// replicas [a b] (a leading) to [b c] on three real brokers: the leader is
// moved off and a new replica must copy the whole log first. It checks
// that the reassignment completes (ListPartitionReassignments empty,
// Metadata naming [b c]), that every acknowledged record is read back at its
// offset, that the partition keeps taking writes, that DescribeLogDirs
// lists it on b and c with the same size and no longer on a, and that a's
// partition directory is gone. It logs how long the move took.
func TestReassignPartition_MovesLeaderAndAddsReplica(t *testing.T) {
	records := envInt("GREGOR_REASSIGN_RECORDS", reassignRecords)
	c := startCluster(t, 3)
	const topic = "moves"
	ctx, cancel := context.WithTimeout(context.Background(), 4*reassignTimeout)
	defer cancel()
	// startCluster's WaitBrokers needs one node to list every broker; the
	// node that takes CreateTopic checks the replication factor against
	// its own view.
	for _, nd := range c.Nodes() {
		if err := waitUntil(clusterWaitTimeout, func() error {
			md, err := metadataFrom(nd.Addr())
			if err == nil && len(md.Brokers) != 3 {
				err = fmt.Errorf("node %d lists %d brokers", nd.ID(), len(md.Brokers))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	var before partState
	err := waitUntil(clusterWaitTimeout, func() error {
		var err error
		if before, err = partitionStateErr(c, topic); err != nil {
			return err
		}
		if len(before.replicas) != 2 || before.leader != before.replicas[0] {
			return fmt.Errorf("created with replicas %v leader %d", before.replicas, before.leader)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := before.leader
	bID := before.replicas[1]
	var cID int32
	for _, nd := range c.Nodes() {
		if !slices.Contains(before.replicas, nd.ID()) {
			cID = nd.ID()
		}
	}

	// N records, acks=all, each value naming its index.
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	offsets := make([]int64, records)
	errs := make(chan error, records)
	for i := range records {
		v := make([]byte, reassignValue)
		copy(v, strconv.Itoa(i))
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: v}, func(r *kgo.Record, err error) {
			if err == nil {
				offsets[i] = r.Offset
			}
			errs <- err
		})
	}
	for range records {
		if err := <-errs; err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	dirsBefore, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	leaderSize := logDirSize(dirsBefore[a], topic)
	t.Logf("%d records, %d bytes on the leader %d; moving [%d %d] -> [%d %d]", records, leaderSize, a, a, bID, bID, cID)

	// A producer keeps writing (acks=all, one record at a time) through the
	// move; what it had acknowledged must be read back at those offsets.
	live := map[int64]string{} // offset -> key of acknowledged records
	stopLive, liveDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(liveDone)
		for i := 0; ; i++ {
			select {
			case <-stopLive:
				return
			default:
			}
			key := "live-" + strconv.Itoa(i)
			if r, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key)}).First(); err == nil {
				live[r.Offset] = key
			}
		}
	}()

	// Reassign: a (the leader) leaves, c joins.
	start := time.Now()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{bID, cID})
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resps[topic][0]; r.Err != nil {
		t.Fatalf("reassign: %v %s", r.Err, r.ErrMessage)
	}
	// Errors Kafka gives: a broker that does not exist, a cancel of none
	// (on another topic, so the move goes on).
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil {
		t.Fatal(err)
	}
	req = nil
	req.Assign("other", 0, []int32{bID, 99})
	req.Assign("nope", 0, []int32{bID})
	resps, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if e := resps["other"][0].Err; !errors.Is(e, kerr.InvalidReplicaAssignment) {
		t.Fatalf("broker 99: %v", e)
	}
	if e := resps["nope"][0].Err; !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", e)
	}
	req = nil
	req.Assign("other", 0, nil)
	if resps, err = adm.AlterPartitionAssignments(ctx, req); err != nil || !errors.Is(resps["other"][0].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel of none: %v %v", resps, err)
	}

	// Wait for completion, as an operator would.
	sawInProgress := false
	err = waitUntil(reassignTimeout, func() error {
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return err
		}
		if r, ok := ls[topic][0]; ok {
			sawInProgress = true
			return fmt.Errorf("in progress: replicas %v adding %v removing %v", r.Replicas, r.AddingReplicas, r.RemovingReplicas)
		}
		st, err := partitionStateErr(c, topic)
		if err != nil {
			return err
		}
		if !slices.Equal(st.replicas, []int32{bID, cID}) || !slices.Equal(sortedIDs(st.isr), sortedIDs([]int32{bID, cID})) || st.leader != bID {
			return fmt.Errorf("metadata: replicas %v isr %v leader %d", st.replicas, st.isr, st.leader)
		}
		return nil
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("reassignment did not complete within %v: %v", reassignTimeout, err)
	}
	close(stopLive)
	<-liveDone
	t.Logf("reassignment of %d bytes completed in %v (listed in progress: %v); %d records acknowledged meanwhile",
		leaderSize, took, sawInProgress, len(live))

	// Every acknowledged record at its offset, and the partition still
	// takes writes on its new leader.
	for i, off := range offsets {
		if off != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, off)
		}
	}
	after, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("after")}).First()
	if err != nil {
		t.Fatalf("produce after the move: %v", err)
	}
	live[after.Offset] = "after"
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var next int64
	keys := map[string]bool{}
	for next <= after.Offset {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to offset %d of %d: %v", next, after.Offset, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("record at offset %d, want %d", r.Offset, next)
			}
			want, acked := live[r.Offset]
			if r.Offset < int64(records) {
				want, acked = strconv.Itoa(int(r.Offset)), true
			}
			if acked && string(r.Key) != want {
				t.Fatalf("offset %d holds key %q, want %q", r.Offset, r.Key, want)
			}
			if keys[string(r.Key)] {
				t.Fatalf("key %q twice (offset %d)", r.Key, r.Offset)
			}
			keys[string(r.Key)] = true
			next++
		})
	}

	// DescribeLogDirs: on b and c, the same bytes; a lists it no more and
	// its directory is gone.
	var sizes map[int32]int64
	err = waitUntil(30*time.Second, func() error {
		all, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return err
		}
		sizes = map[int32]int64{}
		for _, id := range []int32{a, bID, cID} {
			sizes[id] = logDirSize(all[id], topic)
		}
		if sizes[a] != -1 || sizes[bID] <= 0 || sizes[bID] != sizes[cID] {
			return fmt.Errorf("sizes by broker (-1: not listed): %v", sizes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.Node(a).DataDir(), topic+"-0")
	err = waitUntil(30*time.Second, func() error {
		ents, err := os.ReadDir(c.Node(a).DataDir())
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Name() == topic+"-0" || strings.HasPrefix(e.Name(), topic+"-0.") { // retired: moves-0.<uuid>-delete
				return fmt.Errorf("%s still holds %s", c.Node(a).DataDir(), e.Name())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("removed replica's directory %s: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(c.Node(cID).DataDir(), topic+"-0")); err != nil {
		t.Fatalf("new replica's directory: %v", err)
	}
	t.Logf("log dir sizes after the move: %v", sizes)
}

// logDirSize is the size of topic's partition 0 in a broker's log dirs, -1
// if none lists it.
func logDirSize(dirs kadm.DescribedLogDirs, topic string) int64 {
	for _, d := range dirs {
		if p, ok := d.Topics[topic][0]; ok {
			return p.Size
		}
	}
	return -1
}

type partState struct {
	replicas, isr []int32
	leader        int32
}

func partitionStateErr(c *cluster, topic string) (partState, error) {
	md, err := c.Metadata(topic)
	if err != nil {
		return partState{}, err
	}
	for _, tp := range md.Topics {
		for _, p := range tp.Partitions {
			if p.Partition == 0 {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return partState{}, err
				}
				return partState{replicas: p.Replicas, isr: p.ISR, leader: p.Leader}, nil
			}
		}
	}
	return partState{}, fmt.Errorf("no %s-0 in Metadata", topic)
}

func sortedIDs(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}
