package broker

import (
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// While the __consumer_offsets partition of a group is led here but not
// loaded (a freshly started broker), OffsetFetch answers as Kafka 4.4's
// GroupCoordinatorService does: COORDINATOR_LOAD_IN_PROGRESS in the
// group's ErrorCode (v8+, the other groups of the request answered as
// usual) or the top-level ErrorCode (v2-7), never per partition, which
// the Java consumer takes as fatal; only v1, which has no other place for
// it, puts it on each partition. Once loaded, the offsets are there.
func TestOffsetFetch_WhileCoordinatorPartitionLoads(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"offsets.topic.num.partitions": "2", "group.initial.rebalance.delay.ms": "0"})
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	// One group on each partition of __consumer_offsets.
	var loading, served string
	for i := 0; loading == "" || served == ""; i++ {
		g := "g" + string(rune('a'+i))
		switch coordinator.PartitionFor(g, 2) {
		case 0:
			loading = g
		case 1:
			served = g
		}
	}
	for i, g := range []string{loading, served} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: int64(10 + i), LeaderEpoch: -1})
		waitFor(t, 15*time.Second, "a commit for "+g, func() bool {
			r, err := adm.CommitOffsets(ctx, g, offs)
			return err == nil && r.Error() == nil
		})
	}
	pl := coordinator.PartitionFor(loading, 2)
	b.groups.UnloadPartition(pl) // led here, not loaded: as while loading

	rc := dialRaw(t, addr)
	corr := int32(0)
	fetch := func(v int16, groups ...string) *kmsg.OffsetFetchResponse {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		topic := kmsg.NewOffsetFetchRequestTopic()
		topic.Topic, topic.Partitions = "t", []int32{0}
		if v < 8 {
			req.Group, req.Topics = groups[0], []kmsg.OffsetFetchRequestTopic{topic}
		}
		for _, g := range groups {
			rg := kmsg.NewOffsetFetchRequestGroup()
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "t", []int32{0}
			rg.Group, rg.Topics = g, []kmsg.OffsetFetchRequestGroupTopic{gt}
			if v >= 8 {
				req.Groups = append(req.Groups, rg)
			}
		}
		corr++
		rc.send(corr, req)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.Version = v
		rc.recv(corr, resp)
		return resp
	}
	load := kerr.CoordinatorLoadInProgress.Code

	r1 := fetch(1, loading)
	if len(r1.Topics) != 1 || len(r1.Topics[0].Partitions) != 1 {
		t.Fatalf("v1: %+v", r1)
	}
	if p := r1.Topics[0].Partitions[0]; p.ErrorCode != load || p.Offset != -1 {
		t.Errorf("v1 partition: error %d offset %d, want %d and -1", p.ErrorCode, p.Offset, load)
	}
	for _, v := range []int16{2, 5, 7} {
		r := fetch(v, loading)
		if r.ErrorCode != load || len(r.Topics) != 0 {
			t.Errorf("v%d: top-level error %d with %d topics, want %d and none", v, r.ErrorCode, len(r.Topics), load)
		}
	}
	r8 := fetch(8, loading, served)
	if len(r8.Groups) != 2 {
		t.Fatalf("v8: %d groups", len(r8.Groups))
	}
	if g := r8.Groups[0]; g.Group != loading || g.ErrorCode != load || len(g.Topics) != 0 {
		t.Errorf("v8 loading group: %s error %d with %d topics, want %s, %d and none", g.Group, g.ErrorCode, len(g.Topics), loading, load)
	}
	if g := r8.Groups[1]; g.Group != served || g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 11 || g.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("v8 served group: %+v, want offset 11", g)
	}

	if err := b.groups.LoadPartition(pl); err != nil {
		t.Fatal(err)
	}
	r9 := fetch(9, loading)
	if g := r9.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 10 {
		t.Errorf("v9 after the load: %+v, want offset 10", g)
	}
	if r := fetch(7, loading); r.ErrorCode != 0 || r.Topics[0].Partitions[0].Offset != 10 {
		t.Errorf("v7 after the load: %+v, want offset 10", r)
	}
}
