package schemaregistry

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"
)

// wire prefixes payload with Confluent's header for id and, for
// Protobuf, the message indexes (none: no indexes written).
func wire(id int, payload []byte, indexes ...int) []byte {
	b := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	switch {
	case len(indexes) == 1 && indexes[0] == 0:
		b = append(b, 0)
	case len(indexes) > 0:
		b = binary.AppendVarint(b, int64(len(indexes)))
		for _, i := range indexes {
			b = binary.AppendVarint(b, int64(i))
		}
	}
	return append(b, payload...)
}

const avroAll = `{"type":"record","name":"User","namespace":"ex","fields":[
	{"name":"name","type":"string"},
	{"name":"age","type":"int"},
	{"name":"email","type":["null","string"]},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["USER","ADMIN"]}},
	{"name":"props","type":{"type":"map","values":"long"}},
	{"name":"raw","type":"bytes"},
	{"name":"score","type":"double"},
	{"name":"ratio","type":"float"},
	{"name":"ok","type":"boolean"},
	{"name":"id","type":{"type":"fixed","name":"ID","size":2}},
	{"name":"next","type":["null","User"]}]}`

// TestDecode_Avro: every Avro type is decoded into Avro's JSON encoding,
// fields in schema order, unions wrapped, bytes as code points; a
// truncated payload, trailing bytes and an enum index out of range are
// errors.
func TestDecode_Avro(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/users-value/versions", schemaBody(avroAll), 200, `{"id":1}`)
	schema := avro.MustParse(avroAll)
	user := func(name string, next any) map[string]any {
		return map[string]any{"name": name, "age": 30, "email": map[string]any{"string": "a<b>@x"},
			"tags": []any{"a", "b"}, "kind": "ADMIN", "props": map[string]any{"k": int64(7)},
			"raw": []byte{0, 0xff, '"'}, "score": 1.5, "ratio": float32(0.25), "ok": true, "id": [2]byte{'h', 'i'}, "next": next}
	}
	payload, err := avro.Marshal(schema, user("alice", map[string]any{"ex.User": user("bob", nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := s.reg.Decode(ctx, wire(1, payload))
	if err != nil {
		t.Fatal(err)
	}
	one := func(name, next string) string {
		return `{"name":"` + name + `","age":30,"email":{"string":"a<b>@x"},"tags":["a","b"],"kind":"ADMIN","props":{"k":7},` +
			`"raw":"\u0000ÿ\"","score":1.5,"ratio":0.25,"ok":true,"id":"hi","next":` + next + `}`
	}
	want := one("alice", `{"ex.User":`+one("bob", "null")+`}`)
	if string(d.JSON) != want || d.ID != 1 || d.Type != TypeAvro || strings.Join(d.Subjects, ",") != "users-value" {
		t.Fatalf("decoded %+v %s\nwant JSON %s", d, d.JSON, want)
	}

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", wire(1, payload[:len(payload)-3]), "avro: the payload ends inside the value"},
		{"trailing", wire(1, append(payload, 0)), "avro: bytes left after the value"},
		{"enum", wire(1, []byte{2, 'x', 0, 0, 0, 9}), "avro: enum ex.Kind has no symbol -5"},
	} {
		d, err := s.reg.Decode(ctx, c.data)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || d.ID != 1 || d.Type != TypeAvro || d.JSON != nil {
			t.Errorf("%s: %+v %v, want an error %q…", c.name, d, err, c.want)
		}
	}
}

const protoTwo = `syntax = "proto3";
package ex;
message Order {
  string id = 1;
  int64 cents = 2;
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 3;
}
message Customer { string name = 1; int32 age = 2; Status status = 3; }
enum Status { UNKNOWN = 0; ACTIVE = 1; }`

// TestDecode_Protobuf: the message indexes pick the message (the 0
// shortcut the first, [1] the second, [0,0] a nested one); values come
// out as protojson with default values; an index out of the schema and a
// payload that does not parse are errors.
func TestDecode_Protobuf(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/shop-value/versions", map[string]any{"schema": protoTwo, "schemaType": "PROTOBUF"}, 200, `{"id":1}`)
	var line []byte
	line = protowire.AppendTag(line, 1, protowire.BytesType)
	line = protowire.AppendString(line, "pen")
	line = protowire.AppendTag(line, 2, protowire.VarintType)
	line = protowire.AppendVarint(line, 3)
	var order []byte
	order = protowire.AppendTag(order, 1, protowire.BytesType)
	order = protowire.AppendString(order, "o-1")
	order = protowire.AppendTag(order, 2, protowire.VarintType)
	order = protowire.AppendVarint(order, 1250)
	order = protowire.AppendTag(order, 3, protowire.BytesType)
	order = protowire.AppendBytes(order, line)
	var customer []byte
	customer = protowire.AppendTag(customer, 1, protowire.BytesType)
	customer = protowire.AppendString(customer, "alice")
	customer = protowire.AppendTag(customer, 2, protowire.VarintType)
	customer = protowire.AppendVarint(customer, 30)

	ctx := context.Background()
	for _, c := range []struct {
		name    string
		data    []byte
		message string
		want    string
	}{
		{"first", wire(1, order, 0), "ex.Order", `{"id":"o-1","cents":"1250","lines":[{"sku":"pen","qty":3}]}`},
		{"second", wire(1, customer, 1), "ex.Customer", `{"name":"alice","age":30,"status":"UNKNOWN"}`},
		{"nested", wire(1, line, 0, 0), "ex.Order.Line", `{"sku":"pen","qty":3}`},
		{"empty", wire(1, nil, 1), "ex.Customer", `{"name":"","age":0,"status":"UNKNOWN"}`},
	} {
		d, err := s.reg.Decode(ctx, c.data)
		if err != nil || string(d.JSON) != c.want || d.Message != c.message || d.Type != TypeProtobuf {
			t.Errorf("%s: %+v %s %v, want %s %s", c.name, d, d.JSON, err, c.message, c.want)
		}
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"index", wire(1, customer, 2), "protobuf: message index [2] not in the schema"},
		{"nested index", wire(1, customer, 1, 0), "protobuf: message index [1 0] not in the schema"},
		{"no indexes", wire(1, nil), "protobuf: no message indexes"},
		{"bad payload", wire(1, []byte{0x0a, 0x05, 'a'}, 1), "protobuf ex.Customer: "},
	} {
		if _, err := s.reg.Decode(ctx, c.data); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q…", c.name, err, c.want)
		}
	}
}

// TestDecode_JSONAndErrors: a JSON Schema value is its JSON compacted;
// not JSON, not the wire format and an unknown id are errors; an id
// registered after a miss is found at once.
func TestDecode_JSONAndErrors(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/ev-value/versions", map[string]any{"schema": `{"type":"object","properties":{"n":{"type":"integer"}}}`, "schemaType": "JSON"}, 200, `{"id":1}`)
	ctx := context.Background()
	d, err := s.reg.Decode(ctx, wire(1, []byte(` { "n" : 1, "s":"<&>" } `)))
	if err != nil || string(d.JSON) != `{"n":1,"s":"<&>"}` || d.Type != TypeJSON {
		t.Fatalf("JSON: %+v %s %v", d, d.JSON, err)
	}
	if _, err := s.reg.Decode(ctx, wire(1, []byte(`{"n":`))); err == nil || !strings.HasPrefix(err.Error(), "JSON: ") {
		t.Errorf("not JSON: %v", err)
	}
	for _, data := range [][]byte{nil, {0, 0, 0, 1}, {1, 0, 0, 0, 1, '{', '}'}} {
		if _, err := s.reg.Decode(ctx, data); !errors.Is(err, ErrNotWireFormat) {
			t.Errorf("% x: %v, want ErrNotWireFormat", data, err)
		}
	}
	d, err = s.reg.Decode(ctx, wire(2, []byte(`"x"`)))
	if !errors.Is(err, ErrUnknownSchema) || err.Error() != "unknown schema id 2" || d.ID != 2 || d.Type != "" {
		t.Fatalf("unknown id: %+v %v", d, err)
	}
	// Registered through another registry over the same log: this one
	// reads it when the id is not in its view.
	other := newTestServer(t, s.log)
	other.expect("POST", "/subjects/str-value/versions", schemaBody(`"string"`), 200, `{"id":2}`)
	d, err = s.reg.Decode(ctx, wire(2, []byte{6, 'a', 'b', 'c'}))
	if err != nil || string(d.JSON) != `"abc"` || strings.Join(d.Subjects, ",") != "str-value" {
		t.Fatalf("after registration elsewhere: %+v %s %v", d, d.JSON, err)
	}
	// A soft-deleted subject's schema still decodes, named by it.
	s.expect("DELETE", "/subjects/str-value", nil, 200, `[1]`)
	d, err = s.reg.Decode(ctx, wire(2, []byte{2, 'z'}))
	if err != nil || string(d.JSON) != `"z"` || strings.Join(d.Subjects, ",") != "str-value" {
		t.Fatalf("soft-deleted: %+v %s %v", d, d.JSON, err)
	}
}

// TestOverviewAndSubject: the Go view of subjects, levels and versions.
func TestOverviewAndSubject(t *testing.T) {
	s := newTestServer(t, nil)
	ctx := context.Background()
	o, err := s.reg.Overview(ctx)
	if err != nil || o.Compatibility != CompatBackward || !o.DefaultCompatibility || o.Mode != ModeReadWrite || !o.DefaultMode || len(o.Subjects) != 0 {
		t.Fatalf("empty: %+v %v", o, err)
	}
	s.expect("POST", "/subjects/users-value/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("POST", "/subjects/users-value/versions", schemaBody(avroUserV2), 200, `{"id":2}`)
	s.expect("PUT", "/config/users-value", map[string]any{"compatibility": "FULL"}, 200, `{"compatibility":"FULL"}`)
	s.expect("POST", "/subjects/gone-value/versions", schemaBody(`"string"`), 200, `{"id":3}`)
	s.expect("DELETE", "/subjects/gone-value", nil, 200, `[1]`)
	s.expect("PUT", "/config", map[string]any{"compatibility": "NONE"}, 200, `{"compatibility":"NONE"}`)
	s.expect("DELETE", "/subjects/users-value/versions/1", nil, 200, `1`)

	o, err = s.reg.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.Compatibility != CompatNone || o.DefaultCompatibility || o.Mode != ModeReadWrite || !o.DefaultMode || len(o.Subjects) != 2 {
		t.Fatalf("overview: %+v", o)
	}
	gone, users := o.Subjects[0], o.Subjects[1]
	if gone.Name != "gone-value" || !gone.Deleted || gone.Versions != 1 || gone.Latest.ID != 3 || gone.Compatibility != CompatNone || gone.OwnCompatibility {
		t.Errorf("gone-value: %+v", gone)
	}
	if users.Name != "users-value" || users.Deleted || users.Versions != 2 || users.Latest.Version != 2 || users.Latest.ID != 2 ||
		users.Latest.Type != TypeAvro || users.Compatibility != CompatFull || !users.OwnCompatibility || users.Mode != ModeReadWrite || users.OwnMode {
		t.Errorf("users-value: %+v", users)
	}
	info, versions, err := s.reg.Subject(ctx, "users-value")
	if err != nil || info.Name != "users-value" || len(versions) != 2 {
		t.Fatalf("subject: %+v %+v %v", info, versions, err)
	}
	if v := versions[0]; v.Version != 1 || v.ID != 1 || !v.Deleted || v.Schema != avroUserV1 { // stored in the canonical form, which avroUserV1 is written in
		t.Errorf("version 1: %+v", v)
	}
	if v := versions[1]; v.Version != 2 || v.ID != 2 || v.Deleted {
		t.Errorf("version 2: %+v", v)
	}
	if _, _, err := s.reg.Subject(ctx, "nope"); !errors.Is(err, ErrSubjectNotFound) {
		t.Errorf("unknown subject: %v", err)
	}
}

// TestDecode_LatestReferenceFollowsTheLatest: a schema that references
// the latest version of a subject decodes with that subject's newest
// version once it is registered (its parsed form is not kept past it).
func TestDecode_LatestReferenceFollowsTheLatest(t *testing.T) {
	s := newTestServer(t, nil)
	addr := func(fields string) map[string]any {
		return map[string]any{"schemaType": "PROTOBUF", "schema": `syntax = "proto3"; package ex; message Addr { string city = 1; ` + fields + ` }`}
	}
	s.expect("POST", "/subjects/addr/versions", addr(""), 200, `{"id":1}`)
	s.expect("POST", "/subjects/order-value/versions", map[string]any{
		"schemaType": "PROTOBUF",
		"schema":     `syntax = "proto3"; package ex; import "addr.proto"; message Order { Addr addr = 1; }`,
		"references": []map[string]any{{"name": "addr.proto", "subject": "addr", "version": -1}},
	}, 200, `{"id":2}`)
	var a, order []byte
	a = protowire.AppendTag(a, 1, protowire.BytesType)
	a = protowire.AppendString(a, "NY")
	a = protowire.AppendTag(a, 2, protowire.BytesType)
	a = protowire.AppendString(a, "1")
	order = protowire.AppendTag(order, 1, protowire.BytesType)
	order = protowire.AppendBytes(order, a)
	ctx := context.Background()
	d, err := s.reg.Decode(ctx, wire(2, order, 0))
	if err != nil || string(d.JSON) != `{"addr":{"city":"NY"}}` {
		t.Fatalf("before: %s %v", d.JSON, err)
	}
	s.expect("POST", "/subjects/addr/versions", addr("string zip = 2;"), 200, `{"id":3}`)
	d, err = s.reg.Decode(ctx, wire(2, order, 0))
	if err != nil || string(d.JSON) != `{"addr":{"city":"NY","zip":"1"}}` {
		t.Fatalf("after a new latest: %s %v", d.JSON, err)
	}
}

// FuzzDecode: Decode never panics, and what it decodes is valid JSON
// within maxDecodedJSON, whatever the bytes after the header (ids 1 Avro,
// recursive, with every type; 2 Protobuf; 3 JSON).
func FuzzDecode(f *testing.F) {
	r, err := New(Config{Log: NewMemoryLog()})
	if err != nil {
		f.Fatal(err)
	}
	h := r.Handler()
	for i, body := range []map[string]any{
		schemaBody(avroAll),
		{"schema": protoTwo, "schemaType": "PROTOBUF"},
		{"schema": `{"type":"object"}`, "schemaType": "JSON"},
	} {
		b, _ := json.Marshal(body)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/subjects/s"+strconv.Itoa(i)+"/versions", bytes.NewReader(b)))
		if rec.Code != 200 {
			f.Fatalf("register: %d %s", rec.Code, rec.Body)
		}
	}
	payload, _ := avro.Marshal(avro.MustParse(avroAll), map[string]any{"name": "a", "tags": []any{}, "kind": "USER", "props": map[string]any{}, "raw": []byte{}, "id": [2]byte{}})
	f.Add(wire(1, payload))
	f.Add(wire(2, []byte{0x0a, 0x01, 'x'}, 1))
	f.Add(wire(2, []byte{0x1a, 0x02, 0x0a, 0x00}, 0, 0))
	f.Add(wire(3, []byte(`{"a":[1,2]}`)))
	f.Add(wire(1, []byte{2, 'x', 0, 0, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f}))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := r.Decode(context.Background(), data)
		if err == nil && (!json.Valid(d.JSON) || len(d.JSON) > maxDecodedJSON) {
			t.Fatalf("% x decoded into %q", data, d.JSON)
		}
	})
}
