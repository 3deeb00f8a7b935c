package broker

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// makeBatch encodes an uncompressed RecordBatch v2 with the given values.
func makeBatch(values []string, pid int64, epoch int16, seq int32) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the length varint
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: pid, ProducerEpoch: epoch,
		FirstSequence: seq, NumRecords: int32(len(values)), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

func produceReq(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func producePartition(t *testing.T, cl *kgo.Client, req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func TestProduce_RejectsBadBatches(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"message.max.bytes": "2000"})
	if _, err := b.createTopic("bad", 1, nil); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	good := makeBatch([]string{"a", "b"}, -1, -1, -1)

	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 0xff
	if got := producePartition(t, cl, produceReq("bad", 0, flipped)); got.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("bad CRC: error %d, want CORRUPT_MESSAGE", got.ErrorCode)
	}
	// Claims 50 records but holds 2 (CRC recomputed so only the count lies).
	lying := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(lying[57:], 50)
	binary.BigEndian.PutUint32(lying[23:], 49)
	binary.BigEndian.PutUint32(lying[17:], crc32.Checksum(lying[21:], castagnoli))
	if got := producePartition(t, cl, produceReq("bad", 0, lying)); got.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("record count lie: error %d, want INVALID_RECORD", got.ErrorCode)
	}
	big := makeBatch([]string{strings.Repeat("x", 3000)}, -1, -1, -1)
	if got := producePartition(t, cl, produceReq("bad", 0, big)); got.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("oversized: error %d, want MESSAGE_TOO_LARGE", got.ErrorCode)
	}
	two := append(append([]byte(nil), good...), good...)
	if got := producePartition(t, cl, produceReq("bad", 0, two)); got.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("two batches: error %d, want INVALID_RECORD", got.ErrorCode)
	}
	if got := producePartition(t, cl, produceReq("bad", 0, good[:30])); got.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("truncated: error %d, want CORRUPT_MESSAGE", got.ErrorCode)
	}
	if got := producePartition(t, cl, produceReq("bad", 7, good)); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: error %d", got.ErrorCode)
	}
	// kgo rewrites acks from its own config, so this one goes raw.
	acks := produceReq("bad", 0, good)
	acks.Acks = 2
	raw := dialRaw(t, addr)
	raw.send(1, acks)
	aresp := kmsg.NewPtrProduceResponse()
	aresp.Version = acks.Version
	raw.recv(1, aresp)
	if got := aresp.Topics[0].Partitions[0]; got.ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: error %d", got.ErrorCode)
	}
	// Nothing above was appended; the good batch still goes in at 0.
	if got := producePartition(t, cl, produceReq("bad", 0, good)); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("good batch: %+v", got)
	}
}

func TestProduce_IdempotentRetryAndSequenceErrors(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	if _, err := b.createTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	iresp, err := init.RequestWith(testCtx(t), cl)
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("init: %v %+v", err, iresp)
	}
	pid, epoch := iresp.ProducerID, iresp.ProducerEpoch
	first := producePartition(t, cl, produceReq("idem", 0, makeBatch([]string{"a", "b", "c"}, pid, epoch, 0)))
	retry := producePartition(t, cl, produceReq("idem", 0, makeBatch([]string{"a", "b", "c"}, pid, epoch, 0)))
	if first.ErrorCode != 0 || retry.ErrorCode != 0 || first.BaseOffset != 0 || retry.BaseOffset != 0 {
		t.Fatalf("first %+v retry %+v", first, retry)
	}
	if hw := b.lookupTopic("idem").partitions[0].log.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d after a retried batch, want 3", hw)
	}
	gap := producePartition(t, cl, produceReq("idem", 0, makeBatch([]string{"d"}, pid, epoch, 5)))
	if gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", gap.ErrorCode)
	}
	next := producePartition(t, cl, produceReq("idem", 0, makeBatch([]string{"d"}, pid, epoch, 3)))
	if next.ErrorCode != 0 || next.BaseOffset != 3 {
		t.Fatalf("next: %+v", next)
	}
	bumped := producePartition(t, cl, produceReq("idem", 0, makeBatch([]string{"e"}, pid, epoch+1, 0)))
	if bumped.ErrorCode != 0 || bumped.BaseOffset != 4 {
		t.Fatalf("bumped epoch: %+v", bumped)
	}
	fenced := producePartition(t, cl, produceReq("idem", 0, makeBatch([]string{"f"}, pid, epoch, 4)))
	if fenced.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: error %d, want INVALID_PRODUCER_EPOCH", fenced.ErrorCode)
	}
	// Like Kafka (measured by make conformance), these errors carry the
	// partition's log start offset; a request-level one (unknown
	// partition) leaves it -1.
	if gap.LogStartOffset != 0 || fenced.LogStartOffset != 0 {
		t.Fatalf("log start offset: gap %d, fenced %d; want 0", gap.LogStartOffset, fenced.LogStartOffset)
	}
	if got := producePartition(t, cl, produceReq("idem", 3, makeBatch([]string{"g"}, -1, -1, -1))); got.ErrorCode != kerr.UnknownTopicOrPartition.Code || got.LogStartOffset != -1 {
		t.Fatalf("unknown partition: %+v, want UNKNOWN_TOPIC_OR_PARTITION and log start -1", got)
	}
}

