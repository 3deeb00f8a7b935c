package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentile_NearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}} {
		if got := percentile(ds, c.q); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if ds[0] != 1000 {
		t.Error("percentile sorted its input in place")
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
}

func TestSummarize_MedianMinMaxIgnoringNaN(t *testing.T) {
	s := summarize([]float64{3, math.NaN(), 1, 4, 2})
	if s.med != 2.5 || s.min != 1 || s.max != 4 || s.n != 4 {
		t.Errorf("summarize = %+v, want med 2.5 min 1 max 4 n 4", s)
	}
	if s := summarize([]float64{math.NaN()}); s.n != 0 {
		t.Errorf("summarize(NaN) = %+v, want n 0", s)
	}
}

func TestParseStrace_JoinsUnfinishedCalls(t *testing.T) {
	path := t.TempDir() + "/s.txt"
	const in = `101 sendfile(9, 12, [0] => [1048576], 1048576) = 1048576
102 writev(9, [{iov_base="\0\0", iov_len=2}], 1 <unfinished ...>
101 write(2, "x", 1)                    = 1
102 <... writev resumed>)               = 70
103 write(9, "abc", 3)                  = -1 EAGAIN (Resource temporarily unavailable)
103 --- SIGURG {si_signo=SIGURG} ---
`
	if err := writeFile(path, in); err != nil {
		t.Fatal(err)
	}
	got, err := parseStrace(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sysStat{
		"sendfile": {1, 1048576},
		"writev":   {1, 70},
		"write":    {2, 1},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %+v, want %+v", k, got[k], w)
		}
	}
}
