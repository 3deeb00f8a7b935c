// Package admin serves a broker's admin HTTP listener: Prometheus metrics,
// health and readiness probes, fault injection and the web console.
//
// # Endpoints
//
//	GET    /healthz                       200 "ok" while the process serves HTTP
//	GET    /readyz                        200 once the broker listens, 503 otherwise (and while its log dir is offline)
//	GET    /metrics                       Prometheus text format
//	GET    /admin/faults                  active faults (JSON)
//	POST   /admin/faults                  inject a fault (JSON, see faultRequest)
//	DELETE /admin/faults[/{id}]           clear all faults, or one
//	POST   /admin/groups/{group}/rebalance  force a group rebalance
//	GET    /                              console: topics and groups
//	GET    /topics/{topic}                console: partitions
//	GET    /topics/{topic}/{partition}    console: browse and search records (browse.go)
//	GET    /topics/{topic}/records        the same, ?partition=
//	GET    /groups/{group}                console: members, offsets, lag chart
//	GET    /brokers                       console: brokers (live, and DOWN ones), partitions' replicas and ISR
//	GET    /schemas                       console: the schema registry's subjects, levels and modes (schemas.go)
//	GET    /schemas/{subject}             console: a subject's versions and a version's schema text (?version=N)
//
// In a cluster the console shows the whole cluster from any node: the
// groups of every coordinator, with committed offsets asked of it and lag
// against high watermarks asked of the partitions' leaders
// (broker.ClusterGroups, ClusterGroup), every partition of a topic with
// its leadership and, for one with no replica here, the offsets of its
// leader (broker.ClusterTopics), and the brokers that are replicas or
// voters but not live (ClusterInfo.Down). These requests are bounded by
// clusterTimeout; what did not answer is listed on the page. Every page
// has a health line when partitions are under-replicated or offline or
// brokers are down.
//
// The console keeps a bounded history (see History) sampled in the
// background, drawn as SVG charts; /metrics adds gregor_group_lag_growing
// and gregor_group_stalled (stopped committing) from it. The history is
// this broker's: the lag of the groups it coordinates and the throughput
// of the partitions it holds.
//
// With the broker's schema registry on (schema.registry.listeners), the
// Schemas pages show its subjects and the record browser decodes keys and
// values in Confluent's wire format through it (Avro, Protobuf, JSON
// Schema, into JSON); both read this broker's view of _schemas
// (broker.Broker.SchemaRegistry, through the interface schemaRegistry).
//
//	GET    /groups/{group}/reset          console: offset reset preview (dry run)
//	POST   /groups/{group}/reset          console: reset offsets (confirm)
//	POST   /groups/{group}/delete         console: delete a group
//	POST   /topics                        console: create a topic
//	POST   /topics/{topic}/config         console: set or delete a topic config
//	POST   /topics/{topic}/produce        console: produce a test record
//	POST   /topics/{topic}/delete-records console: delete records up to an offset
//
// It is off by default in the gregor binary (--http ADDR turns it on).
// TLS, authentication (HTTP Basic against the SCRAM users, client
// certificates) and authorization by the broker's ACLs are configured with
// admin.* broker properties: see security.go. Without them it has no
// authentication: bind it to loopback or a private network.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/link"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	// StalledSamples is N: a group whose committed offsets have not moved
	// over the last N sample intervals while its lag stayed above zero is
	// flagged as stopped committing (DefaultStalledSamples).
	StalledSamples int
	// ScanRecords and ScanBytes bound one record browsing request: the
	// records, and bytes of keys, values and headers, it scans
	// (DefaultScanRecords, DefaultScanBytes).
	ScanRecords int
	ScanBytes   int64
	// Now is the clock of the samples' times (time.Now).
	Now func() time.Time
	// Logger receives the audit log of console actions (slog.Default()).
	Logger *slog.Logger
}

// Server is the admin HTTP handler with the console's history.
type Server struct {
	b      *broker.Broker
	mux    *http.ServeMux
	hist   *History
	smp    sampler
	now    func() time.Time
	growN  int
	stallN int
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	handler http.Handler // mux behind the security layer
	log     *slog.Logger
	auth    authConfig
	csrfKey []byte
	actions *prometheus.CounterVec

	scanRecords int // browse bounds
	scanBytes   int64
}

