package compat

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLink_SourceBrokerKilledWhileMirroring: kill -9 of the Apache Kafka
// broker leading the most mirrored partitions while a cluster link mirrors
// them into Gregor, then its restart. The source is a three-node Kafka 4.4
// cluster (RF 3, min.insync.replicas 2) taking the Jepsen workload
// (jepsen_test.go): three idempotent acks=all producers of keyed records
// with headers, two transactional producers (one transaction in five
// aborted); the target is a three-node Gregor cluster
// (GREGOR_LINKKILL_NODES=1: one node) read live by a read_uncommitted and
// a read_committed consumer and its high watermarks polled.
//
// While the killed broker still leads its partitions (until Kafka's
// controller fences it), the link's status reports the failing source
// broker; under the new source leaders the mirror moves on, and on again
// after the restart. With GREGOR_LINKKILL_PAUSE=1 (make link-kill), the
// broker leading the most partitions then is SIGSTOPped (its sockets open:
// a fetch out to it hangs) until the mirror moved on under the leaders
// elected in its place, and continued. Once the producers stop, the
// mirror catches up (lag 0, no error) and:
//
//   - the Jepsen checker (jepsenCheck) finds every record the source
//     acknowledged in the mirror exactly once at its acknowledged offset,
//     no gap, no duplicate, nothing nobody wrote, nothing the live
//     consumers read later gone, the mirror's high watermarks never back,
//     every committed transaction entirely visible to read_committed and
//     no aborted one;
//   - every partition of both topics holds the source's batches byte for
//     byte (producer ids, epochs, sequences, timestamps, keys, values,
//     headers), the same log start, high watermark, last stable offset
//     and aborted transactions;
//   - read record by record with read_uncommitted and with
//     read_committed, both clusters give the same records at the same
//     offsets.
func TestLink_SourceBrokerKilledWhileMirroring(t *testing.T) {
	nodes := envInt("GREGOR_LINKKILL_NODES", 3)
	if nodes != 1 && nodes != 3 {
		t.Fatalf("GREGOR_LINKKILL_NODES=%d: 1 or 3", nodes)
	}
	ctx := testCtx(t, 5*time.Minute)
	began := time.Now()
	phase := func(what string) { t.Logf("t+%.1fs: %s", time.Since(began).Seconds(), what) }
	if err := kafkaref.Available(); err != nil {
		t.Fatalf("Apache Kafka is needed as the source: %v", err)
	}
	kc, err := kafkaref.StartCluster(ctx, 3, kafkaref.Options{Dir: t.TempDir(), Heap: "384m",
		// A dead broker is fenced, its partitions given new leaders, after
		// 5s without a heartbeat (9s by default).
		Props: map[string]string{"default.replication.factor": "3", "min.insync.replicas": "2",
			"broker.session.timeout.ms": "5000", "broker.heartbeat.interval.ms": "1000"}})
	if err != nil {
		t.Fatalf("starting a three-node Apache Kafka: %v", err)
	}
	t.Cleanup(func() { kc.Stop() })
	source := strings.Join(kc.Addrs(), ",")

	var opts []clusterOpt
	if nodes == 1 {
		opts = append(opts, withSingleNode())
	} else {
		opts = append(opts, withSet("default.replication.factor=3", "min.insync.replicas=2"))
	}
	phase("Kafka started")
	c := startCluster(t, nodes, opts...)
	phase(fmt.Sprintf("Gregor started (%d nodes)", nodes))
	seeds := strings.Join(c.Seeds(), ",")

	r := &jepsenRun{t: t, c: c, topic: topicName(t, ""), txnTopic: topicName(t, "txn"), writeTo: kc.Addrs(), keyed: true, seed: uint64(time.Now().UnixNano() % 1e9)}
	for i := 0; i < jepsenTxnProducers; i++ {
		r.txnIDs = append(r.txnIDs, fmt.Sprintf("%s-%d", topicName(t, "txnid"), i))
	}
	r.h.Start = time.Now()
	r.h.Attempted = map[string]bool{}
	topics := []string{r.topic, r.txnTopic}

	src := newAddrClient(t, source)
	srcAdm := kadm.NewClient(src)
	for _, topic := range topics {
		if resp, err := srcAdm.CreateTopic(ctx, jepsenPartitions, 3, nil, topic); err != nil {
			t.Fatalf("creating %s on Kafka: %v (%s)", topic, err, resp.ErrMessage)
		}
	}
	gregorCLI(t, false, "link", "create", "mig", "--brokers", seeds, "--source", source,
		"--topics", regexp.QuoteMeta(r.topic)+"|"+regexp.QuoteMeta(r.txnTopic), "--sync-interval", "500ms")

	// The mirror's end offsets, asked of its leaders.
	gadm := kadm.NewClient(c.Client())
	mirrorEnds := func() (map[string]map[int32]int64, error) {
		ends, err := gadm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return nil, err
		}
		out := map[string]map[int32]int64{}
		for _, topic := range topics {
			out[topic] = map[int32]int64{}
			for p := range int32(jepsenPartitions) {
				o, ok := ends.Lookup(topic, p)
				if !ok || o.Err != nil {
					return nil, fmt.Errorf("end of mirror %s-%d: %v", topic, p, o.Err)
				}
				out[topic][p] = o.Offset
			}
		}
		return out, nil
	}
	// grown waits until every mirror partition ends by offsets past from:
	// by of the idempotent topic, a transaction (two records and a
	// marker) of the transactional one.
	grown := func(what string, from map[string]map[int32]int64, by int64) {
		t.Helper()
		need := map[string]int64{r.topic: by, r.txnTopic: min(by, 3)}
		var last map[string]map[int32]int64
		// Two minutes: Kafka took 20 to 50 s to fail a SIGSTOPped broker's
		// partitions over on two busy cores.
		if err := waitUntil(2*time.Minute, func() error {
			ends, err := mirrorEnds()
			if err != nil {
				return err
			}
			last = ends
			for _, topic := range topics {
				for p := range int32(jepsenPartitions) {
					if ends[topic][p] < from[topic][p]+need[topic] {
						return fmt.Errorf("%s-%d mirrored to %d", topic, p, ends[topic][p])
					}
				}
			}
			return nil
		}); err != nil {
			srcEnds, serr := srcAdm.ListEndOffsets(ctx, topics...)
			t.Fatalf("%s: the mirror did not move on (%v): ends %v, from %v; Kafka's ends %v (%v)", what, err, last, from, srcEnds, serr)
		}
	}

	work, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWork(); wg.Wait() }()
	for i := 0; i < jepsenProducers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.produce(work, i) }()
	}
	for i := 0; i < jepsenTxnProducers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.txnProduce(work, i) }()
	}
	// The live consumers read the mirror once the link created it.
	zero := map[string]map[int32]int64{r.topic: {}, r.txnTopic: {}}
	grown("starting", zero, 1)
	wg.Add(2)
	go func() { defer wg.Done(); r.consume(work, r.topic, kgo.ReadUncommitted(), &r.h.Reads) }()
	go func() { defer wg.Done(); r.consume(work, r.txnTopic, kgo.ReadCommitted(), &r.h.Txn.Reads) }()
	for _, nd := range c.Nodes() {
		wg.Add(1)
		go func() { defer wg.Done(); r.monitor(work, nd, jepsenHWEvery) }()
	}
	before, err := mirrorEnds()
	if err != nil {
		t.Fatal(err)
	}
	grown("before the kill", before, 100)

	// The victim: the source broker leading the most mirrored partitions.
	victim, victimLed := sourceLeader(t, ctx, srcAdm, topics, r.topic)
	atKill, err := mirrorEnds()
	if err != nil {
		t.Fatal(err)
	}
	phase("killing")
	killedAt := time.Now()
	if err := kc.Kill(int(victim) - 1); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.h.Kills = append(r.h.Kills, jKill{At: killedAt, Node: victim, Partitions: victimLed, Label: "kill -9 of the source leader"})
	r.mu.Unlock()
	t.Logf("killed Kafka node %d, leader of %v of %s; mirror ends %v", victim, victimLed, r.topic, atKill)

	// While it is down and still the leader on record, the link says so
	// (the Gregor brokers fetching those partitions do; the status asked
	// of any broker gathers theirs).
	want := fmt.Sprintf("source broker %d:", victim)
	var status string
	if err := waitUntil(time.Minute, func() error {
		for _, s := range c.Seeds() {
			status = linkStatus(t, s)
			if strings.Contains(status, "fetching from the source") && strings.Contains(status, want) {
				return nil
			}
		}
		return errors.New("no error")
	}); err != nil {
		t.Fatalf("the link's status did not report the dead source broker %d; last status:\n%s", victim, status)
	}
	t.Logf("%.1fs after the kill, the status says:\n%s", time.Since(killedAt).Seconds(), firstLines(status, 2))
	// Under the source's new leaders the mirror moves on.
	grown("with the source broker down", atKill, 100)
	t.Logf("%.1fs after the kill, every partition has mirrored more (100 records of the idempotent topic, a transaction of the other)", time.Since(killedAt).Seconds())

	if err := kc.Restart(ctx, int(victim)-1); err != nil {
		t.Fatalf("restarting Kafka node %d: %v", victim, err)
	}
	phase(fmt.Sprintf("Kafka node %d restarted", victim))
	atRestart, err := mirrorEnds()
	if err != nil {
		t.Fatal(err)
	}
	grown("after the restart", atRestart, 100)

	// SIGSTOP of the source broker leading the most mirrored partitions
	// now: its sockets stay open, a fetch out to it hangs. Once the
	// source elected other leaders, its partitions move to them.
	// GREGOR_LINKKILL_PAUSE=1 (make link-kill) only: Kafka takes 20 to
	// 50 s to fail over a stopped broker.
	paused := int32(-1)
	if envInt("GREGOR_LINKKILL_PAUSE", 0) == 1 {
		paused = pauseSourceLeader(t, ctx, r, kc, srcAdm, topics, mirrorEnds, grown, phase)
	}
	stopWork()
	wg.Wait()

	// End markers on the source, read from the mirror with read_committed:
	// every transaction is decided before them.
	r.finalTxnRead(ctx)
	srcEnds := map[string]map[int32]int64{}
	if err := waitUntil(time.Minute, func() error {
		ends, err := srcAdm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		if err := ends.Error(); err != nil {
			return err
		}
		for _, topic := range topics {
			srcEnds[topic] = map[int32]int64{}
			for p := range int32(jepsenPartitions) {
				o, _ := ends.Lookup(topic, p)
				srcEnds[topic][p] = o.Offset
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("Kafka's end offsets: %v", err)
	}
	// Caught up: the mirror ends where the source does, every broker's
	// status shows lag 0 and no error.
	if err := waitUntil(time.Minute, func() error {
		ends, err := mirrorEnds()
		if err != nil {
			return err
		}
		for _, topic := range topics {
			if !maps.Equal(ends[topic], srcEnds[topic]) {
				return fmt.Errorf("%s mirrored to %v of %v", topic, ends[topic], srcEnds[topic])
			}
		}
		for _, s := range c.Seeds() {
			status = linkStatus(t, s)
			if strings.Contains(status, "Error:") {
				return fmt.Errorf("%s still reports an error", s)
			}
			rows := 0
			for _, line := range strings.Split(status, "\n") {
				if f := strings.Fields(line); len(f) >= 6 && f[1] == "MIRRORING" {
					if f[5] != "0" {
						return fmt.Errorf("%s: lag %s on %s-%s", s, f[5], f[0], f[2])
					}
					rows++
				}
			}
			if rows != 2*jepsenPartitions {
				return fmt.Errorf("%s: %d partitions in the status", s, rows)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("the mirror did not catch up after the restart: %v; status:\n%s", err, status)
	}

	phase("caught up")
	r.finalRead(ctx)
	r.mu.Lock()
	h := r.h
	produceErrs, txnResets := r.produceErrs, r.txnResets
	r.mu.Unlock()
	if !maps.Equal(h.FinalEnd, srcEnds[r.topic]) {
		t.Fatalf("the mirror's final read ends at %v, Kafka at %v", h.FinalEnd, srcEnds[r.topic])
	}
	res := jepsenCheck(h, jepsenGapThreshold)
	t.Logf("%s(produce errors: %d, transactional clients replaced: %d, mirror HW observations: %d)", res.Summary(), produceErrs, txnResets, len(h.HWs))
	for _, f := range res.Failovers {
		t.Logf("%s-%d: %s", r.topic, f.Partition, mirrorPickup(h, f))
	}
	if !res.OK() {
		t.Fatalf("the mirror broke %d properties of the source's history; see the VIOLATION lines above", len(res.Violations))
	}
	if res.Acked == 0 || res.TxnCommitted == 0 || res.TxnAborted == 0 || res.Read == 0 {
		t.Fatalf("too little happened: %d records acknowledged, %d read live, %d transactions committed and %d aborted", res.Acked, res.Read, res.TxnCommitted, res.TxnAborted)
	}

	// The mirror is the source, byte for byte and record for record.
	gcl := c.Client()
	total := int64(0)
	for _, topic := range topics {
		for p := range int32(jepsenPartitions) {
			a, b := readRaw(t, src, topic, p), readRaw(t, gcl, topic, p)
			if len(a.batches) == 0 || !bytes.Equal(a.batches, b.batches) {
				t.Fatalf("%s-%d: the mirror's batches differ from Kafka's (%d and %d bytes): %s", topic, p, len(a.batches), len(b.batches), batchDiff(a.batches, b.batches))
			}
			// Kafka lists aborted transactions in the order of their
			// ABORT markers, Gregor by first offset; consumers take
			// them as a set (the Java client's PriorityQueue, kgo's
			// aborter), and fetches of different sizes repeat some.
			if a.logStart != b.logStart || a.hw != b.hw || a.ls != b.ls || !slices.Equal(abortedSet(a.aborted), abortedSet(b.aborted)) {
				t.Fatalf("%s-%d: Kafka log start %d hw %d lso %d aborted %v; mirror %d %d %d %v", topic, p, a.logStart, a.hw, a.ls, abortedSet(a.aborted), b.logStart, b.hw, b.ls, abortedSet(b.aborted))
			}
			for _, iso := range []kgo.IsolationLevel{kgo.ReadUncommitted(), kgo.ReadCommitted()} {
				ra, rb := readRecords(t, src, topic, p, iso), readRecords(t, gcl, topic, p, iso)
				if err := sameRecords(ra, rb); err != nil {
					t.Fatalf("%s-%d (isolation %v): %v", topic, p, iso, err)
				}
			}
			total += a.hw
		}
	}
	phase("compared")
	also := ""
	if paused > 0 {
		also = fmt.Sprintf(" and the SIGSTOP of node %d", paused)
	}
	t.Logf("%d offsets mirrored across the kill and restart of Kafka node %d%s, identical", total, victim, also)
}

// pauseSourceLeader SIGSTOPs the source broker leading the most mirrored
// partitions until every mirror partition moved on (under the leaders the
// source elected in its place), then SIGCONTs it; it returns its id.
func pauseSourceLeader(t *testing.T, ctx context.Context, r *jepsenRun, kc *kafkaref.Cluster, srcAdm *kadm.Client, topics []string,
	mirrorEnds func() (map[string]map[int32]int64, error), grown func(string, map[string]map[int32]int64, int64), phase func(string)) int32 {
	t.Helper()
	paused, pausedLed := sourceLeader(t, ctx, srcAdm, topics, r.topic)
	pid := kc.Pids()[paused-1]
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Signal(sigCont) })
	atPause, err := mirrorEnds()
	if err != nil {
		t.Fatal(err)
	}
	phase(fmt.Sprintf("stopping Kafka node %d", paused))
	pausedAt := time.Now()
	if err := proc.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	if err := waitUntil(10*time.Second, func() error {
		if !allThreadsStopped(pid) {
			return errors.New("running")
		}
		return nil
	}); err != nil {
		t.Fatalf("Kafka node %d (pid %d) not stopped 10s after SIGSTOP", paused, pid)
	}
	r.mu.Lock()
	r.h.Kills = append(r.h.Kills, jKill{At: pausedAt, Node: paused, Partitions: pausedLed, Label: "SIGSTOP of the source leader"})
	r.mu.Unlock()
	grown("with a source broker stopped", atPause, 100)
	phase(fmt.Sprintf("every partition mirrored more with Kafka node %d stopped", paused))
	if err := proc.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	atCont, err := mirrorEnds()
	if err != nil {
		t.Fatal(err)
	}
	grown("after SIGCONT", atCont, 100)
	return paused
}

// sourceLeader returns the source broker leading the most partitions of
// topics, and the partitions of topic it leads.
func sourceLeader(t *testing.T, ctx context.Context, adm *kadm.Client, topics []string, topic string) (int32, []int32) {
	t.Helper()
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	led := map[int32][]int32{}
	count := map[int32]int{}
	for _, name := range topics {
		for _, p := range md.Topics[name].Partitions {
			if p.Err != nil || p.Leader < 0 {
				t.Fatalf("source %s-%d: leader %d (%v)", name, p.Partition, p.Leader, p.Err)
			}
			count[p.Leader]++
			if name == topic {
				led[p.Leader] = append(led[p.Leader], p.Partition)
			}
		}
	}
	node := int32(-1)
	for _, n := range slices.Sorted(maps.Keys(count)) {
		if node < 0 || count[n] > count[node] {
			node = n
		}
	}
	return node, led[node]
}

// mirrorPickup says how long after the source's new leader of a partition
// whose leader was killed or stopped took its first write the mirror moved
// on: from the mirror's end observed by then to the first end observed
// past it (polled every jepsenHWEvery).
func mirrorPickup(h jHistory, f jFailover) string {
	if !f.Found {
		return "no failover seen"
	}
	at := f.Kill.At.Add(f.D)
	before := int64(-1)
	for _, o := range h.HWs {
		if o.Partition == f.Partition && !o.Received.After(at) {
			before = max(before, o.HW)
		}
	}
	var seen time.Time
	for _, o := range h.HWs {
		if o.Partition == f.Partition && o.HW > before && o.Received.After(at) && (seen.IsZero() || o.Received.Before(seen)) {
			seen = o.Received
		}
	}
	if seen.IsZero() {
		return fmt.Sprintf("%s: the mirror never moved past %d after the source's failover", f.Kill.Label, before)
	}
	return fmt.Sprintf("%s: the source's new leader (node %d) took its first write %.1fs after; the mirror moved past %d %.2fs later",
		f.Kill.Label, f.NewLeader, f.D.Seconds(), before, seen.Sub(at).Seconds())
}

// linkStatus is `gregor link status mig` asked of one broker, which
// gathers every broker's share (errors prefixed "node N: ").
func linkStatus(t *testing.T, broker string) string {
	t.Helper()
	return gregorCLI(t, false, "link", "status", "mig", "--brokers", broker, "--timeout", "20s")
}

// abortedSet is a partition's aborted transactions ("pid@firstOffset")
// sorted, each once.
func abortedSet(a []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(a)))
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// batchHeader is a record batch's header fields, for a readable diff.
type batchHeader struct {
	baseOffset   int64
	lastDelta    int32
	attributes   int16
	firstTs      int64
	producerID   int64
	epoch        int16
	baseSequence int32
	records      int32
}

func batchHeaders(b []byte) []batchHeader {
	var out []batchHeader
	for len(b) >= 61 {
		size := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if size > len(b) {
			break
		}
		out = append(out, batchHeader{
			baseOffset: int64(binary.BigEndian.Uint64(b)), attributes: int16(binary.BigEndian.Uint16(b[21:])),
			lastDelta: int32(binary.BigEndian.Uint32(b[23:])), firstTs: int64(binary.BigEndian.Uint64(b[27:])),
			producerID: int64(binary.BigEndian.Uint64(b[43:])), epoch: int16(binary.BigEndian.Uint16(b[51:])),
			baseSequence: int32(binary.BigEndian.Uint32(b[53:])), records: int32(binary.BigEndian.Uint32(b[57:])),
		})
		b = b[size:]
	}
	return out
}

// batchDiff names the first batch that differs between two partitions'
// batches.
func batchDiff(a, b []byte) string {
	ha, hb := batchHeaders(a), batchHeaders(b)
	for i := range min(len(ha), len(hb)) {
		if ha[i] != hb[i] {
			return fmt.Sprintf("batch %d: Kafka %+v, mirror %+v", i, ha[i], hb[i])
		}
	}
	if len(ha) != len(hb) {
		return fmt.Sprintf("Kafka has %d batches, the mirror %d", len(ha), len(hb))
	}
	return fmt.Sprintf("the same %d batch headers, different bytes", len(ha))
}

// readRecords reads a partition from its log start to its last stable
// offset with raw Fetches to its leader and decodes the records with the
// given isolation level as a consumer would (aborted records and control
// records dropped with read_committed).
func readRecords(t *testing.T, cl *kgo.Client, topic string, p int32, iso kgo.IsolationLevel) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	md := metadata(t, ctx, cl, topic)
	id, leader := md.Topics[0].TopicID, int32(-1)
	for _, mp := range md.Topics[0].Partitions {
		if mp.Partition == p {
			leader = mp.Leader
		}
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	start, _ := starts.Lookup(topic, p)
	level := int8(0)
	if iso == kgo.ReadCommitted() {
		level = 1
	}
	var out []*kgo.Record
	offset := start.Offset
	for range 1000 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.IsolationLevel = 64<<20, level
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
		got := &resp.Topics[0].Partitions[0]
		if got.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v", topic, p, offset, kerr.ErrorForCode(got.ErrorCode))
		}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, IsolationLevel: iso, Topic: topic, Partition: p}, got, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			t.Fatalf("decoding %s-%d at %d: %v", topic, p, offset, fp.Err)
		}
		out = append(out, fp.Records...)
		// Past the last whole batch, aborted and control ones included.
		next := offset
		for _, h := range batchHeaders(got.RecordBatches) {
			next = h.baseOffset + int64(h.lastDelta) + 1
		}
		if next >= got.LastStableOffset || next == offset {
			return out
		}
		offset = next
	}
	t.Fatalf("%s-%d: no end after 1000 fetches", topic, p)
	return nil
}

