package schemaregistry

import (
	"strings"
	"testing"
)

// compatCase is a pair of schemas and whether the new one may follow the
// old one at each level's direction: backward (new reads old), forward (old
// reads new). FULL is both.
type compatCase struct {
	name     string
	old, new string
	backward bool
	forward  bool
}

func runCompatTable(t *testing.T, typ string, cases []compatCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldP, err := parseSchema(typ, c.old, nil, false)
			if err != nil {
				t.Fatalf("old: %v", err)
			}
			newP, err := parseSchema(typ, c.new, nil, false)
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			prev := []*parsed{oldP}
			for _, lv := range []struct {
				level string
				want  bool
			}{
				{CompatNone, true},
				{CompatBackward, c.backward},
				{CompatBackwardTransitive, c.backward},
				{CompatForward, c.forward},
				{CompatForwardTransitive, c.forward},
				{CompatFull, c.backward && c.forward},
				{CompatFullTransitive, c.backward && c.forward},
			} {
				msgs := compatible(lv.level, newP, prev)
				if got := len(msgs) == 0; got != lv.want {
					t.Errorf("%s: compatible=%v, want %v (%s)", lv.level, got, lv.want, strings.Join(msgs, "; "))
				}
			}
		})
	}
}

func avroRecord(fields string) string {
	return `{"type":"record","name":"R","namespace":"ns","fields":[` + fields + `]}`
}

