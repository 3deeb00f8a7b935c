package compat

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go (kgo) produce and consume paths with the client's defaults: the
// idempotent producer, acks=all, snappy batches, key-hash partitioning.

var testKeys = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}

func TestFranzGo_ProduceConsumeKeysHeaders(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	createTopic(t, ctx, adm, topic, 3, nil)

	produced := keyedRecords(topic, testKeys, 300)
	produceAll(t, ctx, newClient(t, b), produced)

	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	got := consumeN(t, ctx, cl, len(produced), 300*time.Millisecond)
	checkSame(t, produced, got)
	counts := checkContiguous(t, got)
	checkPerKeyOrder(t, got)
	if len(counts) < 2 {
		t.Errorf("%d keys landed on %d partition(s) of 3: %v", len(testKeys), len(counts), counts)
	}

	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		lo, ok := ends.Lookup(topic, p)
		if !ok || lo.Err != nil || lo.Offset != counts[p] {
			t.Errorf("ListEndOffsets %s[%d] = %+v, want offset %d", topic, p, lo, counts[p])
		}
	}
}

// TestFranzGo_NullAndEmpty checks that null and empty keys, values and
// header values survive distinctly (a broker that re-encodes records can
// collapse them).
func TestFranzGo_NullAndEmpty(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)

	produced := []*kgo.Record{
		{Topic: topic, Key: nil, Value: []byte("null key")},
		{Topic: topic, Key: []byte{}, Value: []byte("empty key")},
		{Topic: topic, Key: []byte("tombstone"), Value: nil},
		{Topic: topic, Key: []byte("empty value"), Value: []byte{}},
		{Topic: topic, Key: []byte("headers"), Value: []byte("v"), Headers: []kgo.RecordHeader{
			{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}, {Key: "", Value: []byte("empty name")},
		}},
		{Topic: topic, Key: []byte("big"), Value: bytes.Repeat([]byte("0123456789abcdef"), 32<<10)}, // 512 KiB
	}
	produceAll(t, ctx, newClient(t, b, kgo.ProducerBatchCompression(kgo.NoCompression())), produced)
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	got := consumeN(t, ctx, cl, len(produced), 0)
	checkSame(t, produced, got)
	checkContiguous(t, got)
}

// TestFranzGo_MessageTooLarge: a batch over max.message.bytes (Kafka's
// default 1048588) is refused with MESSAGE_TOO_LARGE and nothing is
// appended.
func TestFranzGo_MessageTooLarge(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b,
		kgo.ProducerBatchMaxBytes(4<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0),
	)
	big := &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte("x"), 1100000)}
	err := cl.ProduceSync(ctx, big).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("producing a 1100000-byte record: %v, want MESSAGE_TOO_LARGE", err)
	}
	ends, lerr := newAdmin(t, b).ListEndOffsets(ctx, topic)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if lo, _ := ends.Lookup(topic, 0); lo.Offset != 0 {
		t.Errorf("end offset after a refused batch = %d, want 0", lo.Offset)
	}
}

func TestFranzGo_Compression(t *testing.T) {
	b := newBroker(t)
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16 // the batch attributes' codec bits Kafka stores (compression.type=producer)
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 30*time.Second)
			adm := newAdmin(t, b)
			topic := topicName(t, "")
			id := createTopic(t, ctx, adm, topic, 1, nil)

			var produced []*kgo.Record
			for i := range 200 {
				produced = append(produced, &kgo.Record{
					Topic:   topic,
					Key:     fmt.Appendf(nil, "k%d", i%7),
					Value:   []byte(strings.Repeat(fmt.Sprintf("%s record %d ", tc.name, i), 20)),
					Headers: []kgo.RecordHeader{{Key: "codec", Value: []byte(tc.name)}},
				})
			}
			pcl := newClient(t, b,
				kgo.ProducerBatchCompression(tc.codec),
				kgo.ProducerLinger(50*time.Millisecond),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
			)
			produceAll(t, ctx, pcl, produced)

			cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
			got := consumeN(t, ctx, cl, len(produced), 0)
			checkSame(t, produced, got)
			checkContiguous(t, got)

			// The broker keeps the producer's codec: Kafka's default
			// compression.type is "producer".
			p := rawFetch(t, ctx, pcl, topic, id, 0, 0)
			if p.ErrorCode != 0 {
				t.Fatalf("raw Fetch at 0: %s", errName(p.ErrorCode))
			}
			batches := parseBatches(t, p.RecordBatches)
			if len(batches) == 0 {
				t.Fatalf("raw Fetch at 0 returned no batches (HWM %d)", p.HighWatermark)
			}
			for _, rb := range batches {
				if codec := rb.Attributes & 7; codec != tc.attr {
					t.Errorf("batch at base offset %d has codec %d, want %d (%s)", rb.FirstOffset, codec, tc.attr, tc.name)
				}
			}
		})
	}
}

