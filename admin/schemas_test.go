package admin_test

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	peopleV1 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}`
	peopleV2 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"email","type":["null","string"],"default":null}]}`
	// The registry stores Avro in Java's canonical form (Confluent's),
	// which peopleV1 is written in.
	peopleV1Stored = peopleV1
	customerProto  = `syntax = "proto3";
package shop;
message Customer { string name = 1; }`
	orderProto = `syntax = "proto3";
package shop;
import "customer.proto";
message Note { string text = 1; }
message Order {
  string id = 1;
  int64 cents = 2;
  repeated string skus = 3;
  Customer customer = 4;
}`
	eventSchema = `{"type":"object","properties":{"kind":{"type":"string"},"n":{"type":"integer"}}}`
)

// registryScene starts a broker with the schema registry and registers,
// through franz-go's sr client:
//
//	id 1  people-value v1   AVRO
//	id 2  shop-customer v1  PROTOBUF
//	id 3  orders-value v1   PROTOBUF, references customer.proto → shop-customer v1; compatibility FULL of its own
//	id 4  events-value v1   JSON
//	id 5  old-value v1      AVRO "string", then the subject soft-deleted
//	id 6  people-value v2   AVRO
//	id 5  mixed-key v1      the same "string": the same id
//	id 5  a-strings v1      and again
//
// and produces to "mixed" (one partition), oldest first:
//
//	0  key "k-alice", value people v1 {alice, 30}
//	1  value orders-value, message index [1] (Order)
//	2  value events-value JSON
//	3  value people v2 {bob, 41, b@x}
//	4  key mixed-key "k4"; value with the unknown id 99
//	5  value people v1 truncated
func registryScene(t *testing.T) string {
	t.Helper()
	b := gregortest.Start(t, gregortest.SchemaRegistry(), gregortest.Topic("mixed", 1, nil))
	ctx := testCtx(t)
	rcl, err := sr.NewClient(sr.URLs(b.SchemaRegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	register := func(subject string, s sr.Schema, wantID int) {
		t.Helper()
		ss, err := rcl.CreateSchema(ctx, subject, s)
		if err != nil || ss.ID != wantID {
			t.Fatalf("register %s: %+v %v, want id %d", subject, ss, err, wantID)
		}
	}
	register("people-value", sr.Schema{Schema: peopleV1}, 1)
	register("shop-customer", sr.Schema{Schema: customerProto, Type: sr.TypeProtobuf}, 2)
	register("orders-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "customer.proto", Subject: "shop-customer", Version: 1}}}, 3)
	if res := rcl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "orders-value"); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("set compatibility: %+v", res)
	}
	register("events-value", sr.Schema{Schema: eventSchema, Type: sr.TypeJSON}, 4)
	register("old-value", sr.Schema{Schema: `"string"`}, 5)
	if _, err := rcl.DeleteSubject(ctx, "old-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	register("people-value", sr.Schema{Schema: peopleV2}, 6)
	register("mixed-key", sr.Schema{Schema: `"string"`}, 5)
	register("a-strings", sr.Schema{Schema: `"string"`}, 5)

	// Values encoded by franz-go's Serde (the header, Protobuf's message
	// indexes) and hamba (Avro).
	var serde sr.Serde
	avroEnc := func(schema string) sr.EncodingOpt {
		s := avro.MustParse(schema)
		return sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(s, v) })
	}
	type person struct {
		Name  string  `avro:"name"`
		Age   int     `avro:"age"`
		Email *string `avro:"email"`
	}
	type personV1 struct {
		Name string `avro:"name"`
		Age  int    `avro:"age"`
	}
	type order []byte     // a Protobuf payload
	type event []byte     // a JSON payload
	type keyString string // mixed-key
	serde.Register(1, personV1{}, avroEnc(peopleV1))
	serde.Register(6, person{}, avroEnc(peopleV2))
	serde.Register(3, order(nil), sr.EncodeFn(func(v any) ([]byte, error) { return v.(order), nil }), sr.Index(1))
	serde.Register(4, event(nil), sr.EncodeFn(func(v any) ([]byte, error) { return v.(event), nil }))
	serde.Register(5, keyString(""), sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(avro.MustParse(`"string"`), string(v.(keyString))) }))
	enc := func(v any) []byte {
		t.Helper()
		b, err := serde.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var cust, ord []byte
	cust = protowire.AppendTag(cust, 1, protowire.BytesType)
	cust = protowire.AppendString(cust, "ann")
	ord = protowire.AppendTag(ord, 1, protowire.BytesType)
	ord = protowire.AppendString(ord, "o-1")
	ord = protowire.AppendTag(ord, 2, protowire.VarintType)
	ord = protowire.AppendVarint(ord, 1250)
	for _, sku := range []string{"pen", "ink"} {
		ord = protowire.AppendTag(ord, 3, protowire.BytesType)
		ord = protowire.AppendString(ord, sku)
	}
	ord = protowire.AppendTag(ord, 4, protowire.BytesType)
	ord = protowire.AppendBytes(ord, cust)
	email := "b@x"
	alice := enc(personV1{Name: "alice", Age: 30})
	unknown := append([]byte{0, 0, 0, 0, 99}, `{"x":1}`...)
	recs := []*kgo.Record{
		{Key: []byte("k-alice"), Value: alice},
		{Value: enc(order(ord))},
		{Value: enc(event(`{"kind":"click", "n":2}`))},
		{Value: enc(person{Name: "bob", Age: 41, Email: &email})},
		{Key: enc(keyString("k4")), Value: unknown},
		{Value: alice[:len(alice)-1]},
	}
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("mixed"))
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return browseConsole(t, b, admin.Options{})
}

