package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func gzipCompress(codec int8, b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// logRecord is one record read back from a log.
type logRecord struct {
	offset     int64
	key, value []byte // nil for null
}

// logEntry is one batch read back: its records, or what it is.
type logEntry struct {
	h       BatchHeader
	marker  int16 // control batches: markerAbort or markerCommit; -1 otherwise
	records []logRecord
}

// readEntries reads every batch from the log start to the high watermark,
// checking that offsets increase and that every batch is well formed.
func readEntries(t testing.TB, l *Log) []logEntry {
	t.Helper()
	var out []logEntry
	prev := int64(-1)
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		b := readBytes(t, l, off, math.MaxInt32, true)
		if len(b) == 0 {
			break // a gap at the end of what is readable
		}
		for len(b) >= BatchHeaderSize {
			h := parseHeader(b)
			if int64(len(b)) < h.Size() {
				t.Fatalf("partial batch at %d", h.BaseOffset)
			}
			batch := b[:h.Size()]
			b = b[h.Size():]
			if h.LastOffset() < off {
				continue
			}
			if h.BaseOffset <= prev {
				t.Fatalf("batch at %d after offset %d", h.BaseOffset, prev)
			}
			if crc := crcOf(batch); crc != h.CRC {
				t.Fatalf("batch at %d: bad crc", h.BaseOffset)
			}
			e := logEntry{h: h, marker: -1}
			recs := batch[BatchHeaderSize:]
			if h.Codec() != CodecNone {
				var err error
				if recs, err = gunzip(h.Codec(), recs); err != nil {
					t.Fatalf("batch at %d: %v", h.BaseOffset, err)
				}
			}
			if h.Control() && h.RecordCount > 0 {
				typ, ok := markerType(recs)
				if !ok {
					t.Fatalf("control batch at %d without a marker", h.BaseOffset)
				}
				e.marker = typ
			} else if err := walkRecords(recs, h.RecordCount, func(r rawRecord) {
				lr := logRecord{offset: h.BaseOffset + int64(r.offsetDelta), key: r.key}
				if lr.offset <= prev || lr.offset > h.LastOffset() {
					t.Fatalf("record offset %d in batch %d..%d after %d", lr.offset, h.BaseOffset, h.LastOffset(), prev)
				}
				prev = lr.offset
				if !r.nullValue {
					lr.value = recordValue(r.raw)
				}
				e.records = append(e.records, lr)
			}); err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
			prev = h.LastOffset()
			off = h.LastOffset() + 1
			out = append(out, e)
		}
	}
	return out
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b[batchAttributesPos:], castagnoli) }

// recordValue extracts the value of a raw record.
func recordValue(raw []byte) []byte {
	_, n := binary.Varint(raw) // length
	p := raw[n+1:]
	_, n = binary.Varint(p) // timestampDelta
	p = p[n:]
	_, n = binary.Varint(p) // offsetDelta
	p = p[n:]
	kl, n := binary.Varint(p)
	p = p[n:]
	if kl > 0 {
		p = p[kl:]
	}
	vl, n := binary.Varint(p)
	p = p[n:]
	return p[:vl]
}

