package storage

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSegment_IndexFilesFollowKafkaRule(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.IndexIntervalBytes = 150
	l := openLog(t, dir, cfg)
	// Batches of 1 record, 100 bytes each: an entry is due once more than
	// 150 bytes were written since the last one, i.e. for every other batch.
	timestamps := []int64{50, 40, 60, 70, 65, 80, 90}
	var size int64
	for _, ts := range timestamps {
		b := makeBatch(batchOpts{}, rec{value: make([]byte, 100-61-7), ts: ts})
		if size == 0 {
			size = int64(len(b))
		} else if int64(len(b)) != size {
			t.Fatalf("batch sizes differ")
		}
		mustAppend(t, l, b)
	}
	if size != 100 {
		t.Fatalf("batch size %d", size)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Before batch 2 bytesSince is 200 > 150: entry (2, 200); then batch 4
	// (400) and batch 6 (600).
	var wantIdx []byte
	for _, e := range [][2]uint32{{2, 200}, {4, 400}, {6, 600}} {
		wantIdx = binary.BigEndian.AppendUint32(wantIdx, e[0])
		wantIdx = binary.BigEndian.AppendUint32(wantIdx, e[1])
	}
	// With each offset entry, the largest timestamp so far if it grew, with
	// the offset where it was reached: (60, 2), (70, 3), (90, 6); Close adds
	// nothing more (90 is already the last entry).
	var wantTime []byte
	for _, e := range []struct {
		ts  int64
		rel uint32
	}{{60, 2}, {70, 3}, {90, 6}} {
		wantTime = binary.BigEndian.AppendUint64(wantTime, uint64(e.ts))
		wantTime = binary.BigEndian.AppendUint32(wantTime, e.rel)
	}
	if got, _ := os.ReadFile(segFile(dir, 0, indexSuffix)); string(got) != string(wantIdx) {
		t.Errorf(".index = %x, want %x", got, wantIdx)
	}
	if got, _ := os.ReadFile(segFile(dir, 0, timeIndexSuffix)); string(got) != string(wantTime) {
		t.Errorf(".timeindex = %x, want %x", got, wantTime)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, checkpointName)); string(got) != "v1 logStartOffset=0 recoveryPoint=7\n" {
		t.Errorf("checkpoint = %q", got)
	}
}

func TestOffsetIndex_Lookup(t *testing.T) {
	var x offsetIndex
	for _, e := range [][2]int64{{2, 200}, {4, 400}, {6, 600}} {
		x.add(e[0], e[1])
	}
	for _, tt := range []struct{ rel, wantRel, wantPos int64 }{
		{-5, -1, 0}, {0, -1, 0}, {1, -1, 0}, {2, 2, 200}, {3, 2, 200}, {4, 4, 400}, {100, 6, 600},
	} {
		if rel, pos := x.lookup(tt.rel); rel != tt.wantRel || pos != tt.wantPos {
			t.Errorf("lookup(%d) = %d, %d; want %d, %d", tt.rel, rel, pos, tt.wantRel, tt.wantPos)
		}
	}
}

func TestCheckOffsetIndex(t *testing.T) {
	entry := func(rel, pos uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, rel), pos)
	}
	cat := func(bs ...[]byte) (out []byte) {
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"empty", nil, true},
		{"good", cat(entry(1, 100), entry(3, 300)), true},
		{"partial entry", cat(entry(1, 100), []byte{1}), false},
		{"offsets not increasing", cat(entry(3, 100), entry(3, 300)), false},
		{"positions not increasing", cat(entry(1, 300), entry(3, 300)), false},
		{"past the segment", cat(entry(1, 100), entry(3, 990)), false},
		{"offset past the segment", cat(entry(50, 100)), false},
	} {
		if err := checkOffsetIndex(tt.data, 10, 1000); (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestLog_WriteErrorIsSticky(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Delete()
	mustAppend(t, l, simpleBatch(1, 1, 1))
	f, err := l.active().use()
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // the next write fails
	l.active().unuse()
	_, err = l.Append(simpleBatch(1, 1, 1), AppendOptions{LogAppendTime: -1})
	var se *StorageError
	if !errors.As(err, &se) || se.Op != "write" {
		t.Fatalf("got %v, want a *StorageError", err)
	}
	if _, err2 := l.Append(simpleBatch(1, 1, 1), AppendOptions{LogAppendTime: -1}); err2 != err {
		t.Fatalf("second append: %v", err2)
	}
	if l.LogEndOffset() != 1 || l.HighWatermark() != 1 {
		t.Fatalf("leo %d hw %d", l.LogEndOffset(), l.HighWatermark())
	}
}