// TestFranzGo_FetchMidBatch produces one batch of 10 records and fetches at
// offset 5: Kafka returns the whole batch from base offset 0 and the client
// drops records 0..4.
func TestFranzGo_FetchMidBatch(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	id := createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)

	var produced []*kgo.Record
	for i := range 10 {
		produced = append(produced, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)})
	}
	pcl := newClient(t, b, kgo.ProducerLinger(200*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, ctx, pcl, produced)
	for i, r := range produced {
		if r.Offset != int64(i) {
			t.Fatalf("record %d produced at offset %d", i, r.Offset)
		}
	}

	p := rawFetch(t, ctx, pcl, topic, id, 0, 5)
	if p.ErrorCode != 0 {
		t.Fatalf("Fetch at offset 5: %s, want NONE", errName(p.ErrorCode))
	}
	if p.HighWatermark != 10 {
		t.Errorf("Fetch at offset 5: high watermark %d, want 10", p.HighWatermark)
	}
	batches := parseBatches(t, p.RecordBatches)
	if len(batches) != 1 {
		t.Fatalf("Fetch at offset 5: %d batches, want the 1 batch containing offset 5", len(batches))
	}
	if rb := batches[0]; rb.FirstOffset != 0 || rb.NumRecords != 10 || rb.LastOffsetDelta != 9 {
		t.Errorf("Fetch at offset 5: batch baseOffset=%d records=%d lastOffsetDelta=%d, want 0, 10, 9",
			rb.FirstOffset, rb.NumRecords, rb.LastOffsetDelta)
	}

	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(5)},
	}), kgo.FetchMaxWait(200*time.Millisecond))
	got := consumeN(t, ctx, cl, 5, 300*time.Millisecond)
	checkSame(t, produced[5:], got)
}

// TestFranzGo_FetchPastEnd: fetching at the log end offset is an empty
// success; past it is OFFSET_OUT_OF_RANGE.
func TestFranzGo_FetchPastEnd(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	id := createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, ctx, cl, []*kgo.Record{{Topic: topic, Value: []byte("a")}, {Topic: topic, Value: []byte("b")}, {Topic: topic, Value: []byte("c")}})

	p := rawFetch(t, ctx, cl, topic, id, 0, 3)
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
		t.Errorf("Fetch at the end (3): error %s, %d bytes, HWM %d; want NONE, 0 bytes, HWM 3",
			errName(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
	}
	// Kafka writes an empty partition's records as empty bytes, never
	// null; librdkafka rejects null ("invalid MessageSetSize -1") and
	// then never sees end-of-partition.
	if p.RecordBatches == nil {
		t.Errorf("Fetch at the end (3): records field is null (length -1), want empty (length 0) as Kafka sends")
	}
	for _, off := range []int64{4, 1000, -5} {
		p = rawFetch(t, ctx, cl, topic, id, 0, off)
		if p.ErrorCode != kerr.OffsetOutOfRange.Code {
			t.Errorf("Fetch at %d with HWM 3: error %s, want OFFSET_OUT_OF_RANGE(1)", off, errName(p.ErrorCode))
		}
		if len(p.RecordBatches) != 0 {
			t.Errorf("Fetch at %d with HWM 3: %d bytes of records with the error, want none", off, len(p.RecordBatches))
		}
	}

	p = rawFetch(t, ctx, cl, topic, id, 7, 0)
	if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Fetch partition 7 of a 1-partition topic: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", errName(p.ErrorCode))
	}
}

// TestFranzGo_Restart reads everything back identically after a graceful
// restart and after SIGKILL, then keeps producing at the right offsets.
func TestFranzGo_Restart(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 90*time.Second)
	topic := topicName(t, "")
	id := createTopic(t, ctx, newAdmin(t, b), topic, 3, nil)

	produced := keyedRecords(topic, testKeys[:4], 100)
	produceAll(t, ctx, newClient(t, b), produced)

	readBack := func(stage string) {
		t.Helper()
		cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
		if got := topicID(t, ctx, cl, topic); got != id {
			t.Errorf("%s: topic id %x, want %x (unchanged)", stage, got, id)
		}
		got := consumeN(t, ctx, cl, len(produced), 300*time.Millisecond)
		checkSame(t, produced, got)
		checkContiguous(t, got)
		checkPerKeyOrder(t, got)
		cl.Close()
	}
	readBack("before restart")

	b.restart(t)
	readBack("after graceful restart")

	more := keyedRecords(topic, testKeys[4:], 50)
	produceAll(t, ctx, newClient(t, b), more)
	produced = append(produced, more...)

	b.crashRestart(t)
	readBack("after SIGKILL restart")

	// Produce after the crash continues each partition's offsets.
	ends, err := newAdmin(t, b).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	last := keyedRecords(topic, []string{"golf"}, 10)
	produceAll(t, ctx, newClient(t, b), last)
	for _, r := range last {
		end, _ := ends.Lookup(topic, r.Partition)
		if r.Offset < end.Offset {
			t.Errorf("record produced after restart at %s[%d]@%d, below the end offset %d", topic, r.Partition, r.Offset, end.Offset)
		}
	}
	produced = append(produced, last...)
	readBack("after producing post-crash")
}
