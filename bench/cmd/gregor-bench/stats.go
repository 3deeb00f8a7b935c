package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the q-quantile (0 ≤ q ≤ 1) of ds by the nearest-rank
// method: the smallest value with at least q of the samples at or below it.
// It returns 0 for no samples.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return sortedPercentile(s, q)
}

func sortedPercentile(s []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// summary is the median, minimum and maximum of a metric over runs.
type summary struct {
	med, min, max float64
	n             int
}

// summarize returns the summary of vs, ignoring NaNs; n is 0 when there is
// nothing left. The median of an even count is the mean of the middle two.
func summarize(vs []float64) summary {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return summary{}
	}
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{med: m, min: s[0], max: s[len(s)-1], n: len(s)}
}
