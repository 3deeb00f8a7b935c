package clientmetrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

func TestValidate_KafkasErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		configs map[string]string
		kind    error
		msg     string
	}{
		{"", map[string]string{"metrics": "x"}, ErrInvalidRequest, "Subscription name can't be empty"},
		{"s", map[string]string{"interval.ms": "50"}, ErrInvalidRequest, "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"interval.ms": "abc"}, ErrInvalidConfig, "Invalid value abc for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"nope": "1"}, ErrInvalidRequest, "Unknown client metrics configuration: nope"},
		{"s", map[string]string{"match": "foo=bar"}, ErrInvalidConfig, "Illegal client matching pattern: foo=bar"},
		{"s", map[string]string{"match": "client_id"}, ErrInvalidConfig, "Illegal client matching pattern: client_id"},
		{"s", map[string]string{"match": "client_id=[["}, ErrInvalidConfig, "Illegal client matching pattern: client_id=[["},
		{"s", map[string]string{"match": "client_id=abc.*,client_source_port=80", "metrics": "*", "interval.ms": "1000"}, nil, ""},
	} {
		_, err := Validate(c.name, c.configs)
		if c.kind == nil {
			if err != nil {
				t.Errorf("%v: %v", c.configs, err)
			}
			continue
		}
		if !errors.Is(err, c.kind) || err.Error() != c.msg {
			t.Errorf("%q %v: %v, want %v %q", c.name, c.configs, err, c.kind, c.msg)
		}
	}
}

func otlpPayload(t *testing.T, name string, v float64) []byte {
	t.Helper()
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "client_software_name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "apache-kafka-java"}}},
		}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
				{Attributes: []*commonpb.KeyValue{{Key: "node.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "1"}}}},
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}},
			}}}},
		}}},
	}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestManager_SubscribePushExport: a matching subscription sets what a
// client is asked for; pushes are throttled, checked and exported, and a
// client's series go when it stops pushing.
func TestManager_SubscribePushExport(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New(Config{Now: func() time.Time { return now }, Expiry: time.Minute, MaxSeries: 2})
	ctx := context.Background()
	set := func(name string, cfg map[string]string) {
		t.Helper()
		if err := m.Alter(ctx, name, false, func(map[string]string) (map[string]string, error) { return cfg, nil }); err != nil {
			t.Fatal(err)
		}
	}
	set("java", map[string]string{"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_software_name=apache-kafka-java"})
	set("other", map[string]string{"metrics": "x.", "match": "client_id=nobody"})
	if got := m.Names(); strings.Join(got, ",") != "java,other" {
		t.Fatalf("names %v", got)
	}
	java := Client{ClientID: "p1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0", SourceAddress: "127.0.0.1", SourcePort: 5000}
	sub, code := m.GetSubscriptions([16]byte{}, java)
	if code != 0 || sub.ClientInstanceID == ([16]byte{}) || sub.PushIntervalMs != 1000 || strings.Join(sub.RequestedMetrics, ",") != "org.apache.kafka.producer." || !sub.DeltaTemporality || sub.TelemetryMaxBytes != DefaultTelemetryMaxBytes {
		t.Fatalf("subscription %+v code %d", sub, code)
	}
	if _, code := m.GetSubscriptions(sub.ClientInstanceID, java); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a second GetTelemetrySubscriptions at once: %d", code)
	}
	push := Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, Metrics: otlpPayload(t, "org.apache.kafka.producer.record.send.rate", 2.5)}
	if code, msg := m.Push(push, java); code != 0 {
		t.Fatalf("push: %d %s", code, msg)
	}
	if code, _ := m.Push(push, java); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a push at once after another: %d", code)
	}
	now = now.Add(time.Second)
	if code, _ := m.Push(Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID + 1}, java); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("another subscription id: %d", code)
	}
	now = now.Add(time.Second)
	big := push
	big.Metrics = make([]byte, DefaultTelemetryMaxBytes+1)
	if code, _ := m.Push(big, java); code != kerr.TelemetryTooLarge.Code {
		t.Fatalf("too large: %d", code)
	}
	now = now.Add(time.Second)
	bad := push
	bad.Metrics = []byte{0xff, 0xff, 0xff}
	if code, _ := m.Push(bad, java); code != kerr.InvalidRecord.Code {
		t.Fatalf("not OTLP: %d", code)
	}
	if code, _ := m.Push(Push{}, java); code != kerr.InvalidRequest.Code {
		t.Fatalf("zero instance id: %d", code)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	want := `
# HELP org_apache_kafka_producer_record_send_rate Client metric org_apache_kafka_producer_record_send_rate pushed with PushTelemetry (KIP-714).
# TYPE org_apache_kafka_producer_record_send_rate gauge
org_apache_kafka_producer_record_send_rate{client_instance_id="` + uuidString(sub.ClientInstanceID) + `",client_software_name="apache-kafka-java",node_id="1"} 2.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "org_apache_kafka_producer_record_send_rate"); err != nil {
		t.Fatal(err)
	}
	// A subscription change is seen at once, with a new subscription id.
	set("java", map[string]string{"metrics": "*", "interval.ms": "2000"})
	now = now.Add(2 * time.Second)
	sub2, code := m.GetSubscriptions(sub.ClientInstanceID, java)
	if code != 0 || sub2.SubscriptionID == sub.SubscriptionID || strings.Join(sub2.RequestedMetrics, ",") != "*" || sub2.PushIntervalMs != 2000 {
		t.Fatalf("after the change: %+v %d", sub2, code)
	}
	// The series are bounded: MaxSeries 2.
	now = now.Add(3 * time.Second)
	for _, n := range []string{"a.b", "c.d"} {
		now = now.Add(3 * time.Second)
		p := push
		p.SubscriptionID, p.Metrics = sub2.SubscriptionID, otlpPayload(t, n, 1)
		if code, msg := m.Push(p, java); code != 0 {
			t.Fatalf("push %s: %d %s", n, code, msg)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "a_b", "c_d", "org_apache_kafka_producer_record_send_rate"); err != nil || n != 2 {
		t.Fatalf("%d series (%v), want 2: the bound", n, err)
	}
	if m.dropped.Load() != 1 {
		t.Fatalf("dropped %d", m.dropped.Load())
	}
	// Silent for longer than the expiry: the instance and its series go.
	now = now.Add(2 * time.Minute)
	if n, _ := testutil.GatherAndCount(reg, "a_b", "org_apache_kafka_producer_record_send_rate"); n != 0 || m.Instances() != 0 {
		t.Fatalf("%d series, %d instances after the expiry", n, m.Instances())
	}
	// Removing every config removes the subscription.
	set("other", map[string]string{})
	if got := m.Names(); strings.Join(got, ",") != "java" {
		t.Fatalf("names %v", got)
	}
}
