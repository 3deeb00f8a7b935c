package storage

import (
	"math/rand"
	"path/filepath"
	"testing"
)

// BenchmarkAppend appends batches of 10 records of 100 B or 1 KiB values
// (validation, offset assignment, one pwrite, indexing), without fsync.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []struct {
		name  string
		value int
	}{{"100B", 100}, {"1KiB", 1024}} {
		b.Run(size.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.SegmentBytes = 256 << 20
			l := openLog(b, filepath.Join(b.TempDir(), "t-0"), cfg)
			defer l.Delete()
			batch := simpleBatch(10, size.value, 1)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(batch, AppendOptions{LogAppendTime: -1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIndexLookup looks up random offsets in the offset index of a full
// 1 GiB segment (262,144 entries at the default 4 KiB interval).
func BenchmarkIndexLookup(b *testing.B) {
	var x offsetIndex
	const n = 1 << 18
	for i := int64(0); i < n; i++ {
		x.add(i*40+39, i*4096)
	}
	r := rand.New(rand.NewSource(1))
	targets := make([]int64, 1024)
	for i := range targets {
		targets[i] = r.Int63n(n * 40)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, pos := x.lookup(targets[i%len(targets)]); pos < 0 {
			b.Fatal(pos)
		}
	}
}

// BenchmarkRead reads from random offsets of a 64 MiB log of 10 x 1 KiB
// record batches: "locate" is Read+Release (what a sendfile fetch costs
// before the copy), "copy64KiB" also reads 64 KiB of data.
func BenchmarkRead(b *testing.B) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 20
	l := openLog(b, filepath.Join(b.TempDir(), "t-0"), cfg)
	defer l.Delete()
	batch := simpleBatch(10, 1024, 1)
	for l.Size() < 64<<20 {
		mustAppend(b, l, batch)
	}
	leo := l.LogEndOffset()
	r := rand.New(rand.NewSource(1))
	for _, bb := range []struct {
		name     string
		maxBytes int32
		copy     bool
	}{{"locate", 1 << 20, false}, {"copy64KiB", 64 << 10, true}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				res, err := l.Read(r.Int63n(leo), bb.maxBytes, true)
				if err != nil {
					b.Fatal(err)
				}
				if bb.copy {
					if _, err := res.Slice.ReadAll(); err != nil {
						b.Fatal(err)
					}
				}
				res.Slice.Release()
			}
		})
	}
}
