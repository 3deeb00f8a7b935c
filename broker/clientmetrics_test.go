package broker

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// TestClientMetrics_SubscribePushList: a subscription set with
// IncrementalAlterConfigs is listed by ListConfigResources, survives a
// restart, is what GetTelemetrySubscriptions asks for, and a gzip
// compressed OTLP push is exported on the broker's registry.
func TestClientMetrics_SubscribePushList(t *testing.T) {
	dir := t.TempDir()
	b, addr := startBroker(t, dir, nil)
	c := dialRaw(t, addr)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "sub"
	for k, v := range map[string]string{"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"} {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, cfg)
	}
	alter.Resources = append(alter.Resources, res)
	c.send(1, alter)
	aresp := alter.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	c.recv(1, aresp)
	if aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", aresp.Resources[0])
	}
	b.Close()
	b, addr = startBroker(t, dir, nil)
	c = dialRaw(t, addr)

	list := kmsg.NewPtrListConfigResourcesRequest()
	list.Version = 1
	list.ResourceTypes = []int8{16}
	c.send(2, list)
	lresp := list.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	c.recv(2, lresp)
	if lresp.ErrorCode != 0 || len(lresp.ConfigResources) != 1 || lresp.ConfigResources[0].Name != "sub" || lresp.ConfigResources[0].Type != 16 {
		t.Fatalf("list: %+v", lresp)
	}

	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	c.send(3, get)
	gresp := get.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	c.recv(3, gresp)
	if gresp.ErrorCode != 0 || gresp.ClientInstanceID == ([16]byte{}) || gresp.PushIntervalMillis != 1000 || strings.Join(gresp.RequestedMetrics, ",") != "org.apache.kafka.producer." {
		t.Fatalf("get: %+v", gresp)
	}
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "org.apache.kafka.producer.record.send.total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			DataPoints:             []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 7}}}}}},
	}}}}}}
	raw, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(raw)
	w.Close()
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID, push.CompressionType, push.Metrics = gresp.ClientInstanceID, gresp.SubscriptionID, 1, gz.Bytes()
	c.send(4, push)
	presp := push.ResponseKind().(*kmsg.PushTelemetryResponse)
	c.recv(4, presp)
	if presp.ErrorCode != 0 {
		t.Fatalf("push: error %d", presp.ErrorCode)
	}
	if n, err := testutil.GatherAndCount(b.Metrics(), "org_apache_kafka_producer_record_send_total"); err != nil || n != 1 {
		t.Fatalf("%d series (%v)", n, err)
	}
}
