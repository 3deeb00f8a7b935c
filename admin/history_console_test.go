package admin_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"image/png"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// historyConsole starts a broker and a console over it whose samples are
// taken by the test (Sample) on a fake clock, 5 s apart. Group "stuck"
// never moves while 10 records a sample arrive on "orders"; group
// "keeping-up" commits the high watermark each time.
func historyConsole(t *testing.T, samples int) (*gregortest.Broker, *admin.Server, string) {
	t.Helper()
	b := gregortest.Start(t, gregortest.Topic("orders", 1, nil))
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1, LagGrowingSamples: 3, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := testCtx(t)
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("orders"))
	adm := kadm.NewClient(cl)
	commit := func(group string, at int64) {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: at})
		if resp, err := adm.CommitOffsets(ctx, group, os); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", group, err, resp.Error())
		}
	}
	commit("stuck", 0)
	for i := range samples {
		var rs []*kgo.Record
		for j := range 10 {
			rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "order %d", i*10+j)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		commit("keeping-up", int64(i+1)*10)
		mu.Lock()
		now = now.Add(5 * time.Second)
		mu.Unlock()
		srv.Sample()
	}
	return b, srv, hs.URL
}

// TestConsole_HistoryInChromium: after five samples the front page flags
// the group whose lag only grew (and not the one keeping up), the group
// page charts its lag over time, the topic page its throughput, and
// /metrics exports gregor_group_lag_growing.
func TestConsole_HistoryInChromium(t *testing.T) {
	bin := chromium(t)
	_, srv, base := historyConsole(t, 5)
	if got := srv.LagGrowing(); len(got) != 1 || got[0] != "stuck" {
		t.Fatalf("LagGrowing = %v, want [stuck]", got)
	}
	dom := runChromium(t, bin, base+"/", "--dump-dom")
	for _, re := range []string{
		`id="lag-growing"[^>]*><span class="flag">lag growing</span> <a href="/groups/stuck">stuck</a>`,
		`<tr class="lag-growing" data-group="stuck">`,
		`<tr data-group="keeping-up">`,
		`<svg id="spark-lag-stuck" [^>]*data-samples="5" data-last="50"`,
		`<svg id="spark-lag-keeping-up" [^>]*data-samples="5" data-last="0"`,
		`<tr data-api="Produce"><td>Produce</td><td class="num">0.2</td><td class="num p50">[0-9.]+</td>`,
		`<svg id="latency-Produce" `,
	} {
		if !regexp.MustCompile(re).MatchString(dom) {
			t.Errorf("front page lacks %s", re)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}
	dom = runChromium(t, bin, base+"/groups/stuck", "--dump-dom")
	for _, want := range []string{`<svg id="lag-history" class="chart"`, `data-samples="5" data-last="50" data-max="50"`,
		`<svg id="lag-history-orders-0" class="chart"`, `id="lag-growing" class="flag"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("group page lacks %s", want)
		}
	}
	// 10 records every 5 s: 2 records/s (the first sample has no rate).
	dom = runChromium(t, bin, base+"/topics/orders", "--dump-dom")
	if !regexp.MustCompile(`<svg id="chart-records_in" class="chart" [^>]*data-samples="5" data-last="2"`).MatchString(dom) {
		t.Errorf("topic page lacks the records-in chart at 2/s:\n%s", dom)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{`gregor_group_lag_growing{group="stuck"} 1`, `gregor_group_lag_growing{group="keeping-up"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestConsole_LagHistoryScreenshot: the lag-over-time chart is drawn in
// its colour, its area taller on the right (lag 50) than the left (10).
func TestConsole_LagHistoryScreenshot(t *testing.T) {
	bin := chromium(t)
	_, _, base := historyConsole(t, 5)
	shot := filepath.Join(t.TempDir(), "history.png")
	runChromium(t, bin, base+"/groups/stuck", "--screenshot="+shot, "--window-size=900,700")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[int]int{} // x → chart-colour pixels in that column
	minX, maxX, total := 1<<30, -1, 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if near(rgb(img, x, y), [3]uint8{0x2a, 0x7a, 0xb0}) {
				cols[x]++
				total++
				minX, maxX = min(minX, x), max(maxX, x)
			}
		}
	}
	if total < 3000 {
		t.Fatalf("%d pixels of the history colour; want the filled lag chart", total)
	}
	w := maxX - minX
	left, right := cols[minX+w/10], cols[maxX-w/10]
	if right < 3*left || left == 0 {
		t.Fatalf("chart column heights: %d px near the left, %d px near the right; want the lag's growth (10 → 50)", left, right)
	}
	if p := os.Getenv("GREGOR_KEEP_SCREENSHOT"); p != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(p, data, 0o644)
	}
	t.Logf("%d chart pixels from x=%d to %d; column heights %d → %d", total, minX, maxX, left, right)
}

// TestConsole_BrokersInChromium: on a single node, /brokers shows the one
// broker as the controller, leading every partition with a full ISR.
func TestConsole_BrokersInChromium(t *testing.T) {
	bin := chromium(t)
	b := lagBroker(t)
	ci := b.Broker.ClusterInfo()
	if len(ci.Brokers) != 1 || !ci.Brokers[0].Controller {
		t.Fatalf("ClusterInfo brokers %+v", ci.Brokers)
	}
	id := ci.Brokers[0].ID
	dom := runChromium(t, bin, "http://"+b.HTTPAddr()+"/brokers", "--dump-dom")
	for _, re := range []string{
		fmt.Sprintf(`<tr class="broker" data-broker="%d"><td class="num">%d</td><td>[^<]+:\d+</td><td class="state">UP</td><td></td><td class="num">\d+</td><td class="num">0</td>\s*<td><code>[^<]+</code></td>\s*<td class="num disk-used" data-bytes="\d+"[^>]*>.*</td>\s*<td class="num fs-used">[\d.]+%%</td>\s*<td class="num fs-free"[^>]*>.*</td>\s*<td><span class="badge controller">controller</span>`, id, id),
		fmt.Sprintf(`<tr class="ok" data-partition="lagged-2">\s*<td><a href="/topics/lagged">lagged</a></td><td class="num">2</td><td class="num">%d</td>`, id),
		`id="under-replicated-count">0<`, `id="offline-count">0<`, `id="reassigning-count">0<`,
	} {
		if !regexp.MustCompile(re).MatchString(dom) {
			t.Errorf("brokers page lacks %s", re)
		}
	}
	if strings.Contains(dom, `class="under-replicated"`) || strings.Contains(dom, `class="offline"`) {
		t.Error("a single node shows an under-replicated or offline partition")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
