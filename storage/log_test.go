package storage

import (
	"bytes"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
)

var discardLogger = slog.New(slog.DiscardHandler)

func TestLog_AppendReadRoundTrip(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	var batches [][]byte
	for i, n := range []int{3, 1, 5} {
		b := simpleBatch(n, 10, 1000+int64(i))
		res, err := l.Append(b, AppendOptions{LeaderEpoch: 7, LogAppendTime: -1})
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{0, 3, 4}[i]
		if res.BaseOffset != want || res.LastOffset != want+int64(n)-1 || res.LogAppendTime != -1 || res.Duplicate {
			t.Fatalf("append %d: %+v", i, res)
		}
		h, _ := ParseBatchHeader(b)
		if h.BaseOffset != want || h.PartitionLeaderEpoch != 7 {
			t.Fatalf("batch not rewritten: %+v", h)
		}
		batches = append(batches, b)
	}
	if l.LogEndOffset() != 9 || l.HighWatermark() != 9 || l.LogStartOffset() != 0 {
		t.Fatalf("leo %d hw %d lso %d", l.LogEndOffset(), l.HighWatermark(), l.LogStartOffset())
	}
	got := readBytes(t, l, 0, math.MaxInt32, false)
	if want := bytes.Join(batches, nil); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if l.Size() != int64(len(got)) {
		t.Fatalf("Size %d, want %d", l.Size(), len(got))
	}
}