func TestProduce_RecordErrorsCarryLogStartOffset(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	if _, err := b.createTopic("compacted", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.createTopic("old", 1, map[string]string{"message.timestamp.before.max.ms": "60000"}); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	// A keyless record on a compacted topic: INVALID_RECORD, log start 0.
	if got := producePartition(t, cl, produceReq("compacted", 0, makeBatch([]string{"v"}, -1, -1, -1))); got.ErrorCode != kerr.InvalidRecord.Code || got.LogStartOffset != 0 {
		t.Fatalf("keyless on compacted: %+v, want INVALID_RECORD and log start 0", got)
	}
	old := makeBatch([]string{"v"}, -1, -1, -1)
	binary.BigEndian.PutUint64(old[27:], uint64(time.Now().Add(-time.Hour).UnixMilli())) // baseTimestamp
	binary.BigEndian.PutUint64(old[35:], uint64(time.Now().Add(-time.Hour).UnixMilli())) // maxTimestamp
	binary.BigEndian.PutUint32(old[17:], crc32.Checksum(old[21:], castagnoli))
	if got := producePartition(t, cl, produceReq("old", 0, old)); got.ErrorCode != kerr.InvalidTimestamp.Code || got.LogStartOffset != 0 {
		t.Fatalf("too old: %+v, want INVALID_TIMESTAMP and log start 0", got)
	}
}

func TestCreateTopics_Validation(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	create := func(name string, parts int32, rf int16, configs map[string]string) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	for _, c := range []struct {
		name    string
		parts   int32
		rf      int16
		configs map[string]string
		want    *kerr.Error
	}{
		{"..", 1, 1, nil, kerr.InvalidTopicException},
		{"a/b", 1, 1, nil, kerr.InvalidTopicException},
		{strings.Repeat("x", 250), 1, 1, nil, kerr.InvalidTopicException},
		{"ok", 0, 1, nil, kerr.InvalidPartitions},
		{"ok", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"ok", 1, 1, map[string]string{"retention.ms": "soon"}, kerr.InvalidConfig},
		{"ok", 1, 1, map[string]string{"no.such.config": "1"}, kerr.InvalidConfig},
		{"ok.dot", 2, 1, map[string]string{"retention.ms": "1000"}, nil},
		{"ok.dot", 2, 1, nil, kerr.TopicAlreadyExists},
		{"ok_dot", 2, 1, nil, kerr.InvalidTopicException},
		{strings.Repeat("y", 249), 1, 1, nil, nil},
	} {
		got := create(c.name, c.parts, c.rf, c.configs)
		var want int16
		if c.want != nil {
			want = c.want.Code
		}
		if got.ErrorCode != want {
			t.Errorf("create %q: error %v, want %v", c.name, kerr.ErrorForCode(got.ErrorCode), c.want)
		}
	}
	// The longest name can be deleted and created again.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(strings.Repeat("y", 249))}}
	if resp, err := del.RequestWith(testCtx(t), cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete long topic: %v %+v", err, resp)
	}
	if got := create(strings.Repeat("y", 249), 1, 1, nil); got.ErrorCode != 0 {
		t.Fatalf("re-create long topic: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

func storageOpts() storage.AppendOptions {
	return storage.AppendOptions{LogAppendTime: -1}
}

// TestProduce_TopicConfigChangesApplyLive: the produce path's parsed topic
// settings follow IncrementalAlterConfigs at once.
func TestProduce_TopicConfigChangesApplyLive(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	tp, err := b.createTopic("live", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	batch := func() []byte { return makeBatch([]string{strings.Repeat("x", 500)}, -1, -1, -1) }
	if got := producePartition(t, cl, produceReq("live", 0, batch())); got.ErrorCode != 0 || got.LogAppendTime != -1 {
		t.Fatalf("before: %+v", got)
	}
	if err := b.setTopicConfigs(tp, map[string]string{"max.message.bytes": "300"}); err != nil {
		t.Fatal(err)
	}
	if got := producePartition(t, cl, produceReq("live", 0, batch())); got.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("after max.message.bytes=300: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if err := b.setTopicConfigs(tp, map[string]string{"message.timestamp.type": "LogAppendTime"}); err != nil {
		t.Fatal(err)
	}
	if got := producePartition(t, cl, produceReq("live", 0, batch())); got.ErrorCode != 0 || got.LogAppendTime <= 0 {
		t.Fatalf("after LogAppendTime: %+v", got)
	}
}

// TestProduce_TransactionalBatchWithoutTransactionalID: as in Kafka, a
// request holding a transactional batch but no transactional id fails every
// partition with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (offsets -1) and
// appends nothing, not even the plain batch beside it.
func TestProduce_TransactionalBatchWithoutTransactionalID(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	for _, name := range []string{"txn-a", "txn-b"} {
		if _, err := b.createTopic(name, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, addr)
	txnBatch := makeBatch([]string{"v"}, 7, 0, 0)
	binary.BigEndian.PutUint16(txnBatch[21:], 0x10) // attributes: transactional
	binary.BigEndian.PutUint32(txnBatch[17:], crc32.Checksum(txnBatch[21:], castagnoli))
	req := produceReq("txn-a", 0, txnBatch)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "txn-b"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = makeBatch([]string{"plain"}, -1, -1, -1)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range resp.Topics {
		sp := st.Partitions[0]
		if sp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || sp.BaseOffset != -1 || sp.LogStartOffset != -1 {
			t.Errorf("%s: %v base %d log start %d", st.Topic, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, sp.LogStartOffset)
		}
	}
	for _, name := range []string{"txn-a", "txn-b"} {
		if leo := b.lookupTopic(name).partitions[0].log.LogEndOffset(); leo != 0 {
			t.Errorf("%s: log end %d, want 0", name, leo)
		}
	}
}

// tsBatch encodes an uncompressed batch whose record i has key keys[i]
// (nil: null) and timestamp first+deltas[i].
func tsBatch(first int64, deltas []int64, keys [][]byte) []byte {
	var recs []byte
	maxTs := first
	for i, d := range deltas {
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: d, Key: keys[i], Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
		maxTs = max(maxTs, first+d)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(deltas) - 1),
		FirstTimestamp: first, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(len(deltas)), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// TestProduce_RecordErrorsListOffendingRecords: as Kafka's LogValidator,
// keyless records on a compacted topic and records with out-of-range
// CreateTime timestamps are listed by their index in the batch; a timestamp
// error makes the partition's error INVALID_TIMESTAMP.
func TestProduce_RecordErrorsListOffendingRecords(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	for name, cfg := range map[string]map[string]string{
		"compacted": {"cleanup.policy": "compact", "message.timestamp.before.max.ms": "60000"},
		"old":       {"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "60000"},
		"stamped":   {"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "60000"},
	} {
		if _, err := b.createTopic(name, 1, cfg); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, addr)
	now := time.Now().UnixMilli()
	hour := time.Hour.Milliseconds()
	k := []byte("k")
	for _, c := range []struct {
		what    string
		topic   string
		batch   []byte
		code    int16
		offsets []int32
	}{
		{"keyless records", "compacted", tsBatch(now, []int64{0, 0, 0, 0}, [][]byte{k, nil, k, nil}), kerr.InvalidRecord.Code, []int32{1, 3}},
		{"keyless and old", "compacted", tsBatch(now-hour, []int64{0, hour, hour}, [][]byte{k, nil, k}), kerr.InvalidTimestamp.Code, []int32{0, 1}},
		{"old first record", "old", tsBatch(now-hour, []int64{0, hour, hour}, [][]byte{k, k, k}), kerr.InvalidTimestamp.Code, []int32{0}},
		{"future last records", "old", tsBatch(now, []int64{0, hour, 2 * hour}, [][]byte{k, k, k}), kerr.InvalidTimestamp.Code, []int32{1, 2}},
		{"in range", "old", tsBatch(now, []int64{0, 1000}, [][]byte{nil, nil}), 0, nil},
		{"LogAppendTime ignores timestamps", "stamped", tsBatch(now-hour, []int64{0}, [][]byte{nil}), 0, nil},
	} {
		got := producePartition(t, cl, produceReq(c.topic, 0, c.batch))
		var offsets []int32
		for _, e := range got.ErrorRecords {
			offsets = append(offsets, e.RelativeOffset)
			if e.ErrorMessage == nil || *e.ErrorMessage == "" {
				t.Errorf("%s: record %d without a message", c.what, e.RelativeOffset)
			}
		}
		if got.ErrorCode != c.code || !slices.Equal(offsets, c.offsets) {
			t.Errorf("%s: %v records %v, want %v records %v", c.what, kerr.ErrorForCode(got.ErrorCode), offsets, kerr.ErrorForCode(c.code), c.offsets)
		}
		if c.code != 0 && (got.LogStartOffset != 0 || got.BaseOffset != -1) {
			t.Errorf("%s: log start %d base %d, want 0 and -1", c.what, got.LogStartOffset, got.BaseOffset)
		}
	}
}
