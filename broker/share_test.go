package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareSetup starts a broker with a one-partition topic holding n records
// produced in one batch, sets share.auto.offset.reset=earliest for group
// and joins member m1: the client, the topic id and the broker's address.
func shareSetup(t *testing.T, group, topic string, n int, props ...map[string]string) (*kgo.Client, [16]byte, string) {
	t.Helper()
	var p map[string]string
	if len(props) > 0 {
		p = props[0]
	}
	_, addr := startBroker(t, "", p)
	ctx := testCtx(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	if err := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}

	// share.auto.offset.reset=earliest, else the group starts at the end.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	ia.Resources = append(ia.Resources, res)
	if iar, err := ia.RequestWith(ctx, cl); err != nil || iar.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %v", err, iar)
	}

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "m1", []string{topic}
	hbr, err := hb.RequestWith(ctx, cl)
	if err != nil || hbr.ErrorCode != 0 || hbr.MemberEpoch != 1 || hbr.Assignment == nil || len(hbr.Assignment.TopicPartitions) != 1 {
		t.Fatalf("join: %v %+v", err, hbr)
	}
	return cl, td[topic].ID, addr
}

// shareFetchReq is a ShareFetch for member of group at session epoch,
// of partition 0 of topicID with acks on it (max wait 200 ms, 500
// records); a closing one (epoch -1) names no partition.
func shareFetchReq(group, member string, epoch int32, topicID [16]byte, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxRecords, req.BatchSize = 200, 1, 500, 500
	if epoch != -1 {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rp.AcknowledgementBatches = acks
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// doShareFetch sends req on cl.
func doShareFetch(t *testing.T, ctx context.Context, cl *kgo.Client, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	t.Helper()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// shareAcquired renders the acquired ranges of a ShareFetch answer
// ("first-last@deliveries"), its errors, and "no records" for ranges
// without record batches.
func shareAcquired(resp *kmsg.ShareFetchResponse) string {
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode).Error()
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 || rp.AcknowledgeErrorCode != 0 {
				out = append(out, fmt.Sprintf("err %d ack %d", rp.ErrorCode, rp.AcknowledgeErrorCode))
			}
			for _, ar := range rp.AcquiredRecords {
				out = append(out, fmt.Sprintf("%d-%d@%d", ar.FirstOffset, ar.LastOffset, ar.DeliveryCount))
			}
			if len(rp.AcquiredRecords) > 0 && len(rp.Records) == 0 {
				out = append(out, "no records")
			}
		}
	}
	return fmt.Sprint(out)
}

// TestShareGroups_RecordLimitAcquireMode: ShareFetch v2 with
// ShareAcquireMode 1 (record-limit) acquires exactly MaxRecords, inside a
// batch (the answer still carries the whole batch); mode 0 acquires up to
// the batch boundary, as before.
func TestShareGroups_RecordLimitAcquireMode(t *testing.T) {
	cl, topicID, _ := shareSetup(t, "sg-limit", "s-limit", 5)
	ctx := testCtx(t)
	fetch := func(epoch int32, mode int8, maxRecords int32) *kmsg.ShareFetchResponse {
		t.Helper()
		req := shareFetchReq("sg-limit", "m1", epoch, topicID)
		req.Version, req.MaxRecords, req.BatchSize, req.ShareAcquireMode = 2, maxRecords, maxRecords, mode
		return doShareFetch(t, ctx, cl, req)
	}
	if got := shareAcquired(fetch(0, 1, 2)); got != "[0-1@1]" {
		t.Fatalf("record-limit, 2 of a 5-record batch: %s", got)
	}
	if got := shareAcquired(fetch(1, 1, 2)); got != "[2-3@1]" {
		t.Fatalf("record-limit, the next 2: %s", got)
	}
	if got := shareAcquired(fetch(2, 0, 1)); got != "[4-4@1]" {
		t.Fatalf("batch-optimized, the rest of the batch: %s", got)
	}
}