// New returns the admin handler of b, configured by b's admin.*
// properties (security.go), and starts its history sampler (unless
// o.SampleInterval < 0), which runs until Close or b's close. An error
// means an admin.* property is invalid or its certificates unreadable.
func New(b *broker.Broker, o Options) (*Server, error) {
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
	if o.StalledSamples <= 0 {
		o.StalledSamples = DefaultStalledSamples
	}
	if o.ScanRecords <= 0 {
		o.ScanRecords = DefaultScanRecords
	}
	if o.ScanBytes <= 0 {
		o.ScanBytes = DefaultScanBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	auth, err := loadAuthConfig(b, adminProps(b))
	if err != nil {
		return nil, err
	}
	if auth.basic && auth.tls == nil {
		o.Logger.Warn("admin.auth=basic over plain HTTP sends passwords in the clear; set admin.ssl.keystore.location")
	}
	s := &Server{b: b, hist: NewHistory(o.HistorySamples, o.MaxSeries), now: o.Now, growN: o.LagGrowingSamples,
		stop: make(chan struct{}), done: make(chan struct{}), log: o.Logger, auth: auth, csrfKey: newCSRFKey(),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gregor_admin_actions_total",
			Help: "Console actions by action and result (ok, error, denied, refused)."}, []string{"action", "result"})}
	s.scanRecords, s.scanBytes, s.stallN = o.ScanRecords, o.ScanBytes, o.StalledSamples
	s.mux = s.routes()
	s.handler = s.secure(s.mux)
	if o.SampleInterval > 0 {
		go s.run(o.SampleInterval)
	} else {
		close(s.done)
	}
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

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

// Stalled returns the groups that stopped committing: their committed
// offsets have not moved over the last StalledSamples samples while
// their lag stayed above zero, sorted. Unlike LagGrowing it flags a group
// whose lag is steady (nothing new is produced) and not one that commits
// too slowly to keep up.
func (s *Server) Stalled() []string {
	var out []string
	for _, name := range s.hist.Names(seriesCommitted) {
		g := strings.TrimPrefix(name, seriesCommitted+"/")
		committed, _ := s.hist.Values(name)
		lag, _ := s.hist.Values(key(seriesGroupLag, g))
		if stalled(committed, lag, s.stallN) {
			out = append(out, g)
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
			msg := "not ready"
			if err := b.LogDirError(); err != nil {
				msg = "not ready: log dir offline: " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	runtime := prometheus.NewRegistry()
	runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), lagGrowingCollector{s}, s.actions)
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{b.Metrics(), runtime}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))

	mux.HandleFunc("GET /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.Faults())
	})
	mux.HandleFunc("POST /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		if !s.mayAlterCluster(w, r) {
			return
		}
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
		if !s.mayAlterCluster(w, r) {
			return
		}
		b.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /admin/faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !s.mayAlterCluster(w, r) {
			return
		}
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad fault id"})
			return
		}
		b.ClearFaults(id)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/groups/{group}/rebalance", func(w http.ResponseWriter, r *http.Request) {
		if !s.mayAlterCluster(w, r) {
			return
		}
		if err := b.ForceRebalance(r.PathValue("group")); err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.registerConsole(mux)
	s.registerSchemas(mux)
	s.registerActions(mux)
	s.registerLinks(mux)
	return mux
}

// mayAlterCluster checks ALTER on the CLUSTER, which fault injection and
// forced rebalances need, and answers 403 without it.
func (s *Server) mayAlterCluster(w http.ResponseWriter, r *http.Request) bool {
	c := callerOf(r)
	if !s.allowed(c, broker.ACLAlter, broker.ResourceCluster, broker.ClusterResourceName) {
		s.deny(w, c, "ALTER on the cluster")
		return false
	}
	s.log.Info("admin fault endpoint", "principal", c.Principal, "host", c.Host, "method", r.Method, "path", r.URL.Path)
	return true
}

var (
	descLagGrowing = prometheus.NewDesc("gregor_group_lag_growing",
		"1 when the group's total lag has only grown over the console's last N history samples, 0 otherwise.", []string{"group"}, nil)
	descStalled = prometheus.NewDesc("gregor_group_stalled",
		"1 when the group's committed offsets have not moved over the console's last N history samples while its lag stayed above 0, 0 otherwise.", []string{"group"}, nil)
)

// lagGrowingCollector exports the front page's lag-growing and
// stopped-committing flags.
type lagGrowingCollector struct{ s *Server }

func (c lagGrowingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLagGrowing
	ch <- descStalled
}

func (c lagGrowingCollector) Collect(ch chan<- prometheus.Metric) {
	c.collectFlags(ch, descLagGrowing, seriesGroupLag, c.s.LagGrowing())
	c.collectFlags(ch, descStalled, seriesCommitted, c.s.Stalled())
}

