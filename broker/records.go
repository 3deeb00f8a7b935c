package broker

// Decoding of stored record batches into Records for display (ReadRecords).

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one record read for display.
type Record struct {
	Offset    int64
	Timestamp time.Time
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value (tombstone)
	Headers   []RecordHeader
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key   string
	Value []byte
}

// parseBatches decodes the whole batches in buf, returning records at or
// after from (at most limit) and the offset after the last whole batch.
func parseBatches(buf []byte, from int64, limit int) (int64, []Record, error) {
	next := from
	var out []Record
	for len(buf) >= storage.BatchHeaderSize && len(out) < limit {
		h, err := storage.ParseBatchHeader(buf)
		if err != nil {
			return next, out, err
		}
		if h.Size() > int64(len(buf)) {
			break
		}
		raw := buf[:h.Size()]
		buf = buf[h.Size():]
		next = h.LastOffset() + 1
		if h.Control() {
			continue
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return next, out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		recs := rb.Records
		if h.Codec() != storage.CodecNone {
			if recs, err = decompress(h.Codec(), recs); err != nil {
				return next, out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
		}
		for i := int32(0); i < rb.NumRecords && len(recs) > 0 && len(out) < limit; i++ {
			n, w := binary.Varint(recs)
			if w <= 0 || n < 0 || int64(w)+n > int64(len(recs)) {
				return next, out, fmt.Errorf("batch at offset %d: bad record length", h.BaseOffset)
			}
			var kr kmsg.Record
			if err := kr.ReadFrom(recs[:int64(w)+n]); err != nil {
				return next, out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
			recs = recs[int64(w)+n:]
			off := h.BaseOffset + int64(kr.OffsetDelta)
			if off < from {
				continue
			}
			ts := h.BaseTimestamp + kr.TimestampDelta64
			if h.LogAppendTime() {
				ts = h.MaxTimestamp
			}
			r := Record{Offset: off, Timestamp: time.UnixMilli(ts), Key: kr.Key, Value: kr.Value}
			for _, hd := range kr.Headers {
				r.Headers = append(r.Headers, RecordHeader{Key: hd.Key, Value: hd.Value})
			}
			out = append(out, r)
		}
		if len(out) >= limit {
			next = min(next, out[len(out)-1].Offset+1)
		}
	}
	return next, out, nil
}