// TestShareGroups_FetchAcknowledgeOverSocket drives a share group with raw
// requests over a real connection: join, a share session's fetches with
// exact acquired ranges and delivery counts, piggy-backed and standalone
// acknowledgements, session epoch errors, and the SPSO reported by
// DescribeShareGroupOffsets.
func TestShareGroups_FetchAcknowledgeOverSocket(t *testing.T) {
	cl, topicID, _ := shareSetup(t, "sg", "s1", 5)
	ctx := testCtx(t)

	fetch := func(epoch int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		t.Helper()
		return doShareFetch(t, ctx, cl, shareFetchReq("sg", "m1", epoch, topicID, acks...))
	}
	r := fetch(0)
	if got := shareAcquired(r); got != "[0-4@1]" || r.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("first fetch: %s lock %d", got, r.AcquisitionLockTimeoutMillis)
	}
	// Accept 0-1, release 2, reject 3, accept 4: 2 comes back, count 2.
	ack := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 4, AcknowledgeTypes: []int8{1, 1, 2, 3, 1}}
	if got := shareAcquired(fetch(1, ack)); got != "[2-2@2]" {
		t.Fatalf("second fetch: %s", got)
	}
	if got := shareAcquired(fetch(7)); got != kerr.InvalidShareSessionEpoch.Error() {
		t.Fatalf("wrong epoch: %s", got)
	}

	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m1"), 2
	st := kmsg.NewShareAcknowledgeRequestTopic()
	st.TopicID = topicID
	sp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	sp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 2, LastOffset: 2, AcknowledgeTypes: []int8{1}}}
	st.Partitions = append(st.Partitions, sp)
	sa.Topics = append(sa.Topics, st)
	sar, err := sa.RequestWith(ctx, cl)
	if err != nil || sar.ErrorCode != 0 || sar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, sar)
	}
	// v2 answers the lock duration on every acknowledgement, renewal or not.
	if sar.Version >= 2 && sar.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("acknowledge v%d: lock %d, want 30000", sar.Version, sar.AcquisitionLockTimeoutMillis)
	}
	// The same offset again: no longer acquired.
	sa.ShareSessionEpoch = 3
	if sar, _ = sa.RequestWith(ctx, cl); sar.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("second acknowledge: %+v", sar)
	}
	// Close the session; it is gone afterwards.
	sa.ShareSessionEpoch, sa.Topics = -1, nil
	if sar, _ = sa.RequestWith(ctx, cl); sar.ErrorCode != 0 {
		t.Fatalf("close: %v", kerr.ErrorForCode(sar.ErrorCode))
	}
	if got := shareAcquired(fetch(5)); got != kerr.ShareSessionNotFound.Error() {
		t.Fatalf("fetch after close: %s", got)
	}

	d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	d.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
	dr, err := d.RequestWith(ctx, cl)
	if err != nil || len(dr.Groups) != 1 || len(dr.Groups[0].Topics) != 1 || dr.Groups[0].Topics[0].Partitions[0].StartOffset != 5 {
		t.Fatalf("describe offsets: %v %+v", err, dr)
	}
	// The group has a member: its offsets cannot be altered.
	al := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	al.GroupID = "sg"
	if alr, _ := al.RequestWith(ctx, cl); alr.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter non-empty: %+v", alr)
	}
}

// TestShareGroups_SessionClosedWithConnection: when the connection that
// opened a member's share session closes, the session is gone and what the
// member acquired is released at once (Kafka, KAFKA-19015), not after the
// acquisition lock (30 s): another member acquires the records right away,
// delivery count 2.
func TestShareGroups_SessionClosedWithConnection(t *testing.T) {
	cl, topicID, addr := shareSetup(t, "sg-conn", "s-conn", 5)
	ctx := testCtx(t)
	fetch := func(cl *kgo.Client, member string) *kmsg.ShareFetchResponse {
		t.Helper()
		return doShareFetch(t, ctx, cl, shareFetchReq("sg-conn", member, 0, topicID))
	}
	if got := shareAcquired(fetch(cl, "m1")); got != "[0-4@1]" {
		t.Fatalf("m1's first fetch: %s", got)
	}
	other := newClient(t, addr)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "sg-conn", "m2", []string{"s-conn"}
	if hbr, err := hb.RequestWith(ctx, other); err != nil || hbr.ErrorCode != 0 {
		t.Fatalf("m2 join: %v %+v", err, hbr)
	}
	if got := shareAcquired(fetch(other, "m2")); got != "[]" {
		t.Fatalf("m2 while m1 holds the records: %s", got)
	}
	cl.Close() // m1's connection: its session closes with it
	var got string
	for range 50 { // the broker sees the close asynchronously
		if got = shareAcquired(fetch(other, "m2")); got != "[]" {
			break
		}
	}
	if got != "[0-4@2]" {
		t.Fatalf("m2 after m1's connection closed: %s", got)
	}
}

