package admin

// The console's history: a bounded in-memory ring of samples taken from
// the broker's own Prometheus registry (one Gather per sample), so the
// pages can draw lag, throughput and request latency over time.
//
// In a cluster a broker's registry covers only the groups it coordinates
// and the partitions it leads, so there the group series come from the
// cluster-wide view the pages show (broker.ClusterGroups: offsets asked
// of each group's coordinator, high watermarks of each partition's
// leader) and a topic's records in from the growth of its partitions'
// high watermarks (broker.ClusterTopics); bytes in and out stay this
// broker's share, and the pages say so.
//
// Memory: every series is a ring of Samples float32 values, and there
// are at most MaxSeries series, so the values take at most
// MaxSeries × Samples × 4 bytes (2000 × 720 × 4 B ≈ 5.5 MiB with the
// defaults: an hour at one sample every 5 s), plus the series' names.
// A series not seen for a whole window is dropped; a new series beyond
// MaxSeries is not recorded (Dropped counts them).

import (
	"context"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/broker"
	dto "github.com/prometheus/client_model/go"
)

// Defaults of HistoryOptions.
const (
	DefaultSampleInterval    = 5 * time.Second
	DefaultHistorySamples    = 720 // an hour at 5 s
	DefaultMaxSeries         = 2000
	DefaultLagGrowingSamples = 12 // a minute at 5 s
	DefaultStalledSamples    = 12
)

// Series name prefixes; a series is prefix + "/" + labels.
const (
	seriesBytesIn   = "bytes_in"   // topic: bytes appended per second
	seriesRecordsIn = "records_in" // topic: records appended per second
	seriesBytesOut  = "bytes_out"  // topic: bytes sent to fetchers per second
	seriesGroupLag  = "group_lag"  // group: total lag
	seriesPartLag   = "part_lag"   // group/topic/partition: lag
	seriesCommitted = "committed"  // group: sum of its committed offsets
	seriesReqRate   = "req_rate"   // api: requests per second
	seriesReqP50    = "req_p50"    // api: median handler time (ms) over the interval
	seriesReqP99    = "req_p99"    // api: 99th percentile handler time (ms)
)

func key(prefix string, labels ...string) string {
	return prefix + "/" + strings.Join(labels, "/")
}

// History is a bounded ring of samples. It is safe for concurrent use.
type History struct {
	mu        sync.Mutex
	n         int // samples kept
	maxSeries int
	times     []time.Time // ring, len n
	seq       int64       // samples recorded so far
	series    map[string]*series
	dropped   int64
}

type series struct {
	vals     []float32 // ring indexed like times; NaN: no value
	lastSeen int64     // seq of the last sample with a value
}

// NewHistory returns a history of n samples (≥ 2) and at most maxSeries
// series.
func NewHistory(n, maxSeries int) *History {
	n = max(n, 2)
	return &History{n: n, maxSeries: max(maxSeries, 1), times: make([]time.Time, n), series: map[string]*series{}}
}

// Record adds a sample taken at t: values by series name. Series absent
// from values get no value at t.
func (h *History) Record(t time.Time, values map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	slot := int(h.seq % int64(h.n))
	h.times[slot] = t
	for name, s := range h.series {
		if h.seq-s.lastSeen >= int64(h.n) {
			delete(h.series, name) // nothing left in the window
			continue
		}
		s.vals[slot] = float32(math.NaN())
	}
	for name, v := range values {
		if math.IsNaN(v) {
			continue
		}
		s := h.series[name]
		if s == nil {
			if len(h.series) >= h.maxSeries {
				h.dropped++
				continue
			}
			s = &series{vals: make([]float32, h.n)}
			for i := range s.vals {
				s.vals[i] = float32(math.NaN())
			}
			h.series[name] = s
		}
		s.vals[slot] = float32(v)
		s.lastSeen = h.seq
	}
	h.seq++
}

// Len returns the number of samples held (at most the capacity).
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int(min(h.seq, int64(h.n)))
}

// SeriesCount returns the number of series held.
func (h *History) SeriesCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.series)
}

// Dropped returns how many values of new series were refused because
// MaxSeries series were held.
func (h *History) Dropped() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

