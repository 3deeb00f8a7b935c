package storage

import (
	"path/filepath"
	"testing"
)

// tsLog appends batches whose records have the given timestamps.
func tsLog(t *testing.T, cfg Config, gz bool, batches ...[]int64) *Log {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	for _, tss := range batches {
		recs := make([]rec, len(tss))
		for i, ts := range tss {
			recs[i] = rec{value: []byte("v"), ts: ts}
		}
		mustAppend(t, l, makeBatch(batchOpts{gzip: gz}, recs...))
	}
	return l
}

var tsBatches = [][]int64{
	{100, 105, 103}, // offsets 0-2
	{90, 200},       // 3-4
	{150, 250, 250}, // 5-7
	{240},           // 8
}

func TestOffsetForTimestamp(t *testing.T) {
	for _, small := range []bool{false, true} {
		cfg := testConfig()
		if small { // several segments and dense indexes
			cfg.SegmentBytes = 200
			cfg.IndexIntervalBytes = 0
		}
		l := tsLog(t, cfg, false, tsBatches...)
		defer l.Close()
		for _, tt := range []struct {
			ts, offset, timestamp int64
			ok                    bool
		}{
			{0, 0, 100, true},
			{100, 0, 100, true},
			{101, 1, 105, true},
			{104, 1, 105, true},
			{106, 4, 200, true},
			{200, 4, 200, true},
			{201, 6, 250, true},
			{241, 6, 250, true},
			{251, 0, 0, false},
		} {
			off, ts, ok := l.OffsetForTimestamp(tt.ts)
			if off != tt.offset || ts != tt.timestamp || ok != tt.ok {
				t.Errorf("small=%v OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", small, tt.ts, off, ts, ok, tt.offset, tt.timestamp, tt.ok)
			}
		}
		if ts, off, ok := l.MaxTimestamp(); ts != 250 || off != 6 || !ok {
			t.Errorf("MaxTimestamp = %d, %d, %v", ts, off, ok)
		}
		// Records below the log start offset are skipped.
		l.DeleteRecordsBefore(2)
		if off, ts, ok := l.OffsetForTimestamp(100); off != 2 || ts != 103 || !ok {
			t.Errorf("after DeleteRecords: %d %d %v", off, ts, ok)
		}
	}
}

func TestOffsetForTimestamp_Compressed(t *testing.T) {
	cfg := testConfig()
	l := tsLog(t, cfg, true, tsBatches...)
	defer l.Close()
	// Without Decompress: batch granularity.
	if off, ts, ok := l.OffsetForTimestamp(104); off != 0 || ts != 105 || !ok {
		t.Errorf("no decompress: %d %d %v", off, ts, ok)
	}
	if ts, off, ok := l.MaxTimestamp(); ts != 250 || off != 5 || !ok {
		t.Errorf("MaxTimestamp no decompress = %d, %d, %v", ts, off, ok)
	}
	cfg.Decompress = gunzip
	l.UpdateConfig(cfg)
	if off, ts, ok := l.OffsetForTimestamp(104); off != 1 || ts != 105 || !ok {
		t.Errorf("decompress: %d %d %v", off, ts, ok)
	}
	if ts, off, ok := l.MaxTimestamp(); ts != 250 || off != 6 || !ok {
		t.Errorf("MaxTimestamp decompress = %d, %d, %v", ts, off, ok)
	}
}

func TestMaxTimestamp_EmptyLog(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	if _, _, ok := l.MaxTimestamp(); ok {
		t.Fatal("ok on empty log")
	}
	if _, _, ok := l.OffsetForTimestamp(0); ok {
		t.Fatal("ok on empty log")
	}
}

func TestOffsetForTimestamp_AfterReopen(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 200
	l := tsLog(t, cfg, false, tsBatches...)
	dir := l.Dir()
	l.Close()
	l = openLog(t, dir, cfg)
	defer l.Close()
	if off, ts, ok := l.OffsetForTimestamp(201); off != 6 || ts != 250 || !ok {
		t.Errorf("%d %d %v", off, ts, ok)
	}
	if ts, off, ok := l.MaxTimestamp(); ts != 250 || off != 6 || !ok {
		t.Errorf("MaxTimestamp = %d, %d, %v", ts, off, ok)
	}
}
