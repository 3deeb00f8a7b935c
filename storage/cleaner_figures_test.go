package storage

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestCleaner_Figures measures the cleaner on a large log when
// STORAGE_CLEAN_FIGURES=<MB>[,<distinct keys>[,<map MB>]] is set (skipped
// otherwise): batches of 10 records of ~250 bytes with keys drawn from the
// distinct keys, segments of 64 MiB, then one Clean; it prints the
// throughput (MB of log read per second of Clean), the map's memory and the
// heap growth.
func TestCleaner_Figures(t *testing.T) {
	spec := os.Getenv("STORAGE_CLEAN_FIGURES")
	if spec == "" {
		t.Skip("set STORAGE_CLEAN_FIGURES=<MB>[,<keys>[,<map MB>]]")
	}
	args := []int64{256, 1 << 20, 128}
	for i, s := range splitComma(spec) {
		args[i], _ = strconv.ParseInt(s, 10, 64)
	}
	mb, keys, mapMB := args[0], args[1], args[2]
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 20
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	rng := rand.New(rand.NewSource(1))
	value := make([]byte, 230)
	start := time.Now()
	for l.Size() < mb<<20 {
		recs := make([]rec, 10)
		for i := range recs {
			rng.Read(value)
			recs[i] = rec{key: []byte(fmt.Sprintf("key-%09d", rng.Int63n(keys))), value: append([]byte(nil), value...), ts: 1}
		}
		mustAppend(t, l, makeBatch(batchOpts{}, recs...))
	}
	l.mu.Lock()
	l.rollLocked()
	l.mu.Unlock()
	size := l.Size()
	t.Logf("wrote %d MB (%d records) in %v", size>>20, l.LogEndOffset(), time.Since(start))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m := NewOffsetMap(mapMB<<20, 0)
	stats, err := l.Clean(CleanOptions{Map: m})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	t.Logf("clean: %d passes, %d segments, read %d MB, wrote %d MB, %d of %d records kept, %d keys in the map, in %v",
		stats.Passes, stats.SegmentsCleaned, stats.BytesRead>>20, stats.BytesWritten>>20, stats.RecordsKept, stats.RecordsRead, stats.MapKeys, stats.Elapsed)
	t.Logf("throughput %.1f MB/s of log read (%.1f MB/s of segments cleaned); map %d MB (capacity %d keys); heap allocated during the clean %d MB, heap in use after %d MB",
		float64(stats.BytesRead)/(1<<20)/stats.Elapsed.Seconds(), float64(size)/(1<<20)/stats.Elapsed.Seconds(),
		m.MemoryBytes()>>20, m.Capacity(), (after.TotalAlloc-before.TotalAlloc)>>20, after.HeapInuse>>20)
}

func splitComma(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ',' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}
