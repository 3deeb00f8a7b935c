package broker

// The Prometheus metrics, for the admin HTTP listener and embedders
// (Broker.Metrics).
//
// Counters and histograms are updated by two hooks: observeRequest, called
// by conn.run after every handler (request counts and latency per API and
// version; bytes and records produced per topic), and observeFetch, called
// by the Fetch handler before it encodes its answer (bytes fetched per
// topic, from the sizes of the file regions about to be sent; records out
// are not counted). Gauges (offsets, sizes, lag, connections) are read when
// scraped.
//
// Metrics (all prefixed gregor_):
//
//	requests_total{api,version}                       counter
//	request_duration_seconds{api,version}             histogram (handler time)
//	topic_bytes_in_total{topic}, topic_records_in_total{topic}    counters
//	topic_bytes_out_total{topic}  counters
//	active_connections                                gauge
//	partition_log_end_offset{topic,partition}         gauge
//	partition_high_watermark{topic,partition}         gauge
//	partition_log_start_offset{topic,partition}       gauge
//	partition_size_bytes{topic,partition}             gauge
//	group_members{group,state}                        gauge
//	group_committed_offset{group,topic,partition}     gauge
//	group_lag{group,topic,partition}                  gauge (high watermark − committed, ≥ 0)
//	faults_active                                     gauge
//	cleaner_bytes_read_total, cleaner_bytes_written_total, cleaner_runs_total  gauges (monotone)
//	partition_dirty_ratio{topic,partition}            gauge (compacted topics)
//	partition_last_clean_timestamp_seconds{topic,partition}  gauge (cleaned since start)
//	throttle_time_ms{type}                            histogram (throttled answers; type produce, fetch or request)
//	quota_rate{type,user,client_id}                   gauge (a client quota's current rate: bytes/s, or % of a thread)
//	quota_limit{type,user,client_id}                  gauge (the bound in force for that rate)
//	cleaner_throttle_seconds_total                    counter (time the cleaner's I/O throttle slept)
//	under_replicated_partitions, offline_partitions, reassigning_partitions, cluster_brokers,
//	log_dir_size_bytes, log_dir_total_bytes, log_dir_usable_bytes  gauges (metrics_cluster.go)

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type observer struct {
	once      sync.Once
	reg       *prometheus.Registry
	console   *prometheus.Registry // what the console samples (ConsoleMetrics)
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	bytesIn   *prometheus.CounterVec
	recordsIn *prometheus.CounterVec
	bytesOut  *prometheus.CounterVec
	perAPI    sync.Map // apiVersionKey → *apiMetrics
	throttle  [quota.NumKinds]prometheus.Observer
}

type apiMetrics struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// Metrics returns the broker's Prometheus registry. It holds only Gregor's
// metrics; add Go and process collectors to it, or gather it with others.
func (b *Broker) Metrics() *prometheus.Registry {
	return b.metrics().reg
}

// ConsoleMetrics gathers the part of Metrics that the console's history
// samples: requests, their latency, bytes and records by topic, and
// groups' lag and committed offsets, without the four gauges per
// partition, whose gathering and sorting every few seconds cost more than
// the rest of an idle broker at 10,000 partitions.
func (b *Broker) ConsoleMetrics() prometheus.Gatherer {
	return b.metrics().console
}

