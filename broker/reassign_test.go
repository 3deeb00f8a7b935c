package broker

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReassignment_SingleNode: a one-broker Kafka's answers — the only
// valid target is the broker itself, there is nothing to cancel or list.
func TestReassignment_SingleNode(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "r"); err != nil {
		t.Fatal(err)
	}
	self := b.nodeID
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("r", 0, []int32{self})
	req.Assign("r", 1, []int32{self, self + 1})
	req.Assign("r", 5, []int32{self})
	req.Assign("nope", 0, []int32{self})
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]error{
		"r":    {0: nil, 1: kerr.InvalidReplicaAssignment, 5: kerr.UnknownTopicOrPartition},
		"nope": {0: kerr.UnknownTopicOrPartition},
	}
	for topic, ps := range want {
		for p, werr := range ps {
			if got := resps[topic][p].Err; !errors.Is(got, werr) && got != werr {
				t.Errorf("%s/%d: %v, want %v", topic, p, got, werr)
			}
		}
	}
	req = nil
	req.Assign("r", 0, nil)
	req.Assign("r", 1, []int32{})
	resps, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if e := resps["r"][0].Err; !errors.Is(e, kerr.NoReassignmentInProgress) {
		t.Errorf("cancel: %v", e)
	}
	if e := resps["r"][1].Err; !errors.Is(e, kerr.InvalidReplicaAssignment) {
		t.Errorf("empty target: %v", e)
	}
	// v1 with AllowReplicationFactorChange false.
	kreq := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	kreq.AllowReplicationFactorChange = false
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "r"
	rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{self, self + 1}}}
	kreq.Topics = append(kreq.Topics, rt)
	kresp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if kresp.AllowReplicationFactorChange || kresp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("rf change forbidden: %+v", kresp)
	}

	ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"r": {0: {}, 1: {}}})
	if err != nil || len(ls) != 0 {
		t.Fatalf("list: %v %v", ls, err)
	}
	lreq := kmsg.NewPtrListPartitionReassignmentsRequest() // null topics: all
	if lresp, err := lreq.RequestWith(ctx, cl); err != nil || lresp.ErrorCode != 0 || len(lresp.Topics) != 0 {
		t.Fatalf("list all: %+v %v", lresp, err)
	}
}

// TestDescribeLogDirs_SingleNode: the data directory with each partition's
// size, a zero offset lag and (v4) the file system's space.
func TestDescribeLogDirs_SingleNode(t *testing.T) {
	dir := t.TempDir()
	b, addr := startBroker(t, dir, nil)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("d"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "d"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[b.nodeID]
	abs, _ := filepath.Abs(dir)
	d, ok := dirs[abs]
	if len(dirs) != 1 || !ok || d.Err != nil {
		t.Fatalf("dirs %+v, want one: %s", dirs, abs)
	}
	if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Fatalf("space: total %d usable %d", d.TotalBytes, d.UsableBytes)
	}
	ps := d.Topics["d"]
	if len(ps) != 3 || ps[0].Size <= 0 || ps[1].Size <= 0 || ps[2].Size != 0 {
		t.Fatalf("partitions %+v", ps)
	}
	for _, p := range ps {
		if p.OffsetLag != 0 || p.IsFuture {
			t.Fatalf("partition %+v", p)
		}
	}
	// Only the partitions asked for; unknown ones are left out.
	some, err := adm.DescribeBrokerLogDirs(ctx, b.nodeID, kadm.TopicsSet{"d": {1: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if ts := some[abs].Topics; len(ts) != 1 || len(ts["d"]) != 1 || ts["d"][1].Size != ps[1].Size {
		t.Fatalf("filtered: %+v", ts)
	}
	// v1 (no space fields).
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 || resp.Dirs[0].TotalBytes != -1 {
		t.Fatalf("v1: %+v", resp)
	}
}
