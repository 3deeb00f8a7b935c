package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCluster_ShareStateSurvivesLeaderChange acknowledges records 0-4 of a
// partition on its leader (broker 1), moves the partition to broker 2
// (a reassignment: broker 2 becomes leader) and fetches there: broker 2
// reads the share-partition state from the share coordinator
// (__share_group_state) and delivers 5-9 again, counting the earlier
// delivery, never 0-4.
func TestCluster_ShareStateSurvivesLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs := startTwoBrokerCluster(t, map[string]string{"share.coordinator.state.topic.num.partitions": "3"})
	ctx := testCtx(t)
	cl := newClient(t, addrs[0], kgo.SeedBrokers(addrs...))
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "s", -1, -1
	ctt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
	ct.Topics = append(ct.Topics, ctt)
	var cr *kmsg.CreateTopicsResponse
	var err error
	waitFor(t, 10*time.Second, "the topic to be created", func() bool {
		cr, err = ct.RequestWith(ctx, cl)
		return err == nil && cr.Topics[0].ErrorCode == 0
	})
	topicID := cr.Topics[0].TopicID
	if code := alterGroupConfig(t, cl, "sg", "share.auto.offset.reset", kmsg.StringPtr("earliest")); code != 0 {
		t.Fatalf("set config: %d", code)
	}
	var rs []*kgo.Record
	for i := range 10 {
		rs = append(rs, &kgo.Record{Topic: "s", Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	pcl := newClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Raw requests to one broker.
	direct := func(i int) *kgo.Client { return newClient(t, addrs[i]) }
	b1, b2 := direct(0), direct(1)
	fetch := func(c *kgo.Client, member string, epoch int32) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr(member), epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxRecords, req.BatchSize = 500, 1, 500, 500
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	acquired := func(resp *kmsg.ShareFetchResponse) string {
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
	var got string
	waitFor(t, 10*time.Second, "broker 1 to deliver 0-9", func() bool {
		got = acquired(fetch(b1, "m1", 0))
		return got == "[0-9@1]"
	})
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m1"), 1
	st := kmsg.NewShareAcknowledgeRequestTopic()
	st.TopicID = topicID
	sp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	sp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 4, AcknowledgeTypes: []int8{1}}}
	st.Partitions = append(st.Partitions, sp)
	sa.Topics = append(sa.Topics, st)
	sar, err := sa.RequestWith(ctx, b1)
	if err != nil || sar.ErrorCode != 0 || sar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, sar)
	}

	// The share coordinator of the share-partition has its state.
	k := coordinator.ShareStateKey{Group: "sg", TopicID: topicID, Partition: 0}
	var coord *Broker
	for _, b := range brokers {
		if b.shareCoord.KeyError(k) == 0 {
			coord = b
		}
	}
	if coord == nil {
		t.Fatal("no broker coordinates the share-partition")
	}
	snap, found, code := coord.shareCoord.Read(k, -1)
	if code != 0 || !found || snap.StartOffset != 5 || fmt.Sprint(snap.StateBatches) != "[{5 9 0 1}]" {
		t.Fatalf("share coordinator's state: %+v %v %d", snap, found, code)
	}

	// Move the partition to broker 2.
	ra := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	ra.TimeoutMillis = 10000
	rat := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rat.Topic = "s"
	rat.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{2}}}
	ra.Topics = append(ra.Topics, rat)
	rar, err := ra.RequestWith(ctx, cl)
	if err != nil || rar.ErrorCode != 0 || rar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reassign: %v %+v", err, rar)
	}
	waitFor(t, 20*time.Second, "broker 2 to lead s-0", func() bool {
		p := partitionAt(brokers[1].partitionsOf(brokers[1].lookupTopic("s")), 0)
		if p == nil || p.log == nil {
			return false
		}
		leads, _ := brokers[1].leadsGroupPartition(p)
		return leads && brokers[1].leadership(p) == 0
	})

	// Broker 2 delivers 5-9, a second time; 0-4 stay acknowledged.
	waitFor(t, 10*time.Second, "broker 2 to deliver", func() bool {
		got = acquired(fetch(b2, "m2", 0))
		return got != "["+kerr.NotLeaderForPartition.Error()+"]" && got != "["+kerr.UnknownTopicOrPartition.Error()+"]" && got != "[]"
	})
	if got != "[5-9@2]" {
		t.Fatalf("broker 2 delivered %s, want [5-9@2]", got)
	}
	// Broker 2 recorded its leader epoch: a write from broker 1's old
	// leadership is fenced.
	snap, _, _ = coord.shareCoord.Read(k, -1)
	if code := coord.shareCoord.Write(k, coordinator.ShareWrite{StateEpoch: snap.StateEpoch, LeaderEpoch: snap.LeaderEpoch - 1, StartOffset: 0}); code != kerr.FencedLeaderEpoch.Code {
		t.Errorf("write of the old leader: %v", kerr.ErrorForCode(code))
	}
}
