package compat

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Raw protocol helpers: requests built with kmsg and sent through
// kgo.Client.Request, so version negotiation is kgo's but every field is ours.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record batch (magic 2) layout, as Kafka documents it:
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
//	magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 |
//	baseTimestamp int64 | maxTimestamp int64 | producerId int64 |
//	producerEpoch int16 | baseSequence int32 | records [count int32 + ...]
//
// batchLength counts the bytes after itself; the CRC-32C covers attributes
// through the end of the batch.
const (
	batchLengthOffset = 8
	batchCRCOffset    = 17
	batchCRCStart     = 21
	batchHeaderLen    = 61
)

// rawRecord is one record for buildBatch.
type rawRecord struct {
	key, value []byte
	headers    []kmsg.Header
}

// buildBatch encodes an uncompressed magic-2 batch at base offset 0 with the
// given producer identity and base sequence (-1/-1/-1 for non-idempotent).
func buildBatch(producerID int64, producerEpoch int16, baseSequence int32, ts time.Time, recs ...rawRecord) []byte {
	var records []byte
	for i, r := range recs {
		rec := kmsg.Record{
			OffsetDelta: int32(i),
			Key:         r.key,
			Value:       r.value,
			Headers:     r.headers,
		}
		body := rec.AppendTo(nil) // Length 0 encodes as one varint byte
		rec.Length = int32(len(body) - 1)
		records = rec.AppendTo(records)
	}
	batch := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts.UnixMilli(),
		MaxTimestamp:         ts.UnixMilli(),
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		FirstSequence:        baseSequence,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	b := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchCRCStart:], castagnoli))
	return b
}

// parseBatches splits a Fetch response's record bytes into batches; a
// truncated trailing batch (allowed by the protocol) is ignored.
func parseBatches(t *testing.T, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) >= 12 {
		n := int(int32(binary.BigEndian.Uint32(b[batchLengthOffset:]))) + 12
		if n < batchHeaderLen || n > len(b) {
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:n]); err != nil {
			t.Fatalf("parsing fetched batch: %v", err)
		}
		if rb.Magic != 2 {
			t.Fatalf("fetched batch magic %d, want 2", rb.Magic)
		}
		if got := crc32.Checksum(b[batchCRCStart:n], castagnoli); got != uint32(rb.CRC) {
			t.Fatalf("fetched batch at base offset %d: CRC %08x, computed %08x", rb.FirstOffset, uint32(rb.CRC), got)
		}
		out = append(out, rb)
		b = b[n:]
	}
	return out
}

// direct sends req to the seed broker (the only broker) as is: no
// splitting by partition leader, no retries. With several seeds (cluster
// mode) req must name one partition (Produce, Fetch, ListOffsets), and it
// goes as is to that partition's leader, again while the answer is
// NOT_LEADER_FOR_PARTITION or LEADER_NOT_AVAILABLE (a leader the metadata
// still names for a moment after a restart or election), as clients do.
func direct[R kmsg.Response](ctx context.Context, cl *kgo.Client, req kmsg.Request) (R, error) {
	var zero R
	seeds := cl.SeedBrokers()
	for {
		to := seeds[0]
		if len(seeds) != 1 {
			var err error
			if to, err = partitionLeader(ctx, cl, req); err != nil {
				return zero, err
			}
		}
		resp, err := to.Request(ctx, req)
		if err != nil {
			return zero, err
		}
		r, ok := resp.(R)
		if !ok {
			return zero, fmt.Errorf("response type %T", resp)
		}
		if len(seeds) == 1 || !leaderMoved(resp) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaderMoved reports whether a one-partition response says the broker
// asked does not lead the partition (yet).
func leaderMoved(resp kmsg.Response) bool {
	var code int16
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			code = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.FetchResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			code = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.ListOffsetsResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			code = r.Topics[0].Partitions[0].ErrorCode
		}
	}
	return code == kerr.NotLeaderForPartition.Code || code == kerr.LeaderNotAvailable.Code
}