// cleanScript runs one case of a clean_*.txt file and returns its output.
//
// Input lines (one command each):
//
//	batch [pid=N] [epoch=E] [txn] [gzip] k=v ...   a batch; k=~ is a tombstone, =v has no key
//	commit pid=N | abort pid=N                      a transaction marker
//	roll                                            start a new active segment
//	clock +MS                                       advance the clock
//	clean [lag=MS] [retention=MS] [map=KEYS]        run Clean (defaults 0, 0, 1000)
//
// Output: one line per record ("offset key=value", "~" for a tombstone,
// keyless as "=value"), per empty batch ("first..last empty pid=N") and per
// marker ("offset COMMIT pid=N").
func cleanScript(t *testing.T, input []string) []string {
	dir := filepath.Join(t.TempDir(), "t-0")
	clk := &clock{ms: 1_000_000}
	cfg := testConfig()
	cfg.Now = clk.now
	cfg.Decompress = gunzip
	l := openLog(t, dir, cfg)
	defer func() { l.Close() }()
	seqs := map[int64]int32{}
	for _, line := range input {
		f := strings.Fields(line)
		arg := func(name string, def int64) int64 {
			for _, a := range f[1:] {
				if v, ok := strings.CutPrefix(a, name+"="); ok {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					return n
				}
			}
			return def
		}
		has := func(name string) bool {
			for _, a := range f[1:] {
				if a == name {
					return true
				}
			}
			return false
		}
		switch f[0] {
		case "batch":
			o := batchOpts{gzip: has("gzip"), txn: has("txn")}
			if id := arg("pid", -1); id >= 0 {
				o.producerID, o.epoch, o.seq = pid(id), int16(arg("epoch", 0)), seqs[id]
			}
			var recs []rec
			for _, a := range f[1:] {
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "pid" || k == "epoch" {
					continue
				}
				r := rec{value: []byte(v), ts: clk.ms}
				if k != "" {
					r.key = []byte(k)
				}
				if v == "~" {
					r.value = nil
				}
				recs = append(recs, r)
			}
			if id := arg("pid", -1); id >= 0 {
				seqs[id] += int32(len(recs))
			}
			mustAppend(t, l, makeBatch(o, recs...))
		case "commit", "abort":
			if _, err := l.AppendMarker(pid(arg("pid", 0)), int16(arg("epoch", 0)), f[0] == "commit", 0, 0); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		case "roll":
			l.mu.Lock()
			_, err := l.rollLocked()
			l.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		case "clock":
			n, _ := strconv.ParseInt(strings.TrimPrefix(f[1], "+"), 10, 64)
			clk.ms += n
		case "clean":
			opts := CleanOptions{Map: NewOffsetMap(arg("map", 1000)*offsetMapSlotBytes*2, 0.5),
				MinCompactionLagMs: arg("lag", 0), DeleteRetentionMs: arg("retention", 0), Compress: gzipCompress}
			if _, err := l.Clean(opts); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		case "reopen":
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, cfg)
		default:
			t.Fatalf("unknown command %q", line)
		}
	}
	var out []string
	for _, e := range readEntries(t, l) {
		switch {
		case e.marker >= 0:
			typ := "ABORT"
			if e.marker == markerCommit {
				typ = "COMMIT"
			}
			out = append(out, fmt.Sprintf("%d %s pid=%d", e.h.BaseOffset, typ, e.h.ProducerID-pid(0)))
		case len(e.records) == 0:
			s := fmt.Sprintf("%d..%d empty", e.h.BaseOffset, e.h.LastOffset())
			if e.h.ProducerID >= 0 {
				s += fmt.Sprintf(" pid=%d", e.h.ProducerID-pid(0))
			}
			out = append(out, s)
		default:
			for _, r := range e.records {
				v := "~"
				if r.value != nil {
					v = string(r.value)
				}
				out = append(out, fmt.Sprintf("%d %s=%s", r.offset, r.key, v))
			}
		}
	}
	return out
}

// TestCleaner_DataDriven runs the cases of testdata/clean_*.txt: each case is
// input commands, a line "----", the expected output, and cases are separated
// by a line "====". Set STORAGE_REWRITE=1 to print the actual outputs.
func TestCleaner_DataDriven(t *testing.T) {
	files, _ := filepath.Glob("testdata/clean_*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata/clean_*.txt")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range strings.Split(string(b), "\n====\n") {
			in, want, ok := strings.Cut(c, "\n----\n")
			if !ok {
				t.Fatalf("%s case %d: no ----", file, i)
			}
			var input []string
			name := fmt.Sprintf("%s#%d", filepath.Base(file), i)
			for _, line := range strings.Split(in, "\n") {
				if line = strings.TrimSpace(line); strings.HasPrefix(line, "# ") && len(input) == 0 && !strings.Contains(name, " ") {
					name += " " + strings.TrimPrefix(line, "# ")
					continue
				}
				if line != "" && !strings.HasPrefix(line, "#") {
					input = append(input, line)
				}
			}
			t.Run(name, func(t *testing.T) {
				got := strings.Join(cleanScript(t, input), "\n")
				want := strings.TrimSpace(want)
				if got != want {
					t.Errorf("input:\n%s\ngot:\n%s\nwant:\n%s", strings.Join(input, "\n"), got, want)
				}
			})
		}
	}
}

