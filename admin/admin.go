// Package admin serves a broker's admin HTTP listener: Prometheus metrics,
// health and readiness probes, fault injection and the web console.
//
// # Endpoints
//
//	GET    /healthz                       200 "ok" while the process serves HTTP
//	GET    /readyz                        200 once the broker listens, 503 otherwise
//	GET    /metrics                       Prometheus text format
//	GET    /admin/faults                  active faults (JSON)
//	POST   /admin/faults                  inject a fault (JSON, see faultRequest)
//	DELETE /admin/faults[/{id}]           clear all faults, or one
//	POST   /admin/groups/{group}/rebalance  force a group rebalance
//	GET    /                              console: topics and groups
//	GET    /topics/{topic}                console: partitions
//	GET    /topics/{topic}/{partition}    console: records from ?offset=
//	GET    /groups/{group}                console: members, offsets, lag chart
//	GET    /brokers                       console: brokers, partitions' replicas and ISR
//
// The console keeps a bounded history (see History) sampled in the
// background, drawn as SVG charts; /metrics adds gregor_group_lag_growing
// from it.
//
// It is off by default in the gregor binary (--http ADDR turns it on) and
// has no authentication: bind it to loopback or a private network.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler returns the admin HTTP handler of b with the default Options.
// Its history sampler stops when b is closed.
func Handler(b *broker.Broker) http.Handler { return New(b, Options{}) }

// Options configure New; zero values are the defaults.
type Options struct {
	// SampleInterval is the time between history samples
	// (DefaultSampleInterval); negative: none are taken but by Sample.
	SampleInterval time.Duration
	// HistorySamples is the number of samples kept (DefaultHistorySamples).
	HistorySamples int
	// MaxSeries bounds the series the history holds (DefaultMaxSeries).
	MaxSeries int
	// LagGrowingSamples is N: a group whose lag has only grown over the
	// last N sample intervals is flagged (DefaultLagGrowingSamples).
	LagGrowingSamples int
	// Now is the clock of the samples' times (time.Now).
	Now func() time.Time
}

// Server is the admin HTTP handler with the console's history.
type Server struct {
	b     *broker.Broker
	mux   *http.ServeMux
	hist  *History
	smp   sampler
	now   func() time.Time
	growN int
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// New returns the admin handler of b and starts its history sampler
// (unless o.SampleInterval < 0), which runs until Close or b's close.
func New(b *broker.Broker, o Options) *Server {
	if o.SampleInterval == 0 {
		o.SampleInterval = DefaultSampleInterval
	}
	if o.HistorySamples <= 0 {
		o.HistorySamples = DefaultHistorySamples
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = DefaultMaxSeries
	}
	if o.LagGrowingSamples <= 0 {
		o.LagGrowingSamples = DefaultLagGrowingSamples
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{b: b, hist: NewHistory(o.HistorySamples, o.MaxSeries), now: o.Now, growN: o.LagGrowingSamples,
		stop: make(chan struct{}), done: make(chan struct{})}
	s.mux = s.routes()
	if o.SampleInterval > 0 {
		go s.run(o.SampleInterval)
	} else {
		close(s.done)
	}
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// History returns the console's history.
func (s *Server) History() *History { return s.hist }

// Sample takes one history sample now.
func (s *Server) Sample() {
	s.hist.Record(s.now(), s.smp.sample(s.b, s.now()))
}

// Close stops the sampler.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *Server) run(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.b.Done():
			return
		case <-t.C:
			s.Sample()
		}
	}
}

// LagGrowing returns the groups whose total lag has only grown over the
// last LagGrowingSamples samples, sorted.
func (s *Server) LagGrowing() []string {
	var out []string
	for _, name := range s.hist.Names(seriesGroupLag) {
		if vals, _ := s.hist.Values(name); growing(vals, s.growN) {
			out = append(out, strings.TrimPrefix(name, seriesGroupLag+"/"))
		}
	}
	return out
}