// partitionLeader returns the leader of the one partition req names, as
// Metadata reports it, waiting while the partition has no leader.
func partitionLeader(ctx context.Context, cl *kgo.Client, req kmsg.Request) (*kgo.Broker, error) {
	var topics []string
	var partitions []int32
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, rt := range r.Topics {
			topics = append(topics, rt.Topic)
			for _, rp := range rt.Partitions {
				partitions = append(partitions, rp.Partition)
			}
		}
	case *kmsg.FetchRequest:
		for _, rt := range r.Topics {
			topics = append(topics, rt.Topic)
			for _, rp := range rt.Partitions {
				partitions = append(partitions, rp.Partition)
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, rt := range r.Topics {
			topics = append(topics, rt.Topic)
			for _, rp := range rt.Partitions {
				partitions = append(partitions, rp.Partition)
			}
		}
	}
	if len(topics) != 1 || len(partitions) != 1 || topics[0] == "" {
		return nil, fmt.Errorf("direct %T to a cluster: want one partition named by topic, got topics %q partitions %v", req, topics, partitions)
	}
	for {
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topics[0])
		md.Topics = append(md.Topics, mt)
		resp, err := md.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("Metadata for %s: %w", topics[0], err)
		}
		for _, t := range resp.Topics {
			if t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				// No such topic: any broker answers that.
				return cl.SeedBrokers()[0], nil
			}
			if t.ErrorCode != 0 {
				continue
			}
			exists := false
			for _, p := range t.Partitions {
				if p.Partition != partitions[0] {
					continue
				}
				exists = true
				if p.ErrorCode == 0 && p.Leader >= 0 {
					return cl.Broker(int(p.Leader)), nil
				}
			}
			if !exists {
				// No such partition: any broker answers that.
				return cl.SeedBrokers()[0], nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s[%d] has no leader: %w", topics[0], partitions[0], ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rawFetch issues one Fetch for one partition at offset (no session, short
// max wait) and returns that partition's response.
func rawFetch(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, id [16]byte, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 8 << 20
	req.SessionID = 0
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 4 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := direct[*kmsg.FetchResponse](ctx, cl, req)
	if err != nil {
		t.Fatalf("Fetch %s[%d]@%d: %v", topic, partition, offset, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("Fetch %s[%d]@%d: top-level error %v", topic, partition, offset, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch %s[%d]@%d: got %d topics, want exactly 1 topic with 1 partition: %+v", topic, partition, offset, len(resp.Topics), resp.Topics)
	}
	rt0 := resp.Topics[0]
	if req.Version >= 13 {
		if rt0.TopicID != id {
			t.Errorf("Fetch v%d response topic id %x, want %x", req.Version, rt0.TopicID, id)
		}
	} else if rt0.Topic != topic {
		t.Errorf("Fetch v%d response topic %q, want %q", req.Version, rt0.Topic, topic)
	}
	p := rt0.Partitions[0]
	if p.Partition != partition {
		t.Errorf("Fetch response partition %d, want %d", p.Partition, partition)
	}
	return p
}

// rawProduce sends one batch to one partition with acks=all and returns the
// partition response.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, id [16]byte, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.TopicID = id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := direct[*kmsg.ProduceResponse](ctx, cl, req)
	if err != nil {
		t.Fatalf("Produce %s[%d]: %v", topic, partition, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce %s[%d]: want exactly 1 topic with 1 partition, got %+v", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// rawListOffset issues ListOffsets for one partition at a timestamp (-1
// latest, -2 earliest, -3 max timestamp, or a millisecond time).
func rawListOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, timestamp int64) (kmsg.ListOffsetsResponseTopicPartition, int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = timestamp
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := direct[*kmsg.ListOffsetsResponse](ctx, cl, req)
	if err != nil {
		t.Fatalf("ListOffsets %s[%d] ts %d: %v", topic, partition, timestamp, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %s[%d]: want exactly 1 topic with 1 partition, got %+v", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0], req.Version
}

// maxVersion returns the broker's advertised max version for key, or -1.
func maxVersion(t *testing.T, ctx context.Context, cl *kgo.Client, key int16) int16 {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return k.MaxVersion
		}
	}
	return -1
}

// errName renders an error code the way Kafka names it.
func errName(code int16) string {
	if code == 0 {
		return "NONE(0)"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return fmt.Sprintf("%s(%d)", e.Message, code)
	}
	return fmt.Sprintf("UNKNOWN_CODE(%d)", code)
}

// dialRaw opens a plain TCP connection to the leader of topic's partition
// (the broker itself, unless in cluster mode), closed at cleanup, with a
// 20s deadline.
func dialRaw(t *testing.T, b *broker, topic string, partition int32) net.Conn {
	t.Helper()
	addr := b.addr
	if b.cluster != nil {
		leader := b.cluster.WaitLeader(topic, partition)
		addr = b.cluster.Node(leader).Addr()
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// appendRequest appends one size-prefixed request (header v1, or v2 for
// flexible versions) with client id "compat".
func appendRequest(dst []byte, corr int32, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len("compat")))
	dst = append(dst, "compat"...)
	if req.IsFlexible() {
		dst = append(dst, 0) // no header tags
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// readResponse reads one size-prefixed response into resp (whose version
// must be set) and returns its correlation id.
func readResponse(t *testing.T, conn net.Conn, resp kmsg.Response) int32 {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		t.Fatalf("response size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatalf("reading %d-byte response: %v", n, err)
	}
	corr := int32(binary.BigEndian.Uint32(buf))
	body := buf[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("flexible response header tags: %x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}
