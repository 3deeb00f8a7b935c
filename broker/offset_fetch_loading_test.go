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

// A coordinator cut off from the metadata quorum is fenced: a successor
// may already have taken commits it never saw, so it answers its groups'
// reads NOT_COORDINATOR, not the offsets in its memory (the Jepsen
// checker's commit-lost: an OffsetFetch answered by the old coordinator
// after the new one acknowledged a later commit), and as a partition
// leader it writes no transaction marker and deletes no records.
func TestOffsetFetch_FencedCoordinatorAnswersNotCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, stop := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{"offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1"}
	})
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, addrs[0]))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 7, LeaderEpoch: -1})
	waitFor(t, 15*time.Second, "a commit", func() bool {
		r, err := adm.CommitOffsets(ctx, "g", offs)
		return err == nil && r.Error() == nil
	})
	c, code := brokers[0].groupCoordinator("g")
	if code != 0 {
		t.Fatalf("coordinator: %v", kerr.ErrorForCode(code))
	}
	coord := brokers[c.id-1]
	// A topic whose one partition the coordinator leads, for a marker.
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "m", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{c.id}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	create.Topics = append(create.Topics, ct)
	if r, err := create.RequestWith(ctx, newClient(t, addrs[c.id-1])); err != nil || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create m: %v %+v", err, r)
	}
	waitFor(t, 15*time.Second, "the coordinator leading m-0", func() bool {
		p := partitionAt(coord.topicPartitions("m"), 0)
		return p != nil && p.leader.Load() != nil
	})
	fetch := func() *kmsg.OffsetFetchResponseGroup {
		t.Helper()
		rc := dialRaw(t, addrs[c.id-1])
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "t", []int32{0}
		rg.Group, rg.Topics = "g", []kmsg.OffsetFetchRequestGroupTopic{gt}
		req.Groups = append(req.Groups, rg)
		resp := roundTrip[*kmsg.OffsetFetchResponse](rc, 1, req)
		if len(resp.Groups) != 1 {
			t.Fatalf("%d groups answered", len(resp.Groups))
		}
		return &resp.Groups[0]
	}
	if g := fetch(); g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("before: %+v, want offset 7", g)
	}
	// Quorum lost: the coordinator can no longer renew its lease.
	for i := range brokers {
		if int32(i+1) != c.id {
			go stop[i]()
		}
	}
	waitFor(t, 15*time.Second, "the coordinator fenced", coord.cluster.node.Fenced)
	if g := fetch(); g.ErrorCode != kerr.NotCoordinator.Code || len(g.Topics) != 0 {
		t.Fatalf("fenced: error %v with %d topics, want NOT_COORDINATOR and none", kerr.ErrorForCode(g.ErrorCode), len(g.Topics))
	}
	// Nor does it write a transaction marker to a partition it led.
	rc := dialRaw(t, addrs[c.id-1])
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	wm.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, true
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "m", []int32{0}
	m.Topics = append(m.Topics, mt)
	wm.Markers = append(wm.Markers, m)
	wr := roundTrip[*kmsg.WriteTxnMarkersResponse](rc, 2, wm)
	if code := wr.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("WriteTxnMarkers while fenced: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	if leo := partitionAt(coord.topicPartitions("m"), 0).log.LogEndOffset(); leo != 0 {
		t.Fatalf("m-0's log end %d after the refused marker, want 0", leo)
	}
	// Nor does it delete records.
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dp := kmsg.NewDeleteRecordsRequestTopicPartition()
	dp.Partition, dp.Offset = 0, -1
	dt.Topic, dt.Partitions = "m", []kmsg.DeleteRecordsRequestTopicPartition{dp}
	dr.Topics = append(dr.Topics, dt)
	drr := roundTrip[*kmsg.DeleteRecordsResponse](rc, 3, dr)
	if code := drr.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("DeleteRecords while fenced: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}
