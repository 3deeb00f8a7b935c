package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzValidateBatch checks ValidateBatch on arbitrary bytes.
//
// Invariants: it never panics; it returns an error that is one of
// ErrCorruptBatch, ErrInvalidRecord or ErrUnsupportedMagic, or a header; a
// valid batch re-validates identically, still validates (with the same
// header apart from those fields) after Append's rewrites of baseOffset,
// partitionLeaderEpoch and LogAppendTime, and agrees with ParseBatchHeader.
// The input is also validated with its magic, batchLength and CRC fixed up,
// so that the record walker sees arbitrary records: only ErrInvalidRecord may
// be returned then.
func FuzzValidateBatch(f *testing.F) {
	f.Add(simpleBatch(3, 5, 100))
	f.Add(makeBatch(batchOpts{producerID: pid(1), seq: 4}, rec{key: []byte("k"), value: nil, ts: 5, headers: [][2][]byte{{[]byte("a"), []byte("b")}}}))
	f.Add(makeBatch(batchOpts{gzip: true}, rec{value: []byte("x"), ts: 1}))
	f.Add(simpleBatch(1, 0, 0)[:61])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= BatchHeaderSize {
			c := slices.Clone(b)
			c[batchMagicPos] = 2
			binary.BigEndian.PutUint32(c[batchLengthPos:], uint32(len(c)-batchLengthOverhead))
			if _, err := ValidateBatch(recrc(c)); err != nil && !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("fixed-up batch: %v", err)
			}
		}
		h, err := ValidateBatch(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrUnsupportedMagic) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if p, err := ParseBatchHeader(b); err != nil || p != h {
			t.Fatalf("ParseBatchHeader disagrees: %+v %v", p, err)
		}
		if h2, err := ValidateBatch(slices.Clone(b)); err != nil || h2 != h {
			t.Fatalf("re-validation: %+v %v", h2, err)
		}
		c := slices.Clone(b)
		setBatchOffsetAndEpoch(c, 12345, 6)
		h2, err := ValidateBatch(c)
		if err != nil {
			t.Fatalf("after offset rewrite: %v", err)
		}
		h2.BaseOffset, h2.PartitionLeaderEpoch = h.BaseOffset, h.PartitionLeaderEpoch
		if h2 != h {
			t.Fatalf("offset rewrite changed %+v to %+v", h, h2)
		}
		setLogAppendTime(c, 777)
		if h3, err := ValidateBatch(c); err != nil || !h3.LogAppendTime() || h3.MaxTimestamp != 777 {
			t.Fatalf("after LogAppendTime: %+v %v", h3, err)
		}
	})
}

// templateLog builds (once per fuzz target) a cleanly closed log of several
// segments and returns its directory, batches and segment base offsets.
func templateLog(f *testing.F) (string, [][]byte, []int64) {
	dir := filepath.Join(f.TempDir(), "t-0")
	cfg := testConfig()
	cfg.SegmentBytes = 800
	cfg.IndexIntervalBytes = 100
	l, err := Open(dir, cfg)
	if err != nil {
		f.Fatal(err)
	}
	var all [][]byte
	for i := 0; i < 12; i++ {
		b := simpleBatch(1+i%3, 30, int64(i)*10)
		if _, err := l.Append(b, AppendOptions{LogAppendTime: -1}); err != nil {
			f.Fatal(err)
		}
		all = append(all, b)
	}
	bases := segmentBases(l)
	if len(bases) < 2 {
		f.Fatalf("%d segments", len(bases))
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	return dir, all, bases
}

func copyDir(t *testing.T, src string) string {
	dst := filepath.Join(t.TempDir(), "t-0")
	os.MkdirAll(dst, 0o755)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(src, e.Name()))
		os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
	}
	return dst
}

// FuzzIndexLoad replaces a segment's .index and .timeindex with arbitrary
// bytes in a cleanly closed log and opens it.
//
// Invariants: Open and every read never panic and never fail; each index is
// either accepted (only if well-formed and consistent with the batches) or
// rebuilt; every batch reads back byte for byte from every one of its
// offsets; the log end offset is unchanged; checkOffsetIndex and
// checkTimeIndex never panic, and an accepted offset index only points
// inside the segment; MaxTimestamp gives the true largest timestamp (the last
// time-index entry is verified against its batch).
func FuzzIndexLoad(f *testing.F) {
	tmpl, all, bases := templateLog(f)
	for _, base := range []int64{0, last(bases)} {
		idx, _ := os.ReadFile(segFile(tmpl, base, indexSuffix))
		tidx, _ := os.ReadFile(segFile(tmpl, base, timeIndexSuffix))
		f.Add(base == 0, idx, tidx)
		f.Add(base == 0, idx[:len(idx)-8], tidx[:len(tidx)-12])
		f.Add(base == 0, append(idx, idx...), tidx)
	}
	wantMaxTs, wantMaxOff := int64(-1), int64(-1)
	for _, b := range all { // every record of a test batch has its maxTimestamp
		if h, _ := ParseBatchHeader(b); h.MaxTimestamp > wantMaxTs {
			wantMaxTs, wantMaxOff = h.MaxTimestamp, h.BaseOffset
		}
	}
	f.Add(true, []byte{}, []byte{})
	f.Add(false, []byte{0, 0, 0, 1, 0, 0, 0, 200}, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, first bool, idx, tidx []byte) {
		if err := checkOffsetIndex(idx, 1<<20, 1<<20); err == nil {
			for _, rel := range []int64{-1, 0, 1, 100, 1 << 40} {
				if r, pos := offsetLookup(idx, rel); r > rel || pos < 0 || pos >= 1<<20 {
					t.Fatalf("lookup(%d) = %d, %d", rel, r, pos)
				}
			}
		}
		_ = checkTimeIndex(tidx, 1<<20)

		dir := copyDir(t, tmpl)
		base := last(bases)
		if first {
			base = 0
		}
		os.WriteFile(segFile(dir, base, indexSuffix), idx, 0o644)
		os.WriteFile(segFile(dir, base, timeIndexSuffix), tidx, 0o644)
		l, err := Open(dir, testConfig())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Delete()
		if l.LogEndOffset() != 24 { // 12 batches of 1, 2, 3, 1, ... records
			t.Fatalf("leo %d", l.LogEndOffset())
		}
		off := int64(0)
		for _, b := range all {
			h, _ := ParseBatchHeader(b)
			for ; off <= h.LastOffset(); off++ {
				if got := readBytes(t, l, off, int32(len(b)), false); !bytes.Equal(got, b) {
					t.Fatalf("Read(%d) got %d bytes, want %d", off, len(got), len(b))
				}
			}
		}
		if ts, off, ok := l.MaxTimestamp(); ts != wantMaxTs || off != wantMaxOff || !ok {
			t.Fatalf("MaxTimestamp = %d, %d, %v; want %d, %d", ts, off, ok, wantMaxTs, wantMaxOff)
		}
	})
}

