package compat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Idempotent producer semantics with hand-built batches: a retried batch is
// deduplicated to its original offset, a sequence gap is refused.

func initProducerID(t *testing.T, ctx context.Context, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = nil
	req.TransactionTimeoutMillis = 60000
	req.ProducerID = -1
	req.ProducerEpoch = -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch < 0 {
		t.Fatalf("InitProducerId: error %s, producer id %d, epoch %d; want NONE and non-negative id and epoch",
			errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func values(prefix string, from, to int) []rawRecord {
	var rs []rawRecord
	for i := from; i < to; i++ {
		rs = append(rs, rawRecord{key: []byte("k"), value: fmt.Appendf(nil, "%s%d", prefix, i)})
	}
	return rs
}

func endOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32) int64 {
	t.Helper()
	p, _ := rawListOffset(t, ctx, cl, topic, partition, -1)
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets latest %s[%d]: %s", topic, partition, errName(p.ErrorCode))
	}
	return p.Offset
}

func TestIdempotent_RawRetryAndSequenceGap(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	id := createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b)

	pid, epoch := initProducerID(t, ctx, cl)
	pid2, _ := initProducerID(t, ctx, cl)
	if pid2 == pid {
		t.Errorf("two InitProducerId calls returned the same producer id %d", pid)
	}
	ts := time.Now()

	first := buildBatch(pid, epoch, 0, ts, values("r", 0, 3)...)
	for attempt := 1; attempt <= 2; attempt++ {
		p := rawProduce(t, ctx, cl, topic, id, 0, first)
		if p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Errorf("Produce seq 0..2 (attempt %d): error %s, baseOffset %d; want NONE, 0", attempt, errName(p.ErrorCode), p.BaseOffset)
		}
	}
	if end := endOffset(t, ctx, cl, topic, 0); end != 3 {
		t.Errorf("end offset after the same batch twice = %d, want 3 (appended once)", end)
	}

	gap := buildBatch(pid, epoch, 5, ts, values("gap", 0, 2)...)
	if p := rawProduce(t, ctx, cl, topic, id, 0, gap); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("Produce seq 5 after 0..2: error %s (baseOffset %d), want OUT_OF_ORDER_SEQUENCE_NUMBER(45)", errName(p.ErrorCode), p.BaseOffset)
	}
	if end := endOffset(t, ctx, cl, topic, 0); end != 3 {
		t.Errorf("end offset after a refused sequence gap = %d, want 3", end)
	}

	next := buildBatch(pid, epoch, 3, ts, values("r", 3, 5)...)
	if p := rawProduce(t, ctx, cl, topic, id, 0, next); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Errorf("Produce seq 3..4: error %s, baseOffset %d; want NONE, 3", errName(p.ErrorCode), p.BaseOffset)
	}
	// A retry of an older batch still among the last five is a duplicate.
	if p := rawProduce(t, ctx, cl, topic, id, 0, first); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Errorf("Produce seq 0..2 again after 3..4: error %s, baseOffset %d; want NONE, 0", errName(p.ErrorCode), p.BaseOffset)
	}
	// A producer with no state yet may start at any sequence (Kafka's
	// ProducerAppendInfo.checkSequence with NO_PRODUCER_EPOCH).
	fresh := buildBatch(pid2, 0, 7, ts, values("fresh", 0, 1)...)
	if p := rawProduce(t, ctx, cl, topic, id, 0, fresh); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Errorf("Produce first batch of a new producer at seq 7: error %s, baseOffset %d; want NONE, 5", errName(p.ErrorCode), p.BaseOffset)
	}
	if end := endOffset(t, ctx, cl, topic, 0); end != 6 {
		t.Errorf("end offset = %d, want 6", end)
	}

	// The stored batches keep the producer identity and sequences.
	fp := rawFetch(t, ctx, cl, topic, id, 0, 0)
	if fp.ErrorCode != 0 {
		t.Fatalf("Fetch at 0: %s", errName(fp.ErrorCode))
	}
	type ident struct {
		base  int64
		n     int32
		pid   int64
		epoch int16
		seq   int32
	}
	var gotIdents []ident
	for _, rb := range parseBatches(t, fp.RecordBatches) {
		gotIdents = append(gotIdents, ident{rb.FirstOffset, rb.NumRecords, rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence})
	}
	wantIdents := []ident{{0, 3, pid, epoch, 0}, {3, 2, pid, epoch, 3}, {5, 1, pid2, 0, 7}}
	if fmt.Sprint(gotIdents) != fmt.Sprint(wantIdents) {
		t.Errorf("fetched batches (base, count, pid, epoch, seq) = %v, want %v", gotIdents, wantIdents)
	}

	ccl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	got := consumeN(t, ctx, ccl, 6, 200*time.Millisecond)
	wantValues := []string{"r0", "r1", "r2", "r3", "r4", "fresh0"}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != wantValues[i] || r.ProducerID != map[bool]int64{true: pid2, false: pid}[i == 5] {
			t.Errorf("record %d: %s pid %d; want offset %d value %q", i, describe(r), r.ProducerID, i, wantValues[i])
		}
	}
}

