package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rec is a record for makeBatch.
type rec struct {
	key, value []byte
	ts         int64 // absolute timestamp
	headers    [][2][]byte
}

// batchOpts are the header fields of a test batch.
type batchOpts struct {
	producerID int64 // 0 means -1 (not idempotent); use pid() for real ids
	epoch      int16
	seq        int32
	gzip       bool
	control    bool
	txn        bool // transactional attribute
}

func pid(id int64) int64 { return id + 1<<40 }

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return appendVarint(b, -1)
	}
	return append(appendVarint(b, int64(len(v))), v...)
}

// encodeRecords encodes records as in a v2 batch, relative to baseTs.
func encodeRecords(baseTs int64, recs []rec) []byte {
	var out []byte
	for i, r := range recs {
		var body []byte
		body = append(body, 0)
		body = appendVarint(body, r.ts-baseTs)
		body = appendVarint(body, int64(i))
		body = appendBytes(body, r.key)
		body = appendBytes(body, r.value)
		body = appendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendBytes(body, h[0])
			body = appendBytes(body, h[1])
		}
		out = appendVarint(out, int64(len(body)))
		out = append(out, body...)
	}
	return out
}

// makeBatch builds a v2 record batch with a correct CRC.
func makeBatch(o batchOpts, recs ...rec) []byte {
	be := binary.BigEndian
	baseTs, maxTs := recs[0].ts, int64(math.MinInt64)
	for _, r := range recs {
		maxTs = max(maxTs, r.ts)
	}
	records := encodeRecords(baseTs, recs)
	var attrs uint16
	if o.gzip {
		attrs |= uint16(CodecGzip)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(records)
		zw.Close()
		records = buf.Bytes()
	}
	if o.control {
		attrs |= attrControl
	}
	if o.txn {
		attrs |= attrTransactional
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	be.PutUint64(b[0:], uint64(0))
	be.PutUint32(b[8:], uint32(BatchHeaderSize-12+len(records)))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(len(recs)-1))
	be.PutUint64(b[27:], uint64(baseTs))
	be.PutUint64(b[35:], uint64(maxTs))
	producerID, seq := int64(-1), int32(-1)
	epoch := int16(-1)
	if o.producerID != 0 {
		producerID, seq, epoch = o.producerID, o.seq, o.epoch
	}
	be.PutUint64(b[43:], uint64(producerID))
	be.PutUint16(b[51:], uint16(epoch))
	be.PutUint32(b[53:], uint32(seq))
	be.PutUint32(b[57:], uint32(len(recs)))
	b = append(b, records...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// simpleBatch is a batch of n records with valueSize-byte values, all at ts.
func simpleBatch(n, valueSize int, ts int64) []byte {
	recs := make([]rec, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		recs[i] = rec{key: []byte{byte(i)}, value: v, ts: ts}
	}
	return makeBatch(batchOpts{}, recs...)
}

func gunzip(codec int8, b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// clock is a settable test clock.
type clock struct{ ms int64 }

func (c *clock) now() time.Time { return time.UnixMilli(c.ms) }

// quietConfig is the default config with a discarding logger.
func testConfig() Config {
	c := DefaultConfig()
	c.Logger = discardLogger
	if os.Getenv("STORAGE_TEST_LOG") != "" {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return c
}

func openLog(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b, AppendOptions{LogAppendTime: -1})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

// readAll reads offset with a large maxBytes and returns the bytes.
func readBytes(t testing.TB, l *Log, offset int64, maxBytes int32, minOne bool) []byte {
	t.Helper()
	res, err := l.Read(offset, maxBytes, minOne)
	if err != nil {
		t.Fatalf("Read(%d): %v", offset, err)
	}
	defer res.Slice.Release()
	b, err := res.Slice.ReadAll()
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return b
}

// readLog reads every batch from the log start to the high watermark.
func readLog(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		b := readBytes(t, l, off, math.MaxInt32, true)
		if len(b) == 0 {
			t.Fatalf("empty read at %d below hw %d", off, l.HighWatermark())
		}
		for len(b) > 0 {
			h, err := ValidateReplicatedBatch(b[:12+binary.BigEndian.Uint32(b[8:])]) // stored batches may be cleaned
			if err != nil {
				t.Fatalf("read back invalid batch at offset %d: %v", off, err)
			}
			out = append(out, b[:h.Size()])
			b = b[h.Size():]
			off = h.LastOffset() + 1
		}
	}
	return out
}

// crashCopy copies the log directory as it is on disk now, as if the process
// had died: the copy has no clean-shutdown marker.
func crashCopy(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func segFile(dir string, base int64, suffix string) string { return offsetFileName(dir, base, suffix) }