// TestCleaner_Cleanable: the dirty ratio counts the cleanable segments
// from the cleaner checkpoint; the active segment is not counted; a clean
// brings it to 0, and max.compaction.lag.ms marks an old dirty segment
// overdue.
func TestCleaner_Cleanable(t *testing.T) {
	clk := &clock{ms: 1_000_000}
	cfg := testConfig()
	cfg.Now = clk.now
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	roll := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, err := l.rollLocked(); err != nil {
			t.Fatal(err)
		}
	}
	if st := l.Cleanable(0, 0); st.DirtyBytes != 0 || st.DirtyRatio != 0 {
		t.Fatalf("empty log: %+v", st)
	}
	for i := 0; i < 4; i++ {
		mustAppend(t, l, makeBatch(batchOpts{}, rec{key: []byte("k"), value: []byte(strconv.Itoa(i)), ts: clk.ms}))
	}
	if st := l.Cleanable(0, 0); st.DirtyBytes != 0 {
		t.Fatalf("only an active segment: %+v", st)
	}
	roll()
	size := l.Size()
	mustAppend(t, l, makeBatch(batchOpts{}, rec{key: []byte("k"), value: []byte("x"), ts: clk.ms}))
	st := l.Cleanable(0, 0)
	if st.DirtyBytes != size || st.CleanBytes != 0 || st.DirtyRatio != 1 || st.FirstUncleanableOffset != 4 || st.Overdue {
		t.Fatalf("one dirty segment: %+v", st)
	}
	if st := l.Cleanable(100, 0); st.DirtyBytes != 0 {
		t.Fatalf("younger than min.compaction.lag.ms: %+v", st)
	}
	clk.ms += 200
	if st := l.Cleanable(0, 100); !st.Overdue {
		t.Fatalf("older than max.compaction.lag.ms: %+v", st)
	}
	if _, err := l.Clean(CleanOptions{Map: NewOffsetMap(1<<12, 0)}); err != nil {
		t.Fatal(err)
	}
	st = l.Cleanable(0, 0)
	if st.DirtyBytes != 0 || st.CleanBytes == 0 || st.DirtyRatio != 0 || st.FirstDirtyOffset != 4 {
		t.Fatalf("after a clean: %+v", st)
	}
}

// WalkBatchRecords reports each record's index, null key and absolute
// timestamp, in plain and compressed batches; nil decompress skips a
// compressed batch.
func TestWalkBatchRecords(t *testing.T) {
	recs := []rec{{key: []byte("k"), value: []byte("a"), ts: 1000}, {value: []byte("b"), ts: 1500}, {key: []byte{}, value: []byte("c"), ts: 900}}
	want := []string{"0 false 1000 k a", "1 true 1500  b", "2 false 900  c"}
	for _, gz := range []bool{false, true} {
		var got []string
		if err := WalkBatchRecords(makeBatch(batchOpts{gzip: gz}, recs...), gunzip, func(r RecordCheck) {
			got = append(got, fmt.Sprintf("%d %v %d %s %s", r.Index, r.NullKey, r.Timestamp, r.Key, r.Value))
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("gzip %v: %v, want %v", gz, got, want)
		}
	}
	n := 0
	if err := WalkBatchRecords(makeBatch(batchOpts{gzip: true}, recs...), nil, func(RecordCheck) { n++ }); err != nil || n != 0 {
		t.Errorf("compressed without decompress: %d records, %v", n, err)
	}
}
