package compat

// Kafka's APIs as a cluster answers them, checked with raw requests sent to
// chosen brokers of a real three-node cluster: Metadata and DescribeCluster
// list every broker, a follower sends producers (and consumers' Fetch
// older than v11, which cannot be served by a follower as KIP-392 allows)
// to the leader, as does a broker without a replica (NOT_LEADER_OR_FOLLOWER
// with the KIP-951 new-leader hint), CreateTopics
// refuses a replication factor beyond the live brokers and takes manual
// assignments, min.insync.replicas gives NOT_ENOUGH_REPLICAS, ElectLeaders
// moves leadership back to the preferred replica, and a broker cut off from
// etcd stops taking writes (fenced) instead of risking two leaders.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func TestClusterAPIs(t *testing.T) {
	c := startCluster(t, 3)
	c.WaitBrokers(3)
	ctx := testCtx(t, 3*time.Minute)
	topic := topicName(t, "")
	min3 := "3"
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &min3}, topic); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader(topic, 0)
	var follower int32
	for _, nd := range c.Nodes() {
		if nd.ID() != leader {
			follower = nd.ID()
			break
		}
	}
	var leaderEpoch int32

	t.Run("metadata", func(t *testing.T) {
		md, err := metadataFrom(c.Node(follower).Addr(), topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) != 3 {
			t.Fatalf("brokers = %v, want 3", md.Brokers)
		}
		p := md.Topics[0].Partitions[0]
		replicas := slices.Sorted(slices.Values(p.Replicas))
		isr := slices.Sorted(slices.Values(p.ISR))
		if p.ErrorCode != 0 || p.Leader != leader || !slices.Equal(replicas, []int32{1, 2, 3}) || !slices.Equal(isr, []int32{1, 2, 3}) || len(p.OfflineReplicas) != 0 {
			t.Fatalf("partition = %+v, want leader %d, replicas and ISR {1,2,3}", p, leader)
		}
		leaderEpoch = p.LeaderEpoch
		dc, err := requestTo(c.Node(follower).Addr(), kmsg.NewPtrDescribeClusterRequest())
		if err != nil {
			t.Fatal(err)
		}
		d := dc.(*kmsg.DescribeClusterResponse)
		if len(d.Brokers) != 3 || d.ControllerID < 1 || d.ControllerID > 3 {
			t.Fatalf("DescribeCluster: %d brokers, controller %d", len(d.Brokers), d.ControllerID)
		}
	})

	t.Run("follower sends clients to the leader", func(t *testing.T) {
		produce := kmsg.NewPtrProduceRequest()
		produce.Acks, produce.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = buildBatch(-1, -1, -1, time.Now(), rawRecord{key: []byte("k"), value: []byte("v")})
		rt.Partitions = append(rt.Partitions, rp)
		produce.Topics = append(produce.Topics, rt)
		kresp, err := requestTo(c.Node(follower).Addr(), produce)
		if err != nil {
			t.Fatal(err)
		}
		pr := kresp.(*kmsg.ProduceResponse)
		sp := pr.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("produce to follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(sp.ErrorCode))
		}
		if pr.Version >= 10 && (sp.CurrentLeader.LeaderID != leader || sp.CurrentLeader.LeaderEpoch != leaderEpoch || len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != leader) {
			t.Fatalf("produce v%d hint: current leader %+v, brokers %+v; want %d in epoch %d", pr.Version, sp.CurrentLeader, pr.Brokers, leader, leaderEpoch)
		}

		fetch := kmsg.NewPtrFetchRequest()
		fetch.MaxWaitMillis, fetch.ReplicaID, fetch.SessionEpoch = 100, -1, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		mdt, err := c.Metadata(topic)
		if err != nil {
			t.Fatal(err)
		}
		ft.TopicID = mdt.Topics[0].TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		// A consumer's Fetch v11+ may be served by a follower (KIP-392);
		// an older one needs the leader.
		kresp, err = requestTo(c.Node(follower).Addr(), fetch)
		if err != nil {
			t.Fatal(err)
		}
		if fsp := kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; fsp.ErrorCode != 0 || fsp.PreferredReadReplica != -1 {
			t.Fatalf("fetch v%d from follower: %v, preferred replica %d; want served there", fetch.Version, kerr.ErrorForCode(fsp.ErrorCode), fsp.PreferredReadReplica)
		}
		v10 := kversion.Stable()
		v10.SetMaxKeyVersion(int16(kmsg.Fetch), 10)
		cl10, err := kgo.NewClient(kgo.SeedBrokers(c.Node(follower).Addr()), kgo.MaxVersions(v10), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		old := *fetch
		kresp, err = cl10.SeedBrokers()[0].Request(ctx, &old)
		cl10.Close()
		if err != nil {
			t.Fatal(err)
		}
		if old.Version != 10 {
			t.Fatalf("sent Fetch v%d, want v10", old.Version)
		}
		if code := kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("fetch v10 from follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
		}
		// A broker without a replica sends any consumer to the leader,
		// with the KIP-951 hint from v16.
		solo := topic + "-solo"
		if _, err := c.Admin().CreateTopic(ctx, 1, -1, nil, solo); err != nil {
			t.Fatal(err)
		}
		soloLeader := c.WaitLeader(solo, 0)
		other := int32(1 + soloLeader%3)
		mds, err := c.Metadata(solo)
		if err != nil {
			t.Fatal(err)
		}
		sf := *fetch
		sf.Topics = []kmsg.FetchRequestTopic{ft}
		sf.Topics[0].Topic, sf.Topics[0].TopicID = solo, mds.Topics[0].TopicID
		kresp, err = requestTo(c.Node(other).Addr(), &sf)
		if err != nil {
			t.Fatal(err)
		}
		fr := kresp.(*kmsg.FetchResponse)
		fsp := fr.Topics[0].Partitions[0]
		if fsp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("fetch from a broker without a replica: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(fsp.ErrorCode))
		}
		if fr.Version >= 16 && (fsp.CurrentLeader.LeaderID != soloLeader || len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != soloLeader) {
			t.Fatalf("fetch v%d hint: current leader %+v, brokers %+v; want %d", fr.Version, fsp.CurrentLeader, fr.Brokers, soloLeader)
		}

		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		kresp, err = requestTo(c.Node(follower).Addr(), lo)
		if err != nil {
			t.Fatal(err)
		}
		if code := kresp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("ListOffsets on follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
		}

		// A stale leader epoch at the leader itself is fenced.
		fp.CurrentLeaderEpoch = leaderEpoch - 1
		fetch.Topics[0].Partitions[0] = fp
		if leaderEpoch > 0 {
			kresp, err = requestTo(c.Node(leader).Addr(), fetch)
			if err != nil {
				t.Fatal(err)
			}
			if code := kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.FencedLeaderEpoch.Code {
				t.Fatalf("stale epoch: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(code))
			}
		}
		fp.CurrentLeaderEpoch = leaderEpoch + 1
		fetch.Topics[0].Partitions[0] = fp
		kresp, err = requestTo(c.Node(leader).Addr(), fetch)
		if err != nil {
			t.Fatal(err)
		}
		if code := kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownLeaderEpoch.Code {
			t.Fatalf("future epoch: %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(code))
		}
	})

	t.Run("create topics", func(t *testing.T) {
		resp, err := c.Admin().CreateTopic(ctx, 1, 4, nil, topic+"-rf4")
		if !errors.Is(err, kerr.InvalidReplicationFactor) && !errors.Is(resp.Err, kerr.InvalidReplicationFactor) {
			t.Fatalf("RF 4 on 3 brokers: %v / %v, want INVALID_REPLICATION_FACTOR", err, resp.Err)
		}
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic+"-manual", -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, []int32{3, 2}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		kresp, err := requestTo(c.Seeds()[0], req)
		if err != nil {
			t.Fatal(err)
		}
		if code := kresp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
			t.Fatalf("manual assignment: %v", kerr.ErrorForCode(code))
		}
		md, err := c.Metadata(topic + "-manual")
		if err != nil {
			t.Fatal(err)
		}
		if p := md.Topics[0].Partitions[0]; !slices.Equal(p.Replicas, []int32{3, 2}) || p.Leader != 3 {
			t.Fatalf("manual assignment gave replicas %v leader %d, want [3 2] led by 3", p.Replicas, p.Leader)
		}
	})

	t.Run("min.insync.replicas", func(t *testing.T) {
		cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(5*time.Second))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("with three")}).FirstErr(); err != nil {
			t.Fatalf("acks=all with ISR 3 of min 3: %v", err)
		}
		c.Node(follower).Kill()
		produceAll := func() int16 {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = buildBatch(-1, -1, -1, time.Now(), rawRecord{value: []byte("with two")})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			kresp, err := requestWithin(c.Node(leader).Addr(), req, 15*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return kresp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		}
		// The follower leaves the ISR when its lease expires; from then
		// on an acks=all write is refused (or, if it was appended just
		// before, answered NOT_ENOUGH_REPLICAS_AFTER_APPEND).
		err := waitUntil(30*time.Second, func() error {
			if code := produceAll(); code != kerr.NotEnoughReplicas.Code {
				return fmt.Errorf("acks=all with a follower dead: %v", kerr.ErrorForCode(code))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// acks=1 does not need the ISR.
		one := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		if err := one.ProduceSync(ctx, &kgo.Record{Value: []byte("acks=1")}).FirstErr(); err != nil {
			t.Fatalf("acks=1 with ISR 2: %v", err)
		}
		c.Node(follower).Restart()
		if err := waitUntil(60*time.Second, func() error {
			md, err := c.Metadata(topic)
			if err != nil {
				return err
			}
			if isr := md.Topics[0].Partitions[0].ISR; len(isr) != 3 {
				return fmt.Errorf("ISR %v", isr)
			}
			return nil
		}); err != nil {
			t.Fatalf("restarted follower did not rejoin the ISR: %v", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("three again")}).FirstErr(); err != nil {
			t.Fatalf("acks=all after the follower rejoined: %v", err)
		}
	})

	t.Run("preferred leader election", func(t *testing.T) {
		md, err := c.Metadata(topic)
		if err != nil {
			t.Fatal(err)
		}
		preferred := md.Topics[0].Partitions[0].Replicas[0]
		c.Node(preferred).Kill()
		if err := waitUntil(30*time.Second, func() error {
			l, err := c.Leader(topic, 0)
			if err == nil && (l == preferred || l < 0) {
				return fmt.Errorf("still led by %d", l)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		c.Node(preferred).Restart()
		if err := waitUntil(60*time.Second, func() error {
			md, err := c.Metadata(topic)
			if err != nil {
				return err
			}
			if isr := md.Topics[0].Partitions[0].ISR; !slices.Contains(isr, preferred) {
				return fmt.Errorf("ISR %v without %d", isr, preferred)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		elect := func() int16 {
			req := kmsg.NewPtrElectLeadersRequest()
			req.ElectionType, req.TimeoutMillis = 0, 10000
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
			kresp, err := requestTo(c.Seeds()[0], req)
			if err != nil {
				t.Fatal(err)
			}
			return kresp.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorCode
		}
		if code := elect(); code != 0 {
			t.Fatalf("preferred election: %v", kerr.ErrorForCode(code))
		}
		if l := c.WaitLeader(topic, 0); l != preferred {
			t.Fatalf("leader after the preferred election = %d, want %d", l, preferred)
		}
		if code := elect(); code != kerr.ElectionNotNeeded.Code {
			t.Fatalf("second preferred election: %v, want ELECTION_NOT_NEEDED", kerr.ErrorForCode(code))
		}
	})

	t.Run("a broker cut off from etcd stops taking writes", func(t *testing.T) {
		l := c.WaitLeader(topic+"-manual", 0) // replicas [3 2]
		var others []*clusterNode
		for _, nd := range c.Nodes() {
			if nd.ID() != l {
				others = append(others, nd)
			}
		}
		direct := c.Node(l).DirectAddr()
		produce := func() int16 {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = 1, 2000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic + "-manual"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = buildBatch(-1, -1, -1, time.Now(), rawRecord{key: []byte("k"), value: []byte("fenced?")})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			kresp, err := requestTo(direct, req)
			if err != nil {
				t.Fatal(err)
			}
			return kresp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		}
		if code := produce(); code != 0 {
			t.Fatalf("acks=1 produce to the leader: %v", kerr.ErrorForCode(code))
		}
		// Both other nodes stop: etcd has no quorum, the leader's lease
		// can no longer be renewed, and it must stop taking writes before
		// anyone could be elected in its place.
		for _, nd := range others {
			nd.Stop()
		}
		stopped := time.Now()
		if err := waitUntil(20*time.Second, func() error {
			if code := produce(); code != kerr.NotLeaderForPartition.Code {
				return fmt.Errorf("produce while cut off: %v", kerr.ErrorForCode(code))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("leader %d fenced %v after losing etcd quorum", l, time.Since(stopped).Round(time.Millisecond))
		for _, nd := range others {
			nd.Cont()
		}
		if err := waitUntil(30*time.Second, func() error {
			cl := c.Client(kgo.DefaultProduceTopic(topic+"-manual"), kgo.RequiredAcks(kgo.AllISRAcks()))
			defer cl.Close()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return cl.ProduceSync(pctx, &kgo.Record{Value: []byte("after")}).FirstErr()
		}); err != nil {
			t.Fatalf("writes did not resume after etcd came back: %v", err)
		}
	})
}
