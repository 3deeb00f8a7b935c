package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/gregor-broker/gregor/link"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// produceAndCommit writes n records to topic partition 0 and commits
// committed for group, so the group lags by n-committed.
func produceAndCommit(t *testing.T, b *gregortest.Broker, topic string, n int, group string, committed int64) {
	t.Helper()
	ctx := testCtx(t)
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: []byte("k"), Value: []byte("value-" + strings.Repeat("x", i%5))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if group == "" {
		return
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed})
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 1})
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
}

func scrape(t *testing.T, b *gregortest.Broker) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, "http://"+b.HTTPAddr()+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// value returns the value of the metric with the given labels (a subset),
// or -1 when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	mf := mfs[name]
	if mf == nil {
		return -1
	}
next:
	for _, m := range mf.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetrics_ScrapedAfterProducing produces 10 records over two
// partitions, commits group offsets, consumes everything, and checks the
// scraped values.
func TestMetrics_ScrapedAfterProducing(t *testing.T) {
	b := gregortest.Start(t, gregortest.HTTP(), gregortest.Topic("m", 2, nil))
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, "http://"+b.HTTPAddr()+path); code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	produceAndCommit(t, b, "m", 10, "g", 2)
	ctx := testCtx(t)
	cons := newClient(t, b.Addr(), kgo.ConsumeTopics("m"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 10 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", got, err)
		}
		got += fs.NumRecords()
	}

	mfs := scrape(t, b)
	checks := []struct {
		name    string
		labels  []string
		want    float64
		atLeast bool
	}{
		{"gregor_topic_records_in_total", []string{"topic", "m"}, 10, false},
		{"gregor_topic_bytes_in_total", []string{"topic", "m"}, 100, true},
		{"gregor_topic_bytes_out_total", []string{"topic", "m"}, 100, true},
		{"gregor_partition_high_watermark", []string{"topic", "m", "partition", "0"}, 5, false},
		{"gregor_partition_log_end_offset", []string{"topic", "m", "partition", "1"}, 5, false},
		{"gregor_partition_log_start_offset", []string{"topic", "m", "partition", "0"}, 0, false},
		{"gregor_partition_size_bytes", []string{"topic", "m", "partition", "0"}, 61, true},
		{"gregor_group_lag", []string{"group", "g", "topic", "m", "partition", "0"}, 3, false},
		{"gregor_group_lag", []string{"group", "g", "topic", "m", "partition", "1"}, 4, false},
		{"gregor_group_committed_offset", []string{"group", "g", "topic", "m", "partition", "0"}, 2, false},
		{"gregor_requests_total", []string{"api", "Produce"}, 1, true},
		{"gregor_request_duration_seconds", []string{"api", "Fetch"}, 1, true},
		{"gregor_active_connections", nil, 1, true},
		{"go_goroutines", nil, 1, true},
	}
	for _, c := range checks {
		v := value(mfs, c.name, c.labels...)
		if c.atLeast && v < c.want || !c.atLeast && v != c.want {
			t.Errorf("%s%v = %v, want %s%v", c.name, c.labels, v, map[bool]string{true: "≥ "}[c.atLeast], c.want)
		}
	}
}