func TestCompatibility_Avro(t *testing.T) {
	runCompatTable(t, TypeAvro, []compatCase{
		{"identical", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"int"}`), true, true},
		{"field added with default", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}`), true, true},
		{"field added without default", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), false, true},
		{"field removed without default", avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), avroRecord(`{"name":"a","type":"int"}`), true, false},
		{"field removed with default", avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string","default":""}`), avroRecord(`{"name":"a","type":"int"}`), true, true},
		{"int to long", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"long"}`), true, false},
		{"int to float", `"int"`, `"float"`, true, false},
		{"int to double", `"int"`, `"double"`, true, false},
		{"long to float", `"long"`, `"float"`, true, false},
		{"long to double", `"long"`, `"double"`, true, false},
		{"float to double", `"float"`, `"double"`, true, false},
		{"long to int", `"long"`, `"int"`, false, true},
		{"string to bytes", `"string"`, `"bytes"`, true, true},
		{"string to int", `"string"`, `"int"`, false, false},
		{"enum symbol added", `{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A","B","C"]}`, true, false},
		{"enum symbol removed", `{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"]}`, false, true},
		{"enum symbol removed, reader default", `{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`, `{"type":"enum","name":"E","symbols":["A"],"default":"A"}`, true, true},
		{"enum renamed", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"F","symbols":["A"]}`, false, false},
		{"enum renamed with alias", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"F","aliases":["E"],"symbols":["A"]}`, true, false},
		{"fixed size changed", `{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, false, false},
		{"record renamed", avroRecord(`{"name":"a","type":"int"}`), `{"type":"record","name":"S","namespace":"ns","fields":[{"name":"a","type":"int"}]}`, false, false},
		{"record renamed with alias", avroRecord(`{"name":"a","type":"int"}`), `{"type":"record","name":"S","namespace":"ns","aliases":["ns.R"],"fields":[{"name":"a","type":"int"}]}`, true, false},
		{"field renamed with alias", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"b","aliases":["a"],"type":"int"}`), true, false},
		{"type to union containing it", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":["null","int"]}`), true, false},
		{"union branch added", `["null","int"]`, `["null","int","string"]`, true, false},
		{"union branch removed", `["null","int","string"]`, `["null","int"]`, false, true},
		{"union branch promoted", `["null","int"]`, `["null","long"]`, true, false},
		{"array items promoted", `{"type":"array","items":"int"}`, `{"type":"array","items":"long"}`, true, false},
		{"map values changed", `{"type":"map","values":"int"}`, `{"type":"map","values":"string"}`, false, false},
		{"nested record field added without default", avroRecord(`{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"x","type":"int"}]}}`), avroRecord(`{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}}`), false, true},
		{"recursive record", `{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}`, `{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"]}]}`, true, false},
		{"doc change", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"int","doc":"the a"}`), true, true},
	})
}

func TestCompatibility_JSONSchema(t *testing.T) {
	open := func(props string) string { return `{"type":"object","properties":{` + props + `}}` }
	closed := func(props string) string {
		return `{"type":"object","properties":{` + props + `},"additionalProperties":false}`
	}
	partial := func(props string) string {
		return `{"type":"object","properties":{` + props + `},"additionalProperties":{"type":"string"}}`
	}
	runCompatTable(t, TypeJSON, []compatCase{
		{"identical", open(`"a":{"type":"string"}`), open(`"a":{"type":"string"}`), true, true},
		{"property added to open model", open(`"a":{"type":"string"}`), open(`"a":{"type":"string"},"b":{"type":"integer"}`), false, true},
		{"property added to closed model", closed(`"a":{"type":"string"}`), closed(`"a":{"type":"string"},"b":{"type":"integer"}`), true, false},
		{"property removed from open model", open(`"a":{"type":"string"},"b":{"type":"integer"}`), open(`"a":{"type":"string"}`), true, false},
		{"property removed from closed model", closed(`"a":{"type":"string"},"b":{"type":"integer"}`), closed(`"a":{"type":"string"}`), false, true},
		{"property added covered by partially open model", partial(`"a":{"type":"string"}`), partial(`"a":{"type":"string"},"b":{"type":"string"}`), true, true},
		{"property added not covered by partially open model", partial(`"a":{"type":"string"}`), partial(`"a":{"type":"string"},"b":{"type":"integer"}`), false, false},
		{"type changed", open(`"a":{"type":"string"}`), open(`"a":{"type":"integer"}`), false, false},
		{"integer widened to number", `{"type":"integer"}`, `{"type":"number"}`, true, false},
		{"type union extended", `{"type":"string"}`, `{"type":["string","null"]}`, true, false},
		{"required added", open(`"a":{"type":"string"}`), `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false, true},
		{"required added with default", open(`"a":{"type":"string"}`), `{"type":"object","properties":{"a":{"type":"string","default":""}},"required":["a"]}`, true, true},
		{"maxLength added", `{"type":"string"}`, `{"type":"string","maxLength":5}`, false, true},
		{"maxLength increased", `{"type":"string","maxLength":5}`, `{"type":"string","maxLength":10}`, true, false},
		{"minimum increased", `{"type":"integer","minimum":1}`, `{"type":"integer","minimum":2}`, false, true},
		{"enum extended", `{"enum":["a","b"]}`, `{"enum":["a","b","c"]}`, true, false},
		{"pattern added", `{"type":"string"}`, `{"type":"string","pattern":"^a"}`, false, true},
		{"additionalProperties closed", open(`"a":{"type":"string"}`), closed(`"a":{"type":"string"}`), false, true},
		{"items changed", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"integer"}}`, false, false},
		{"oneOf branch added", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, true, false},
	})
}

func TestCompatibility_Protobuf(t *testing.T) {
	p := func(body string) string { return "syntax = \"proto3\";\npackage ex;\n" + body }
	runCompatTable(t, TypeProtobuf, []compatCase{
		{"identical", p(`message M { int32 a = 1; }`), p(`message M { int32 a = 1; }`), true, true},
		{"field added", p(`message M { int32 a = 1; }`), p(`message M { int32 a = 1; string b = 2; }`), true, true},
		{"field removed", p(`message M { int32 a = 1; string b = 2; }`), p(`message M { int32 a = 1; }`), true, true},
		{"field renamed", p(`message M { int32 a = 1; }`), p(`message M { int32 renamed = 1; }`), true, true},
		{"int32 to int64", p(`message M { int32 a = 1; }`), p(`message M { int64 a = 1; }`), true, true},
		{"int32 to sint32", p(`message M { int32 a = 1; }`), p(`message M { sint32 a = 1; }`), false, false},
		{"string to bytes", p(`message M { string a = 1; }`), p(`message M { bytes a = 1; }`), true, true},
		{"string to int32", p(`message M { string a = 1; }`), p(`message M { int32 a = 1; }`), false, false},
		{"scalar to message", p(`message N {} message M { int32 a = 1; }`), p(`message N {} message M { N a = 1; }`), false, false},
		{"message type changed", p(`message N {} message O {} message M { N a = 1; }`), p(`message N {} message O {} message M { O a = 1; }`), false, false},
		{"message removed", p(`message N {} message M { int32 a = 1; }`), p(`message M { int32 a = 1; }`), false, true},
		{"message added", p(`message M { int32 a = 1; }`), p(`message N {} message M { int32 a = 1; }`), true, false},
		{"package changed", p(`message M { int32 a = 1; }`), "syntax = \"proto3\";\npackage other;\nmessage M { int32 a = 1; }", false, false},
		{"enum value added", p(`enum E { A = 0; } message M { E e = 1; }`), p(`enum E { A = 0; B = 1; } message M { E e = 1; }`), true, true},
		{"numeric made repeated", p(`message M { int32 a = 1; }`), p(`message M { repeated int32 a = 1; }`), false, false},
		{"string made repeated", p(`message M { string a = 1; }`), p(`message M { repeated string a = 1; }`), true, true},
		{"field moved to new oneof", p(`message M { int32 a = 1; }`), p(`message M { oneof o { int32 a = 1; } }`), true, true},
		{"two fields moved to new oneof", p(`message M { int32 a = 1; int32 b = 2; }`), p(`message M { oneof o { int32 a = 1; int32 b = 2; } }`), false, true},
		{"map value changed", p(`message M { map<string, int32> m = 1; }`), p(`message M { map<string, string> m = 1; }`), false, false},
	})
}

// TestCompatibility_TransitiveChecksEveryVersion: a schema compatible with
// the latest version but not an earlier one passes BACKWARD and fails
// BACKWARD_TRANSITIVE.
func TestCompatibility_TransitiveChecksEveryVersion(t *testing.T) {
	mk := func(s string) *parsed {
		p, err := parseSchema(TypeAvro, s, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := mk(avroRecord(`{"name":"a","type":"int"}`))
	v2 := mk(avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"int","default":0}`))
	v3 := mk(avroRecord(`{"name":"b","type":"int","default":0},{"name":"c","type":"int"}`)) // needs c: not in v1 nor v2
	if len(compatible(CompatBackward, v3, []*parsed{v1, v2})) == 0 {
		t.Error("BACKWARD: v3 must not read v2")
	}
	v3 = mk(avroRecord(`{"name":"b","type":"int"}`)) // reads v2 (b present) but not v1 (b missing, no default)
	if msgs := compatible(CompatBackward, v3, []*parsed{v1, v2}); len(msgs) != 0 {
		t.Errorf("BACKWARD against the latest: %v", msgs)
	}
	if len(compatible(CompatBackwardTransitive, v3, []*parsed{v1, v2})) == 0 {
		t.Error("BACKWARD_TRANSITIVE: v3 must not read v1")
	}
	if len(compatible(CompatBackward, mk(`{"type":"string"}`), []*parsed{{typ: TypeJSON}})) == 0 {
		t.Error("a schema of another type is not compatible")
	}
}
