package admin

// The web console: server-rendered pages over the broker's introspection
// API (broker.Topics, Groups, ReadRecords). No JavaScript is needed; pages
// refresh themselves when ?refresh=SECONDS is given.

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gregor-broker/gregor/broker"
)

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"bytes":     humanBytes,
	"retention": retention,
	"show":      showBytes,
	"ts":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") },
	"add2":      func(a, b int) int { return a + b },
	"records": func(t broker.TopicInfo) (n int64) {
		for _, p := range t.Partitions {
			n += p.HighWatermark - p.LogStartOffset
		}
		return n
	},
	"size": func(t broker.TopicInfo) (n int64) {
		for _, p := range t.Partitions {
			n += p.SizeBytes
		}
		return n
	},
}).ParseFS(templateFS, "templates/*.html"))

// lagColor is the lag bars' fill; the console test looks for its pixels.
const lagColor = "#e4572e"

type page struct {
	Title   string
	Refresh int
	Data    any
}

func registerConsole(mux *http.ServeMux, b *broker.Broker) {
	render := func(w http.ResponseWriter, r *http.Request, name, title string, data any) {
		p := page{Title: title, Data: data}
		if s, err := strconv.Atoi(r.URL.Query().Get("refresh")); err == nil && s > 0 {
			p.Refresh = s
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := pages.ExecuteTemplate(w, name, p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		type overview struct {
			Topics []broker.TopicInfo
			Groups []groupView
		}
		var o overview
		o.Topics = b.Topics()
		for _, g := range b.Groups() {
			o.Groups = append(o.Groups, newGroupView(g))
		}
		render(w, r, "index.html", "Gregor", o)
	})
	mux.HandleFunc("GET /topics/{topic}", func(w http.ResponseWriter, r *http.Request) {
		for _, t := range b.Topics() {
			if t.Name == r.PathValue("topic") {
				render(w, r, "topic.html", "Topic "+t.Name, t)
				return
			}
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("GET /topics/{topic}/{partition}", func(w http.ResponseWriter, r *http.Request) {
		p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
		if err != nil {
			http.Error(w, "bad partition", http.StatusBadRequest)
			return
		}
		q := r.URL.Query()
		offset, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil || limit <= 0 {
			limit = 50
		}
		limit = min(limit, 1000)
		recs, err := b.ReadRecords(r.PathValue("topic"), int32(p), offset, limit)
		if errors.Is(err, broker.ErrUnknownPartition) {
			http.NotFound(w, r)
			return
		}
		type browse struct {
			Topic     string
			Partition int64
			Offset    int64
			Limit     int
			Hex       bool
			Records   []broker.Record
			Next      int64
			Err       string
		}
		v := browse{Topic: r.PathValue("topic"), Partition: p, Offset: offset, Limit: limit, Hex: q.Get("format") == "hex", Records: recs, Next: offset}
		if len(recs) > 0 {
			v.Next = recs[len(recs)-1].Offset + 1
		}
		if err != nil {
			v.Err = err.Error()
		}
		render(w, r, "records.html", fmt.Sprintf("%s-%d", v.Topic, p), v)
	})
	mux.HandleFunc("GET /groups/{group}", func(w http.ResponseWriter, r *http.Request) {
		for _, g := range b.Groups() {
			if g.Name == r.PathValue("group") {
				render(w, r, "group.html", "Group "+g.Name, newGroupView(g))
				return
			}
		}
		http.NotFound(w, r)
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

func retention(ms, bytes int64) string {
	var parts []string
	if ms < 0 {
		parts = append(parts, "forever")
	} else {
		parts = append(parts, (time.Duration(ms) * time.Millisecond).String())
	}
	if bytes >= 0 {
		parts = append(parts, "≤ "+humanBytes(bytes))
	}
	return strings.Join(parts, ", ")
}

// showBytes renders a key or value: "null" for nil, text when it is
// printable UTF-8 (unless hex is asked), hex otherwise.
func showBytes(b []byte, hex bool) string {
	if b == nil {
		return "null"
	}
	if !hex && utf8.Valid(b) && printable(string(b)) {
		return string(b)
	}
	return fmt.Sprintf("% x", b)
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f {
			return false
		}
	}
	return true
}
