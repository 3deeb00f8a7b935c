package quota

import (
	"testing"
	"time"

	"github.com/gregor-broker/gregor/metastore"
)

// TestRateSensor_KafkaWindows checks the sampled rate and throttle time
// against Kafka's arithmetic with its defaults (11 samples of 1 s, so a
// rate is taken over at least 10 s).
func TestRateSensor_KafkaWindows(t *testing.T) {
	const n, w, bound = 11, 1000, 500.0
	r := &Sensor{}
	// 400 bytes a second for 10 s stays within 500/s.
	for i := range int64(10) {
		if got := r.record(400, i*1000, n, w, bound, true); got != 0 {
			t.Fatalf("second %d: throttle %d", i, got)
		}
	}
	// 2300 more at 10 s: 6300 bytes over the 10 s since the oldest
	// sample is 630/s; (630-500)/500 × 10 s = 2.6 s.
	if got := r.record(2300, 10000, n, w, bound, true); got != 2600 {
		t.Fatalf("throttle %d, want 2600", got)
	}
	if rate, _ := r.measure(10000, n, w); rate != 630 {
		t.Fatalf("rate %v, want 630", rate)
	}
	// Samples older than 11 s are dropped: 100 bytes after a long pause
	// is 100 over the minimum window of 10 s.
	if got := r.record(100, 60000, n, w, bound, true); got != 0 {
		t.Fatalf("after a pause: throttle %d", got)
	}
	if rate, _ := r.measure(60000, n, w); rate != 10 {
		t.Fatalf("rate after a pause %v, want 10", rate)
	}

	// A burst on a fresh rate is spread over the minimum window: 6000
	// bytes at once is 600/s, throttled (600-500)/500 × 10 s.
	if got := (&Sensor{}).record(6000, 0, n, w, bound, true); got != 2000 {
		t.Fatalf("burst throttle %d, want 2000", got)
	}

	// Request quotas cap their throttle at one window.
	m := New(Config{Samples: n, WindowMs: w})
	user := "u"
	m.Use(metastore.Memory(metastore.Records{"users/u": []byte(`{"entity":{"user":"u"},"values":{"request_percentage":1}}`)}))
	set := m.For(m.Index(), user, "c")
	if bound, ok := set.Bound(Request); !ok || bound != 1 {
		t.Fatalf("request bound %v %v, want 1", bound, ok)
	}
	if got := m.Record(set, Request, 1000, time.UnixMilli(0)); got != w {
		t.Fatalf("request throttle %d, want %d", got, w)
	}
}

// TestQuotaIndex_Precedence checks that the most specific entity setting a
// key wins, per key, with the tags of the rate it shares.
func TestQuotaIndex_Precedence(t *testing.T) {
	name := func(s string) *string { return &s }
	recs := map[string]Record{}
	add := func(v float64, key string, e Entity) {
		recs[e.ID()] = Record{Entity: e, Values: map[string]float64{key: v}}
	}
	add(1, ProducerByteRate, Entity{User: name("u"), ClientID: name("c")})
	add(2, ProducerByteRate, Entity{User: name("u"), ClientID: nil})
	add(3, ProducerByteRate, Entity{User: name("u")})
	add(4, ProducerByteRate, Entity{User: nil, ClientID: name("c")})
	add(5, ProducerByteRate, Entity{User: nil, ClientID: nil})
	add(6, ProducerByteRate, Entity{User: nil})
	add(7, ProducerByteRate, Entity{ClientID: name("c")})
	add(8, ProducerByteRate, Entity{ClientID: nil})
	recs["clients/<default>"].Values[ConsumerByteRate] = 9
	levels := []string{"users/u/clients/c", "users/u/clients/<default>", "users/u", "users/<default>/clients/c", "users/<default>/clients/<default>", "users/<default>", "clients/c", "clients/<default>"}
	tags := [][2]string{{"u", "c"}, {"u", "c"}, {"u", ""}, {"u", "c"}, {"u", "c"}, {"u", ""}, {"", "c"}, {"", "c"}}
	for i := range levels {
		ix := BuildIndex(recs)
		bound, tu, tc, ok := ix.resolve(Produce, "u", "c")
		if !ok || bound != float64(i+1) || tu != tags[i][0] || tc != tags[i][1] {
			t.Fatalf("level %d: %v %q %q %v", i, bound, tu, tc, ok)
		}
		// The consumer quota comes from its own most specific entity.
		if bound, tu, tc, _ := ix.resolve(Fetch, "u", "c"); bound != 9 || tu != "" || tc != "c" {
			t.Fatalf("fetch bound %v %q %q", bound, tu, tc)
		}
		delete(recs, levels[i])
	}
	if len(recs) != 0 {
		t.Fatalf("ids are not the ones expected: %v", recs)
	}
	if ix := BuildIndex(map[string]Record{"ips/<default>": {Entity: Entity{IP: nil}, Values: map[string]float64{ConnectionCreationRate: 1}}}); ix != nil {
		t.Fatal("an index with no enforced quota must be nil (the hot path checks nil)")
	}
}
