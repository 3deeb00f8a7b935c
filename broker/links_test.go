package broker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

// linkOp runs one operation of the links API over the wire, as gregor link
// does; it returns the answer's error code and JSON body.
func linkOp(t *testing.T, addr string, op LinkOp) (int16, string, []byte) {
	t.Helper()
	body, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, addr)
	c.nc.SetDeadline(time.Now().Add(60 * time.Second))
	c.send(7, &protocol.JSONRequest{APIKey: protocol.LinksKey, Body: body})
	resp := &protocol.JSONResponse{APIKey: protocol.LinksKey}
	c.recv(7, resp)
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return resp.ErrorCode, msg, resp.Body
}

// partitionDump is everything a Fetch shows of a partition, from its log
// start to its high watermark: the batches (their partition leader epoch
// zeroed, the one field a mirror stamps anew), and in read_committed the
// aborted transactions, the last stable offset and the log start.
type partitionDump struct {
	batches          []byte
	aborted          []string // producer id @ first offset
	logStart, hw, ls int64
}

func dumpPartition(t *testing.T, cl *kgo.Client, topic string, p int32) partitionDump {
	t.Helper()
	var d partitionDump
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	md, err := mreq.RequestWith(testCtx(t), cl)
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	start, ok := starts.Lookup(topic, p)
	if !ok || start.Err != nil {
		t.Fatalf("log start of %s-%d: %v", topic, p, start.Err)
	}
	offset := start.Offset
	for range 1000 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.IsolationLevel = 64<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, md.Topics[0].TopicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 32<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0].Partitions[0]
		if got.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v", topic, p, offset, kerr.ErrorForCode(got.ErrorCode))
		}
		d.logStart, d.hw, d.ls = got.LogStartOffset, got.HighWatermark, got.LastStableOffset
		for _, a := range got.AbortedTransactions {
			d.aborted = append(d.aborted, fmt.Sprintf("%d@%d", a.ProducerID, a.FirstOffset))
		}
		recs := got.RecordBatches
		for len(recs) >= 61 {
			size := 12 + int(binary.BigEndian.Uint32(recs[8:]))
			if size > len(recs) {
				break
			}
			b := slices.Clone(recs[:size])
			binary.BigEndian.PutUint32(b[12:], 0)
			d.batches = append(d.batches, b...)
			offset = int64(binary.BigEndian.Uint64(b)) + int64(binary.BigEndian.Uint32(b[23:])) + 1
			recs = recs[size:]
		}
		if offset >= got.LastStableOffset || len(got.RecordBatches) == 0 {
			return d
		}
	}
	t.Fatalf("%s-%d: no end after 1000 fetches", topic, p)
	return d
}