// TestShareGroups_SessionLimit: with group.share.max.share.sessions=1 a
// second member's new share session is refused with
// SHARE_SESSION_LIMIT_REACHED until the first one closes.
func TestShareGroups_SessionLimit(t *testing.T) {
	cl, topicID, _ := shareSetup(t, "sg-max", "s-max", 1, map[string]string{"group.share.max.share.sessions": "1"})
	ctx := testCtx(t)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "sg-max", "m2", []string{"s-max"}
	if hbr, err := hb.RequestWith(ctx, cl); err != nil || hbr.ErrorCode != 0 {
		t.Fatalf("m2 join: %v %+v", err, hbr)
	}
	fetch := func(member string, epoch int32) *kmsg.ShareFetchResponse {
		t.Helper()
		return doShareFetch(t, ctx, cl, shareFetchReq("sg-max", member, epoch, topicID))
	}
	if got := shareAcquired(fetch("m1", 0)); got != "[0-0@1]" {
		t.Fatalf("m1 opens the one session: %s", got)
	}
	if got := shareAcquired(fetch("m2", 0)); got != kerr.ShareSessionLimitReached.Error() {
		t.Fatalf("m2 while m1's session is open: %s", got)
	}
	if r := fetch("m1", -1); r.ErrorCode != 0 {
		t.Fatalf("m1 closes: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := shareAcquired(fetch("m2", 0)); got != "[0-0@2]" {
		t.Fatalf("m2 after m1 closed: %s", got)
	}
}

// TestDescribeShareGroupOffsets_NamedTopicsNotChecked: as Kafka 4.4
// answers, a DescribeShareGroupOffsets naming its topics reports start
// offset -1, leader epoch 0 and lag -1 with NONE for a group that is not a
// share group (unknown, or a consumer group's id) and for an unknown topic;
// with null topics an unknown group is GROUP_ID_NOT_FOUND.
func TestDescribeShareGroupOffsets_NamedTopicsNotChecked(t *testing.T) {
	cl, _, _ := shareSetup(t, "sg-named", "s-named", 1)
	ctx := testCtx(t)
	// A consumer group's id.
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis = "cg-named", "AAAAAAAAAAAAAAAAAAAAAA", 30000
	cg.SubscribedTopicNames, cg.Topics = []string{"s-named"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := cg.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("consumer group join: %v %+v", err, r)
	}
	describe := func(group string, topic *string) kmsg.DescribeShareGroupOffsetsResponseGroup {
		t.Helper()
		d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group
		if topic != nil {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = *topic, []int32{0}
			g.Topics = append(g.Topics, rt)
		}
		d.Groups = append(d.Groups, g)
		r, err := d.RequestWith(ctx, cl)
		if err != nil || len(r.Groups) != 1 {
			t.Fatalf("describe %s: %v %+v", group, err, r)
		}
		return r.Groups[0]
	}
	for _, c := range []struct{ group, topic string }{{"sg-none", "s-named"}, {"cg-named", "s-named"}, {"sg-named", "s-nope"}} {
		g := describe(c.group, &c.topic)
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Errorf("%s/%s: %v %+v", c.group, c.topic, kerr.ErrorForCode(g.ErrorCode), g.Topics)
			continue
		}
		p := g.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.StartOffset != -1 || p.LeaderEpoch != 0 || p.Lag != -1 {
			t.Errorf("%s/%s: partition %+v, want NONE, start -1, leader epoch 0, lag -1", c.group, c.topic, p)
		}
	}
	if g := describe("sg-none", nil); g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("unknown group, null topics: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(g.ErrorCode))
	}
}

// TestShareGroups_ReadCommitted: with share.isolation.level=read_committed
// a share group is given only committed records, below the last stable
// offset: an aborted transaction's records are archived without a
// delivery, an open transaction's wait for its commit, and the markers are
// acquired like records (as Kafka 4.4 does; clients acknowledge them as
// gaps).
func TestShareGroups_ReadCommitted(t *testing.T) {
	cl, topicID, addr := shareSetup(t, "sg-rc", "s-rc", 2) // offsets 0-1
	ctx := testCtx(t)
	txn := newClient(t, addr, kgo.DefaultProduceTopic("s-rc"), kgo.TransactionalID("rc-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(values ...string) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var rs []*kgo.Record
		for _, v := range values {
			rs = append(rs, &kgo.Record{Partition: 0, Value: []byte(v)})
		}
		if err := txn.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := func(commit kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	produce("aborted-1", "aborted-2") // 2-3, its marker 4
	end(kgo.TryAbort)
	produce("committed") // 5, its marker 6
	end(kgo.TryCommit)
	produce("open") // 7, open
	if code, msg := alterGroupConfigMsg(t, cl, "sg-rc", "share.isolation.level", kmsg.StringPtr("read_committed")); code != 0 {
		t.Fatalf("set read_committed: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := shareAcquired(doShareFetch(t, ctx, cl, shareFetchReq("sg-rc", "m1", 0, topicID))); got != "[0-1@1 4-6@1]" {
		t.Fatalf("read_committed with an aborted, a committed and an open transaction: %s", got)
	}
	end(kgo.TryCommit) // 7 committed, its marker 8
	if got := shareAcquired(doShareFetch(t, ctx, cl, shareFetchReq("sg-rc", "m1", 1, topicID))); got != "[7-8@1]" {
		t.Fatalf("after the open transaction's commit: %s", got)
	}
}
