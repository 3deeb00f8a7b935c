package admin

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestHistory_MemoryBound: however many series come and go, the history
// holds at most its capacity of samples and MaxSeries series, and its
// memory stays under the stated bound; series gone for a whole window
// are dropped and make room for new ones.
func TestHistory_MemoryBound(t *testing.T) {
	const n, maxSeries = 10, 50
	h := NewHistory(n, maxSeries)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 100 {
		vals := map[string]float64{}
		for j := range 200 {
			vals[fmt.Sprintf("part_lag/g/topic-%03d/%d", (i/20)*200+j, 0)] = float64(i)
		}
		h.Record(t0.Add(time.Duration(i)*5*time.Second), vals)
		if got := h.SeriesCount(); got > maxSeries {
			t.Fatalf("sample %d: %d series, cap %d", i, got, maxSeries)
		}
		if mem, bound := h.MemoryBytes(), h.MaxMemoryBytes(32); mem > bound {
			t.Fatalf("sample %d: %d bytes, bound %d", i, mem, bound)
		}
	}
	if h.Len() != n {
		t.Fatalf("Len = %d, want %d", h.Len(), n)
	}
	if h.Dropped() == 0 {
		t.Fatal("no series refused beyond the cap")
	}
	// The last batch of names (samples 80..99) replaced the earlier ones.
	names := h.Names("part_lag")
	if len(names) != maxSeries || names[0] < "part_lag/g/topic-800" {
		t.Fatalf("held %d series from %q; want %d of the latest batch", len(names), names[0], maxSeries)
	}
	vals, ts := h.Values(names[0])
	if len(vals) != n || vals[n-1] != 99 || vals[0] != 90 || !ts[n-1].Equal(t0.Add(99*5*time.Second)) {
		t.Fatalf("values %v times %v", vals, ts)
	}
	// The defaults: an hour at 5 s for 2000 series stays under 6 MiB.
	if bound := NewHistory(DefaultHistorySamples, DefaultMaxSeries).MaxMemoryBytes(64); bound > 6<<20 {
		t.Fatalf("default bound %d bytes", bound)
	}
}

func TestGrowing(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		vals []float64
		n    int
		want bool
	}{
		{[]float64{1, 2, 3, 4}, 3, true},
		{[]float64{5, 1, 2, 2, 4}, 3, true}, // flat steps allowed, net growth
		{[]float64{1, 2, 3}, 3, false},      // too few samples
		{[]float64{1, 3, 2, 4}, 3, false},   // fell once
		{[]float64{4, 4, 4, 4}, 3, false},   // stuck but nothing new: not growing
		{[]float64{1, nan, 3, 4}, 3, false}, // gap
	} {
		if got := growing(c.vals, c.n); got != c.want {
			t.Errorf("growing(%v, %d) = %v", c.vals, c.n, got)
		}
	}
}

func TestPercentiles(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	prev := &histSample{count: 10, bounds: bounds, cum: []float64{10, 10, 10}}
	// 100 more observations: 50 ≤ 1 ms, 49 in (1, 10] ms, 1 in (10, 100] ms.
	cur := &histSample{count: 110, bounds: bounds, cum: []float64{60, 109, 110}}
	p50, p99, ok := percentiles(prev, cur)
	if !ok || math.Abs(p50-0.001) > 1e-9 || math.Abs(p99-0.01) > 1e-9 {
		t.Fatalf("p50 %v p99 %v ok %v; want 0.001, 0.01", p50, p99, ok)
	}
	if _, _, ok := percentiles(cur, cur); ok {
		t.Fatal("percentiles of no new observations")
	}
}
