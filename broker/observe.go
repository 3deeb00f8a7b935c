package broker

// Read-only introspection (topics, groups with lag, records) and the
// Prometheus metrics, for the admin HTTP listener and embedders.
//
// Counters and histograms are updated by two hooks: observeRequest, called
// by conn.run after every handler (request counts and latency per API and
// version; bytes and records produced per topic), and observeFetch, called
// by the Fetch handler before it encodes its answer (bytes and records
// fetched per topic; records are counted from the batch headers of the file
// regions about to be sent). Gauges (offsets, sizes, lag, connections) are
// read when scraped.
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

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type observer struct {
	once      sync.Once
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	bytesIn   *prometheus.CounterVec
	recordsIn *prometheus.CounterVec
	bytesOut  *prometheus.CounterVec
	perAPI    sync.Map // apiVersionKey → *apiMetrics
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

func (b *Broker) metrics() *observer {
	o := &b.obs
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
		o.reg.MustRegister(o.requests, o.latency, o.bytesIn, o.recordsIn, o.bytesOut, gauges{b})
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
)

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConns, descLEO, descHW, descLSO, descSize, descCommitted, descLag, descMembers, descFaults} {
		ch <- d
	}
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	b := g.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descConns, float64(b.srv.active.Load()))
	for _, t := range b.Topics() {
		for _, p := range t.Partitions {
			ps := strconv.Itoa(int(p.Partition))
			gauge(descLEO, float64(p.LogEndOffset), t.Name, ps)
			gauge(descHW, float64(p.HighWatermark), t.Name, ps)
			gauge(descLSO, float64(p.LogStartOffset), t.Name, ps)
			gauge(descSize, float64(p.SizeBytes), t.Name, ps)
		}
	}
	for _, gr := range b.Groups() {
		gauge(descMembers, float64(len(gr.Members)), gr.Name, gr.State)
		for _, o := range gr.Offsets {
			ps := strconv.Itoa(int(o.Partition))
			gauge(descCommitted, float64(o.Committed), gr.Name, o.Topic, ps)
			if o.Lag >= 0 {
				gauge(descLag, float64(o.Lag), gr.Name, o.Topic, ps)
			}
		}
	}
	gauge(descFaults, float64(len(b.Faults())))
}

// TopicInfo describes a topic for the console and tools.
type TopicInfo struct {
	Name string
	ID   string
	// Configs are the topic's overrides (the rest are defaults).
	Configs map[string]string
	// RetentionMs and RetentionBytes are the effective retention.ms and
	// retention.bytes (-1: unlimited).
	RetentionMs, RetentionBytes int64
	CleanupPolicy               string
	Partitions                  []PartitionInfo
}

// PartitionInfo is one partition's offsets and size.
type PartitionInfo struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
	LogEndOffset   int64
	SizeBytes      int64
}

// Topics returns every topic sorted by name, with its partitions' offsets.
func (b *Broker) Topics() []TopicInfo {
	b.mu.RLock()
	ts := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		ts = append(ts, t)
	}
	b.mu.RUnlock()
	slices.SortFunc(ts, func(x, y *topic) int {
		switch {
		case x.name < y.name:
			return -1
		case x.name > y.name:
			return 1
		}
		return 0
	})
	out := make([]TopicInfo, 0, len(ts))
	for _, t := range ts {
		configs, parts := b.topicSnapshot(t)
		ti := TopicInfo{Name: t.name, ID: t.id.String(), Configs: configs,
			RetentionMs: b.topicInt(configs, "retention.ms"), RetentionBytes: b.topicInt(configs, "retention.bytes")}
		ti.CleanupPolicy, _ = b.topicConfigValue(configs, "cleanup.policy")
		for _, p := range parts {
			ti.Partitions = append(ti.Partitions, PartitionInfo{
				Partition: p.index, LogStartOffset: p.log.LogStartOffset(), HighWatermark: p.log.HighWatermark(),
				LogEndOffset: p.log.LogEndOffset(), SizeBytes: p.log.Size(),
			})
		}
		out = append(out, ti)
	}
	return out
}

// GroupInfo describes a consumer group: its members and, for every
// partition it committed, the committed offset and the lag.
type GroupInfo struct {
	Name         string
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberInfo
	Offsets      []GroupOffset // sorted by topic, partition
}

// MemberInfo is a group member and, for the consumer protocol, its
// assigned partitions.
type MemberInfo struct {
	ID, InstanceID, ClientID, Host string
	Assigned                       map[string][]int32
}

// GroupOffset is a group's position in one partition. Lag is the
// partition's high watermark minus Committed (0 when the commit is ahead),
// or -1 when the topic or partition no longer exists.
type GroupOffset struct {
	Topic         string
	Partition     int32
	Committed     int64
	HighWatermark int64
	Lag           int64
	Member        string // the assigned member's id, if any
}

