package admin_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// browseBase is the create time of offset 0 of "browse"; offset i is
// i seconds later.
var browseBase = time.UnixMilli(1_700_000_000_000)

// browseBroker produces 30 records to "browse" (one partition):
//
//	0  key k0, value "plain text"
//	1  JSON object
//	2  bytes ff 00 10 (hex)
//	3  Confluent wire format, schema id 42, JSON payload
//	4  Confluent wire format, schema id 7, binary (Avro) payload
//	5  key order-5, value "needle in here", header trace=abc
//	6… value "filler i"
func browseBroker(t *testing.T) *gregortest.Broker {
	t.Helper()
	b := gregortest.Start(t, gregortest.Topic("browse", 1, nil))
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("browse"))
	var rs []*kgo.Record
	for i := range 30 {
		r := &kgo.Record{Timestamp: browseBase.Add(time.Duration(i) * time.Second), Value: fmt.Appendf(nil, "filler %d", i)}
		switch i {
		case 0:
			r.Key, r.Value = []byte("k0"), []byte("plain text")
		case 1:
			r.Value = []byte(`{"a":1,"b":[true,null]}`)
		case 2:
			r.Value = []byte{0xff, 0x00, 0x10}
		case 3:
			r.Value = append([]byte{0, 0, 0, 0, 42}, `{"id":7}`...)
		case 4:
			r.Value = []byte{0, 0, 0, 0, 7, 0x02, 0x06, 'a', 'b', 'c'}
		case 5:
			r.Key, r.Value = []byte("order-5"), []byte("needle in here")
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}
		}
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return b
}

func browseConsole(t *testing.T, b *gregortest.Broker, o admin.Options) string {
	t.Helper()
	o.SampleInterval = -1
	srv, err := admin.New(b.Broker, o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// shown is one record row of the records page.
type shown struct {
	offset           int64
	keyKind, key     string
	valueKind, value string
	schema           string // data-schema-id of the value, "" when none
	headers          string
}

var (
	rowRE    = regexp.MustCompile(`(?s)<tr class="record" data-offset="(\d+)">(.*?)</tr>`)
	cellRE   = regexp.MustCompile(`(?s)<td class="(key|value)"><span class="bytes" data-kind="(\w+)"(?: data-schema-id="(\d+)")?>.*?<pre>(.*?)</pre>`)
	headerRE = regexp.MustCompile(`(?s)<div class="header"><b>(.*?)</b>: <span class="bytes" data-kind="\w+"><pre>(.*?)</pre>`)
)

func browse(t *testing.T, base, query string) ([]shown, string) {
	t.Helper()
	resp, err := http.Get(base + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", query, resp.StatusCode, body)
	}
	var out []shown
	for _, m := range rowRE.FindAllStringSubmatch(string(body), -1) {
		off, _ := strconv.ParseInt(m[1], 10, 64)
		s := shown{offset: off}
		for _, c := range cellRE.FindAllStringSubmatch(m[2], -1) {
			if c[1] == "key" {
				s.keyKind, s.key = c[2], html.UnescapeString(c[4])
			} else {
				s.valueKind, s.value, s.schema = c[2], html.UnescapeString(c[4]), c[3]
			}
		}
		for _, h := range headerRE.FindAllStringSubmatch(m[2], -1) {
			s.headers += html.UnescapeString(h[1]) + "=" + html.UnescapeString(h[2]) + ";"
		}
		out = append(out, s)
	}
	return out, string(body)
}

func offsets(rs []shown) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.offset)
	}
	return out
}

