package admin

// The web console: server-rendered pages over the broker's introspection
// API (broker.ClusterTopics, ClusterGroups, ClusterGroup, ClusterInfo,
// ReadRecords, SchemaRegistry: schemas.go). In a cluster the groups are
// asked of every broker (each group of its coordinator, each high
// watermark of the partition's leader), and the offsets of partitions with
// no replica here of their leaders, within clusterTimeout, so any node's
// console shows the whole cluster; what could not be reached is listed at
// the top of the page. Record browsing reads this broker's replicas only,
// and the schema registry this broker's view of it. No JavaScript is
// needed; pages refresh themselves when ?refresh=SECONDS is given.

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/link"
	"github.com/twmb/franz-go/pkg/kmsg"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are parsed on the first page served, not at package init (about
// 0.7 ms and 4000 allocations of every start, with or without --http).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"bytes":      humanBytes,
		"retention":  retention,
		"ts":         func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") },
		"add2":       func(a, b int) int { return a + b },
		"ms":         func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z") },
		"joins":      func(s []string) string { return strings.Join(s, ",") },
		"pathEscape": url.PathEscape,
		"join": func(ids []int32) string {
			var parts []string
			for _, id := range ids {
				parts = append(parts, strconv.Itoa(int(id)))
			}
			return strings.Join(parts, ", ")
		},
		"records": func(t broker.TopicInfo) (n int64) {
			for _, p := range t.Partitions {
				if p.LogStartOffset >= 0 && p.HighWatermark >= p.LogStartOffset {
					n += p.HighWatermark - p.LogStartOffset
				}
			}
			return n
		},
		// size is the bytes of the replicas on this broker.
		"size": func(t broker.TopicInfo) (n int64) {
			for _, p := range t.Partitions {
				n += p.SizeBytes
			}
			return n
		},
	}).ParseFS(templateFS, "templates/*.html"))
})

// logDirsTimeout bounds the other brokers' DescribeLogDirs answers for
// /brokers.
const logDirsTimeout = 5 * time.Second

// clusterTimeout bounds the other brokers' answers for a page that shows
// the whole cluster (groups asked of their coordinators, high watermarks
// of their leaders); what does not answer in time is listed on the page.
const clusterTimeout = 3 * time.Second

// lagColor is the lag bars' fill; the console test looks for its pixels.
const lagColor = "#e4572e"

type page struct {
	Title     string
	Refresh   int
	Principal string // the caller, shown when authentication is on
	CSRF      string // the token the action forms carry
	Data      any
	// Unreached lists what the page could not ask of the other brokers
	// ("broker 2: ListGroups: …"): the page shows the rest.
	Unreached []string
	// Health is the cluster's trouble ("1 under-replicated, 0 offline
	// partitions, 1 brokers down"), "" when there is none.
	Health string
}

// health summarises ClusterInfo for the line on top of every page: ""
// when no partition is under-replicated or offline and no broker down.
func health(ci broker.ClusterInfo) string {
	var under, offline int
	for _, p := range ci.Partitions {
		if p.OfflinePartition() {
			offline++
		} else if p.UnderReplicated() {
			under++
		}
	}
	if under == 0 && offline == 0 && len(ci.Down) == 0 {
		return ""
	}
	return fmt.Sprintf("%d under-replicated, %d offline partitions, %d brokers down", under, offline, len(ci.Down))
}