// TestIdempotent_StateSurvivesRestart: Kafka rebuilds producer state from
// the log (and its snapshots) on restart, so a retry that straddles a
// restart is still deduplicated and a gap still refused.
func TestIdempotent_StateSurvivesRestart(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	topic := topicName(t, "")
	id := createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b)
	pid, epoch := initProducerID(t, ctx, cl)
	ts := time.Now()
	first := buildBatch(pid, epoch, 0, ts, values("r", 0, 3)...)
	if p := rawProduce(t, ctx, cl, topic, id, 0, first); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("Produce seq 0..2: error %s, baseOffset %d; want NONE, 0", errName(p.ErrorCode), p.BaseOffset)
	}

	for _, restart := range []struct {
		name string
		fn   func(*testing.T)
	}{{"graceful", b.restart}, {"SIGKILL", b.crashRestart}} {
		restart.fn(t)
		cl = newClient(t, b)
		if p := rawProduce(t, ctx, cl, topic, id, 0, first); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Errorf("after %s restart, retry of seq 0..2: error %s, baseOffset %d; want NONE, 0 (deduplicated)", restart.name, errName(p.ErrorCode), p.BaseOffset)
		}
		gap := buildBatch(pid, epoch, 9, ts, values("gap", 0, 1)...)
		if p := rawProduce(t, ctx, cl, topic, id, 0, gap); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
			t.Errorf("after %s restart, seq 9 after 0..2: error %s, want OUT_OF_ORDER_SEQUENCE_NUMBER(45)", restart.name, errName(p.ErrorCode))
		}
		if end := endOffset(t, ctx, cl, topic, 0); end != 3 {
			t.Errorf("after %s restart: end offset %d, want 3", restart.name, end)
		}
	}
	next := buildBatch(pid, epoch, 3, ts, values("r", 3, 4)...)
	if p := rawProduce(t, ctx, cl, topic, id, 0, next); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Errorf("after restarts, seq 3: error %s, baseOffset %d; want NONE, 3", errName(p.ErrorCode), p.BaseOffset)
	}
}

// TestIdempotent_KgoPipelined: kgo's idempotent producer keeps up to five
// Produce requests in flight on one connection. Kafka handles a
// connection's requests strictly in order, so concurrent producers to one
// partition never see OUT_OF_ORDER_SEQUENCE_NUMBER and every record is
// appended exactly once.
func TestIdempotent_KgoPipelined(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b)

	const workers, each = 50, 40
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var produced []*kgo.Record
	var firstErr error
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "w%d", w), Value: fmt.Appendf(nil, "w%d-%d-%s", w, i, strings.Repeat("x", 100))}
				err := cl.ProduceSync(pctx, r).FirstErr()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					produced = append(produced, r)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	if firstErr != nil || len(produced) != workers*each {
		t.Fatalf("%d workers x %d sequential ProduceSync to one partition: %d acknowledged in %v, first error %v; want all %d within 20s",
			workers, each, len(produced), time.Since(start).Round(time.Millisecond), firstErr, workers*each)
	}
	ccl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	got := consumeN(t, ctx, ccl, len(produced), 300*time.Millisecond)
	checkSame(t, produced, got)
	checkContiguous(t, got)
}

// TestIdempotent_PipelinedRaw writes ten Produce requests (sequences 0..9)
// back to back on one TCP connection before reading any response. Kafka
// processes a connection's requests in order, so every one succeeds at
// offset i and the responses come back in request order.
func TestIdempotent_PipelinedRaw(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	id := createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b)
	pid, epoch := initProducerID(t, ctx, cl)
	version := min(maxVersion(t, ctx, cl, 0), 12)

	conn := dialRaw(t, b, topic, 0)
	const n = 10
	var reqs []*kmsg.ProduceRequest
	var wire []byte
	for i := range n {
		req := kmsg.NewPtrProduceRequest()
		req.Version = version
		req.Acks = -1
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = buildBatch(pid, epoch, int32(i), time.Now(), values("p", i, i+1)...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		reqs = append(reqs, req)
		wire = appendRequest(wire, int32(100+i), req)
	}
	if _, err := conn.Write(wire); err != nil {
		t.Fatalf("writing %d pipelined Produce v%d requests: %v", n, version, err)
	}
	for i := range n {
		resp := reqs[i].ResponseKind().(*kmsg.ProduceResponse)
		corr := readResponse(t, conn, resp)
		if corr != int32(100+i) {
			t.Fatalf("response %d has correlation id %d, want %d (responses out of order)", i, corr, 100+i)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("response %d: %+v", i, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Errorf("pipelined Produce v%d #%d (sequence %d): %s baseOffset %d; want NONE %d", version, i, i, errName(p.ErrorCode), p.BaseOffset, i)
		}
	}
}
