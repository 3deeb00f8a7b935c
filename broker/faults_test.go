package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFaults_ProduceNotLeaderIsRetried injects NOT_LEADER_OR_FOLLOWER into
// the next two Produce requests for t-0: a raw request sees the code in its
// partition, a franz-go producer retries through the second and succeeds,
// and nothing was appended twice.
func TestFaults_ProduceNotLeaderIsRetried(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	if err := b.CreateTopic("t", 2, nil); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	// A fault for another client id is not hit.
	other, err := b.InjectFault(Fault{APIKey: int16(kmsg.Produce), ClientID: "someone-else", ErrorCode: kerr.NotLeaderForPartition.Code})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.InjectFault(Fault{APIKey: int16(kmsg.Produce), Topic: "t", Partition: 0, Count: 2, ErrorCode: kerr.NotLeaderForPartition.Code}); err != nil {
		t.Fatal(err)
	}
	// Produce to partition 1 is not matched.
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("p1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	raw := newClient(t, addr)
	req := produceReq("t", 0, makeBatch([]string{"raw"}, -1, -1, -1))
	resp, err := req.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("raw produce got error %d, want NOT_LEADER_OR_FOLLOWER", got)
	}

	cl2 := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err := cl2.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("retried")}).FirstErr(); err != nil {
		t.Fatalf("producer did not get through the injected error: %v", err)
	}
	if fs := b.Faults(); len(fs) != 1 || fs[0].ID != other || fs[0].Hits != 0 {
		t.Fatalf("faults %+v; want only the other client's, never hit", fs)
	}
	p0 := b.Topics()[0].Partitions[0]
	if p0.LogEndOffset != 1 {
		t.Fatalf("t-0 log end offset %d, want 1: the failed produces must append nothing", p0.LogEndOffset)
	}
	recs, err := b.ReadRecords("t", 0, 0, 10)
	if err != nil || len(recs) != 1 || string(recs[0].Value) != "retried" {
		t.Fatalf("t-0 holds %+v, %v", recs, err)
	}
}

// TestFaults_LatencyAndDrop delays one Metadata request and drops the
// connection of one ListOffsets; a kadm client still gets its answers.
func TestFaults_LatencyAndDrop(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	if err := b.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	cl := newClient(t, addr)
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if _, err := b.InjectFault(Fault{APIKey: int16(kmsg.Metadata), Count: 1, Latency: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("metadata answered in %v despite 300ms injected latency", d)
	}

	if _, err := b.InjectFault(Fault{APIKey: int16(kmsg.ListOffsets), Topic: "t", Count: 1, DropConnection: true}); err != nil {
		t.Fatal(err)
	}
	raw := dialRaw(t, addr)
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	req.Topics = append(req.Topics, lt)
	raw.send(7, req)
	raw.expectClosed()
	// A client's next ListOffsets goes through on a new connection.
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, "t")
	if err != nil || offs.Error() != nil {
		t.Fatalf("list offsets after drop: %v %v", err, offs.Error())
	}
}

// TestFaults_ForceRebalance makes a one-member group rebalance: the
// consumer's partitions are revoked and assigned again.
func TestFaults_ForceRebalance(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"group.initial.rebalance.delay.ms": "0"})
	if err := b.CreateTopic("t", 2, nil); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	assigned := make(chan struct{}, 10)
	cl := newClient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned <- struct{}{} }))
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	wait := func(what string) {
		select {
		case <-assigned:
		case <-ctx.Done():
			t.Fatalf("no assignment %s", what)
		}
	}
	wait("at first join")
	if err := b.ForceRebalance("g"); err != nil {
		t.Fatal(err)
	}
	wait("after ForceRebalance")
	if err := b.ForceRebalance("nope"); err == nil {
		t.Fatal("ForceRebalance of an unknown group succeeded")
	}
}

// TestFaults_ErrorResponsesCarryTheCode encodes injected errors for
// several response shapes and decodes them back.
func TestFaults_ErrorResponsesCarryTheCode(t *testing.T) {
	code := kerr.CoordinatorNotAvailable.Code
	byID := func([16]byte) string { return "byid" }
	check := func(name string, req kmsg.Request, got func(kmsg.Response) []int16) {
		t.Helper()
		resp := errorResponse(req, code, byID)
		enc := resp.AppendTo(nil)
		dec := req.ResponseKind()
		dec.SetVersion(req.GetVersion())
		if err := dec.ReadFrom(enc); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		codes := got(dec)
		if len(codes) == 0 {
			t.Fatalf("%s: no error codes found", name)
		}
		for _, c := range codes {
			if c != code {
				t.Fatalf("%s: codes %v", name, codes)
			}
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 4
	fc.CoordinatorKeys = []string{"a", "b"}
	check("FindCoordinator v4", fc, func(r kmsg.Response) (c []int16) {
		for _, x := range r.(*kmsg.FindCoordinatorResponse).Coordinators {
			c = append(c, x.ErrorCode)
		}
		if len(c) != 2 {
			return nil
		}
		return c
	})
	fc3 := kmsg.NewPtrFindCoordinatorRequest()
	fc3.Version = 3
	check("FindCoordinator v3", fc3, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.FindCoordinatorResponse).ErrorCode} })
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version = 9
	check("JoinGroup", jg, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.JoinGroupResponse).ErrorCode} })
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 5
	dg.Groups = []string{"g1"}
	check("DescribeGroups", dg, func(r kmsg.Response) (c []int16) {
		for _, g := range r.(*kmsg.DescribeGroupsResponse).Groups {
			if g.Group == "g1" {
				c = append(c, g.ErrorCode)
			}
		}
		return c
	})
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 8
	og := kmsg.NewOffsetFetchRequestGroup()
	og.Group = "g"
	ot := kmsg.NewOffsetFetchRequestGroupTopic()
	ot.Topic = "t"
	ot.Partitions = []int32{0, 1}
	og.Topics = append(og.Topics, ot)
	of.Groups = append(of.Groups, og)
	check("OffsetFetch v8", of, func(r kmsg.Response) (c []int16) {
		for _, g := range r.(*kmsg.OffsetFetchResponse).Groups {
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
			}
		}
		if len(c) != 2 {
			return nil
		}
		return c
	})
	fr := kmsg.NewPtrFetchRequest()
	fr.Version = 13
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{1}
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fr.Topics = append(fr.Topics, ft)
	check("Fetch v13", fr, func(r kmsg.Response) (c []int16) {
		fresp := r.(*kmsg.FetchResponse)
		if fresp.ErrorCode != 0 || fresp.Topics[0].TopicID != ft.TopicID {
			return nil
		}
		return []int16{fresp.Topics[0].Partitions[0].ErrorCode}
	})
	if _, err := (&Broker{}).InjectFault(Fault{APIKey: 9999}); !errors.Is(err, ErrUnknownAPIKey) {
		t.Fatalf("unknown key: %v", err)
	}
}