// FuzzRecovery appends arbitrary bytes to the active segment of a crashed
// log (optionally cutting its last batch first) and opens it.
//
// Invariants: Open never panics and never fails; the valid prefix (every
// batch before the cut) is kept and re-reads byte for byte; the log end
// offset is at least the valid prefix's; whatever recovery kept beyond it is
// made of valid batches (arbitrary bytes may happen to form one); a second
// crash-and-open keeps exactly the same log.
func FuzzRecovery(f *testing.F) {
	tmpl, all, bases := templateLog(f)
	os.Remove(filepath.Join(tmpl, cleanShutdownName))
	os.Remove(filepath.Join(tmpl, checkpointName))
	next := simpleBatch(2, 3, 500)
	binary.BigEndian.PutUint64(next, 24) // continues the log: recovery keeps it
	f.Add(uint16(0), []byte{})
	f.Add(uint16(0), bytes.Repeat([]byte{0xff}, 100))
	f.Add(uint16(10), next)
	f.Add(uint16(0), next)
	f.Add(uint16(0), next[:70])
	f.Add(uint16(500), []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, cut uint16, garbage []byte) {
		recoveryCase(t, tmpl, all, bases, cut, garbage)
	})
}

func recoveryCase(t *testing.T, tmpl string, all [][]byte, bases []int64, cut uint16, garbage []byte) {
	dir := copyDir(t, tmpl)
	active := segFile(dir, last(bases), logSuffix)
	fi, _ := os.Stat(active)
	last := all[len(all)-1]
	keep := all
	size := fi.Size()
	if cut > 0 {
		size -= min(int64(cut), int64(len(last)))
		keep = all[:len(all)-1]
	}
	os.Truncate(active, size)
	fh, _ := os.OpenFile(active, os.O_WRONLY|os.O_APPEND, 0)
	fh.Write(garbage)
	fh.Close()

	l, err := Open(dir, testConfig())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got := readLog(t, l)
	if len(got) < len(keep) || !slices.EqualFunc(got[:len(keep)], keep, bytes.Equal) {
		t.Fatalf("valid prefix lost: %d batches read, %d kept", len(got), len(keep))
	}
	h, _ := ParseBatchHeader(keep[len(keep)-1])
	if l.LogEndOffset() < h.LastOffset()+1 {
		t.Fatalf("leo %d below %d", l.LogEndOffset(), h.LastOffset()+1)
	}
	leo := l.LogEndOffset()
	again := crashCopy(t, dir)
	l.Delete()
	l2, err := Open(again, testConfig())
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer l2.Delete()
	if l2.LogEndOffset() != leo || !slices.EqualFunc(readLog(t, l2), got, bytes.Equal) {
		t.Fatal("second recovery changed the log")
	}
}

// FuzzProducerSnapshot decodes arbitrary snapshot bytes.
//
// Invariants: never panics; a decoded current-version snapshot re-encodes to
// the same bytes (version 1 and 2 snapshots are upgraded, so only decoded).
func FuzzProducerSnapshot(f *testing.F) {
	m := newProducerStateManager()
	m.update(BatchHeader{ProducerID: 3, ProducerEpoch: 1, BaseSequence: 0, LastOffsetDelta: 4, MaxTimestamp: 9}, nil, 0)
	m.update(BatchHeader{ProducerID: 4, ProducerEpoch: 0, BaseSequence: 0, BaseOffset: 5, Attributes: attrTransactional}, nil, 0)
	f.Add(m.encode())
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeProducerSnapshot(b)
		if err != nil {
			return
		}
		m := producerStateManager{producers: p}
		if binary.BigEndian.Uint16(b) == snapshotVersion && !bytes.Equal(m.encode(), b) {
			t.Fatal("re-encoding differs")
		}
	})
}