// sameRecords compares two clusters' records of a partition: offsets,
// keys, values, headers, timestamps, producer ids and epochs.
func sameRecords(a, b []*kgo.Record) error {
	if len(a) == 0 {
		return errors.New("Kafka returned no records")
	}
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		switch {
		case x.Offset != y.Offset:
			return fmt.Errorf("record %d at offset %d in Kafka, %d in the mirror", i, x.Offset, y.Offset)
		case !bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Value, y.Value):
			return fmt.Errorf("offset %d: Kafka has %q=%q, the mirror %q=%q", x.Offset, x.Key, x.Value, y.Key, y.Value)
		case !slices.EqualFunc(x.Headers, y.Headers, func(h, k kgo.RecordHeader) bool { return h.Key == k.Key && bytes.Equal(h.Value, k.Value) }):
			return fmt.Errorf("offset %d: headers %v in Kafka, %v in the mirror", x.Offset, x.Headers, y.Headers)
		case !x.Timestamp.Equal(y.Timestamp) || x.Attrs != y.Attrs:
			return fmt.Errorf("offset %d: timestamp %v (attrs %v) in Kafka, %v (%v) in the mirror", x.Offset, x.Timestamp, x.Attrs, y.Timestamp, y.Attrs)
		case x.ProducerID != y.ProducerID || x.ProducerEpoch != y.ProducerEpoch:
			return fmt.Errorf("offset %d: producer %d/%d in Kafka, %d/%d in the mirror", x.Offset, x.ProducerID, x.ProducerEpoch, y.ProducerID, y.ProducerEpoch)
		}
	}
	if len(a) != len(b) {
		return fmt.Errorf("%d records in Kafka, %d in the mirror", len(a), len(b))
	}
	return nil
}