func getPage(t *testing.T, url string, wantStatus int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: %d, want %d\n%s", url, resp.StatusCode, wantStatus, body)
	}
	return string(body)
}

func indented(t *testing.T, js string) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(js), "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestSchemas_Pages: the Schemas page lists every subject with its latest
// version, id, type, the level and mode in force and whose they are, the
// soft-deleted subject marked; a subject page lists its versions and
// references and shows a version's schema text (JSON indented, .proto as
// stored); an unknown subject or version is a 404 page.
func TestSchemas_Pages(t *testing.T) {
	base := registryScene(t)
	body := getPage(t, base+"/schemas", 200)
	row := func(subject, cls, flag string, version, id int, typ string, versions int, compat, own string) string {
		return `<tr class="subject` + cls + `" data-subject="` + subject + `"><td><a href="/schemas/` + subject + `">` + subject + `</a>` + flag +
			`</td><td class="num version">` + strconv.Itoa(version) + `</td><td class="num id">` + strconv.Itoa(id) + `</td><td class="type">` + typ +
			`</td><td class="num">` + strconv.Itoa(versions) + `</td><td class="compatibility">` + compat + ` <span class="muted">(` + own +
			`)</span></td><td class="mode">READWRITE <span class="muted">(global)</span></td></tr>`
	}
	for _, want := range []string{
		`<a href="/schemas">Schemas</a>`, // in the navigation
		`Global compatibility <b id="global-compatibility">BACKWARD</b> <span class="muted">(default)</span> · mode <b id="global-mode">READWRITE</b> <span class="muted">(default)</span> · <span id="subject-count">6</span> subjects, <span id="deleted-count">1</span> soft-deleted`,
		row("a-strings", "", "", 1, 5, "AVRO", 1, "BACKWARD", "global"),
		row("events-value", "", "", 1, 4, "JSON", 1, "BACKWARD", "global"),
		row("mixed-key", "", "", 1, 5, "AVRO", 1, "BACKWARD", "global"),
		row("old-value", " deleted", ` <span class="flag">soft-deleted</span>`, 1, 5, "AVRO", 1, "BACKWARD", "global"),
		row("orders-value", "", "", 1, 3, "PROTOBUF", 1, "FULL", "subject"),
		row("people-value", "", "", 2, 6, "AVRO", 2, "BACKWARD", "global"),
		row("shop-customer", "", "", 1, 2, "PROTOBUF", 1, "BACKWARD", "global"),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/schemas lacks %s", want)
		}
	}
	if got := regexp.MustCompile(`data-subject="([^"]*)"`).FindAllStringSubmatch(body, -1); len(got) != 7 {
		t.Errorf("/schemas lists %d subjects, want 7", len(got))
	}
	if t.Failed() {
		t.Fatalf("/schemas:\n%s", body)
	}

	schemaText := func(body string) string {
		m := regexp.MustCompile(`(?s)<pre id="schema-text" data-version="\d+" data-id="\d+" [^>]*>(.*?)</pre>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no schema text:\n%s", body)
		}
		return html.UnescapeString(m[1])
	}
	body = getPage(t, base+"/schemas/people-value", 200)
	for _, want := range []string{
		`Compatibility <b id="compatibility">BACKWARD</b> <span class="muted">(global)</span> · mode <b id="mode">READWRITE</b> <span class="muted">(global)</span>`,
		`<tr class="version" data-version="1"><td class="num"><a href="?version=1">1</a></td><td class="num id">1</td><td class="type">AVRO</td>`,
		`<tr class="version" data-version="2"><td class="num"><a href="?version=2">2</a></td><td class="num id">6</td><td class="type">AVRO</td>`,
		`<h2>Version 2 <span class="muted">(id 6, AVRO)</span></h2>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/schemas/people-value lacks %s", want)
		}
	}
	if got := schemaText(body); !strings.Contains(got, "\n    {\n      \"name\": \"email\",\n") || !strings.HasPrefix(got, "{\n  \"type\": \"record\",\n  \"name\": \"User\",\n") {
		t.Errorf("version 2's text is not the indented JSON of v2:\n%s", got)
	}
	if got := schemaText(getPage(t, base+"/schemas/people-value?version=1", 200)); got != indented(t, peopleV1Stored) {
		t.Errorf("version 1's text:\n%s\nwant\n%s", got, indented(t, peopleV1Stored))
	}
	body = getPage(t, base+"/schemas/orders-value", 200)
	for _, want := range []string{
		`Compatibility <b id="compatibility">FULL</b> <span class="muted">(the subject's own)</span>`,
		`<div class="reference"><code>customer.proto</code> → <a href="/schemas/shop-customer?version=1">shop-customer v1</a></div>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/schemas/orders-value lacks %s\n%s", want, body)
		}
	}
	if got := schemaText(body); got != orderProto {
		t.Errorf("the .proto shown:\n%s\nwant\n%s", got, orderProto)
	}
	if body = getPage(t, base+"/schemas/old-value", 200); !strings.Contains(body, `<tr class="version deleted" data-version="1">`) {
		t.Errorf("the soft-deleted version is not marked:\n%s", body)
	}
	if body = getPage(t, base+"/schemas/nope", 404); !strings.Contains(body, `No subject &#34;nope&#34; in the registry.`) {
		t.Errorf("unknown subject:\n%s", body)
	}
	getPage(t, base+"/schemas/people-value?version=3", 404)
}

