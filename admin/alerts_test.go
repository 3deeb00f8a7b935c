package admin_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v2"
)

// metricNameRE finds the metric names a PromQL expression uses (Gregor's
// and the Go and process collectors' of the admin listener).
var metricNameRE = regexp.MustCompile(`\b(?:gregor|process|go)_[a-z0-9_]+\b`)

// exposedMetrics starts a broker whose /metrics has every family it can
// have: produced and fetched records, a group with lag, a compacted topic,
// a console history sample. It returns the names in the text exposition
// (a histogram's _bucket, _sum and _count).
func exposedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b := gregortest.Start(t, gregortest.Topic("m", 1, nil), gregortest.Topic("kv", 1, map[string]string{"cleanup.policy": "compact"}))
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := testCtx(t)
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("m"), kgo.ConsumeTopics("m"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if fs := cl.PollFetches(ctx); fs.Err() != nil {
		t.Fatal(fs.Err())
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "m", Partition: 0, At: 1})
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	srv.Sample()
	code, body := get(t, hs.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return names
}

// checkNames fails for each metric name in expr that /metrics lacks.
func checkNames(t *testing.T, where, expr string, exposed map[string]bool) {
	t.Helper()
	names := metricNameRE.FindAllString(expr, -1)
	if len(names) == 0 && !strings.Contains(expr, "up{") {
		t.Errorf("%s: no metric in %q", where, expr)
	}
	for _, n := range names {
		if !exposed[n] {
			t.Errorf("%s: %s is not in Gregor's /metrics (expr %q)", where, n, expr)
		}
	}
}

// TestAlertRules checks docker/prometheus-alerts.yml: it parses as a
// Prometheus rule file (groups of rules with an alert name, an expr, a
// valid for duration, a severity and a summary), the alerts the docs
// promise are there, and every metric an expr uses is one Gregor exposes.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("../docker/prometheus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Record      string            `yaml:"record"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	exposed := exposedMetrics(t)
	var alerts []string
	for _, g := range file.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: no name or no rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || r.Record != "" {
				t.Errorf("rule %+v: want an alerting rule", r)
			}
			alerts = append(alerts, r.Alert)
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) || r.Annotations["summary"] == "" {
				t.Errorf("%s: severity %q, summary %q", r.Alert, r.Labels["severity"], r.Annotations["summary"])
			}
			checkNames(t, r.Alert, r.Expr, exposed)
		}
	}
	for _, want := range []string{"GregorUnderReplicatedPartitions", "GregorOfflinePartitions", "GregorConsumerLagGrowing",
		"GregorConsumerGroupStalled", "GregorBrokerDown", "GregorDiskNearlyFull"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alerts.yml lacks %s", want)
		}
	}
}

// TestGrafanaDashboard checks docker/grafana-dashboard.json: valid JSON, unique
// panel ids, panels within the 24-column grid, every target with an expr,
// and every metric used (in targets and template variables) one Gregor
// exposes.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("../docker/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct {
				X, Y, W, H int
			} `json:"gridPos"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("gregor.json: %v", err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) < 10 {
		t.Fatalf("dashboard uid %q title %q with %d panels", dash.UID, dash.Title, len(dash.Panels))
	}
	exposed := exposedMetrics(t)
	ids := map[int]bool{}
	var exprs []string
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		for _, tg := range p.Targets {
			checkNames(t, p.Title, tg.Expr, exposed)
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			checkNames(t, "variable "+v.Name, v.Definition, exposed)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{"gregor_topic_bytes_in_total", "gregor_request_duration_seconds_bucket", "gregor_group_lag",
		"gregor_under_replicated_partitions", "gregor_cleaner_throttle_seconds_total", "gregor_cleaner_bytes_read_total", "gregor_partition_dirty_ratio"} {
		if !strings.Contains(all, want) {
			t.Errorf("the dashboard does not chart %s", want)
		}
	}
}