// TestBrowse_RecordsRendered: oldest first from offset 0, each record
// exactly as rendered: text, JSON pretty-printed, hex, the wire format's
// schema id; newest first is the default.
func TestBrowse_RecordsRendered(t *testing.T) {
	b := browseBroker(t)
	base := browseConsole(t, b, admin.Options{})
	got, body := browse(t, base, "/topics/browse/0?order=oldest&offset=0&limit=6")
	want := []shown{
		{0, "text", "k0", "text", "plain text", "", ""},
		{1, "null", "null", "json", "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}", "", ""},
		{2, "null", "null", "hex", "ff 00 10", "", ""},
		{3, "null", "null", "json", "{\n  \"id\": 7\n}", "42", ""},
		{4, "null", "null", "hex", "02 06 61 62 63", "7", ""},
		{5, "text", "order-5", "text", "needle in here", "", "trace=abc;"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n got %+v\nwant %+v\n%s", got, want, body)
	}
	if !strings.Contains(body, `<span class="badge schema">schema id 42</span>`) {
		t.Errorf("no schema id label:\n%s", body)
	}
	if !strings.Contains(body, `Scanned 6 records (`) || !strings.Contains(body, `offsets 0 up to 5`) {
		t.Errorf("scan summary:\n%s", body)
	}

	// Newest first by default: 29, 28, 27.
	got, body = browse(t, base, "/topics/browse/0?limit=3")
	if o := offsets(got); !slices.Equal(o, []int64{29, 28, 27}) || got[0].value != "filler 29" {
		t.Fatalf("newest first: %v %+v\n%s", o, got, body)
	}
	if !strings.Contains(body, `id="next" href="?partition=0&amp;order=newest&amp;offset=26&amp;`) {
		t.Errorf("no link to the older records:\n%s", body)
	}
	// From an offset, newest first: 10, 9.
	if got, _ = browse(t, base, "/topics/browse/records?partition=0&offset=10&limit=2"); !slices.Equal(offsets(got), []int64{10, 9}) {
		t.Fatalf("newest first from 10: %v", offsets(got))
	}
	// From a timestamp: oldest first, at or after it; newest first, at or before it.
	ts := strconv.FormatInt(browseBase.Add(12*time.Second).UnixMilli(), 10)
	if got, _ = browse(t, base, "/topics/browse/0?order=oldest&limit=2&timestamp="+ts); !slices.Equal(offsets(got), []int64{12, 13}) {
		t.Fatalf("oldest first from a timestamp: %v", offsets(got))
	}
	rfc := browseBase.Add(12*time.Second + 500*time.Millisecond).UTC().Format(time.RFC3339Nano)
	if got, _ = browse(t, base, "/topics/browse/0?limit=2&timestamp="+rfc); !slices.Equal(offsets(got), []int64{12, 11}) {
		t.Fatalf("newest first from a timestamp: %v", offsets(got))
	}
	// Hex on request.
	if got, _ = browse(t, base, "/topics/browse/0?order=oldest&limit=1&format=hex"); got[0].value != "70 6c 61 69 6e 20 74 65 78 74" || got[0].valueKind != "hex" {
		t.Fatalf("hex: %+v", got)
	}
}

// TestBrowse_Filter: a substring of the key or value, a header name, a
// header name and value.
func TestBrowse_Filter(t *testing.T) {
	b := browseBroker(t)
	base := browseConsole(t, b, admin.Options{})
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"q=needle", []int64{5}},
		{"q=order-", []int64{5}}, // in the key
		{"q=filler+2", []int64{29, 28, 27, 26, 25, 24, 23, 22, 21, 20}},
		{"q=filler+2&order=oldest&limit=3", []int64{20, 21, 22}},
		{"header=trace", []int64{5}},
		{"header=trace%3Dab", []int64{5}},
		{"header=trace%3Dabd", nil},
		{"header=nope", nil},
		{"q=needle&header=trace", []int64{5}},
		{"q=plain&header=trace", nil},
	} {
		got, body := browse(t, base, "/topics/browse/0?"+c.query)
		if !slices.Equal(offsets(got), c.want) {
			t.Errorf("%s: offsets %v, want %v\n%s", c.query, offsets(got), c.want, body)
		}
		if !strings.Contains(body, "Scanned 30 records") && len(c.want) < 3 {
			t.Errorf("%s: a filter that matched too few did not scan the whole partition:\n%s", c.query, body)
		}
	}
}

// TestBrowse_ScanBound: with at most 10 records per request, a search for
// offset 5's needle from the newest scans 29…20, stops and links to 19;
// that page scans 19…10; the next finds it, scanning 9…0. A byte bound of 30 stops an
// oldest-first scan after offset 0 (12 bytes: 12+23 > 30).
func TestBrowse_ScanBound(t *testing.T) {
	b := browseBroker(t)
	base := browseConsole(t, b, admin.Options{ScanRecords: 10})
	query := "/topics/browse/0?q=needle"
	for _, step := range []struct {
		first, last, next int64
		found             []int64
	}{{29, 20, 19, nil}, {19, 10, 9, nil}, {9, 0, -1, []int64{5}}} {
		got, body := browse(t, base, query)
		if !slices.Equal(offsets(got), step.found) {
			t.Fatalf("%s: found %v, want %v\n%s", query, offsets(got), step.found, body)
		}
		summary := fmt.Sprintf("offsets %d down to %d", step.first, step.last)
		if !strings.Contains(body, summary) {
			t.Fatalf("%s: summary lacks %q\n%s", query, summary, body)
		}
		if step.found != nil {
			if strings.Contains(body, `id="scan-bound"`) {
				t.Fatalf("stopped by the bound after a match:\n%s", body)
			}
			break
		}
		if !strings.Contains(body, `data-scanned="10"`) || !strings.Contains(body, "One request scans at most 10 records") {
			t.Fatalf("%s: did not scan exactly 10:\n%s", query, body)
		}
		m := regexp.MustCompile(`id="continue" href="\?([^"]*)">Continue from offset (\d+)<`).FindStringSubmatch(body)
		if m == nil || m[2] != strconv.FormatInt(step.next, 10) {
			t.Fatalf("%s: no continue link to %d:\n%s", query, step.next, body)
		}
		query = "/topics/browse/0?" + html.UnescapeString(m[1])
	}

	base = browseConsole(t, b, admin.Options{ScanBytes: 30})
	got, body := browse(t, base, "/topics/browse/0?order=oldest&q=zzz")
	if len(got) != 0 || !strings.Contains(body, `data-scanned="1" data-scanned-bytes="12" data-stopped="true"`) ||
		!strings.Contains(body, "Continue from offset 1<") {
		t.Fatalf("byte bound:\n%s", body)
	}
}
