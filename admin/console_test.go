package admin_test

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// chromium finds Debian's headless browser. Without it the console tests
// fail, unless GREGOR_SKIP_CHROMIUM=1 (make test installs it: make deps).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GREGOR_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("GREGOR_SKIP_CHROMIUM") == "1" {
		t.Skip("chromium not installed and GREGOR_SKIP_CHROMIUM=1")
	}
	t.Fatal("chromium not found: apt-get install -y chromium (or set GREGOR_SKIP_CHROMIUM=1)")
	return ""
}

// runChromium runs headless chromium with extra arguments against url,
// bounded in time, and returns its standard output.
func runChromium(t *testing.T, bin, url string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	args = append(append(args, extra...), url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.String()
}

// lagBroker starts a broker whose group "dash" lags 25, 0 and 18 records
// on the three partitions of "lagged".
func lagBroker(t *testing.T) *gregortest.Broker {
	t.Helper()
	b := gregortest.Start(t, gregortest.HTTP(), gregortest.Topic("lagged", 3, nil))
	ctx := testCtx(t)
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	counts := []int{30, 10, 20}
	var rs []*kgo.Record
	for p, n := range counts {
		for i := range n {
			r := &kgo.Record{Topic: "lagged", Partition: int32(p), Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "order %d of partition %d", i, p)}
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}
			rs = append(rs, r)
		}
	}
	rs = append(rs, &kgo.Record{Topic: "lagged", Partition: 1, Value: []byte{0x00, 0xff, 0x10}})
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 5})
	os.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: 11})
	os.Add(kadm.Offset{Topic: "lagged", Partition: 2, At: 2})
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "dash", os)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	return b
}

// TestConsole_LagViewInChromium renders the group page in headless
// Chromium: the DOM carries the lag numbers, and the screenshot shows the
// lag bars in their colour, the longest bar the widest.
func TestConsole_LagViewInChromium(t *testing.T) {
	bin := chromium(t)
	b := lagBroker(t)
	url := "http://" + b.HTTPAddr() + "/groups/dash"

	dom := runChromium(t, bin, url, "--dump-dom")
	for _, want := range []string{
		`id="total-lag">43<`,
		`data-partition="lagged-0" data-lag="25"`,
		`data-partition="lagged-1" data-lag="0"`,
		`data-partition="lagged-2" data-lag="18"`,
		`<td class="num lag">25</td>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "lag.png")
	runChromium(t, bin, url, "--screenshot="+shot, "--window-size=900,600")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if sz := img.Bounds().Size(); sz.X < 800 || sz.Y < 500 {
		t.Fatalf("screenshot is %v", sz)
	}
	colours := map[[3]uint8]bool{}
	rows := map[int]int{} // y → bar pixels in that row
	bar := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := rgb(img, x, y)
			colours[c] = true
			if near(c, [3]uint8{0xe4, 0x57, 0x2e}) {
				bar++
				rows[y]++
			}
		}
	}
	if len(colours) < 8 {
		t.Fatalf("screenshot has %d colours: blank page?", len(colours))
	}
	// Bars: lag 25 is 420 px wide, lag 18 about 302 px, 18 px high each.
	widest := 0
	for _, n := range rows {
		widest = max(widest, n)
	}
	if bar < 5000 || widest < 400 || widest > 430 {
		t.Fatalf("lag bars: %d pixels of the bar colour, widest row %d px; want ≥ 5000 and ≈ 420", bar, widest)
	}
	if p := os.Getenv("GREGOR_KEEP_SCREENSHOT"); p != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(p, data, 0o644)
	}
	t.Logf("screenshot %v, %d colours, %d bar pixels, widest bar %d px", img.Bounds().Size(), len(colours), bar, widest)
}

// TestConsole_PagesInChromium renders the overview, topic and record
// browser pages and checks what they show.
func TestConsole_PagesInChromium(t *testing.T) {
	bin := chromium(t)
	b := lagBroker(t)
	base := "http://" + b.HTTPAddr()
	dom := runChromium(t, bin, base+"/", "--dump-dom")
	for _, want := range []string{`href="/topics/lagged"`, `href="/groups/dash"`, `<td class="num">61</td>`, `<td class="num">43</td>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	dom = runChromium(t, bin, base+"/topics/lagged", "--dump-dom")
	if !regexp.MustCompile(`(?s)data-partition="1"><td class="num">1</td>\s*<td class="num leader">\d+</td>.*?<td class="num log-start">0</td><td class="num hw">11</td>\s*<td class="num log-end">11</td>`).MatchString(dom) {
		t.Errorf("topic page lacks partition 1's offsets:\n%s", dom)
	}
	dom = runChromium(t, bin, base+"/topics/lagged/1?order=oldest&offset=8&limit=5", "--dump-dom")
	for _, want := range []string{`<td class="num">8</td>`, `order 8 of partition 1`, `key-9`, `<b>trace</b>: <span class="bytes" data-kind="text"><pre>abc</pre>`, `00 ff 10`, `null`} {
		if !strings.Contains(dom, want) {
			t.Errorf("record browser lacks %s", want)
		}
	}
	if strings.Contains(dom, `<td class="num">7</td>`) {
		t.Error("record browser shows offset 7, before the requested 8")
	}
	if t.Failed() {
		t.Logf("last DOM:\n%s", dom)
	}
}

func rgb(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func near(a, b [3]uint8) bool {
	d := func(x, y uint8) int { return max(int(x)-int(y), int(y)-int(x)) }
	return d(a[0], b[0]) <= 6 && d(a[1], b[1]) <= 6 && d(a[2], b[2]) <= 6
}

// TestConsole_DirtyRatioInChromium: a compacted topic's page shows each
// partition's dirty ratio, the number the log cleaner compares with
// min.cleanable.dirty.ratio.
func TestConsole_DirtyRatioInChromium(t *testing.T) {
	bin := chromium(t)
	now := time.UnixMilli(1_700_000_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := gregortest.Start(t, gregortest.HTTP(), gregortest.Clock(clock), gregortest.Prop("log.cleaner.enable", "false"),
		gregortest.Topic("kv", 1, map[string]string{"cleanup.policy": "compact", "segment.ms": "1000"}))
	ctx := testCtx(t)
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("kv"))
	for i, v := range []string{"a", "b"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(v), Timestamp: clock()}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			mu.Lock()
			now = now.Add(2 * time.Second) // the next append rolls the segment
			mu.Unlock()
		}
	}
	var ratio float64
	for _, ti := range b.Broker.Topics() {
		if ti.Name == "kv" {
			ratio = ti.Partitions[0].DirtyRatio
		}
	}
	if ratio != 1 {
		t.Fatalf("dirty ratio of a rolled, never-cleaned compacted partition = %v, want 1", ratio)
	}
	dom := runChromium(t, bin, "http://"+b.HTTPAddr()+"/topics/kv", "--dump-dom")
	for _, want := range []string{`<th title="share of the cleanable bytes not yet compacted">Dirty ratio</th>`, `<td class="num dirty">1.00</td>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("compacted topic page lacks %s:\n%s", want, dom)
		}
	}
}
