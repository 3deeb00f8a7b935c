package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// Request versions, the same for both brokers: the newest each serves with
// topic names (Produce v13 names topics by id).
const (
	produceVersion      = 12
	metadataVersion     = 12
	createTopicsVersion = 7
)

// maxResponse bounds a response read from the wire (Kafka's default
// request bound, socket.request.max.bytes, is 100 MiB too).
const maxResponse = 100 << 20

// conn is one connection to a broker with one request in flight: the
// benchmark's own client for what it times, so that no client library's
// batching, retries or metadata refreshes are part of a measurement.
type conn struct {
	nc   net.Conn
	f    *kmsg.RequestFormatter
	corr int32
	buf  []byte
	// last is the size of the last response read, in bytes.
	last int
}

func dial(ctx context.Context, addr string) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("scale-bench"))}, nil
}

func (c *conn) close() { c.nc.Close() }

// request sends req and reads its response, both within timeout.
func (c *conn) request(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.corr++
	c.buf = c.f.AppendRequest(c.buf[:0], req, c.corr)
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 4 || n > maxResponse {
		return nil, fmt.Errorf("%s response of %d bytes", kmsg.NameForKey(req.Key()), n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, err
	}
	c.last = len(body)
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return nil, fmt.Errorf("%s response: correlation id %d, want %d", kmsg.NameForKey(req.Key()), corr, c.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Flexible responses have a header of tagged fields, but ApiVersions,
	// whose header stays v0 for clients that do not know the version yet.
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, fmt.Errorf("%s response header: %w", kmsg.NameForKey(req.Key()), err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// skipTags skips a tagged-field section (KIP-482) at the start of b.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for ; n > 0; n-- {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// firstAnswer polls ApiVersions on a new connection every 2 ms until addr
// answers.
func firstAnswer(ctx context.Context, addr string) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := kafkaref.APIVersions(rctx, addr)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no ApiVersions answer from %s: %w (last error %v)", addr, ctx.Err(), err)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// oneRecordBatch is a RecordBatch v2 of one uncompressed record with a null
// key, no producer id, stamped ts (Unix ms).
func oneRecordBatch(value []byte, ts int64) []byte {
	rec := kmsg.Record{Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // everything after a one-byte varint 0
	recs := rec.AppendTo(nil)
	// Length counts from PartitionLeaderEpoch: 49 bytes of header after it.
	batch := kmsg.RecordBatch{Length: int32(49 + len(recs)), PartitionLeaderEpoch: -1, Magic: 2,
		FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: recs}
	raw := batch.AppendTo(nil)
	// The CRC (bytes 17-20) covers everything from Attributes (byte 21) on.
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