// renderStatus renders a page with an HTTP status, and what it could not
// ask of the other brokers.
func (s *Server) renderStatus(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, unreached ...string) {
	c := callerOf(r)
	p := page{Title: title, Data: data, CSRF: s.csrfToken(c.Principal), Unreached: unreached, Health: health(s.b.ClusterInfo())}
	if s.auth.on() {
		p.Principal = c.Principal
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("refresh")); err == nil && n > 0 {
		p.Refresh = n
	}
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) registerConsole(mux *http.ServeMux) {
	b := s.b
	render := func(w http.ResponseWriter, r *http.Request, name, title string, data any, unreached ...string) {
		s.renderStatus(w, r, http.StatusOK, name, title, data, unreached...)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		type topicRow struct {
			broker.TopicInfo
			BytesIn template.HTML
		}
		type groupRow struct {
			groupView
			Growing  bool
			Stalled  bool
			LagSpark template.HTML
		}
		type apiRow struct {
			API            string
			Rate, P50, P99 string
			RateSpark      template.HTML
		}
		type overview struct {
			Topics  []topicRow
			Groups  []groupRow
			Growing []string
			Stalled []string
			GrowN   int
			StallN  int
			APIs    []apiRow
			Latency []template.HTML
			Samples int
			// InHeader names the topics' throughput column: bytes in
			// on a single node, records in in a cluster.
			InHeader string
		}
		o := overview{Growing: s.LagGrowing(), Stalled: s.Stalled(), GrowN: s.growN, StallN: s.stallN, Samples: s.hist.Len(), InHeader: "Bytes in"}
		ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
		defer cancel()
		topics, unreached := b.ClusterTopics(ctx)
		// In a cluster this broker's byte counters cover only the
		// partitions it leads; records in are the whole cluster's
		// (history.go).
		inSeries, inUnit := seriesBytesIn, "B/s"
		if b.Clustered() {
			inSeries, inUnit, o.InHeader = seriesRecordsIn, "/s", "Records in"
		}
		for _, t := range topics {
			vals, ts := s.hist.Values(key(inSeries, t.Name))
			o.Topics = append(o.Topics, topicRow{t, chartSVG("spark-in-"+t.Name, 180, 40, inUnit, ts, chartLine{Color: historyColor, Vals: vals})})
		}
		groups, more := b.ClusterGroups(ctx)
		unreached = append(unreached, more...)
		for _, g := range groups {
			vals, ts := s.hist.Values(key(seriesGroupLag, g.Name))
			o.Groups = append(o.Groups, groupRow{newGroupView(g), slices.Contains(o.Growing, g.Name), slices.Contains(o.Stalled, g.Name),
				chartSVG("spark-lag-"+g.Name, 180, 40, "", ts, chartLine{Color: historyColor, Vals: vals})})
		}
		for _, name := range s.hist.Names(seriesReqRate) {
			api := strings.TrimPrefix(name, seriesReqRate+"/")
			vals, ts := s.hist.Values(name)
			row := apiRow{API: api, Rate: "–", P50: "–", P99: "–", RateSpark: chartSVG("spark-req-"+api, 180, 40, "/s", ts, chartLine{Color: historyColor, Vals: vals})}
			if v, ok := lastValue(vals); ok {
				row.Rate = formatValue(v)
			}
			p50, _ := s.hist.Values(key(seriesReqP50, api))
			p99, _ := s.hist.Values(key(seriesReqP99, api))
			if v, ok := lastValue(p50); ok {
				row.P50 = formatValue(v)
			}
			if v, ok := lastValue(p99); ok {
				row.P99 = formatValue(v)
			}
			o.APIs = append(o.APIs, row)
			if api == "Produce" || api == "Fetch" {
				o.Latency = append(o.Latency, template.HTML("<h3>"+api+"</h3>")+chartSVG("latency-"+api, 520, 120, "ms", ts,
					chartLine{Name: "p50", Color: historyColor, Vals: p50}, chartLine{Name: "p99", Color: p99Color, Vals: p99}))
			}
		}
		render(w, r, "index.html", "Gregor", o, unreached...)
	})
	mux.HandleFunc("GET /links", func(w http.ResponseWriter, r *http.Request) {
		type linksPage struct {
			Links []*link.Status
			Err   string
		}
		var page linksPage
		c := callerOf(r)
		code, msg, body := b.Links(r.Context(), c, broker.LinkOp{Op: "list"})
		var list struct{ Links []*link.Link }
		if code == 0 {
			json.Unmarshal(body, &list)
		} else {
			page.Err = msg
		}
		for _, l := range list.Links {
			code, msg, body := b.Links(r.Context(), c, broker.LinkOp{Op: "status", Name: l.Name})
			var st link.Status
			if code != 0 || json.Unmarshal(body, &st) != nil {
				st = link.Status{Link: l, Error: msg}
			}
			page.Links = append(page.Links, &st)
		}
		render(w, r, "links.html", "Cluster links", page)
	})
	mux.HandleFunc("GET /topics/{topic}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
		defer cancel()
		topics, unreached := b.ClusterTopics(ctx)
		for _, t := range topics {
			if t.Name == r.PathValue("topic") {
				type consumer struct {
					Group, State string
					Partitions   int
					Lag          int64 // over the partitions it committed
				}
				type topicPage struct {
					broker.TopicInfo
					Charts      []template.HTML
					ScanRecords int
					ScanBytes   int64
					Consumers   []consumer
					AllConfigs  []topicConfig
				}
				tp := topicPage{TopicInfo: t, ScanRecords: s.scanRecords, ScanBytes: s.scanBytes}
				groups, more := b.ClusterGroups(ctx)
				unreached = append(unreached, more...)
				for _, g := range groups {
					c := consumer{Group: g.Name, State: g.State}
					for _, o := range g.Offsets {
						if o.Topic == t.Name {
							c.Partitions++
							c.Lag += max(o.Lag, 0)
						}
					}
					if c.Partitions > 0 {
						tp.Consumers = append(tp.Consumers, c)
					}
				}
				tp.AllConfigs = topicConfigs(ctx, b, callerOf(r), t.Name)
				share := ""
				if b.Clustered() {
					share = " (partitions led by this broker)"
				}
				for _, c := range []struct{ prefix, title, unit string }{
					{seriesRecordsIn, "Records in", "/s"}, {seriesBytesIn, "Bytes in" + share, "B/s"}, {seriesBytesOut, "Bytes out" + share, "B/s"},
				} {
					vals, ts := s.hist.Values(key(c.prefix, t.Name))
					tp.Charts = append(tp.Charts, template.HTML("<h3>"+c.title+"</h3>")+chartSVG("chart-"+c.prefix, 520, 110, c.unit, ts, chartLine{Color: historyColor, Vals: vals}))
				}
				render(w, r, "topic.html", "Topic "+t.Name, tp, unreached...)
				return
			}
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("GET /topics/{topic}/{partition}", func(w http.ResponseWriter, r *http.Request) {
		s.browseRecords(w, r, r.PathValue("partition"))
	})
	mux.HandleFunc("GET /topics/{topic}/records", func(w http.ResponseWriter, r *http.Request) {
		s.browseRecords(w, r, r.URL.Query().Get("partition"))
	})
	mux.HandleFunc("GET /brokers", func(w http.ResponseWriter, r *http.Request) {
		type brokerRow struct {
			broker.BrokerInfo
			Down           bool // not live: a replica or voter only
			Leads, Follows int
			Disk           broker.LogDirUsage
			UsedPct        string // of the file system, "" when unknown
		}
		type clusterPage struct {
			broker.ClusterInfo
			Rows                     []brokerRow
			UnderReplicated, Offline int
			Reassigning              []broker.ClusterPartition
		}
		ci := b.ClusterInfo()
		cp := clusterPage{ClusterInfo: ci}
		ctx, cancel := context.WithTimeout(r.Context(), logDirsTimeout)
		dirs := b.LogDirs(ctx)
		cancel()
		for _, br := range ci.Brokers {
			row := brokerRow{BrokerInfo: br, Disk: broker.LogDirUsage{Broker: br.ID, SizeBytes: -1, TotalBytes: -1, UsableBytes: -1}}
			for _, d := range dirs {
				if d.Broker == br.ID {
					row.Disk = d
				}
			}
			if d := row.Disk; d.TotalBytes > 0 && d.UsableBytes >= 0 {
				row.UsedPct = fmt.Sprintf("%.1f%%", 100*float64(d.TotalBytes-d.UsableBytes)/float64(d.TotalBytes))
			}
			for _, p := range ci.Partitions {
				if p.Leader == br.ID {
					row.Leads++
				} else if slices.Contains(p.Replicas, br.ID) {
					row.Follows++
				}
			}
			cp.Rows = append(cp.Rows, row)
		}
		for _, id := range ci.Down {
			row := brokerRow{BrokerInfo: broker.BrokerInfo{ID: id}, Down: true, Disk: broker.LogDirUsage{Broker: id, SizeBytes: -1, TotalBytes: -1, UsableBytes: -1}}
			for _, p := range ci.Partitions {
				if slices.Contains(p.Replicas, id) {
					row.Follows++ // a replica, leading none while down
				}
			}
			cp.Rows = append(cp.Rows, row)
		}
		slices.SortFunc(cp.Rows, func(x, y brokerRow) int { return int(x.ID) - int(y.ID) })
		for _, p := range ci.Partitions {
			if p.OfflinePartition() {
				cp.Offline++
			} else if p.UnderReplicated() {
				cp.UnderReplicated++
			}
			if p.Reassigning() {
				cp.Reassigning = append(cp.Reassigning, p)
			}
		}
		render(w, r, "brokers.html", "Brokers", cp)
	})
	mux.HandleFunc("GET /groups/{group}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
		g, ok, unreached := b.ClusterGroup(ctx, r.PathValue("group"))
		cancel()
		if !ok {
			if len(unreached) > 0 {
				http.Error(w, "group "+r.PathValue("group")+" not found; could not ask: "+strings.Join(unreached, "; "), http.StatusNotFound)
				return
			}
			http.NotFound(w, r)
			return
		}
		type groupPage struct {
			groupView
			Growing  bool
			Stalled  bool
			LagChart template.HTML
			PartLags []template.HTML
		}
		gp := groupPage{groupView: newGroupView(g), Growing: slices.Contains(s.LagGrowing(), g.Name), Stalled: slices.Contains(s.Stalled(), g.Name)}
		vals, ts := s.hist.Values(key(seriesGroupLag, g.Name))
		gp.LagChart = chartSVG("lag-history", 640, 160, "", ts, chartLine{Color: historyColor, Vals: vals})
		for _, o := range g.Offsets {
			ps := strconv.Itoa(int(o.Partition))
			vals, ts := s.hist.Values(key(seriesPartLag, g.Name, o.Topic, ps))
			gp.PartLags = append(gp.PartLags, template.HTML(`<div class="part-lag"><div>`+template.HTMLEscapeString(o.Topic+"-"+ps)+`</div>`)+
				chartSVG("lag-history-"+o.Topic+"-"+ps, 300, 70, "", ts, chartLine{Color: partLagColor, Vals: vals})+"</div>")
		}
		render(w, r, "group.html", "Group "+g.Name, gp, unreached...)
	})
}

