package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// retryLoad sends req until its answer's error is not one of a
// coordinator still loading (the restarted broker loads
// __consumer_offsets).
func retryLoad[R kmsg.Response](t *testing.T, ctx context.Context, cl *kgo.Client, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	var out R
	waitFor(t, 15*time.Second, "the coordinator answers", func() bool {
		resp, err := cl.Request(ctx, req)
		if err != nil {
			return false
		}
		out = resp.(R)
		c := code(out)
		return c != kerr.CoordinatorLoadInProgress.Code && c != kerr.NotCoordinator.Code && c != kerr.CoordinatorNotAvailable.Code
	})
	return out
}

// A KIP-848 group and a share group survive a broker restart: the
// members' next heartbeats with their old ids and epochs are accepted,
// and the share group neither redelivers acknowledged records nor forgets
// the delivery count of acquired ones.
func TestModernGroupsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	b1, addr := startBroker(t, dir, nil)
	ctx := testCtx(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range 5 {
		rs = append(rs, &kgo.Record{Topic: "s", Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	if err := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "k", "s")
	if err != nil {
		t.Fatal(err)
	}
	kID, sID := td["k"].ID, td["s"].ID

	// The consumer group: one member, assigned both partitions.
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberID, cgh.RebalanceTimeoutMillis = "cg", "member-1", 30000
	cgh.SubscribedTopicNames, cgh.Topics = []string{"k"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hcode := func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode }
	r := retryLoad(t, ctx, cl, cgh, hcode)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join: %+v", r)
	}
	cgh.MemberEpoch, cgh.SubscribedTopicNames, cgh.RebalanceTimeoutMillis = 1, nil, -1
	cgh.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: kID, Partitions: []int32{0, 1}}}
	if r = retryLoad(t, ctx, cl, cgh, hcode); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("heartbeat: %+v", r)
	}

	// The share group: earliest, acquire 0-4, accept 0-2.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	ia.Resources = append(ia.Resources, res)
	if iar, err := ia.RequestWith(ctx, cl); err != nil || iar.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %v", err, iar)
	}
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.GroupID, sgh.MemberID, sgh.SubscribedTopicNames = "sg", "share-1", []string{"s"}
	scode := func(r *kmsg.ShareGroupHeartbeatResponse) int16 { return r.ErrorCode }
	sr := retryLoad(t, ctx, cl, sgh, scode)
	if sr.ErrorCode != 0 || sr.MemberEpoch != 1 {
		t.Fatalf("share join: %+v", sr)
	}
	fetch := func(cl *kgo.Client, epoch int32) string {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("share-1"), epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxRecords, req.BatchSize = 500, 1, 500, 500
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = sID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode).Error()
		}
		var out []string
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					out = append(out, kerr.ErrorForCode(rp.ErrorCode).Error())
				}
				for _, ar := range rp.AcquiredRecords {
					out = append(out, fmt.Sprintf("%d-%d@%d", ar.FirstOffset, ar.LastOffset, ar.DeliveryCount))
				}
			}
		}
		return fmt.Sprint(out)
	}
	if got := fetch(cl, 0); got != "[0-4@1]" {
		t.Fatalf("share fetch: %s", got)
	}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("share-1"), 1
	st := kmsg.NewShareAcknowledgeRequestTopic()
	st.TopicID = sID
	sp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	sp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{1}}}
	st.Partitions = append(st.Partitions, sp)
	sa.Topics = append(sa.Topics, st)
	if sar, err := sa.RequestWith(ctx, cl); err != nil || sar.ErrorCode != 0 || sar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, sar)
	}

	// Restart the broker on the same data directory.
	cl.Close()
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	_, addr2 := startBroker(t, dir, nil)
	cl2 := newClient(t, addr2)

	if r = retryLoad(t, ctx, cl2, cgh, hcode); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("heartbeat after restart: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"cg"}
	dr, err := d.RequestWith(ctx, cl2)
	if err != nil || len(dr.Groups) != 1 || dr.Groups[0].Epoch != 1 || len(dr.Groups[0].Members) != 1 ||
		dr.Groups[0].Members[0].MemberID != "member-1" || len(dr.Groups[0].Members[0].Assignment.TopicPartitions) != 1 {
		t.Fatalf("describe after restart: %v %+v", err, dr)
	}

	sgh.MemberEpoch, sgh.SubscribedTopicNames = 1, nil
	if sr = retryLoad(t, ctx, cl2, sgh, scode); sr.ErrorCode != 0 || sr.MemberEpoch != 1 {
		t.Fatalf("share heartbeat after restart: %v %+v", kerr.ErrorForCode(sr.ErrorCode), sr)
	}
	// 0-2 were acknowledged; 3-4 were acquired once: delivered again with
	// delivery count 2.
	if got := fetch(cl2, 0); got != "[3-4@2]" {
		t.Fatalf("share fetch after restart: %s", got)
	}
}