// collectFlags sends desc for every group with a series under prefix: 1
// for the flagged groups, 0 for the others.
func (c lagGrowingCollector) collectFlags(ch chan<- prometheus.Metric, desc *prometheus.Desc, prefix string, flagged []string) {
	set := map[string]bool{}
	for _, g := range flagged {
		set[g] = true
	}
	for _, name := range c.s.hist.Names(prefix) {
		g := strings.TrimPrefix(name, prefix+"/")
		v := 0.0
		if set[g] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, g)
	}
}

// faultRequest is the JSON body of POST /admin/faults, e.g.
//
//	{"api": "Produce", "topic": "orders", "partition": 0, "count": 3,
//	 "error": "NOT_LEADER_OR_FOLLOWER"}
//	{"api": "Fetch", "latency_ms": 500, "count": 0}
//	{"api": 1, "drop_connection": true, "count": 1}
//	{"api": "Fetch", "client_id": "gregor-replica-3", "latency_ms": 60000}
//
// api is a name (Produce, Fetch, JoinGroup, …) or a key number; error a
// Kafka error name or code; partition defaults to any (-1); client_id to
// any client; count 0 means until cleared.
type faultRequest struct {
	API            json.RawMessage `json:"api"`
	Topic          string          `json:"topic"`
	Partition      *int32          `json:"partition"`
	ClientID       string          `json:"client_id"`
	Count          int             `json:"count"`
	Error          json.RawMessage `json:"error"`
	LatencyMs      int64           `json:"latency_ms"`
	DropConnection bool            `json:"drop_connection"`
}

func (fr faultRequest) fault() (broker.Fault, error) {
	f := broker.Fault{Topic: fr.Topic, Partition: -1, ClientID: fr.ClientID, Count: fr.Count, Latency: time.Duration(fr.LatencyMs) * time.Millisecond, DropConnection: fr.DropConnection}
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

// registerLinks serves the cluster links' operations (broker.Links, as
// gregor link sends them over the Kafka port) as JSON:
//
//	GET    /admin/links                       the links
//	POST   /admin/links                       create: a link.Link as body
//	GET    /admin/links/{name}                status: lag per mirror partition, groups synced
//	POST   /admin/links/{name}/promote[?topics=REGEX]
//	DELETE /admin/links/{name}[?force=true]
//
// ALTER on the cluster is needed to change a link, DESCRIBE to read one.
// Errors are {"error": …} with 400 (invalid), 403, 404 (no such link) or
// 500.
func (s *Server) registerLinks(mux *http.ServeMux) {
	run := func(w http.ResponseWriter, r *http.Request, op broker.LinkOp) {
		c := callerOf(r)
		if op.Op != "list" && op.Op != "status" {
			s.log.Info("admin link endpoint", "principal", c.Principal, "host", c.Host, "method", r.Method, "path", r.URL.Path)
		}
		code, msg, body := s.b.Links(r.Context(), c, op)
		if code != 0 {
			status := http.StatusInternalServerError
			switch code {
			case kerr.InvalidRequest.Code:
				status = http.StatusBadRequest
			case kerr.ResourceNotFound.Code:
				status = http.StatusNotFound
			case kerr.ClusterAuthorizationFailed.Code:
				status = http.StatusForbidden
			}
			writeJSON(w, status, map[string]string{"error": msg})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}
	mux.HandleFunc("GET /admin/links", func(w http.ResponseWriter, r *http.Request) {
		run(w, r, broker.LinkOp{Op: "list"})
	})
	mux.HandleFunc("POST /admin/links", func(w http.ResponseWriter, r *http.Request) {
		var l link.Link
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&l); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		run(w, r, broker.LinkOp{Op: "create", Link: &l})
	})
	mux.HandleFunc("GET /admin/links/{name}", func(w http.ResponseWriter, r *http.Request) {
		run(w, r, broker.LinkOp{Op: "status", Name: r.PathValue("name")})
	})
	mux.HandleFunc("POST /admin/links/{name}/promote", func(w http.ResponseWriter, r *http.Request) {
		run(w, r, broker.LinkOp{Op: "promote", Name: r.PathValue("name"), Topics: r.URL.Query().Get("topics")})
	})
	mux.HandleFunc("DELETE /admin/links/{name}", func(w http.ResponseWriter, r *http.Request) {
		run(w, r, broker.LinkOp{Op: "delete", Name: r.PathValue("name"), Force: r.URL.Query().Get("force") == "true"})
	})
}
