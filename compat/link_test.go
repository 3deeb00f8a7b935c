package compat

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startKafkaSource starts Apache Kafka (compat/kafkaref), stopped at
// cleanup; a test that needs it fails without it.
func startKafkaSource(t *testing.T, ctx context.Context) *kafkaref.Broker {
	t.Helper()
	if err := kafkaref.Available(); err != nil {
		t.Fatalf("Apache Kafka is needed as the source: %v", err)
	}
	kafka, err := kafkaref.Start(ctx, kafkaref.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting Apache Kafka: %v", err)
	}
	t.Cleanup(func() { kafka.Stop() })
	return kafka
}

// newAddrClient is a kgo client of the brokers at addr, closed at cleanup.
func newAddrClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.RetryTimeout(15 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// gregorCLI runs the gregor binary's command line and returns its
// standard output; a failure fails the test unless wantErr.
func gregorCLI(t *testing.T, wantErr bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(gregorBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if (err != nil) != wantErr {
		t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String() + errb.String()
}

// rawPartition is a partition as read_committed Fetches show it from its
// log start to its last stable offset: the batches byte for byte (their
// partition leader epoch zeroed: each cluster stamps its own), the aborted
// transactions, the log start, high watermark and last stable offset.
type rawPartition struct {
	batches          []byte
	aborted          []string
	logStart, hw, ls int64
}

func readRaw(t *testing.T, cl *kgo.Client, topic string, p int32) rawPartition {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	// The leader's view: a follower also answers a consumer's Fetch
	// (KIP-392), with a high watermark a round behind.
	md := metadata(t, ctx, cl, topic)
	if len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %d topics", topic, len(md.Topics))
	}
	id, leader := md.Topics[0].TopicID, int32(-1)
	for _, mp := range md.Topics[0].Partitions {
		if mp.Partition == p {
			leader = mp.Leader
		}
	}
	if leader < 0 {
		t.Fatalf("%s-%d: no leader", topic, p)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	start, ok := starts.Lookup(topic, p)
	if !ok || start.Err != nil {
		t.Fatalf("log start of %s-%d: %v", topic, p, start.Err)
	}
	var d rawPartition
	offset := start.Offset
	for range 1000 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.IsolationLevel = 64<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 32<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
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

// TestLink_FromApacheKafka migrates from Apache Kafka 4.4 with a cluster
// link, as the README's guide does: live idempotent and transactional
// producers (one transaction aborted), a compacted topic, DeleteRecords, a
// consumer group committing as it goes. The mirror holds the source's
// batches byte for byte at the same offsets; the group moves mid-stream
// and reads every record exactly once across the switch; after promotion
// the topic takes produce.
func TestLink_FromApacheKafka(t *testing.T) {
	ctx := testCtx(t, 4*time.Minute)
	kafka := startKafkaSource(t, ctx)
	g := newBroker(t)

	src := newAddrClient(t, kafka.Addr)
	srcAdm := kadm.NewClient(src)
	if _, err := srcAdm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"), "max.message.bytes": kmsg.StringPtr("200000")}, "prices"); err != nil {
		t.Fatal(err)
	}
	idem := newAddrClient(t, kafka.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte("order-" + strconv.Itoa(i)),
				Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}}
			if err := idem.ProduceSync(ctx, r, &kgo.Record{Topic: "prices", Key: []byte("p" + strconv.Itoa(i%4)), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 60)
	txn := newAddrClient(t, kafka.Addr, kgo.TransactionalID("link-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: fmt.Appendf(nil, "txn-%v-%d", commit, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srcAdm.DeleteRecords(ctx, kadm.Offsets{"orders": {1: {At: 4}}}); err != nil {
		t.Fatal(err)
	}

	// The group consumes part of orders on Kafka, committing.
	seen := map[string]int{} // "partition/offset" -> times read
	consume := func(addr string, n int) {
		t.Helper()
		c := newAddrClient(t, addr, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		got := 0
		for got < n {
			fs := c.PollRecords(ctx, n-got)
			if err := fs.Err(); err != nil {
				t.Fatalf("consuming on %s: %v", addr, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
				got++
			})
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c.Close() // leaves the group
	}
	consume(kafka.Addr, 25)

	gregorCLI(t, false, "link", "create", "mig", "--brokers", g.bootstrap(), "--source", kafka.Addr, "--topics", "orders|prices", "--groups", "bill.*", "--sync-interval", "500ms")
	produce(60, 80) // the source goes on while the link mirrors
	gcl := newClient(t, g)
	var status string
	if err := waitUntil(time.Minute, func() error {
		status = gregorCLI(t, false, "link", "status", "mig", "--brokers", g.bootstrap())
		rows := 0
		for _, line := range strings.Split(status, "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 && f[1] == "MIRRORING" {
				if f[5] != "0" {
					return errors.New("lagging")
				}
				rows++
			}
		}
		if rows != 3 || !strings.Contains(status, "billing") {
			return errors.New("not every partition or group yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the mirror did not catch up (%v); gregor link status:\n%s", err, status)
	}
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"orders", 0}, {"orders", 1}, {"prices", 0}} {
		a, b := readRaw(t, src, tp.topic, tp.p), readRaw(t, gcl, tp.topic, tp.p)
		if len(a.batches) == 0 || !bytes.Equal(a.batches, b.batches) {
			t.Fatalf("%s-%d: the mirror's batches differ from Kafka's (%d and %d bytes)", tp.topic, tp.p, len(a.batches), len(b.batches))
		}
		if a.logStart != b.logStart || a.hw != b.hw || a.ls != b.ls || !slices.Equal(a.aborted, b.aborted) {
			t.Fatalf("%s-%d: Kafka log start %d hw %d lso %d aborted %v; mirror %d %d %d %v", tp.topic, tp.p, a.logStart, a.hw, a.ls, a.aborted, b.logStart, b.hw, b.ls, b.aborted)
		}
	}
	if cfgs, err := newAdmin(t, g).DescribeTopicConfigs(ctx, "prices"); err != nil {
		t.Fatal(err)
	} else if c, _ := cfgs.On("prices", nil); !slices.ContainsFunc(c.Configs, func(c kadm.Config) bool { return c.Key == "max.message.bytes" && c.MaybeValue() == "200000" }) {
		t.Fatalf("prices here does not have Kafka's max.message.bytes=200000")
	}
	if err := gcl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("produce to a mirror topic: %v, want POLICY_VIOLATION", err)
	}

	// The consumers move to Gregor: they resume at the offsets committed
	// on Kafka and read the rest; every record once.
	// orders holds 80 idempotent records (40 a partition), 8 committed
	// transactional ones and 4 aborted; DeleteRecords took 4 records of
	// partition 1: a read_committed group reads 84.
	const committed = 84
	consume(g.bootstrap(), committed-25)
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times", k, n)
		}
	}
	if len(seen) != committed {
		t.Fatalf("read %d records across the switch, want %d", len(seen), committed)
	}

	out := gregorCLI(t, false, "link", "promote", "mig", "--brokers", g.bootstrap())
	if !strings.Contains(out, "Promoted orders.") || !strings.Contains(out, "Promoted prices.") {
		t.Fatalf("promote said:\n%s", out)
	}
	after := newClient(t, g, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("after the cut-over")}
	if err := after.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("produce after promotion: %v", err)
	}
	if want := readRaw(t, src, "orders", 0).hw; rec.Offset != want {
		t.Fatalf("first record here at offset %d, want %d (Kafka's end)", rec.Offset, want)
	}
	out = gregorCLI(t, false, "link", "status", "mig", "--brokers", g.bootstrap())
	if strings.Contains(out, "MIRRORING") || !strings.Contains(out, "PROMOTED") {
		t.Fatalf("status after promotion:\n%s", out)
	}
	gregorCLI(t, false, "link", "delete", "mig", "--brokers", g.bootstrap())
	if out := gregorCLI(t, false, "link", "list", "--brokers", g.bootstrap()); strings.Contains(out, "mig") {
		t.Fatalf("list after delete:\n%s", out)
	}
}

// TestLink_LeaderKilledWhileMirroring: kill -9 of the Gregor broker leading
// a mirror partition while Apache Kafka takes a steady stream of records
// and the link mirrors them into three Gregor nodes (RF 3,
// min.insync.replicas 2). Another broker takes the partition over and
// fetches on from its own log end; once the killed broker is back and the
// stream stops, every partition holds Kafka's batches byte for byte at the
// same offsets: nothing lost, nothing twice.
func TestLink_LeaderKilledWhileMirroring(t *testing.T) {
	ctx := testCtx(t, 4*time.Minute)
	kafka := startKafkaSource(t, ctx)
	src := newAddrClient(t, kafka.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if _, err := kadm.NewClient(src).CreateTopic(ctx, 3, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 3, withSet("default.replication.factor=3", "min.insync.replicas=2"))
	seeds := strings.Join(c.Seeds(), ",")

	// A steady stream into Kafka until stop.
	stop := make(chan struct{})
	streamDone := make(chan error, 1)
	var produced atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				streamDone <- nil
				return
			default:
			}
			if err := src.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: []byte("e-" + strconv.Itoa(i))}).FirstErr(); err != nil {
				streamDone <- err
				return
			}
			produced.Add(1)
		}
	}()
	gregorCLI(t, false, "link", "create", "mig", "--brokers", seeds, "--source", kafka.Addr, "--topics", "events", "--sync-interval", "500ms")
	gadm := kadm.NewClient(c.Client())
	mirrored := func(p int32) int64 {
		ends, err := gadm.ListEndOffsets(ctx, "events")
		if err != nil {
			return -1
		}
		o, ok := ends.Lookup("events", p)
		if !ok || o.Err != nil {
			return -1
		}
		return o.Offset
	}
	if err := waitUntil(time.Minute, func() error {
		if mirrored(0) < 100 {
			return errors.New("events-0 has fewer than 100 records mirrored")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader("events", 0)
	before := mirrored(0)
	c.Node(leader).Kill()
	t.Logf("killed node %d, leader of events-0 with %d records mirrored", leader, before)
	// The partition moves on under another leader.
	if err := waitUntil(time.Minute, func() error {
		if l, err := c.Leader("events", 0); err != nil || l == leader || l < 0 {
			return fmt.Errorf("leader %d (%v)", l, err)
		}
		if mirrored(0) < before+100 {
			return errors.New("no progress under the new leader")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Node(leader).Restart()
	close(stop)
	if err := <-streamDone; err != nil {
		t.Fatalf("producing to Kafka: %v", err)
	}
	kends, err := kadm.NewClient(src).ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if err := waitUntil(time.Minute, func() error {
		for p := range int32(3) {
			k, _ := kends.Lookup("events", p)
			if got := mirrored(p); got != k.Offset {
				return fmt.Errorf("events-%d: %d mirrored of %d", p, got, k.Offset)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gcl := c.Client()
	total := int64(0)
	for p := range int32(3) {
		a, b := readRaw(t, src, "events", p), readRaw(t, gcl, "events", p)
		if len(a.batches) == 0 || !bytes.Equal(a.batches, b.batches) || a.hw != b.hw {
			t.Fatalf("events-%d: the mirror differs from Kafka after the kill (%d and %d bytes, end %d and %d)", p, len(a.batches), len(b.batches), a.hw, b.hw)
		}
		total += a.hw
	}
	if total != produced.Load() {
		t.Fatalf("Kafka holds %d records, %d were produced", total, produced.Load())
	}
	t.Logf("%d records mirrored across the kill, identical", total)
}