func (s *Server) routes() *http.ServeMux {
	b := s.b
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !b.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	runtime := prometheus.NewRegistry()
	runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), lagGrowingCollector{s})
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{b.Metrics(), runtime}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))

	mux.HandleFunc("GET /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.Faults())
	})
	mux.HandleFunc("POST /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		var fr faultRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fr); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		f, err := fr.fault()
		if err == nil {
			var id int
			if id, err = b.InjectFault(f); err == nil {
				writeJSON(w, http.StatusOK, map[string]int{"id": id})
				return
			}
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	})
	mux.HandleFunc("DELETE /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		b.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /admin/faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad fault id"})
			return
		}
		b.ClearFaults(id)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/groups/{group}/rebalance", func(w http.ResponseWriter, r *http.Request) {
		if err := b.ForceRebalance(r.PathValue("group")); err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.registerConsole(mux)
	return mux
}

var descLagGrowing = prometheus.NewDesc("gregor_group_lag_growing",
	"1 when the group's total lag has only grown over the console's last N history samples, 0 otherwise.", []string{"group"}, nil)

// lagGrowingCollector exports the front page's lag-growing flag.
type lagGrowingCollector struct{ s *Server }

func (c lagGrowingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descLagGrowing }

func (c lagGrowingCollector) Collect(ch chan<- prometheus.Metric) {
	flagged := map[string]bool{}
	for _, g := range c.s.LagGrowing() {
		flagged[g] = true
	}
	for _, name := range c.s.hist.Names(seriesGroupLag) {
		g := strings.TrimPrefix(name, seriesGroupLag+"/")
		v := 0.0
		if flagged[g] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descLagGrowing, prometheus.GaugeValue, v, g)
	}
}

// faultRequest is the JSON body of POST /admin/faults, e.g.
//
//	{"api": "Produce", "topic": "orders", "partition": 0, "count": 3,
//	 "error": "NOT_LEADER_OR_FOLLOWER"}
//	{"api": "Fetch", "latency_ms": 500, "count": 0}
//	{"api": 1, "drop_connection": true, "count": 1}
//
// api is a name (Produce, Fetch, JoinGroup, …) or a key number; error a
// Kafka error name or code; partition defaults to any (-1); count 0 means
// until cleared.
type faultRequest struct {
	API            json.RawMessage `json:"api"`
	Topic          string          `json:"topic"`
	Partition      *int32          `json:"partition"`
	Count          int             `json:"count"`
	Error          json.RawMessage `json:"error"`
	LatencyMs      int64           `json:"latency_ms"`
	DropConnection bool            `json:"drop_connection"`
}

func (fr faultRequest) fault() (broker.Fault, error) {
	f := broker.Fault{Topic: fr.Topic, Partition: -1, Count: fr.Count, Latency: time.Duration(fr.LatencyMs) * time.Millisecond, DropConnection: fr.DropConnection}
	if fr.Partition != nil {
		f.Partition = *fr.Partition
	}
	key, err := APIKey(rawString(fr.API))
	if err != nil {
		return f, err
	}
	f.APIKey = key
	if len(fr.Error) > 0 {
		if f.ErrorCode, err = ErrorCode(rawString(fr.Error)); err != nil {
			return f, err
		}
	}
	if f.ErrorCode == 0 && f.Latency <= 0 && !f.DropConnection {
		return f, errors.New("a fault needs an error, a latency or drop_connection")
	}
	return f, nil
}

func rawString(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(m))
}

// APIKey parses an API name (Produce, offset_commit, OffsetCommit) or key
// number.
func APIKey(s string) (int16, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return int16(n), nil
	}
	want := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	for k := int16(0); k < 200; k++ {
		if name := kmsg.NameForKey(k); name != "" && strings.ToLower(name) == want {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown api %q", s)
}

// errorAliases are Kafka's current names for errors kerr knows by older ones.
var errorAliases = map[string]string{
	"NOT_LEADER_OR_FOLLOWER": "NOT_LEADER_FOR_PARTITION",
}

// ErrorCode parses a Kafka error name (NOT_LEADER_OR_FOLLOWER) or code.
func ErrorCode(s string) (int16, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return int16(n), nil
	}
	want := strings.ToUpper(s)
	if a, ok := errorAliases[want]; ok {
		want = a
	}
	for c := int16(-1); c < 200; c++ {
		if e, ok := kerr.ErrorForCode(c).(*kerr.Error); ok && e.Message == want {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown error %q", s)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
