package admin_test

import (
	"fmt"
	"image"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The scene of the README's console screenshots (make screenshot): two
// topics, a group "billing" that keeps up with "payments" and a group
// "shipping" that keeps up with "orders" for the first screenshotKeepUp
// samples, then consumes shippingRate records a sample while more arrive.
const (
	screenshotSamples = 30
	screenshotKeepUp  = 12
	shippingRate      = 20
)

// ordersAt and paymentsAt are the records produced in sample i: waves, so
// the throughput charts have shape. ordersAt is always above shippingRate.
func ordersAt(i int) int   { return 30 + []int{0, 8, 14, 8, 0, -6}[i%6] }
func paymentsAt(i int) int { return 10 + []int{0, 4, 6, 2}[i%4] }

// consoleScene builds the scene on a fake clock, 5 s a sample, and returns
// the console's URL and the lag "shipping" ends with.
func consoleScene(t *testing.T) (*admin.Server, string, int) {
	t.Helper()
	b := gregortest.Start(t, gregortest.Topic("orders", 3, nil), gregortest.Topic("payments", 2, nil))
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := testCtx(t)

	prod := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ClientID("checkout"))
	produce := func(topic string, parts, n, from int) {
		rs := make([]*kgo.Record, n)
		for j := range rs {
			k := from + j
			rs[j] = &kgo.Record{Topic: topic, Partition: int32(k % parts), Key: fmt.Appendf(nil, "%s-%d", topic[:1], k),
				Value: fmt.Appendf(nil, `{"id":%d,"amount":%d}`, k, 100+k%37)}
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	member := func(group, topic string) *kgo.Client {
		return newClient(t, b.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.ClientID(group+"-1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	// consume polls exactly n records and commits them.
	consume := func(cl *kgo.Client, n int) {
		var got []*kgo.Record
		for len(got) < n {
			fs := cl.PollRecords(ctx, n-len(got))
			if err := ctx.Err(); err != nil {
				t.Fatalf("polled %d of %d records: %v", len(got), n, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("poll %s-%d: %v", topic, p, err) })
			got = append(got, fs.Records()...)
		}
		if err := cl.CommitRecords(ctx, got...); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	shipping, billing := member("shipping", "orders"), member("billing", "payments")

	orders, payments, shipped := 0, 0, 0
	for i := range screenshotSamples {
		o, p := ordersAt(i), paymentsAt(i)
		produce("orders", 3, o, orders)
		produce("payments", 2, p, payments)
		orders, payments = orders+o, payments+p
		consume(billing, p)
		n := o
		if i >= screenshotKeepUp {
			n = shippingRate
		}
		consume(shipping, n)
		shipped += n
		mu.Lock()
		now = now.Add(5 * time.Second)
		mu.Unlock()
		srv.Sample()
	}
	return srv, hs.URL, orders - shipped
}

// TestConsoleScreenshot renders the console's front page and the group
// page of a consumer group that fell behind at 1280×800 in headless
// Chromium, checks what they show, and with GREGOR_SCREENSHOT=DIR (a
// relative DIR is taken from the repository's root) saves them as
// DIR/console.png and DIR/console-group.png: make screenshot writes
// docs/img.
func TestConsoleScreenshot(t *testing.T) {
	bin := chromium(t)
	srv, base, lag := consoleScene(t)
	if got := srv.LagGrowing(); len(got) != 1 || got[0] != "shipping" {
		t.Fatalf("LagGrowing = %v, want [shipping]", got)
	}
	wantLag := 0
	for i := screenshotKeepUp; i < screenshotSamples; i++ {
		wantLag += ordersAt(i) - shippingRate
	}
	if lag != wantLag {
		t.Fatalf("scene: shipping lags %d, want %d", lag, wantLag)
	}

	dom := runChromium(t, bin, base+"/", "--dump-dom")
	for _, re := range []string{
		`id="lag-growing"[^>]*><span class="flag">lag growing</span> <a href="/groups/shipping">shipping</a> </div>`,
		fmt.Sprintf(`<tr class="lag-growing" data-group="shipping"><td><a href="/groups/shipping">shipping</a> <span class="flag">lag growing</span></td><td>Stable</td><td class="num">1</td><td class="num">%d</td>`, wantLag),
		`<tr data-group="billing"><td><a href="/groups/billing">billing</a></td><td>Stable</td><td class="num">1</td><td class="num">0</td>`,
		fmt.Sprintf(`<svg id="spark-lag-shipping" [^>]*data-samples="%d" data-last="%d"`, screenshotSamples, wantLag),
		`<a href="/topics/orders">orders</a></td><td class="num">3</td>`,
		`<a href="/topics/payments">payments</a></td><td class="num">2</td>`,
	} {
		if !regexp.MustCompile(re).MatchString(dom) {
			t.Errorf("front page lacks %s", re)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}
	dom = runChromium(t, bin, base+"/groups/shipping", "--dump-dom")
	for _, re := range []string{
		`<b id="state">Stable</b>`,
		fmt.Sprintf(`id="total-lag">%d<`, wantLag),
		`id="lag-growing" class="flag"`,
		fmt.Sprintf(`<svg id="lag-history" class="chart" [^>]*data-samples="%d" data-last="%d" data-max="%d"`, screenshotSamples, wantLag, wantLag),
		`<td>shipping-1</td>`,
	} {
		if !regexp.MustCompile(re).MatchString(dom) {
			t.Errorf("group page lacks %s", re)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}

	dir := t.TempDir()
	front, group := filepath.Join(dir, "console.png"), filepath.Join(dir, "console-group.png")
	runChromium(t, bin, base+"/", "--screenshot="+front, "--window-size=1280,800")
	runChromium(t, bin, base+"/groups/shipping", "--screenshot="+group, "--window-size=1280,800")
	checkShot(t, front, 0)
	// The group page shows the filled lag-over-time chart.
	checkShot(t, group, 3000)

	saveShots(t, front, group)
}

// TestSchemasScreenshot renders the Schemas page of registryScene (the
// subjects of an Avro, a Protobuf and a JSON schema, one soft-deleted) at
// 1280×800 in headless Chromium, checks it, and with GREGOR_SCREENSHOT=DIR
// saves it as DIR/console-schemas.png.
func TestSchemasScreenshot(t *testing.T) {
	bin := chromium(t)
	base := registryScene(t)
	dom := runChromium(t, bin, base+"/schemas", "--dump-dom")
	for _, re := range []string{
		`<tr class="subject" data-subject="orders-value">.*<td class="type">PROTOBUF</td>.*FULL <span class="muted">\(subject\)</span>`,
		`<tr class="subject deleted" data-subject="old-value">`,
	} {
		if !regexp.MustCompile(re).MatchString(dom) {
			t.Errorf("schemas page lacks %s", re)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}
	shot := filepath.Join(t.TempDir(), "console-schemas.png")
	runChromium(t, bin, base+"/schemas", "--screenshot="+shot, "--window-size=1280,800")
	checkShot(t, shot, 0)
	saveShots(t, shot)
}

// saveShots copies screenshots to GREGOR_SCREENSHOT (a relative DIR is
// taken from the repository's root), when it is set.
func saveShots(t *testing.T, paths ...string) {
	t.Helper()
	out := os.Getenv("GREGOR_SCREENSHOT")
	if out == "" {
		t.Log("GREGOR_SCREENSHOT unset: screenshots checked, not saved (make screenshot saves them in docs/img)")
		return
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join("..", out) // go test runs in admin/
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(out, filepath.Base(p))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d KB)", dst, len(data)/1024)
	}
}

// checkShot checks that the PNG at path is 1280×800, not a blank page, and
// has at least chart pixels of the history chart's colour.
func checkShot(t *testing.T, path string, chart int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	if sz := img.Bounds().Size(); sz != (image.Point{1280, 800}) {
		t.Fatalf("%s is %v, want 1280×800", filepath.Base(path), sz)
	}
	colours := map[[3]uint8]bool{}
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := rgb(img, x, y)
			colours[c] = true
			if near(c, [3]uint8{0x2a, 0x7a, 0xb0}) {
				n++
			}
		}
	}
	if len(colours) < 16 {
		t.Fatalf("%s has %d colours: blank page?", filepath.Base(path), len(colours))
	}
	if n < chart {
		t.Fatalf("%s has %d pixels of the history chart's colour, want ≥ %d", filepath.Base(path), n, chart)
	}
}