func (b *Broker) metrics() *observer {
	o := &b.observer
	o.once.Do(func() {
		o.reg = prometheus.NewRegistry()
		topicCounter := func(name, help string) *prometheus.CounterVec {
			return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "gregor", Name: name, Help: help}, []string{"topic"})
		}
		o.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "gregor", Name: "requests_total", Help: "Requests handled, by API and version."}, []string{"api", "version"})
		o.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "gregor", Name: "request_duration_seconds",
			Help:    "Time from a decoded request to its encoded response (Fetch includes its long poll), by API and version.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"api", "version"})
		o.bytesIn = topicCounter("topic_bytes_in_total", "Record batch bytes appended, by topic.")
		o.recordsIn = topicCounter("topic_records_in_total", "Records appended, by topic.")
		o.bytesOut = topicCounter("topic_bytes_out_total", "Record batch bytes sent to fetchers, by topic.")
		throttle := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "gregor", Name: "throttle_time_ms",
			Help:    "Throttle time of answers throttled by a client quota, in ms, by quota type (produce, fetch, request).",
			Buckets: []float64{1, 5, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000},
		}, []string{"type"})
		for k := range quota.NumKinds {
			o.throttle[k] = throttle.WithLabelValues(k.String())
		}
		buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "gregor", Name: "build_info",
			Help: "1, labelled with the broker's version, VCS revision and Go version, as Prometheus' own *_build_info."}, []string{"version", "revision", "goversion"})
		v, rev := buildVersion(b.cfg.Version)
		buildInfo.WithLabelValues(v, rev, runtime.Version()).Set(1)
		o.reg.MustRegister(o.requests, o.latency, o.bytesIn, o.recordsIn, o.bytesOut, throttle, gauges{b}, groupGauges{b}, clusterGauges{b}, b.cm, buildInfo)
		o.console = prometheus.NewRegistry()
		o.console.MustRegister(o.requests, o.latency, o.bytesIn, o.recordsIn, o.bytesOut, groupGauges{b})
	})
	return o
}

// observeRequest records a handled request. It is called by conn.run.
func (b *Broker) observeRequest(r *request, resp kmsg.Response, start time.Time) {
	o := b.metrics()
	key := int32(r.hdr.Key)<<16 | int32(uint16(r.hdr.Version))
	m, ok := o.perAPI.Load(key)
	if !ok {
		labels := []string{kmsg.NameForKey(r.hdr.Key), strconv.Itoa(int(r.hdr.Version))}
		m, _ = o.perAPI.LoadOrStore(key, &apiMetrics{count: o.requests.WithLabelValues(labels...), latency: o.latency.WithLabelValues(labels...)})
	}
	am := m.(*apiMetrics)
	am.count.Inc()
	am.latency.Observe(time.Since(start).Seconds())

	req, ok := r.msg.(*kmsg.ProduceRequest)
	pr, _ := resp.(*kmsg.ProduceResponse)
	if !ok || pr == nil {
		return
	}
	for ti, rt := range req.Topics {
		if ti >= len(pr.Topics) {
			break
		}
		var bytes, records int64
		for pi, rp := range rt.Partitions {
			if pi >= len(pr.Topics[ti].Partitions) || pr.Topics[ti].Partitions[pi].ErrorCode != 0 {
				continue
			}
			if hdr, err := storage.ParseBatchHeader(rp.Records); err == nil {
				bytes += int64(len(rp.Records))
				records += int64(hdr.RecordCount)
			}
		}
		if bytes > 0 {
			o.bytesIn.WithLabelValues(rt.Topic).Add(float64(bytes))
			o.recordsIn.WithLabelValues(rt.Topic).Add(float64(records))
		}
	}
}

// observeFetch records the record bytes a Fetch response is about to
// send. It reads nothing from the regions: counting records would cost a
// read per batch on the zero-copy path (Kafka reports bytes out only, too).
func (b *Broker) observeFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, regions [][]storage.Slice) {
	o := b.metrics()
	for ti := range resp.Topics {
		if ti >= len(regions) {
			break
		}
		var bytes int64
		for _, s := range regions[ti] {
			bytes += max(s.Size, 0)
		}
		if bytes > 0 {
			o.bytesOut.WithLabelValues(resp.Topics[ti].Topic).Add(float64(bytes))
		}
	}
}

// gauges is the collector of values read at scrape time.
type gauges struct{ b *Broker }