func TestLink_MirrorsAtTheSameOffsets(t *testing.T) {
	_, srcAddr := startBroker(t, "", nil)
	dst, dstAddr := startBroker(t, "", nil)
	ctx := testCtx(t)
	src := newClient(t, srcAddr)
	srcAdm := kadm.NewClient(src)
	if _, err := srcAdm.CreateTopic(ctx, 2, -1, map[string]*string{"retention.ms": kmsg.StringPtr("86400000")}, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "prices"); err != nil {
		t.Fatal(err)
	}
	// An idempotent producer, and a transactional one that commits,
	// aborts and commits again, with keys, headers and compression.
	idem := newClient(t, srcAddr, kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 40 {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Key: []byte("k" + strconv.Itoa(i%5)), Value: []byte("order-" + strconv.Itoa(i)),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}}}
		if err := idem.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := idem.ProduceSync(ctx, &kgo.Record{Topic: "prices", Key: []byte("p" + strconv.Itoa(i%3)), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txn := newClient(t, srcAddr, kgo.TransactionalID("mirror-txn"), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			if err := txn.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "txn-%v-%d", commit, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// Records deleted on the source: the mirror starts at its log start.
	if _, err := srcAdm.DeleteRecords(ctx, kadm.Offsets{"orders": {0: {At: 3}}}); err != nil {
		t.Fatal(err)
	}
	// A group that consumed part of orders.
	if _, err := srcAdm.CommitOffsets(ctx, "billing", kadm.Offsets{"orders": {0: {At: 10}, 1: {At: 7}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.CommitOffsets(ctx, "audit", kadm.Offsets{"orders": {0: {At: 20}, 1: {At: 11}}}); err != nil {
		t.Fatal(err)
	}

	// The link, through the wire API as gregor link sends it.
	code, msg, _ := linkOp(t, dstAddr, LinkOp{Op: "create", Link: &link.Link{Name: "mig", Source: []string{srcAddr}, Topics: "orders|prices", Groups: "bill.*|audit", SyncIntervalMs: 100}})
	if code != 0 {
		t.Fatalf("create: %v: %s", kerr.ErrorForCode(code), msg)
	}
	if code, _, _ := linkOp(t, dstAddr, LinkOp{Op: "create", Link: &link.Link{Name: "mig", Source: []string{srcAddr}, Topics: "x"}}); code != kerr.InvalidRequest.Code {
		t.Fatalf("second create of mig: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	if code, _, _ := linkOp(t, dstAddr, LinkOp{Op: "status", Name: "nope"}); code != kerr.ResourceNotFound.Code {
		t.Fatalf("status of an unknown link: %v, want RESOURCE_NOT_FOUND", kerr.ErrorForCode(code))
	}
	caughtUp := func() bool {
		code, _, body := linkOp(t, dstAddr, LinkOp{Op: "status", Name: "mig"})
		var st link.Status
		if code != 0 || json.Unmarshal(body, &st) != nil || len(st.Mirrors) != 2 {
			return false
		}
		for _, m := range st.Mirrors {
			for _, p := range m.Partitions {
				if p.Lag != 0 {
					return false
				}
			}
		}
		return true
	}
	waitFor(t, 20*time.Second, "the mirror caught up", caughtUp)

	dstCl := newClient(t, dstAddr)
	compare := func(topic string, p int32) {
		t.Helper()
		a, b := dumpPartition(t, src, topic, p), dumpPartition(t, dstCl, topic, p)
		if !bytes.Equal(a.batches, b.batches) || len(a.batches) == 0 {
			_, _, st := linkOp(t, dstAddr, LinkOp{Op: "status", Name: "mig"})
			t.Fatalf("%s-%d: the mirror's batches differ from the source's (%d and %d bytes); hw %d and %d; status %s", topic, p, len(a.batches), len(b.batches), a.hw, b.hw, st)
		}
		if a.logStart != b.logStart || a.hw != b.hw || a.ls != b.ls || !slices.Equal(a.aborted, b.aborted) {
			t.Fatalf("%s-%d: source log start %d hw %d lso %d aborted %v; mirror %d %d %d %v", topic, p, a.logStart, a.hw, a.ls, a.aborted, b.logStart, b.hw, b.ls, b.aborted)
		}
	}
	compare("orders", 0)
	compare("orders", 1)
	compare("prices", 0)
	mfs, err := dst.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			seen[mf.GetName()] += v
			if mf.GetName() == "gregor_link_lag" {
				seen["lag series"]++
			}
		}
	}
	if seen["gregor_link_bytes_total"] <= 0 || seen["gregor_link_batches_total"] <= 0 || seen["lag series"] != 3 || seen["gregor_link_lag"] != 0 {
		t.Fatalf("link metrics: bytes %v batches %v, %v lag series summing to %v; want bytes and batches, 3 partitions at lag 0",
			seen["gregor_link_bytes_total"], seen["gregor_link_batches_total"], seen["lag series"], seen["gregor_link_lag"])
	}
	if got := dumpPartition(t, dstCl, "orders", 0); got.logStart != 3 || len(got.aborted) != 1 {
		t.Fatalf("orders-0 on the mirror: log start %d, aborted %v; want 3 and one aborted transaction", got.logStart, got.aborted)
	}
	dstAdm := kadm.NewClient(dstCl)
	cfgs, err := dstAdm.DescribeTopicConfigs(ctx, "prices")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfgs.On("prices", nil); err != nil || !slices.ContainsFunc(c.Configs, func(c kadm.Config) bool {
		return c.Key == "cleanup.policy" && c.MaybeValue() == "compact" && c.Source == kmsg.ConfigSourceDynamicTopicConfig
	}) {
		t.Fatalf("prices on the mirror: cleanup.policy not compact (%v)", err)
	}

	// The group's offsets, verbatim.
	waitFor(t, 10*time.Second, "billing's offsets copied", func() bool {
		o, err := dstAdm.FetchOffsets(ctx, "billing")
		if err != nil {
			return false
		}
		a, _ := o.Lookup("orders", 0)
		b, _ := o.Lookup("orders", 1)
		return a.At == 10 && b.At == 7
	})

	// A KIP-848 consumer of a group the link copied starts at its offsets.
	waitFor(t, 10*time.Second, "audit's offsets copied", func() bool {
		o, err := dstAdm.FetchOffsets(ctx, "audit")
		a, _ := o.Lookup("orders", 0)
		return err == nil && a.At == 20
	})
	audit := newClient(t, dstAddr, kgo.ConsumerGroup("audit"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer(), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	first := map[int32]int64{}
	for len(first) < 2 {
		fs := audit.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	if first[0] != 20 || first[1] != 11 {
		t.Fatalf("a KIP-848 consumer of audit here started at %v, want 0:20 1:11", first)
	}
	audit.Close()

	// Produce is refused until promoted.
	if err := dstCl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err == nil || !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("produce to a mirror topic: %v, want POLICY_VIOLATION", err)
	}

	// The source goes on: more records, DeleteRecords, a partition added,
	// a config changed; the mirror follows.
	for i := range 10 {
		if err := idem.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("late-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srcAdm.DeleteRecords(ctx, kadm.Offsets{"orders": {1: {At: 5}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.CreatePartitions(ctx, 1, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}, "orders"); err != nil {
		t.Fatal(err)
	}
	late := newClient(t, srcAddr, kgo.RecordPartitioner(kgo.ManualPartitioner())) // knows the third partition
	if err := late.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 2, Value: []byte("p2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the mirror caught up again", func() bool {
		// The third partition first: a status taken before it exists
		// here would not list it.
		n, ok := linkHost{dst}.Partitions("orders")
		return ok && n == 3 && linkHost{dst}.TopicConfigs("orders")["retention.ms"] == "3600000" && caughtUp()
	})
	compare("orders", 0)
	compare("orders", 1)
	compare("orders", 2)

	// Consumers moved: the group commits here; the source's later commits
	// are no longer copied.
	if _, err := dstAdm.CommitOffsets(ctx, "billing", kadm.Offsets{"orders": {0: {At: 12}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.CommitOffsets(ctx, "billing", kadm.Offsets{"orders": {0: {At: 15}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "billing taken over", func() bool {
		g := dst.linkStore.State().Groups["mig"]["billing"]
		return g != nil && g.TakenOverMs != 0
	})
	if o, err := dstAdm.FetchOffsets(ctx, "billing"); err != nil {
		t.Fatal(err)
	} else if a, _ := o.Lookup("orders", 0); a.At != 12 {
		t.Fatalf("billing on orders-0 here: %d, want 12 (what it committed here)", a.At)
	}

	// Delete refuses while mirrors are not promoted; promote; produce.
	if code, _, _ := linkOp(t, dstAddr, LinkOp{Op: "delete", Name: "mig"}); code != kerr.InvalidRequest.Code {
		t.Fatalf("delete with mirror topics: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	code, msg, body := linkOp(t, dstAddr, LinkOp{Op: "promote", Name: "mig", Topics: "orders"})
	if code != 0 || string(body) != `{"promoted":["orders"]}` {
		t.Fatalf("promote: %v %s %s", kerr.ErrorForCode(code), msg, body)
	}
	compare("orders", 0)
	if err := dstCl.ProduceSync(ctx, &kgo.Record{Topic: "prices", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("produce to prices, still a mirror: %v", err)
	}
	// A producer here gets an id above every mirrored one.
	fresh := newClient(t, dstAddr)
	rec := &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("after")}
	if err := fresh.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if floor := dst.linkStore.State().ProducerIDFloor; floor < 0 || rec.ProducerID <= floor {
		t.Fatalf("a new producer's id %d, mirrored producer ids up to %d", rec.ProducerID, floor)
	}
	if code, msg, _ := linkOp(t, dstAddr, LinkOp{Op: "delete", Name: "mig", Force: true}); code != 0 {
		t.Fatalf("delete --force: %v %s", kerr.ErrorForCode(code), msg)
	}
	if err := dstCl.ProduceSync(ctx, &kgo.Record{Topic: "prices", Key: []byte("p9"), Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to prices once its link is gone: %v", err)
	}
}

// TestLink_PromotionAbortsOpenTransactions: a transaction still open on the
// source at the promotion point (its producer died, or never ended it)
// would hold the promoted topic's last stable offset, and every
// read_committed consumer, forever: the promotion aborts it with a marker,
// and finishes only once the last stable offset passed it.
func TestLink_PromotionAbortsOpenTransactions(t *testing.T) {
	_, srcAddr := startBroker(t, "", nil)
	_, dstAddr := startBroker(t, "", nil)
	ctx := testCtx(t)
	src := newClient(t, srcAddr)
	if _, err := kadm.NewClient(src).CreateTopic(ctx, 1, -1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	if err := src.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Two producers leave a transaction open: the promotion point falls
	// inside both.
	var pids []int64
	for _, id := range []string{"hanging-a", "hanging-b"} {
		txn := newClient(t, srcAddr, kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute))
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "payments", Value: []byte("in " + id)}
		if err := txn.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, r.ProducerID)
	}
	code, msg, _ := linkOp(t, dstAddr, LinkOp{Op: "create", Link: &link.Link{Name: "mig", Source: []string{srcAddr}, Topics: "payments", SyncIntervalMs: 100}})
	if code != 0 {
		t.Fatalf("create: %v: %s", kerr.ErrorForCode(code), msg)
	}
	dst := newClient(t, dstAddr)
	waitFor(t, 20*time.Second, "the three records mirrored", func() bool {
		o, err := kadm.NewClient(dst).ListEndOffsets(ctx, "payments")
		e, _ := o.Lookup("payments", 0)
		return err == nil && e.Offset == 3
	})
	if d := dumpPartition(t, dst, "payments", 0); d.ls != 1 {
		t.Fatalf("before the promotion the mirror's last stable offset is %d, want 1 (as the source's)", d.ls)
	}
	code, msg, body := linkOp(t, dstAddr, LinkOp{Op: "promote", Name: "mig"})
	if code != 0 || string(body) != `{"promoted":["payments"]}` {
		t.Fatalf("promote: %v %s %s", kerr.ErrorForCode(code), msg, body)
	}
	d := dumpPartition(t, dst, "payments", 0)
	want := []string{fmt.Sprintf("%d@1", pids[0]), fmt.Sprintf("%d@2", pids[1])}
	slices.Sort(d.aborted)
	slices.Sort(want)
	if d.hw != 5 || d.ls != 5 || !slices.Equal(d.aborted, want) {
		t.Fatalf("after the promotion: hw %d, last stable %d, aborted %v; want 5, 5, %v", d.hw, d.ls, d.aborted, want)
	}
	// A read_committed consumer reads the committed record and is not held.
	cons := newClient(t, dstAddr, kgo.ConsumeTopics("payments"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err := dst.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read_committed read %q: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"plain", "after"}) {
		t.Fatalf("read_committed after the promotion: %q", got)
	}
}

// TestLink_SourceTopicDeleted: a source topic deleted under its mirror
// stops the mirroring and keeps every mirrored record; one created again
// under the same name (another topic, other records at the same offsets)
// is not mirrored into it; the mirror can still be promoted, at its own
// end, and written.
func TestLink_SourceTopicDeleted(t *testing.T) {
	_, srcAddr := startBroker(t, "", nil)
	_, dstAddr := startBroker(t, "", nil)
	ctx := testCtx(t)
	src := newClient(t, srcAddr)
	srcAdm := kadm.NewClient(src)
	if _, err := srcAdm.CreateTopic(ctx, 1, -1, nil, "gone"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := src.ProduceSync(ctx, &kgo.Record{Topic: "gone", Value: fmt.Appendf(nil, "old-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	code, msg, _ := linkOp(t, dstAddr, LinkOp{Op: "create", Link: &link.Link{Name: "mig", Source: []string{srcAddr}, Topics: "gone", SyncIntervalMs: 50}})
	if code != 0 {
		t.Fatalf("create: %v: %s", kerr.ErrorForCode(code), msg)
	}
	status := func() link.MirrorStatus {
		t.Helper()
		code, _, body := linkOp(t, dstAddr, LinkOp{Op: "status", Name: "mig"})
		var st link.Status
		if code != 0 || json.Unmarshal(body, &st) != nil || len(st.Mirrors) != 1 {
			return link.MirrorStatus{}
		}
		return st.Mirrors[0]
	}
	waitFor(t, 20*time.Second, "the five records mirrored", func() bool {
		ms := status()
		return len(ms.Partitions) == 1 && ms.Partitions[0].MirrorEnd == 5
	})
	if _, err := srcAdm.DeleteTopics(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the mirror's source seen deleted", func() bool { return status().SourceDeleted })
	// Created again with other records: not mirrored into the old one.
	if _, err := srcAdm.CreateTopic(ctx, 1, -1, nil, "gone"); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := src.ProduceSync(ctx, &kgo.Record{Topic: "gone", Value: fmt.Appendf(nil, "new-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	code, msg, body := linkOp(t, dstAddr, LinkOp{Op: "promote", Name: "mig"})
	if code != 0 || string(body) != `{"promoted":["gone"]}` {
		t.Fatalf("promote: %v %s %s", kerr.ErrorForCode(code), msg, body)
	}
	dst := newClient(t, dstAddr)
	if err := dst.ProduceSync(ctx, &kgo.Record{Topic: "gone", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, dstAddr, kgo.ConsumeTopics("gone"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 6 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %q: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	if want := []string{"0:old-0", "1:old-1", "2:old-2", "3:old-3", "4:old-4", "5:after"}; !slices.Equal(got, want) {
		t.Fatalf("the promoted mirror holds %q, want %q", got, want)
	}
}

// TestLink_HiddenFromApiVersions: the links API is Gregor's own, and a
// Kafka client asking ApiVersions never sees it.
func TestLink_HiddenFromApiVersions(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), newClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == protocol.LinksKey {
			t.Fatal("ApiVersions lists the links API")
		}
	}
}

// TestLink_CopiesACLs: the source's literal ACLs on the link's topics and
// groups are created here; others are not.
func TestLink_CopiesACLs(t *testing.T) {
	props := map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:ANONYMOUS"}
	_, srcAddr := startBroker(t, "", props)
	dst, dstAddr := startBroker(t, "", props)
	ctx := testCtx(t)
	srcAdm := kadm.NewClient(newClient(t, srcAddr))
	if _, err := srcAdm.CreateTopic(ctx, 1, -1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("other").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		// Prefixed: copied when it covers a mirror topic or a synced group.
		kadm.NewACLs().Allow("User:carol").Topics("ord").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:carol").Groups("bill").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:dave").Topics("oth").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed),
	} {
		res, err := srcAdm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	if _, err := srcAdm.CommitOffsets(ctx, "billing", kadm.Offsets{"orders": {0: {At: 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := dst.links.Load().Create(ctx, &link.Link{Name: "mig", Source: []string{srcAddr}, Topics: "orders", Groups: "billing", SyncIntervalMs: 100}); err != nil {
		t.Fatal(err)
	}
	dstCl := newClient(t, dstAddr)
	var got []string
	waitFor(t, 10*time.Second, "alice's ACLs copied", func() bool {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, dstCl)
		if err != nil || resp.ErrorCode != 0 {
			return false
		}
		got = got[:0]
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				got = append(got, fmt.Sprintf("%v:%v:%s:%s:%v", r.ResourceType, r.ResourcePatternType, r.ResourceName, a.Principal, a.Operation))
			}
		}
		slices.Sort(got)
		return len(got) >= 5
	})
	want := []string{"GROUP:LITERAL:billing:User:alice:READ", "GROUP:PREFIXED:bill:User:carol:READ",
		"TOPIC:LITERAL:orders:User:alice:DESCRIBE", "TOPIC:LITERAL:orders:User:alice:READ", "TOPIC:PREFIXED:ord:User:carol:WRITE"}
	if !slices.Equal(got, want) {
		t.Fatalf("ACLs here: %v, want %v", got, want)
	}
}

// TestLink_SchemasFromAnotherRegistry: a link that mirrors another
// registry's _schemas topic: this broker's registry serves its schemas
// under the same ids, refuses to register while the topic is a mirror, and
// registers after the promotion with the next id.
func TestLink_SchemasFromAnotherRegistry(t *testing.T) {
	props := map[string]string{"schema.registry.listeners": "http://127.0.0.1:0"}
	src, srcAddr := startBroker(t, "", props)
	dst, _ := startBroker(t, "", props)
	ctx := testCtx(t)
	srcReg, err := sr.NewClient(sr.URLs("http://" + src.SchemaRegistryAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{"users-value", "orders-value"} {
		if _, err := srcReg.CreateSchema(ctx, subject, sr.Schema{Schema: srUserSchema}); err != nil {
			t.Fatal(err)
		}
	}
	orders, err := srcReg.SchemaByVersion(ctx, "orders-value", 1)
	if err != nil {
		t.Fatal(err)
	}
	m := dst.links.Load()
	if err := m.Create(ctx, &link.Link{Name: "reg", Source: []string{srcAddr}, Topics: "_schemas", SyncIntervalMs: 100}); err != nil {
		t.Fatal(err)
	}
	dstReg, err := sr.NewClient(sr.URLs("http://" + dst.SchemaRegistryAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "orders-value served here", func() bool {
		got, err := dstReg.SchemaByVersion(ctx, "orders-value", 1)
		return err == nil && got.ID == orders.ID
	})
	if _, err := dstReg.CreateSchema(ctx, "new-value", sr.Schema{Schema: `"string"`}); err == nil {
		t.Fatal("registered a schema into a mirrored _schemas")
	}
	if _, err := m.Promote(ctx, "reg", ""); err != nil {
		t.Fatal(err)
	}
	ss, err := dstReg.CreateSchema(ctx, "new-value", sr.Schema{Schema: `"string"`})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID <= orders.ID {
		t.Fatalf("a schema registered after the promotion got id %d; the mirrored ones go up to %d", ss.ID, orders.ID)
	}
}
