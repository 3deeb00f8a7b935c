package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareDelivery is one delivery of a record to a share consumer.
type shareDelivery struct {
	consumer string
	count    int32 // the record's delivery count
	ack      kgo.AckStatus
}

// TestShare_ThreeConsumersOnePartition runs three franz-go share consumers
// (KIP-932) of one group over a single partition of 300 records, with the
// group's share.delivery.count.limit set to 3:
//   - consumer a polls one batch and is closed without acknowledging it:
//     every record of that batch is delivered again, to b or c, with
//     delivery count 2;
//   - b releases the first record it gets on its first delivery: it is
//     delivered again, to c (which polls next), with delivery count 2;
//   - the poison record is released on every delivery: it is delivered
//     exactly three times (counts 1, 2, 3), then archived;
//   - every other record is accepted exactly once, and in the end the
//     share-partition start offset (DescribeShareGroupOffsets) is 300 with
//     lag 0, and no consumer gets a record any more.
func TestShare_ThreeConsumersOnePartition(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 90*time.Second)
	adm := newAdmin(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 1, nil)
	alterGroupConfigs(t, ctx, newClient(t, b), group, map[string]string{
		"share.auto.offset.reset":    "earliest",
		"share.delivery.count.limit": "3",
	})

	const n, poison = 300, 137
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rs := make([]*kgo.Record, n)
	for i := range rs {
		v := fmt.Sprintf("r-%03d", i)
		if i == poison {
			v = "poison"
		}
		rs[i] = &kgo.Record{Value: []byte(v)}
	}
	// Ten records a batch: the broker acquires whole batches (it treats
	// ShareAcquireMode 1, record limit, like 0), so batches of 10 and
	// ShareMaxRecords(20) give each ShareFetch at most 20 records.
	for i := 0; i < n; i += 10 {
		if err := prod.ProduceSync(ctx, rs[i:i+10]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// ShareMaxRecordsStrict: a consumer fetches only when polled, so the
	// three take turns on the partition.
	share := func(name string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), kgo.ClientID(name),
			kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
			kgo.ShareMaxRecords(20), kgo.ShareMaxRecordsStrict())
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	a, bc, cc := share("a"), share("b"), share("c")
	t.Cleanup(bc.Close)
	t.Cleanup(cc.Close)

	deliveries := map[int64][]shareDelivery{}
	poll := func(name string, cl *kgo.Client, decide func(r *kgo.Record) kgo.AckStatus) int {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		fs := cl.PollRecords(pctx, 0)
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) {
				t.Fatalf("%s: fetch error %s/%d: %v", name, e.Topic, e.Partition, e.Err)
			}
		}
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			got++
			ack := decide(r)
			if ack != 0 {
				r.Ack(ack)
			}
			deliveries[r.Offset] = append(deliveries[r.Offset], shareDelivery{name, r.DeliveryCount(), ack})
		})
		// The acks reach the broker before the next consumer polls.
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("%s: FlushAcks: %v", name, err)
		}
		return got
	}

	// a: one batch, not acknowledged, then closed.
	var held []int64
	for len(held) == 0 {
		if ctx.Err() != nil {
			t.Fatal("consumer a got no records")
		}
		poll("a", a, func(r *kgo.Record) kgo.AckStatus {
			held = append(held, r.Offset)
			return 0
		})
	}
	a.Close()
	t.Logf("a held offsets %d..%d and closed", held[0], held[len(held)-1])

	// b and c: the poison record is released every time; b releases the
	// first other record it gets on its first delivery; all else is
	// accepted.
	released := int64(-1)
	accepted := map[int64]int{}
	decide := func(name string) func(r *kgo.Record) kgo.AckStatus {
		return func(r *kgo.Record) kgo.AckStatus {
			switch {
			case string(r.Value) == "poison":
				return kgo.AckRelease
			case released < 0 && name == "b" && r.DeliveryCount() == 1:
				released = r.Offset
				return kgo.AckRelease
			}
			accepted[r.Offset]++
			return kgo.AckAccept
		}
	}
	done := func() bool {
		return len(accepted) == n-1 && len(deliveries[poison]) >= 3
	}
	for !done() {
		if ctx.Err() != nil {
			t.Fatalf("accepted %d of %d records, poison deliveries %v", len(accepted), n-1, deliveries[poison])
		}
		poll("b", bc, decide("b"))
		poll("c", cc, decide("c"))
	}

	// Once everything below 300 is acknowledged or archived, the
	// share-partition start offset is 300: nothing can be delivered again.
	var last kadm.ShareOffset
	for {
		ds, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err == nil {
			last, _ = ds[group].Offsets.Lookup(topic, 0)
			if last.Err == nil && last.StartOffset == n {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("DescribeShareGroupOffsets: last %+v (err %v), want start offset %d", last, err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last.Lag != 0 {
		t.Errorf("share-partition lag %d, want 0", last.Lag)
	}
	for _, x := range []struct {
		name string
		cl   *kgo.Client
	}{{"b", bc}, {"c", cc}} {
		if got := poll(x.name, x.cl, func(r *kgo.Record) kgo.AckStatus { return kgo.AckAccept }); got != 0 {
			t.Errorf("%s got %d more records after the start offset reached the end", x.name, got)
		}
	}

	// The outcomes, record by record.
	for off := int64(0); off < n; off++ {
		ds := deliveries[off]
		if off == poison {
			var counts []int32
			for _, d := range ds {
				counts = append(counts, d.count)
				if d.consumer != "a" && d.ack != kgo.AckRelease {
					t.Errorf("poison delivery %+v not released", d)
				}
			}
			if !slices.Equal(counts, []int32{1, 2, 3}) {
				t.Errorf("poison record: delivery counts %v (%+v), want [1 2 3] then archived", counts, ds)
			}
			continue
		}
		if accepted[off] != 1 {
			t.Errorf("offset %d accepted %d times: %+v", off, accepted[off], ds)
			continue
		}
		final := ds[len(ds)-1]
		switch {
		case slices.Contains(held, off):
			if len(ds) != 2 || ds[0].consumer != "a" || final.consumer == "a" || final.count != 2 {
				t.Errorf("offset %d held by the closed consumer: deliveries %+v, want a then b or c with count 2", off, ds)
			}
		case off == released:
			if len(ds) != 2 || ds[0].count != 1 || ds[0].ack != kgo.AckRelease || final.consumer != "c" || final.count != 2 {
				t.Errorf("released offset %d: deliveries %+v, want b's release at count 1, c's accept at count 2", off, ds)
			}
		default:
			if len(ds) != 1 || final.count != 1 {
				t.Errorf("offset %d: deliveries %+v, want one with count 1", off, ds)
			}
		}
	}
	if released < 0 {
		t.Fatal("b never got a record to release")
	}
	t.Logf("released offset %d, redelivered to %s; poison deliveries %+v", released, deliveries[released][len(deliveries[released])-1].consumer, deliveries[poison])
}

// alterGroupConfigs sets group configs (resource type GROUP) with
// IncrementalAlterConfigs.
func alterGroupConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, group string, cfg map[string]string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range cfg {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("IncrementalAlterConfigs GROUP %s: error code %d (%v)", group, r.ErrorCode, r.ErrorMessage)
		}
	}
}