var (
	descConns     = prometheus.NewDesc("gregor_active_connections", "Open client connections.", nil, nil)
	descParked    = prometheus.NewDesc("gregor_parked_connections", "Open client connections idle and parked, without a goroutine or a read buffer (Linux).", nil, nil)
	partLabels    = []string{"topic", "partition"}
	descLEO       = prometheus.NewDesc("gregor_partition_log_end_offset", "Offset of the next record to be appended.", partLabels, nil)
	descHW        = prometheus.NewDesc("gregor_partition_high_watermark", "Offset up to which records are visible to consumers.", partLabels, nil)
	descLSO       = prometheus.NewDesc("gregor_partition_log_start_offset", "First offset still in the log.", partLabels, nil)
	descSize      = prometheus.NewDesc("gregor_partition_size_bytes", "Bytes of the partition's segments on disk.", partLabels, nil)
	groupLabels   = []string{"group", "topic", "partition"}
	descCommitted = prometheus.NewDesc("gregor_group_committed_offset", "A consumer group's committed offset.", groupLabels, nil)
	descLag       = prometheus.NewDesc("gregor_group_lag", "High watermark minus the group's committed offset (records not yet consumed).", groupLabels, nil)
	descMembers   = prometheus.NewDesc("gregor_group_members", "Members of a group, labelled with its state.", []string{"group", "state"}, nil)
	descFaults    = prometheus.NewDesc("gregor_faults_active", "Injected faults still active.", nil, nil)
	descCleanRead = prometheus.NewDesc("gregor_cleaner_bytes_read_total", "Segment bytes read by the log cleaner.", nil, nil)
	descCleanWrit = prometheus.NewDesc("gregor_cleaner_bytes_written_total", "Bytes of cleaned segments written by the log cleaner.", nil, nil)
	descCleanRuns = prometheus.NewDesc("gregor_cleaner_runs_total", "Log cleans run.", nil, nil)
	descDirty     = prometheus.NewDesc("gregor_partition_dirty_ratio", "Compacted partitions: dirty bytes over cleanable bytes.", partLabels, nil)
	descLastClean = prometheus.NewDesc("gregor_partition_last_clean_timestamp_seconds", "When the cleaner last cleaned the partition.", partLabels, nil)
	quotaLabels   = []string{"type", "user", "client_id"}
	descQuotaRate = prometheus.NewDesc("gregor_quota_rate", "A client quota's current rate (bytes/s for produce and fetch, percent of a thread for request), by the entity it is shared by.", quotaLabels, nil)
	descQuotaMax  = prometheus.NewDesc("gregor_quota_limit", "The bound in force for a client quota's rate.", quotaLabels, nil)
	descLinkLag   = prometheus.NewDesc("gregor_link_lag", "A mirror partition led here: the source's high watermark at the last fetch minus the mirror's log end offset.", []string{"link", "topic", "partition"}, nil)
	descLinkBytes = prometheus.NewDesc("gregor_link_bytes_total", "Record batch bytes a cluster link mirrored on this broker.", []string{"link"}, nil)
	descLinkBatch = prometheus.NewDesc("gregor_link_batches_total", "Record batches a cluster link mirrored on this broker.", []string{"link"}, nil)
	descLinkErrs  = prometheus.NewDesc("gregor_link_fetch_errors_total", "Fetch rounds from a link's source that failed on this broker (each retried with backoff).", []string{"link"}, nil)
)

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConns, descParked, descLEO, descHW, descLSO, descSize, descFaults, descCleanRead, descCleanWrit, descCleanRuns, descDirty, descLastClean, descQuotaRate, descQuotaMax, descLinkLag, descLinkBytes, descLinkBatch, descLinkErrs} {
		ch <- d
	}
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	b := g.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descConns, float64(b.srv.active.Load()))
	b.srv.mu.Lock()
	pk := b.srv.parker
	b.srv.mu.Unlock()
	gauge(descParked, float64(pk.parked()))
	if m := b.links.Load(); m != nil {
		counter := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
		}
		for name, c := range m.Counters() {
			counter(descLinkBytes, float64(c.Bytes), name)
			counter(descLinkBatch, float64(c.Batches), name)
			counter(descLinkErrs, float64(c.FetchErrors), name)
		}
		for name, topics := range m.Lags() {
			for topic, parts := range topics {
				for p, lag := range parts {
					gauge(descLinkLag, float64(lag), name, topic, strconv.Itoa(int(p)))
				}
			}
		}
	}
	for _, t := range b.Topics() {
		for _, p := range t.Partitions {
			ps := strconv.Itoa(int(p.Partition))
			gauge(descLEO, float64(p.LogEndOffset), t.Name, ps)
			gauge(descHW, float64(p.HighWatermark), t.Name, ps)
			gauge(descLSO, float64(p.LogStartOffset), t.Name, ps)
			gauge(descSize, float64(p.SizeBytes), t.Name, ps)
		}
	}
	gauge(descFaults, float64(len(b.Faults())))
	b.collectCleaner(ch)
	b.collectQuotas(ch)
}

