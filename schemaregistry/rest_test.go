package schemaregistry

import (
	"net/http"
	"strings"
	"testing"
)

const (
	avroUserV1 = `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"}]}`
	avroUserV2 = `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	avroUserV3 = `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
)

func TestREST_RegisterAndRead(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("GET", "/", nil, 200, `{}`)
	s.expect("GET", "/subjects", nil, 200, `[]`)
	s.expect("GET", "/schemas/types", nil, 200, `["JSON","PROTOBUF","AVRO"]`)
	s.expect("POST", "/subjects/users-value/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	// Whitespace does not make another schema.
	s.expect("POST", "/subjects/users-value/versions", schemaBody(strings.ReplaceAll(avroUserV1, ",", " , ")), 200, `{"id":1}`)
	s.expect("POST", "/subjects/users-value/versions", schemaBody(avroUserV2), 200, `{"id":2}`)
	// The same schema in another subject has the same id.
	s.expect("POST", "/subjects/other-value/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("GET", "/subjects", nil, 200, `["other-value","users-value"]`)
	s.expect("GET", "/subjects?subjectPrefix=users", nil, 200, `["users-value"]`)
	s.expect("GET", "/subjects/users-value/versions", nil, 200, `[1,2]`)
	canon1 := `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"}]}`
	s.expect("GET", "/subjects/users-value/versions/1", nil, 200, `{"subject":"users-value","version":1,"id":1,"schema":`+quote(canon1)+`}`)
	_, latest := s.do("GET", "/subjects/users-value/versions/latest", nil)
	if !strings.Contains(latest, `"version":2,"id":2`) {
		t.Errorf("latest: %s", latest)
	}
	s.expect("GET", "/subjects/users-value/versions/1/schema", nil, 200, canon1)
	s.expect("GET", "/schemas/ids/1", nil, 200, `{"schema":`+quote(canon1)+`}`)
	s.expect("GET", "/schemas/ids/1/schema", nil, 200, canon1)
	s.expect("GET", "/schemas/ids/1/versions", nil, 200, `[{"subject":"other-value","version":1},{"subject":"users-value","version":1}]`)
	s.expect("GET", "/schemas/ids/1/subjects", nil, 200, `["other-value","users-value"]`)
	s.expect("POST", "/subjects/users-value", schemaBody(avroUserV2), 200,
		`{"subject":"users-value","version":2,"id":2,"schema":`+quote(`{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`)+`}`)
	// Trailing slash, as some clients send it.
	if st, _ := s.do("POST", "/subjects/users-value/", schemaBody(avroUserV1)); st != 200 {
		t.Errorf("lookup with trailing slash: %d", st)
	}

	// Errors.
	s.expectCode("GET", "/subjects/nope/versions", nil, 404, 40401)
	s.expectCode("GET", "/subjects/nope/versions/1", nil, 404, 40401)
	s.expectCode("GET", "/subjects/users-value/versions/9", nil, 404, 40402)
	s.expectCode("GET", "/subjects/users-value/versions/0", nil, 422, 42202)
	s.expectCode("GET", "/subjects/users-value/versions/abc", nil, 422, 42202)
	s.expectCode("GET", "/schemas/ids/99", nil, 404, 40403)
	s.expectCode("GET", "/schemas/ids/99/versions", nil, 404, 40403)
	s.expectCode("POST", "/subjects/users-value", schemaBody(avroUserV3), 404, 40403)
	s.expectCode("POST", "/subjects/nope", schemaBody(avroUserV1), 404, 40401)
	s.expectCode("POST", "/subjects/users-value/versions", schemaBody(`{"type":"record"`), 422, 42201)
	s.expectCode("POST", "/subjects/users-value/versions", map[string]any{"schema": avroUserV1, "schemaType": "XML"}, 422, 42201)
	// Incompatible under the default BACKWARD: a field without default.
	s.expectCode("POST", "/subjects/users-value/versions", schemaBody(avroUserV3), 409, 409)

	// Unsupported content type.
	req, _ := http.NewRequest("POST", s.srv.URL+"/subjects/x/versions", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("text/plain: %d", resp.StatusCode)
	}
	// application/json is accepted.
	req, _ = http.NewRequest("POST", s.srv.URL+"/subjects/json-ct/versions", strings.NewReader(`{"schema":"\"string\""}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("application/json: %d", resp.StatusCode)
	}
}

func quote(s string) string { return string(marshalJSON(s)) }

func TestREST_SoftAndHardDelete(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV2), 200, `{"id":2}`)

	// A version: hard first is refused, soft, soft again refused, hard.
	s.expectCode("DELETE", "/subjects/s/versions/1?permanent=true", nil, 404, 40407)
	s.expect("DELETE", "/subjects/s/versions/1", nil, 200, `1`)
	s.expectCode("DELETE", "/subjects/s/versions/1", nil, 404, 40406)
	s.expectCode("GET", "/subjects/s/versions/1", nil, 404, 40402)
	s.expect("GET", "/subjects/s/versions", nil, 200, `[2]`)
	s.expect("GET", "/subjects/s/versions?deleted=true", nil, 200, `[1,2]`)
	_, body := s.do("GET", "/subjects/s/versions/1?deleted=true", nil)
	if !strings.Contains(body, `"deleted":true`) {
		t.Errorf("soft-deleted version with deleted=true: %s", body)
	}
	s.expect("GET", "/schemas/ids/1/schema", nil, 200, `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"}]}`) // still served by id
	s.expect("DELETE", "/subjects/s/versions/1?permanent=true", nil, 200, `1`)
	s.expectCode("DELETE", "/subjects/s/versions/1?permanent=true", nil, 404, 40402)
	s.expectCode("GET", "/schemas/ids/1", nil, 404, 40403)
	s.expect("GET", "/subjects/s/versions?deleted=true", nil, 200, `[2]`)

	// A subject: hard first refused, soft, soft again refused, hard.
	s.expect("POST", "/subjects/s/versions", schemaBody(`{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0},{"name":"x","type":["null","string"],"default":null}]}`), 200, `{"id":3}`)
	s.expectCode("DELETE", "/subjects/s?permanent=true", nil, 404, 40405)
	s.expect("DELETE", "/subjects/s", nil, 200, `[2,3]`)
	s.expectCode("DELETE", "/subjects/s", nil, 404, 40404)
	s.expectCode("DELETE", "/subjects/s/versions/2", nil, 404, 40406)
	s.expectCode("DELETE", "/subjects/s/versions/latest", nil, 404, 40406)
	s.expectCode("DELETE", "/subjects/s/versions/9", nil, 404, 40402)
	s.expectCode("DELETE", "/subjects/nope/versions/1", nil, 404, 40401)
	s.expectCode("DELETE", "/subjects/s/versions/x", nil, 422, 42202)
	s.expect("GET", "/subjects", nil, 200, `[]`)
	s.expect("GET", "/subjects?deleted=true", nil, 200, `["s"]`)
	s.expectCode("GET", "/subjects/s/versions", nil, 404, 40401)
	s.expectCode("POST", "/subjects/s", schemaBody(avroUserV2), 404, 40401)
	_, body = s.do("POST", "/subjects/s?deleted=true", schemaBody(avroUserV2))
	if !strings.Contains(body, `"version":2,"id":2`) {
		t.Errorf("lookup with deleted=true: %s", body)
	}
	s.expect("DELETE", "/subjects/s?permanent=true", nil, 200, `[2,3]`)
	s.expectCode("DELETE", "/subjects/s", nil, 404, 40401)
	s.expect("GET", "/subjects?deleted=true", nil, 200, `[]`)

	// Ids are not reused after a hard delete; a re-registered schema gets a new one.
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":4}`)
	s.expect("GET", "/subjects/s/versions", nil, 200, `[1]`)
}

func TestREST_ConfigAndCompatibility(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("GET", "/config", nil, 200, `{"compatibilityLevel":"BACKWARD"}`)
	s.expectCode("PUT", "/config", map[string]string{"compatibility": "SIDEWAYS"}, 422, 42203)
	s.expect("PUT", "/config", map[string]string{"compatibility": "FULL"}, 200, `{"compatibility":"FULL"}`)
	s.expect("GET", "/config", nil, 200, `{"compatibilityLevel":"FULL"}`)
	s.expectCode("GET", "/config/s", nil, 404, 40408)
	s.expect("GET", "/config/s?defaultToGlobal=true", nil, 200, `{"compatibilityLevel":"FULL"}`)
	s.expect("PUT", "/config/s", map[string]string{"compatibility": "NONE"}, 200, `{"compatibility":"NONE"}`)
	s.expect("GET", "/config/s", nil, 200, `{"compatibilityLevel":"NONE"}`)

	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV3), 200, `{"id":2}`) // NONE lets it in
	s.expect("PUT", "/config/s", map[string]string{"compatibility": "BACKWARD"}, 200, `{"compatibility":"BACKWARD"}`)
	s.expect("POST", "/compatibility/subjects/s/versions/latest", schemaBody(avroUserV1), 200, `{"is_compatible":true}`)
	s.expect("POST", "/compatibility/subjects/s/versions/1", schemaBody(avroUserV3), 200, `{"is_compatible":false}`)
	_, body := s.do("POST", "/compatibility/subjects/s/versions/1?verbose=true", schemaBody(avroUserV3))
	if !strings.Contains(body, `"is_compatible":false,"messages":["{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'`) {
		t.Errorf("verbose: %s", body)
	}
	s.expectCode("POST", "/compatibility/subjects/s/versions/7", schemaBody(avroUserV1), 404, 40402)
	s.expectCode("POST", "/compatibility/subjects/nope/versions/1", schemaBody(avroUserV1), 404, 40402)
	s.expect("POST", "/compatibility/subjects/nope/versions/latest", schemaBody(avroUserV1), 200, `{"is_compatible":true}`)
	s.expect("POST", "/compatibility/subjects/s/versions/latest?verbose=true", schemaBody(avroUserV1), 200, `{"is_compatible":true,"messages":[]}`)
	s.expectCode("POST", "/compatibility/subjects/s/versions/latest", schemaBody(`{"type":`), 422, 42201)
	_, bad := s.do("POST", "/compatibility/subjects/s/versions/latest?verbose=true", schemaBody(`{"type":`))
	if !strings.HasPrefix(bad, `{"is_compatible":false,"messages":["Invalid schema`) {
		t.Errorf("invalid schema, verbose: %s", bad)
	}
	s.expectCode("POST", "/compatibility/subjects/s/versions/x", schemaBody(avroUserV1), 422, 42202)
	s.expect("POST", "/compatibility/subjects/nope/versions", schemaBody(avroUserV1), 200, `{"is_compatible":true}`)
	// BACKWARD_TRANSITIVE checks every version: v1 lacks email, v2 lacks age's default? no: the new schema must read both.
	s.expect("PUT", "/config/s", map[string]string{"compatibility": "BACKWARD_TRANSITIVE"}, 200, `{"compatibility":"BACKWARD_TRANSITIVE"}`)
	s.expect("POST", "/compatibility/subjects/s/versions", schemaBody(avroUserV3), 200, `{"is_compatible":false}`)
	s.expect("POST", "/compatibility/subjects/s/versions", schemaBody(`{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},{"name":"email","type":"string","default":""}]}`), 200, `{"is_compatible":true}`)

	s.expect("DELETE", "/config/s", nil, 200, `{"compatibilityLevel":"BACKWARD_TRANSITIVE"}`)
	s.expectCode("GET", "/config/s", nil, 404, 40408)
	s.expect("DELETE", "/config", nil, 200, `{"compatibilityLevel":"FULL"}`)
	s.expect("GET", "/config", nil, 200, `{"compatibilityLevel":"BACKWARD"}`)
	s.expectCode("DELETE", "/config/nope", nil, 404, 40401)
	s.expectCode("DELETE", "/config/s", nil, 404, 40401) // no subject-level config left
}

func TestREST_Modes(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("GET", "/mode", nil, 200, `{"mode":"READWRITE"}`)
	s.expectCode("PUT", "/mode", map[string]string{"mode": "SOMETIMES"}, 422, 42204)
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)

	// READONLY refuses writes, not reads.
	s.expect("PUT", "/mode/s", map[string]string{"mode": "READONLY"}, 200, `{"mode":"READONLY"}`)
	s.expect("GET", "/mode/s", nil, 200, `{"mode":"READONLY"}`)
	s.expectCode("POST", "/subjects/s/versions", schemaBody(avroUserV2), 422, 42205)
	s.expectCode("DELETE", "/subjects/s/versions/1", nil, 422, 42205)
	s.expectCode("DELETE", "/subjects/s", nil, 422, 42205)
	s.expect("GET", "/subjects/s/versions", nil, 200, `[1]`)
	s.expect("POST", "/subjects/t/versions", schemaBody(avroUserV2), 200, `{"id":2}`) // other subjects still write
	s.expect("DELETE", "/mode/s", nil, 200, `{"mode":"READONLY"}`)
	s.expectCode("GET", "/mode/s", nil, 404, 40409)
	s.expectCode("DELETE", "/mode/s", nil, 404, 40401)
	s.expect("GET", "/mode/s?defaultToGlobal=true", nil, 200, `{"mode":"READWRITE"}`)
	s.expect("PUT", "/mode", map[string]string{"mode": "READONLY"}, 200, `{"mode":"READONLY"}`)
	s.expectCode("POST", "/subjects/u/versions", schemaBody(avroUserV2), 422, 42205)
	s.expect("PUT", "/mode", map[string]string{"mode": "READWRITE"}, 200, `{"mode":"READWRITE"}`)

	// IMPORT needs no subjects, unless forced; an id outside IMPORT is refused.
	s.expectCode("PUT", "/mode", map[string]string{"mode": "IMPORT"}, 422, 42205)
	s.expectCode("POST", "/subjects/imp/versions", map[string]any{"schema": avroUserV3, "id": 77, "version": 5}, 422, 42205)
	s.expect("PUT", "/mode/imp", map[string]string{"mode": "IMPORT"}, 200, `{"mode":"IMPORT"}`)
	s.expectCode("POST", "/subjects/imp/versions", schemaBody(avroUserV3), 422, 42205) // IMPORT needs the id
	s.expect("POST", "/subjects/imp/versions", map[string]any{"schema": avroUserV3, "id": 77, "version": 5}, 200, `{"id":77}`)
	s.expect("GET", "/subjects/imp/versions", nil, 200, `[5]`)
	_, body := s.do("GET", "/subjects/imp/versions/5", nil)
	if !strings.Contains(body, `"version":5,"id":77`) {
		t.Errorf("imported: %s", body)
	}
	// An imported id holding another schema is refused; no compatibility check in IMPORT.
	s.expectCode("POST", "/subjects/imp/versions", map[string]any{"schema": `"string"`, "id": 77, "version": 6}, 422, 42205)
	s.expect("POST", "/subjects/imp/versions", map[string]any{"schema": `"string"`, "id": 78, "version": 6}, 200, `{"id":78}`)
	s.expect("PUT", "/mode/imp", map[string]string{"mode": "READWRITE"}, 200, `{"mode":"READWRITE"}`)
	// New ids continue above the largest imported one.
	s.expect("POST", "/subjects/after/versions", schemaBody(`"long"`), 200, `{"id":79}`)
	s.expect("PUT", "/mode?force=true", map[string]string{"mode": "IMPORT"}, 200, `{"mode":"IMPORT"}`)
}

func TestREST_References(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/address/versions", schemaBody(`{"type":"record","name":"Address","namespace":"ex","fields":[{"name":"street","type":"string"}]}`), 200, `{"id":1}`)
	person := map[string]any{
		"schema":     `{"type":"record","name":"Person","namespace":"ex","fields":[{"name":"home","type":"ex.Address"}]}`,
		"references": []map[string]any{{"name": "ex.Address", "subject": "address", "version": 1}},
	}
	s.expect("POST", "/subjects/person/versions", person, 200, `{"id":2}`)
	s.expect("POST", "/subjects/person/versions", person, 200, `{"id":2}`)
	_, body := s.do("GET", "/schemas/ids/2", nil)
	if !strings.Contains(body, `"references":[{"name":"ex.Address","subject":"address","version":1}]`) {
		t.Errorf("schema 2: %s", body)
	}
	s.expect("GET", "/subjects/address/versions/1/referencedby", nil, 200, `[2]`)
	s.expect("GET", "/subjects/person/versions/1/referencedby", nil, 200, `[]`)
	// A referenced version cannot be deleted.
	s.expectCode("DELETE", "/subjects/address/versions/1", nil, 422, 42206)
	s.expectCode("DELETE", "/subjects/address", nil, 422, 42206)
	// Without its reference the schema does not parse.
	s.expectCode("POST", "/subjects/p2/versions", schemaBody(person["schema"].(string)), 422, 42201)
	bad := map[string]any{"schema": person["schema"], "references": []map[string]any{{"name": "ex.Address", "subject": "nope", "version": 1}}}
	s.expectCode("POST", "/subjects/p2/versions", bad, 422, 42201)

	// JSON Schema and Protobuf references.
	s.expect("POST", "/subjects/addr-json/versions", map[string]any{"schemaType": "JSON", "schema": `{"type":"object","properties":{"street":{"type":"string"}}}`}, 200, `{"id":3}`)
	s.expect("POST", "/subjects/person-json/versions", map[string]any{
		"schemaType": "JSON",
		"schema":     `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`,
		"references": []map[string]any{{"name": "address.json", "subject": "addr-json", "version": 1}},
	}, 200, `{"id":4}`)
	s.expect("POST", "/subjects/addr-proto/versions", map[string]any{"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\npackage ex;\nmessage Address { string street = 1; }\n"}, 200, `{"id":5}`)
	s.expect("POST", "/subjects/person-proto/versions", map[string]any{
		"schemaType": "PROTOBUF",
		"schema":     "syntax = \"proto3\";\npackage ex;\nimport \"ex/address.proto\";\nimport \"google/protobuf/timestamp.proto\";\nmessage Person { Address home = 1; google.protobuf.Timestamp born = 2; }\n",
		"references": []map[string]any{{"name": "ex/address.proto", "subject": "addr-proto", "version": 1}},
	}, 200, `{"id":6}`)
	s.expectCode("POST", "/subjects/bad-proto/versions", map[string]any{"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\nmessage P { Missing m = 1; }\n"}, 422, 42201)
	s.expectCode("POST", "/subjects/bad-json/versions", map[string]any{"schemaType": "JSON", "schema": `{"type":"object","properties":{"a":{"$ref":"missing.json"}}}`}, 422, 42201)
}

// TestREST_AvroSchemaPanickingHambaIsInvalid registers a schema on which
// hamba panics (an empty union with a default): it is an invalid schema
// (42201), and the registry goes on serving (the panic left the registry's
// lock held: every later request waited for ever).
func TestREST_AvroSchemaPanickingHambaIsInvalid(t *testing.T) {
	s := newTestServer(t, nil)
	s.expectCode("POST", "/subjects/s/versions", schemaBody(`{"type":"record","name":"A","fields":[{"name":"a","type":[],"default":null}]}`), 422, 42201)
	s.expect("POST", "/subjects/s/versions", schemaBody(`"string"`), 200, `{"id":1}`)
}