// groupView is a group with its lag chart laid out.
type groupView struct {
	broker.GroupInfo
	TotalLag int64
	Chart    lagChart
}

// lagChart is the inline SVG bar chart of lag per partition.
type lagChart struct {
	Width, Height int
	Color         string
	Bars          []lagBar
}

type lagBar struct {
	Label         string
	Lag           int64
	Y, W, TextX   int
	Unknown       bool
	Committed     int64
	HighWatermark int64
}

const (
	chartLabelW = 160
	chartBarMax = 420
	chartRowH   = 26
)

func newGroupView(g broker.GroupInfo) groupView {
	v := groupView{GroupInfo: g, Chart: lagChart{Width: chartLabelW + chartBarMax + 90, Color: lagColor}}
	var maxLag int64
	for _, o := range g.Offsets {
		if o.Lag > 0 {
			v.TotalLag += o.Lag
			maxLag = max(maxLag, o.Lag)
		}
	}
	for i, o := range g.Offsets {
		bar := lagBar{Label: fmt.Sprintf("%s-%d", o.Topic, o.Partition), Lag: o.Lag, Y: i * chartRowH, Unknown: o.Lag < 0, Committed: o.Committed, HighWatermark: o.HighWatermark}
		if maxLag > 0 && o.Lag > 0 {
			bar.W = max(int(o.Lag*chartBarMax/maxLag), 2)
		}
		bar.TextX = chartLabelW + bar.W + 6
		v.Chart.Bars = append(v.Chart.Bars, bar)
	}
	v.Chart.Height = max(len(g.Offsets), 1) * chartRowH
	return v
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// humanMillis writes a duration in the largest unit that divides it:
// 604800000 is "7 d", 5400000 "90 min", 1500 "1500 ms".
func humanMillis(ms int64) string {
	for _, u := range []struct {
		ms   int64
		name string
	}{{86_400_000, "d"}, {3_600_000, "h"}, {60_000, "min"}, {1000, "s"}} {
		if ms >= u.ms && ms%u.ms == 0 {
			return fmt.Sprintf("%d %s", ms/u.ms, u.name)
		}
	}
	return fmt.Sprintf("%d ms", ms)
}

func retention(ms, bytes int64) string {
	var parts []string
	if ms < 0 {
		parts = append(parts, "forever")
	} else {
		parts = append(parts, humanMillis(ms))
	}
	if bytes >= 0 {
		parts = append(parts, "≤ "+humanBytes(bytes))
	}
	return strings.Join(parts, ", ")
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f {
			return false
		}
	}
	return true
}

// topicConfig is one of a topic's configs with its value and where the
// value comes from (Kafka's config source, as kafka-configs --describe
// --all shows it).
type topicConfig struct {
	Name, Value, Source string
	Sensitive           bool
}

// topicConfigs are every config of a topic, asked with DescribeConfigs as
// the caller (so its ACLs apply); none when it may not see them.
func topicConfigs(ctx context.Context, b *broker.Broker, c broker.Caller, topic string) []topicConfig {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, rr)
	resp, err := b.Execute(ctx, c, req)
	if err != nil {
		return nil
	}
	var out []topicConfig
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		if res.ErrorCode != 0 {
			return nil
		}
		for _, cf := range res.Configs {
			v := ""
			if cf.Value != nil {
				v = *cf.Value
			}
			out = append(out, topicConfig{Name: cf.Name, Value: v, Source: cf.Source.String(), Sensitive: cf.IsSensitive})
		}
	}
	return out
}