// MemoryBytes is the memory the samples take: the value rings, the
// timestamps and the series' names (not the map's own overhead).
func (h *History) MemoryBytes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n * 24 // time.Time
	for name, s := range h.series {
		n += len(name) + 4*len(s.vals) + 8
	}
	return n
}

// MaxMemoryBytes bounds MemoryBytes for series names up to nameLen bytes.
func (h *History) MaxMemoryBytes(nameLen int) int {
	return h.n*24 + h.maxSeries*(nameLen+4*h.n+8)
}

// Values returns a series oldest first, one value per sample held (NaN
// where it had none), and the samples' times.
func (h *History) Values(name string) ([]float64, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := int(min(h.seq, int64(h.n)))
	start := int((h.seq - int64(held)) % int64(h.n))
	out := make([]float64, held)
	ts := make([]time.Time, held)
	s := h.series[name]
	for i := range held {
		slot := (start + i) % h.n
		ts[i] = h.times[slot]
		if s == nil {
			out[i] = math.NaN()
		} else {
			out[i] = float64(s.vals[slot])
		}
	}
	return out, ts
}

// Names returns the series with the prefix, sorted.
func (h *History) Names(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for name := range h.series {
		if strings.HasPrefix(name, prefix+"/") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// growing reports whether the last n+1 values of a series are all known,
// never fall and end above where they started: lag that has only grown.
func growing(vals []float64, n int) bool {
	if n < 1 || len(vals) < n+1 {
		return false
	}
	w := vals[len(vals)-n-1:]
	for i, v := range w {
		if math.IsNaN(v) || i > 0 && v < w[i-1] {
			return false
		}
	}
	return w[n] > w[0]
}

// stalled reports whether, over the last n+1 samples, committed (a
// group's summed committed offsets) never changed while lag was known and
// above zero: a group that stopped committing with records left to
// consume.
func stalled(committed, lag []float64, n int) bool {
	if n < 1 || len(committed) < n+1 || len(lag) < n+1 {
		return false
	}
	c, l := committed[len(committed)-n-1:], lag[len(lag)-n-1:]
	for i := range c {
		if math.IsNaN(c[i]) || math.IsNaN(l[i]) || l[i] <= 0 || c[i] != c[0] {
			return false
		}
	}
	return true
}

// sampler turns successive gathers of the broker's registry into history
// samples: counters into rates, histograms into percentiles over the
// interval, lag gauges as they are.
type sampler struct {
	mu       sync.Mutex
	prevT    time.Time
	counters map[string]float64     // series → counter value at prevT
	hists    map[string]*histSample // api → cumulative buckets at prevT
	hwSums   map[string]float64     // in a cluster: topic → summed high watermarks at prevT
}

type histSample struct {
	count  float64
	bounds []float64
	cum    []float64
}

// clusterSampleTimeout bounds the requests to other brokers of one
// sample in a cluster.
const clusterSampleTimeout = 3 * time.Second

// clusterView is the cluster-wide part of a sample in a cluster: every
// group, and each topic's summed high watermarks (only topics whose every
// partition's was known).
type clusterView struct {
	groups []broker.GroupInfo
	hwSums map[string]float64
}

func takeClusterView(b *broker.Broker) *clusterView {
	ctx, cancel := context.WithTimeout(context.Background(), clusterSampleTimeout)
	defer cancel()
	hws := b.ClusterHighWatermarks(ctx)
	groups, _ := b.ClusterGroups(ctx)
	cv := &clusterView{groups: groups, hwSums: map[string]float64{}}
topics:
	for name, ps := range hws {
		sum := 0.0
		for _, hw := range ps {
			if hw < 0 {
				continue topics
			}
			sum += float64(hw)
		}
		cv.hwSums[name] = sum
	}
	return cv
}

func (s *sampler) sample(b *broker.Broker, now time.Time) map[string]float64 {
	mfs, _ := b.ConsoleMetrics().Gather() // a partial gather still has what it has
	var cv *clusterView
	if b.Clustered() {
		cv = takeClusterView(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]float64{}
	counters := map[string]float64{}
	hists := map[string]*histSample{}
	dt := now.Sub(s.prevT).Seconds()
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			l := labels(m)
			switch mf.GetName() {
			case "gregor_topic_bytes_in_total":
				counters[key(seriesBytesIn, l["topic"])] += m.GetCounter().GetValue()
			case "gregor_topic_records_in_total":
				if cv == nil {
					counters[key(seriesRecordsIn, l["topic"])] += m.GetCounter().GetValue()
				}
			case "gregor_topic_bytes_out_total":
				counters[key(seriesBytesOut, l["topic"])] += m.GetCounter().GetValue()
			case "gregor_requests_total":
				counters[key(seriesReqRate, l["api"])] += m.GetCounter().GetValue()
			case "gregor_request_duration_seconds":
				addHist(hists, l["api"], m.GetHistogram())
			case "gregor_group_lag":
				if cv != nil {
					continue
				}
				v := m.GetGauge().GetValue()
				out[key(seriesPartLag, l["group"], l["topic"], l["partition"])] = v
				out[key(seriesGroupLag, l["group"])] += v
			case "gregor_group_committed_offset":
				if cv == nil {
					out[key(seriesCommitted, l["group"])] += m.GetGauge().GetValue()
				}
			}
		}
	}
	var hwSums map[string]float64
	if cv != nil {
		for _, g := range cv.groups {
			for _, o := range g.Offsets {
				out[key(seriesCommitted, g.Name)] += float64(max(o.Committed, 0))
				if o.Lag < 0 {
					continue // the partition is gone, or its leader could not be asked
				}
				out[key(seriesPartLag, g.Name, o.Topic, strconv.Itoa(int(o.Partition)))] = float64(o.Lag)
				out[key(seriesGroupLag, g.Name)] += float64(o.Lag)
			}
		}
		hwSums = cv.hwSums
		// Records in: the growth of the summed high watermarks, for the
		// topics known at both samples.
		if !s.prevT.IsZero() && dt > 0 {
			for topic, v := range hwSums {
				if prev, ok := s.hwSums[topic]; ok && v >= prev {
					out[key(seriesRecordsIn, topic)] = (v - prev) / dt
				}
			}
		}
	}
	if !s.prevT.IsZero() && dt > 0 {
		for name, v := range counters {
			prev, ok := s.counters[name]
			if !ok {
				prev = 0 // first seen since the last sample: counted from zero
			}
			if v >= prev {
				out[name] = (v - prev) / dt
			}
		}
		for api, h := range hists {
			p := s.hists[api]
			if p50, p99, ok := percentiles(p, h); ok {
				out[key(seriesReqP50, api)] = p50 * 1000
				out[key(seriesReqP99, api)] = p99 * 1000
			}
		}
	}
	s.prevT, s.counters, s.hists, s.hwSums = now, counters, hists, hwSums
	return out
}

func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.Label))
	for _, lp := range m.Label {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// addHist sums a histogram into the one of its api (over versions).
func addHist(hs map[string]*histSample, api string, h *dto.Histogram) {
	cur := hs[api]
	if cur == nil {
		cur = &histSample{}
		for _, bk := range h.Bucket {
			cur.bounds = append(cur.bounds, bk.GetUpperBound())
		}
		cur.cum = make([]float64, len(cur.bounds))
		hs[api] = cur
	}
	cur.count += float64(h.GetSampleCount())
	for i, bk := range h.Bucket {
		if i < len(cur.cum) {
			cur.cum[i] += float64(bk.GetCumulativeCount())
		}
	}
}

// percentiles estimates the median and 99th percentile of the
// observations between prev (nil: none) and cur, interpolating linearly
// within a bucket as Prometheus' histogram_quantile does.
func percentiles(prev, cur *histSample) (p50, p99 float64, ok bool) {
	total := cur.count
	if prev != nil {
		total -= prev.count
	}
	if total <= 0 {
		return 0, 0, false
	}
	delta := make([]float64, len(cur.cum))
	for i := range cur.cum {
		delta[i] = cur.cum[i]
		if prev != nil && slices.Equal(prev.bounds, cur.bounds) {
			delta[i] -= prev.cum[i]
		}
	}
	q := func(q float64) float64 {
		rank := q * total
		lower, below := 0.0, 0.0
		for i, c := range delta {
			if c >= rank {
				if c == below {
					return cur.bounds[i]
				}
				return lower + (cur.bounds[i]-lower)*(rank-below)/(c-below)
			}
			lower, below = cur.bounds[i], c
		}
		return lower // in the +Inf bucket: the highest finite bound
	}
	return q(0.5), q(0.99), true
}
