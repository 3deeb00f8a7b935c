package admin

// Server-rendered SVG charts of the history: no script, no external
// resources, so the pages work offline and the tests can read the DOM.

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// Chart colours; the console test looks for historyColor's pixels.
const (
	historyColor = "#2a7ab0"
	p99Color     = "#c0392b"
	partLagColor = "#8e6bbf" // the small per-partition lag charts
)

// chartLine is one line of a chart.
type chartLine struct {
	Name  string
	Color string
	Vals  []float64
}

// chartSVG draws lines over the samples held (oldest left) in a w×h box,
// from 0 to the largest value, the first line filled below. id names the
// svg element; unit follows the numbers in the labels.
func chartSVG(id string, w, h int, unit string, times []time.Time, lines ...chartLine) template.HTML {
	const padL, padB, padT = 56, 16, 6
	pw, ph := float64(w-padL-4), float64(h-padB-padT)
	hi := 0.0
	n := 0
	for _, l := range lines {
		n = max(n, len(l.Vals))
		for _, v := range l.Vals {
			if !math.IsNaN(v) {
				hi = max(hi, v)
			}
		}
	}
	if hi == 0 {
		hi = 1
	}
	var sb strings.Builder
	last := ""
	if len(lines) > 0 {
		if v, ok := lastValue(lines[0].Vals); ok {
			last = formatValue(v)
		}
	}
	fmt.Fprintf(&sb, `<svg id="%s" class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" data-samples="%d" data-last="%s" data-max="%s">`,
		html.EscapeString(id), w, h, n, last, formatValue(hi))
	fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="#fff" stroke="#ddd"/>`, padL, padT, pw, ph)
	fmt.Fprintf(&sb, `<text x="2" y="%d">%s%s</text><text x="2" y="%.0f">0</text>`, padT+10, formatValue(hi), html.EscapeString(unit), float64(padT)+ph)
	if n > 0 && len(times) == n {
		span := times[n-1].Sub(times[0]).Round(time.Second)
		fmt.Fprintf(&sb, `<text x="%d" y="%d">−%s</text><text x="%d" y="%d">now</text>`, padL, h-2, span, w-30, h-2)
	}
	x := func(i int) float64 {
		if n <= 1 {
			return float64(padL) + pw
		}
		return float64(padL) + pw*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return float64(padT) + ph - ph*v/hi }
	for li, l := range lines {
		for _, run := range runs(l.Vals) {
			var pts strings.Builder
			for _, i := range run {
				fmt.Fprintf(&pts, "%.1f,%.1f ", x(i), y(l.Vals[i]))
			}
			if li == 0 && len(run) > 1 {
				fmt.Fprintf(&sb, `<polygon class="area" points="%.1f,%.1f %s%.1f,%.1f" fill="%s" fill-opacity="1"/>`,
					x(run[0]), y(0), pts.String(), x(run[len(run)-1]), y(0), l.Color)
			}
			fmt.Fprintf(&sb, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.TrimSpace(pts.String()), l.Color)
			if len(run) == 1 {
				fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, x(run[0]), y(l.Vals[run[0]]), l.Color)
			}
		}
		if len(lines) > 1 {
			fmt.Fprintf(&sb, `<text x="%d" y="%d" fill="%s">%s</text>`, padL+6+li*90, padT+12, l.Color, html.EscapeString(l.Name))
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// runs splits the indexes of known values into consecutive runs.
func runs(vals []float64) [][]int {
	var out [][]int
	var cur []int
	for i, v := range vals {
		if math.IsNaN(v) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, i)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func lastValue(vals []float64) (float64, bool) {
	for i := len(vals) - 1; i >= 0; i-- {
		if !math.IsNaN(vals[i]) {
			return vals[i], true
		}
	}
	return 0, false
}

// formatValue prints v with few digits: 12, 3.5, 1.2k, 4.1M.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