// Groups returns every group sorted by name.
func (b *Broker) Groups() []GroupInfo {
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lresp := b.groups.ListGroups(lreq)
	var names []string
	for _, g := range lresp.Groups {
		names = append(names, g.Group)
	}
	slices.Sort(names)
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Version = 5
	dreq.Groups = names
	dresp := b.groups.DescribeGroups(dreq)
	out := make([]GroupInfo, 0, len(dresp.Groups))
	for _, dg := range dresp.Groups {
		gi := GroupInfo{Name: dg.Group, State: dg.State, ProtocolType: dg.ProtocolType, Protocol: dg.Protocol}
		owner := map[string]map[int32]string{}
		for _, m := range dg.Members {
			mi := MemberInfo{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
			if m.InstanceID != nil {
				mi.InstanceID = *m.InstanceID
			}
			if dg.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 {
				var a kmsg.ConsumerMemberAssignment
				if err := a.ReadFrom(m.MemberAssignment); err == nil {
					mi.Assigned = map[string][]int32{}
					for _, t := range a.Topics {
						mi.Assigned[t.Topic] = append(mi.Assigned[t.Topic], t.Partitions...)
						if owner[t.Topic] == nil {
							owner[t.Topic] = map[int32]string{}
						}
						for _, p := range t.Partitions {
							owner[t.Topic][p] = m.MemberID
						}
					}
				}
			}
			gi.Members = append(gi.Members, mi)
		}
		for topicName, ps := range b.groups.Committed(dg.Group) {
			var parts []*partition
			if t := b.lookupTopic(topicName); t != nil {
				parts = b.partitionsOf(t)
			}
			for p, off := range ps {
				o := GroupOffset{Topic: topicName, Partition: p, Committed: off, HighWatermark: -1, Lag: -1, Member: owner[topicName][p]}
				if p >= 0 && int(p) < len(parts) {
					o.HighWatermark = parts[p].log.HighWatermark()
					o.Lag = max(o.HighWatermark-off, 0)
				}
				gi.Offsets = append(gi.Offsets, o)
			}
		}
		slices.SortFunc(gi.Offsets, func(x, y GroupOffset) int {
			if x.Topic != y.Topic {
				if x.Topic < y.Topic {
					return -1
				}
				return 1
			}
			return int(x.Partition) - int(y.Partition)
		})
		out = append(out, gi)
	}
	return out
}

// Record is one record read for display.
type Record struct {
	Offset    int64
	Timestamp time.Time
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value (tombstone)
	Headers   []RecordHeader
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key   string
	Value []byte
}

// ErrUnknownPartition is returned by ReadRecords for a topic or partition
// that does not exist.
var ErrUnknownPartition = errors.New("unknown topic or partition")

// maxBrowseBytes bounds the bytes ReadRecords reads from the log per call.
const maxBrowseBytes = 4 << 20

// ReadRecords returns up to limit records of a partition from offset on
// (below the high watermark), decompressing batches as needed; control
// records are skipped. An offset below the log start is moved up to it.
//
// It returns ErrUnknownPartition, or the log's read errors.
func (b *Broker) ReadRecords(topicName string, partitionIndex int32, offset int64, limit int) ([]Record, error) {
	t := b.lookupTopic(topicName)
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPartition, topicName)
	}
	parts := b.partitionsOf(t)
	if partitionIndex < 0 || int(partitionIndex) >= len(parts) {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topicName, partitionIndex)
	}
	l := parts[partitionIndex].log
	offset = max(offset, l.LogStartOffset())
	var out []Record
	read := 0
	for len(out) < limit && read < maxBrowseBytes && offset < l.HighWatermark() {
		res, err := l.Read(offset, 1<<20, true)
		if err != nil {
			return out, err
		}
		buf, err := res.Slice.ReadAll()
		res.Slice.Release()
		if err != nil {
			return out, err
		}
		if len(buf) == 0 {
			break
		}
		read += len(buf)
		next, recs, err := parseBatches(buf, offset, limit-len(out))
		out = append(out, recs...)
		if err != nil {
			return out, err
		}
		if next <= offset {
			break
		}
		offset = next
	}
	return out, nil
}

// parseBatches decodes the whole batches in buf, returning records at or
// after from (at most limit) and the offset after the last whole batch.
func parseBatches(buf []byte, from int64, limit int) (int64, []Record, error) {
	next := from
	var out []Record
	for len(buf) >= storage.BatchHeaderSize && len(out) < limit {
		h, err := storage.ParseBatchHeader(buf)
		if err != nil {
			return next, out, err
		}
		if h.Size() > int64(len(buf)) {
			break
		}
		raw := buf[:h.Size()]
		buf = buf[h.Size():]
		next = h.LastOffset() + 1
		if h.Control() {
			continue
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return next, out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		recs := rb.Records
		if h.Codec() != storage.CodecNone {
			if recs, err = decompress(h.Codec(), recs); err != nil {
				return next, out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
		}
		for i := int32(0); i < rb.NumRecords && len(recs) > 0 && len(out) < limit; i++ {
			n, w := binary.Varint(recs)
			if w <= 0 || n < 0 || int64(w)+n > int64(len(recs)) {
				return next, out, fmt.Errorf("batch at offset %d: bad record length", h.BaseOffset)
			}
			var kr kmsg.Record
			if err := kr.ReadFrom(recs[:int64(w)+n]); err != nil {
				return next, out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
			recs = recs[int64(w)+n:]
			off := h.BaseOffset + int64(kr.OffsetDelta)
			if off < from {
				continue
			}
			ts := h.BaseTimestamp + kr.TimestampDelta64
			if h.LogAppendTime() {
				ts = h.MaxTimestamp
			}
			r := Record{Offset: off, Timestamp: time.UnixMilli(ts), Key: kr.Key, Value: kr.Value}
			for _, hd := range kr.Headers {
				r.Headers = append(r.Headers, RecordHeader{Key: hd.Key, Value: hd.Value})
			}
			out = append(out, r)
		}
		if len(out) >= limit {
			next = min(next, out[len(out)-1].Offset+1)
		}
	}
	return next, out, nil
}