// decodedRow is one record row of the records page of "mixed".
type decodedRow struct {
	part                   string // key or value
	kind, id, subject, typ string
	why, text              string
}

var decodedCellRE = regexp.MustCompile(`(?s)<td class="(key|value)"><span class="bytes" data-kind="(\w+)"(?: data-schema-id="(\d+)")?(?: data-subject="([^"]*)")?(?: data-schema-type="(\w+)")?>(.*?)<pre>(.*?)</pre>`)

// TestSchemas_BrowseDecodes: the record browser shows each wire-format
// key and value decoded through the registry, exactly, with its schema id,
// type and subject; a value with an unknown id and one that does not
// decode are shown raw with the reason; hex shows everything raw.
func TestSchemas_BrowseDecodes(t *testing.T) {
	base := registryScene(t)
	body := getPage(t, base+"/topics/mixed/0?order=oldest", 200)
	var got []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		for _, c := range decodedCellRE.FindAllStringSubmatch(m[2], -1) {
			r := decodedRow{part: c[1], kind: c[2], id: c[3], subject: c[4], typ: c[5], text: html.UnescapeString(c[7])}
			if w := regexp.MustCompile(`<span class="undecoded muted">not decoded: (.*?)</span>`).FindStringSubmatch(c[6]); w != nil {
				r.why = html.UnescapeString(w[1])
			}
			if r.kind == "decoded" { // indented on the page: compare compact
				var out bytes.Buffer
				if err := json.Compact(&out, []byte(r.text)); err != nil {
					t.Fatalf("offset %s %s: not JSON: %v\n%s", m[1], r.part, err, r.text)
				}
				r.text = out.String()
			}
			got = append(got, m[1]+" "+r.part+" "+r.kind+" id="+r.id+" "+r.subject+" "+r.typ+" why="+r.why+" "+r.text)
		}
	}
	want := []string{
		`0 key text id=   why= k-alice`,
		`0 value decoded id=1 people-value AVRO why= {"name":"alice","age":30}`,
		`1 key null id=   why= null`,
		`1 value decoded id=3 orders-value PROTOBUF why= {"id":"o-1","cents":"1250","skus":["pen","ink"],"customer":{"name":"ann"}}`,
		`2 key null id=   why= null`,
		`2 value decoded id=4 events-value JSON why= {"kind":"click","n":2}`,
		`3 key null id=   why= null`,
		`3 value decoded id=6 people-value AVRO why= {"name":"bob","age":41,"email":{"string":"b@x"}}`,
		`4 key decoded id=5 mixed-key AVRO why= "k4"`,
		"4 value json id=99   why=unknown schema id 99 {\n  \"x\": 1\n}",
		`5 key null id=   why= null`,
		"5 value text id=1   why=avro: the payload ends inside the value \nalice",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n got %q\nwant %q\n%s", got, want, body)
	}
	for _, want := range []string{
		`<span class="badge">PROTOBUF</span> <a class="subject" href="/schemas/orders-value">orders-value</a> <span class="muted">shop.Order</span>`,
		// The topic's key subject, though a-strings carries id 5 too
		// (and old-value, soft-deleted: not counted).
		`<span class="badge">AVRO</span> <a class="subject" href="/schemas/mixed-key">mixed-key</a> <span class="muted">+1</span><pre>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("records page lacks %s", want)
		}
	}
	// Hex: nothing decoded.
	body = getPage(t, base+"/topics/mixed/0?order=oldest&limit=1&format=hex", 200)
	if strings.Contains(body, `data-kind="decoded"`) || !strings.Contains(body, `<td class="value"><span class="bytes" data-kind="hex"><span class="badge">hex</span><pre>00 00 00 00 01 0a 61 6c 69 63 65 3c</pre>`) {
		t.Errorf("hex page:\n%s", body)
	}
}

// TestSchemas_RegistryOff: without schema.registry.listeners the Schemas
// page says so (200, a subject page 404), and wire-format values are shown
// as before, undecoded without a reason.
func TestSchemas_RegistryOff(t *testing.T) {
	b := browseBroker(t)
	base := browseConsole(t, b, admin.Options{})
	for _, c := range []struct {
		path   string
		status int
	}{{"/schemas", 200}, {"/schemas/people-value", 404}} {
		if body := getPage(t, base+c.path, c.status); !strings.Contains(body, `<p id="registry-off" class="muted">The schema registry is not enabled on this broker: set schema.registry.listeners`) {
			t.Errorf("%s:\n%s", c.path, body)
		}
	}
	if body := getPage(t, base+"/topics/browse/0?order=oldest&offset=3&limit=1", 200); strings.Contains(body, "not decoded") || !strings.Contains(body, `data-kind="json" data-schema-id="42">`) {
		t.Errorf("wire format without a registry:\n%s", body)
	}
}