// TestFaults_OverHTTP injects a Produce error through /admin/faults; a
// franz-go producer sees it (its request fails with the code when retries
// are off) and, with retries, gets through once the fault is used up.
func TestFaults_OverHTTP(t *testing.T) {
	b := gregortest.Start(t, gregortest.HTTP(), gregortest.Topic("f", 1, nil))
	post := func(body string) (int, string) {
		resp, err := httpClient.Post("http://"+b.HTTPAddr()+"/admin/faults", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := post(`{"api":"Produce","topic":"f","partition":0,"count":1,"error":"NOT_LEADER_OR_FOLLOWER"}`); code != 200 {
		t.Fatalf("inject: %d %s", code, body)
	}
	if code, _ := post(`{"api":"Nope","error":"NOT_LEADER_OR_FOLLOWER"}`); code != 400 {
		t.Fatalf("unknown api accepted: %d", code)
	}
	code, body := get(t, "http://"+b.HTTPAddr()+"/admin/faults")
	var list []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 {
		t.Fatalf("list faults: %d %s", code, body)
	}
	ctx := testCtx(t)
	noRetry := newClient(t, b.Addr(), kgo.RecordRetries(0), kgo.RequestRetries(0))
	err := noRetry.ProduceSync(ctx, &kgo.Record{Topic: "f", Value: []byte("x")}).FirstErr()
	if err != kerr.NotLeaderForPartition {
		t.Fatalf("produce with the fault: %v, want NOT_LEADER_FOR_PARTITION", err)
	}
	// A permanent fault, cleared over HTTP while a retrying producer waits.
	if code, body := post(`{"api":0,"error":6,"count":0}`); code != 200 {
		t.Fatalf("inject: %d %s", code, body)
	}
	cl := newClient(t, b.Addr(), kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "f", Value: []byte("y")}).FirstErr() }()
	// Clear the fault only once the producer has retried through it.
	deadline := time.Now().Add(10 * time.Second)
	for hits := 0; hits < 2; {
		code, body := get(t, "http://"+b.HTTPAddr()+"/admin/faults")
		var list []broker.FaultStatus
		if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 {
			t.Fatalf("list faults: %d %s", code, body)
		}
		if hits = list[0].Hits; hits >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the permanent fault was hit %d times in 10s; want the producer to retry through it", hits)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the producer finished while every Produce failed: %v", err)
	default:
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://"+b.HTTPAddr()+"/admin/faults", nil)
	if resp, err := httpClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("clear faults: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("retrying producer: %v", err)
	}
	if recs, err := b.ReadRecords("f", 0, 0, 10); err != nil || len(recs) != 1 {
		t.Fatalf("f-0 holds %d records (%v), want 1", len(recs), err)
	}
}

func TestLinks_OverHTTP(t *testing.T) {
	src := gregortest.Start(t, gregortest.Topic("t", 1, nil))
	dst := gregortest.Start(t, gregortest.HTTP())
	ctx := testCtx(t)
	if err := newClient(t, src.Addr()).ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("a")}, &kgo.Record{Topic: "t", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + dst.HTTPAddr() + "/admin/links"
	call := func(method, url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := call("POST", base, `{"name":"bad name","source":["`+src.Addr()+`"],"topics":"t"}`); code != 400 {
		t.Fatalf("create with a bad name: %d %s", code, body)
	}
	if code, body := call("POST", base, `{"name":"mig","source":["`+src.Addr()+`"],"topics":"t","sync_interval_ms":100}`); code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := call("GET", base, ""); code != 200 || !strings.Contains(body, `"name":"mig"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := call("GET", base+"/mig", "")
		var st link.Status
		if code == 200 && json.Unmarshal([]byte(body), &st) == nil && len(st.Mirrors) == 1 && len(st.Mirrors[0].Partitions) == 1 &&
			st.Mirrors[0].Partitions[0].MirrorEnd == 2 && st.Mirrors[0].Partitions[0].Lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed t-0 mirrored to 2: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The console's page: the link, and its partition with its lag.
	if code, body := get(t, "http://"+dst.HTTPAddr()+"/links"); code != 200 || !strings.Contains(body, `data-link="mig"`) ||
		!strings.Contains(body, `data-partition="t-0"`) || !strings.Contains(body, `<td class="num lag">0</td>`) || !strings.Contains(body, "MIRRORING") {
		t.Fatalf("console /links: %d\n%s", code, body)
	}
	if code, body := call("DELETE", base+"/mig", ""); code != 400 || !strings.Contains(body, "MIRRORING") {
		t.Fatalf("delete with a mirror topic: %d %s", code, body)
	}
	if code, body := call("POST", base+"/mig/promote", ""); code != 200 || body != `{"promoted":["t"]}` {
		t.Fatalf("promote: %d %s", code, body)
	}
	if code, body := call("DELETE", base+"/mig", ""); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := call("GET", base+"/mig", ""); code != 404 {
		t.Fatalf("status after delete: %d %s", code, body)
	}
}