// groupGauges is the collector of the groups' members, committed offsets
// and lag, read at scrape time.
type groupGauges struct{ b *Broker }

func (g groupGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descMembers
	ch <- descCommitted
	ch <- descLag
}

func (g groupGauges) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, gr := range g.b.Groups() {
		gauge(descMembers, float64(len(gr.Members)), gr.Name, gr.State)
		for _, o := range gr.Offsets {
			ps := strconv.Itoa(int(o.Partition))
			gauge(descCommitted, float64(o.Committed), gr.Name, o.Topic, ps)
			if o.Lag >= 0 {
				gauge(descLag, float64(o.Lag), gr.Name, o.Topic, ps)
			}
		}
	}
}

// collectCleaner adds the cleaner's metrics.
func (b *Broker) collectCleaner(ch chan<- prometheus.Metric) {
	c := &b.cleaner
	c.mu.Lock()
	read, written, runs := c.bytesRead, c.bytesWritten, c.runs
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descCleanRead, prometheus.CounterValue, float64(read))
	ch <- prometheus.MustNewConstMetric(descCleanWrit, prometheus.CounterValue, float64(written))
	ch <- prometheus.MustNewConstMetric(descCleanRuns, prometheus.CounterValue, float64(runs))
	for _, p := range b.allPartitions() {
		configs, _ := b.topicSnapshot(p.topic)
		if !isCompacted(b.topicValue(configs, "cleanup.policy")) {
			continue
		}
		ps := strconv.Itoa(int(p.index))
		st := p.log.Cleanable(b.topicInt(configs, "min.compaction.lag.ms"), 0)
		ch <- prometheus.MustNewConstMetric(descDirty, prometheus.GaugeValue, st.DirtyRatio, p.topic.name, ps)
		if _, _, last := b.cleanerStats(p); last >= 0 {
			ch <- prometheus.MustNewConstMetric(descLastClean, prometheus.GaugeValue, float64(last)/1000, p.topic.name, ps)
		}
	}
}

// collectQuotas adds the rate and bound of every client quota rate in use.
func (b *Broker) collectQuotas(ch chan<- prometheus.Metric) {
	if b.quotas.Index() == nil {
		return
	}
	b.quotas.EachRate(func(k quota.Kind, user, client string, rate, bound float64) {
		labels := []string{k.String(), user, client}
		ch <- prometheus.MustNewConstMetric(descQuotaRate, prometheus.GaugeValue, rate, labels...)
		ch <- prometheus.MustNewConstMetric(descQuotaMax, prometheus.GaugeValue, bound, labels...)
	})
}

// buildVersion is v (the version a program gave), else the main module's
// version from the build info ("(devel)" when it has none), and the VCS
// revision when the build recorded it ("" else).
func buildVersion(v string) (version, revision string) {
	version = v
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	return version, revision
}
