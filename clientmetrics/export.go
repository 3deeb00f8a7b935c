package clientmetrics

import (
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

var base64URL = base64.RawURLEncoding

// kind is how a series is exported.
type kind int

const (
	kindGauge kind = iota
	kindCounter
)

// point is one value of a pushed metric.
type point struct {
	name   string // Prometheus name
	kind   kind
	delta  bool // a delta sum: added to the series' total
	labels map[string]string
	value  float64
}

// series is one exported series of an instance.
type series struct {
	name   string
	kind   kind
	labels map[string]string
	value  float64
}

// decodeOTLP decodes an OTLP MetricsData payload (what Kafka's clients
// send; ExportMetricsServiceRequest has the same encoding) into points.
// The resource's attributes label every point.
func decodeOTLP(data []byte) ([]point, error) {
	var md metricspb.MetricsData
	if err := proto.Unmarshal(data, &md); err != nil {
		return nil, err
	}
	var out []point
	for _, rm := range md.GetResourceMetrics() {
		res := attrs(rm.GetResource().GetAttributes(), nil)
		for _, sm := range rm.GetScopeMetrics() {
			for _, mt := range sm.GetMetrics() {
				name := promName(mt.GetName())
				if name == "" {
					continue
				}
				switch d := mt.Data.(type) {
				case *metricspb.Metric_Gauge:
					for _, dp := range d.Gauge.GetDataPoints() {
						out = append(out, point{name: name, kind: kindGauge, labels: attrs(dp.GetAttributes(), res), value: numberValue(dp)})
					}
				case *metricspb.Metric_Sum:
					delta := d.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					k := kindGauge
					if d.Sum.GetIsMonotonic() {
						k = kindCounter
					}
					for _, dp := range d.Sum.GetDataPoints() {
						out = append(out, point{name: name, kind: k, delta: delta, labels: attrs(dp.GetAttributes(), res), value: numberValue(dp)})
					}
				case *metricspb.Metric_Histogram:
					delta := d.Histogram.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					for _, dp := range d.Histogram.GetDataPoints() {
						l := attrs(dp.GetAttributes(), res)
						out = append(out,
							point{name: name + "_count", kind: kindCounter, delta: delta, labels: l, value: float64(dp.GetCount())},
							point{name: name + "_sum", kind: kindCounter, delta: delta, labels: l, value: dp.GetSum()})
					}
				}
			}
		}
	}
	if len(out) == 0 && len(md.GetResourceMetrics()) == 0 && len(data) > 0 {
		return nil, errors.New("no resource metrics")
	}
	return out, nil
}

func numberValue(dp *metricspb.NumberDataPoint) float64 {
	switch v := dp.Value.(type) {
	case *metricspb.NumberDataPoint_AsDouble:
		return v.AsDouble
	case *metricspb.NumberDataPoint_AsInt:
		return float64(v.AsInt)
	}
	return 0
}

// attrs turns OTLP attributes into labels, over base.
func attrs(kvs []*commonpb.KeyValue, base map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, kv := range kvs {
		k := promName(kv.GetKey())
		if k == "" || k == "client_instance_id" || strings.HasPrefix(k, "__") {
			continue
		}
		out[k] = anyString(kv.GetValue())
	}
	return out
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}

// promName makes an OTLP name a Prometheus one: every character outside
// [a-zA-Z0-9_] becomes _, and a leading digit gets a _ before it. Names
// of the broker's own families (gregor_, go_, process_, promhttp_) are
// refused (""), so that no client can shadow them.
func promName(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	n := b.String()
	for _, p := range []string{"gregor_", "go_", "process_", "promhttp_"} {
		if strings.HasPrefix(n, p) {
			return ""
		}
	}
	return n
}

func seriesKey(name string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
	}
	return b.String()
}

// recordLocked stores an instance's points; a series past MaxSeries is
// dropped. Lock held.
func (m *Manager) recordLocked(inst *instance, points []point, _ time.Time) {
	if inst.series == nil {
		inst.series = map[string]*series{}
	}
	for _, p := range points {
		key := seriesKey(p.name, p.labels)
		s := inst.series[key]
		if s == nil {
			if m.series >= m.cfg.MaxSeries {
				m.dropped.Add(1)
				continue
			}
			s = &series{name: p.name, kind: p.kind, labels: p.labels}
			inst.series[key] = s
			m.series++
		}
		if p.delta {
			s.value += p.value
		} else {
			s.value = p.value
		}
	}
}

var droppedDesc = prometheus.NewDesc("gregor_client_metrics_series_dropped_total",
	"Series of pushed client metrics (KIP-714) not exported because the bound on series was reached.", nil, nil)
var instancesDesc = prometheus.NewDesc("gregor_client_metrics_instances",
	"Client instances (KIP-714) the broker keeps.", nil, nil)

// Describe implements prometheus.Collector: the pushed families are not
// known in advance, so only the fixed ones are described (an unchecked
// collector for the rest).
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	ch <- droppedDesc
	ch <- instancesDesc
}

// Collect implements prometheus.Collector. Within a family every series
// carries the union of the label names its series have (missing ones
// empty), so that families stay consistent across clients.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	type fam struct {
		kind   kind
		labels map[string]bool
		rows   []*series
		ids    []string
	}
	fams := map[string]*fam{}
	for id, inst := range m.instances {
		for _, s := range inst.series {
			f := fams[s.name]
			if f == nil {
				f = &fam{kind: s.kind, labels: map[string]bool{}}
				fams[s.name] = f
			}
			for k := range s.labels {
				f.labels[k] = true
			}
			f.rows = append(f.rows, &series{name: s.name, kind: s.kind, labels: s.labels, value: s.value})
			f.ids = append(f.ids, uuidString(id))
		}
	}
	n := len(m.instances)
	m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(m.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n))
	for name, f := range fams {
		names := append([]string{"client_instance_id"}, slices.Sorted(maps.Keys(f.labels))...)
		desc := prometheus.NewDesc(name, "Client metric "+name+" pushed with PushTelemetry (KIP-714).", names, nil)
		vt := prometheus.GaugeValue
		if f.kind == kindCounter {
			vt = prometheus.CounterValue
		}
		for i, s := range f.rows {
			vals := make([]string, len(names))
			vals[0] = f.ids[i]
			for j, k := range names[1:] {
				vals[j+1] = s.labels[k]
			}
			if mt, err := prometheus.NewConstMetric(desc, vt, s.value, vals...); err == nil {
				ch <- mt
			}
		}
	}
}
