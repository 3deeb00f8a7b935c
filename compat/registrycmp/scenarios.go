package registrycmp

// The scenarios, in the order they run. Each uses subjects of its own
// (c.Subject), so one scenario's outcome does not depend on another's,
// except through the global config and mode, which scenarios that change
// them put back.

const (
	avroA  = `{"type":"record","name":"A","namespace":"cmp","fields":[{"name":"a","type":"int"}]}`
	avroA2 = `{"type":"record","name":"A","namespace":"cmp","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}`
	// avroA3 adds a field without a default: not BACKWARD compatible with A.
	avroA3 = `{"type":"record","name":"A","namespace":"cmp","fields":[{"name":"a","type":"int"},{"name":"c","type":"string"}]}`
	// avroASpaced is avroA with other spacing and key order.
	avroASpaced = `{ "namespace": "cmp", "name": "A", "type": "record",
  "fields": [ { "type": "int", "name": "a" } ] }`
	jsonS       = `{"type":"object","properties":{"a":{"type":"integer"}}}`
	protoM      = "syntax = \"proto3\";\npackage cmp;\n\nmessage M {\n  int32 a = 1;\n}\n"
	avroAddress = `{"type":"record","name":"Address","namespace":"cmp","fields":[{"name":"street","type":"string"}]}`
	avroPerson  = `{"type":"record","name":"Person","namespace":"cmp","fields":[{"name":"name","type":"string"},{"name":"address","type":"cmp.Address"}]}`
)

type obj = map[string]any

func schema(s string) obj { return obj{"schema": s} }

func typed(t, s string) obj { return obj{"schemaType": t, "schema": s} }

// register posts s under subject and returns its id.
func register(c *Client, subject string, body obj) ID {
	return c.Do("POST", body, "/subjects/%s/versions", subject).ID()
}

// All returns every scenario.
func All() []Scenario {
	return []Scenario{
		{"GET /schemas/types", func(c *Client) {
			c.Do("GET", nil, "/schemas/types")
		}},
		{"register AVRO, then the version and the schema by id", func(c *Client) {
			s := c.Subject("avro-value")
			id := register(c, s, schema(avroA))
			c.Do("GET", nil, "/subjects/%s/versions/1", s)
			c.Do("GET", nil, "/schemas/ids/%v", id)
			c.Do("GET", nil, "/schemas/ids/%v/schema", id)
		}},
		{"register JSON, then the latest version", func(c *Client) {
			s := c.Subject("json-value")
			register(c, s, typed("JSON", jsonS))
			c.Do("GET", nil, "/subjects/%s/versions/latest", s)
		}},
		{"register PROTOBUF, then the latest version and its schema", func(c *Client) {
			s := c.Subject("proto-value")
			register(c, s, typed("PROTOBUF", protoM))
			c.Do("GET", nil, "/subjects/%s/versions/latest", s)
			c.Do("GET", nil, "/subjects/%s/versions/latest/schema", s)
		}},
		{"same schema twice under one subject: same id, one version", func(c *Client) {
			s := c.Subject("twice-value")
			a := register(c, s, schema(avroA))
			b := register(c, s, schema(avroA))
			c.Note("same id: %v", a == b)
			c.Do("GET", nil, "/subjects/%s/versions", s)
		}},
		{"same schema under two subjects: same id; /schemas/ids/{id}/subjects and /versions", func(c *Client) {
			s1, s2 := c.Subject("one-value"), c.Subject("two-value")
			a := register(c, s1, schema(avroA2))
			b := register(c, s2, schema(avroA2))
			c.Note("same id: %v", a == b)
			c.Do("GET", nil, "/schemas/ids/%v/subjects", a)
			c.Do("GET", nil, "/schemas/ids/%v/versions", a)
		}},
		{"list subjects, versions; unknown subject and id", func(c *Client) {
			s := c.Subject("list-value")
			c.Do("PUT", obj{"compatibility": "NONE"}, "/config/%s", s)
			register(c, s, schema(avroA))
			register(c, s, schema(avroA3))
			c.Do("GET", nil, "/subjects")
			c.Do("GET", nil, "/subjects/%s/versions", s)
			c.Do("GET", nil, "/subjects/%s/versions", c.Subject("nobody"))
			c.Do("GET", nil, "/subjects/%s/versions/1", c.Subject("nobody"))
			c.Do("GET", nil, "/schemas/ids/%v", ID(987654))
		}},
		{"versions by number, latest and -1; unknown version", func(c *Client) {
			s := c.Subject("ver-value")
			c.Do("PUT", obj{"compatibility": "NONE"}, "/config/%s", s)
			register(c, s, schema(avroA))
			register(c, s, schema(avroA2))
			c.Do("GET", nil, "/subjects/%s/versions/2", s)
			c.Do("GET", nil, "/subjects/%s/versions/-1", s)
			c.Do("GET", nil, "/subjects/%s/versions/1/schema", s)
			c.Do("GET", nil, "/subjects/%s/versions/3", s)
		}},
		{"invalid version: abc, 0, -2 (42202)", func(c *Client) {
			s := c.Subject("badver-value")
			register(c, s, schema(avroA))
			c.Do("GET", nil, "/subjects/%s/versions/abc", s)
			c.Do("GET", nil, "/subjects/%s/versions/0", s)
			c.Do("GET", nil, "/subjects/%s/versions/-2", s)
		}},
		{"lookup POST /subjects/{s}: found, schema not found (40403), subject not found (40401)", func(c *Client) {
			s := c.Subject("lookup-value")
			register(c, s, schema(avroA))
			c.Do("POST", schema(avroA), "/subjects/%s", s)
			c.Do("POST", schema(avroA2), "/subjects/%s", s)
			c.Do("POST", schema(avroA), "/subjects/%s", c.Subject("nobody"))
		}},
		{"invalid schema (42201): bad Avro, bad JSON Schema, bad Protobuf, unknown type", func(c *Client) {
			s := c.Subject("invalid-value")
			c.Do("POST", schema(`{"type":"record","name":"X","fields":[{"name":"a","type":"nosuchtype"}]}`), "/subjects/%s/versions", s)
			c.Do("POST", schema(`not json at all`), "/subjects/%s/versions", s)
			c.Do("POST", typed("JSON", `{"type": 12}`), "/subjects/%s/versions", s)
			c.Do("POST", typed("PROTOBUF", `message {`), "/subjects/%s/versions", s)
			c.Do("POST", typed("XML", `<a/>`), "/subjects/%s/versions", s)
		}},
		{"incompatible registration under BACKWARD (409), compatible one accepted", func(c *Client) {
			s := c.Subject("compat-value")
			c.Do("PUT", obj{"compatibility": "BACKWARD"}, "/config/%s", s)
			register(c, s, schema(avroA))
			c.Do("POST", schema(avroA3), "/subjects/%s/versions", s)
			c.Do("POST", schema(avroA2), "/subjects/%s/versions", s)
			c.Do("GET", nil, "/subjects/%s/versions", s)
		}},
		{"compatibility check, plain and verbose, against latest and a version; unknown subject", func(c *Client) {
			s := c.Subject("check-value")
			c.Do("PUT", obj{"compatibility": "BACKWARD"}, "/config/%s", s)
			register(c, s, schema(avroA))
			c.Do("POST", schema(avroA3), "/compatibility/subjects/%s/versions/latest", s)
			c.Do("POST", schema(avroA3), "/compatibility/subjects/%s/versions/latest?verbose=true", s)
			c.Do("POST", schema(avroA2), "/compatibility/subjects/%s/versions/1?verbose=true", s)
			c.Do("POST", schema(avroA2), "/compatibility/subjects/%s/versions", s)
			c.Do("POST", schema(avroA2), "/compatibility/subjects/%s/versions/latest", c.Subject("nobody"))
		}},
		{"global config: GET, PUT FULL_TRANSITIVE, GET, put back", func(c *Client) {
			before := c.Do("GET", nil, "/config")
			c.Do("PUT", obj{"compatibility": "FULL_TRANSITIVE"}, "/config")
			c.Do("GET", nil, "/config")
			if m, ok := before.Body.(map[string]any); ok {
				if lvl, ok := m["compatibilityLevel"].(string); ok {
					c.Do("PUT", obj{"compatibility": lvl}, "/config")
				}
			}
		}},
		{"subject config: PUT NONE, GET, GET unset subject (and defaultToGlobal), DELETE", func(c *Client) {
			s := c.Subject("cfg-value")
			register(c, s, schema(avroA))
			c.Do("PUT", obj{"compatibility": "NONE"}, "/config/%s", s)
			c.Do("GET", nil, "/config/%s", s)
			c.Do("GET", nil, "/config/%s", c.Subject("unset-value"))
			c.Do("GET", nil, "/config/%s?defaultToGlobal=true", c.Subject("unset-value"))
			c.Do("DELETE", nil, "/config/%s", s)
			c.Do("GET", nil, "/config/%s", s)
		}},
		{"invalid compatibility level (42203), global and subject", func(c *Client) {
			c.Do("PUT", obj{"compatibility": "SOMETIMES"}, "/config")
			c.Do("PUT", obj{"compatibility": "SOMETIMES"}, "/config/%s", c.Subject("x-value"))
		}},
		{"mode: GET global, subject READONLY then register (42205), back to READWRITE", func(c *Client) {
			s := c.Subject("mode-value")
			register(c, s, schema(avroA))
			c.Do("GET", nil, "/mode")
			c.Do("PUT", obj{"mode": "READONLY"}, "/mode/%s", s)
			c.Do("GET", nil, "/mode/%s", s)
			c.Do("POST", schema(avroA2), "/subjects/%s/versions", s)
			c.Do("PUT", obj{"mode": "READWRITE"}, "/mode/%s", s)
			c.Do("POST", schema(avroA2), "/subjects/%s/versions", s)
		}},
		{"mode: global READONLY then register, back to READWRITE; invalid mode", func(c *Client) {
			s := c.Subject("gmode-value")
			c.Do("PUT", obj{"mode": "READONLY"}, "/mode")
			c.Do("GET", nil, "/mode")
			c.Do("POST", schema(avroA), "/subjects/%s/versions", s)
			c.Do("PUT", obj{"mode": "READWRITE"}, "/mode")
			c.Do("POST", schema(avroA), "/subjects/%s/versions", s)
			c.Do("PUT", obj{"mode": "SOMETIMES"}, "/mode")
		}},
		{"soft delete a version: listings with and without ?deleted=true", func(c *Client) {
			s := c.Subject("delver-value")
			c.Do("PUT", obj{"compatibility": "NONE"}, "/config/%s", s)
			register(c, s, schema(avroA))
			register(c, s, schema(avroA2))
			c.Do("DELETE", nil, "/subjects/%s/versions/1", s)
			c.Do("GET", nil, "/subjects/%s/versions", s)
			c.Do("GET", nil, "/subjects/%s/versions?deleted=true", s)
			c.Do("GET", nil, "/subjects/%s/versions/1", s)
			c.Do("GET", nil, "/subjects/%s/versions/1?deleted=true", s)
			c.Do("DELETE", nil, "/subjects/%s/versions/1", s)
		}},
		{"soft delete a subject: listings with and without ?deleted=true; re-register", func(c *Client) {
			s := c.Subject("delsub-value")
			id := register(c, s, schema(avroA))
			c.Do("DELETE", nil, "/subjects/%s", s)
			c.Do("GET", nil, "/subjects")
			c.Do("GET", nil, "/subjects?deleted=true")
			c.Do("GET", nil, "/subjects/%s/versions", s)
			c.Do("GET", nil, "/schemas/ids/%v", id)
			c.Do("DELETE", nil, "/subjects/%s", s)
			again := register(c, s, schema(avroA))
			c.Note("same id again: %v", id == again)
			c.Do("GET", nil, "/subjects/%s/versions", s)
		}},
		{"hard delete (permanent=true) after a soft delete", func(c *Client) {
			s := c.Subject("hard-value")
			register(c, s, schema(avroA))
			c.Do("DELETE", nil, "/subjects/%s", s)
			c.Do("DELETE", nil, "/subjects/%s?permanent=true", s)
			c.Do("GET", nil, "/subjects?deleted=true")
			c.Do("GET", nil, "/subjects/%s/versions?deleted=true", s)
		}},
		{"hard delete without a soft delete: subject (40405) and version (40407)", func(c *Client) {
			s := c.Subject("hardonly-value")
			register(c, s, schema(avroA))
			c.Do("DELETE", nil, "/subjects/%s?permanent=true", s)
			c.Do("DELETE", nil, "/subjects/%s/versions/1?permanent=true", s)
			c.Do("GET", nil, "/subjects/%s/versions", s)
		}},
		{"hard delete a version after a soft delete", func(c *Client) {
			s := c.Subject("hardver-value")
			c.Do("PUT", obj{"compatibility": "NONE"}, "/config/%s", s)
			register(c, s, schema(avroA))
			register(c, s, schema(avroA2))
			c.Do("DELETE", nil, "/subjects/%s/versions/1", s)
			c.Do("DELETE", nil, "/subjects/%s/versions/1?permanent=true", s)
			c.Do("GET", nil, "/subjects/%s/versions?deleted=true", s)
		}},
		{"delete on an unknown subject and version", func(c *Client) {
			s := c.Subject("delunknown-value")
			c.Do("DELETE", nil, "/subjects/%s", s)
			register(c, s, schema(avroA))
			c.Do("DELETE", nil, "/subjects/%s/versions/7", s)
		}},
		{"references: a schema naming another subject's version; referencedby; deleting the referenced one", func(c *Client) {
			addr, person := c.Subject("address-value"), c.Subject("person-value")
			register(c, addr, schema(avroAddress))
			c.Do("POST", obj{"schema": avroPerson, "references": []obj{{"name": "cmp.Address", "subject": addr, "version": 1}}}, "/subjects/%s/versions", person)
			c.Do("GET", nil, "/subjects/%s/versions/1", person)
			c.Do("GET", nil, "/subjects/%s/versions/1/referencedby", addr)
			c.Do("POST", schema(avroPerson), "/subjects/%s/versions", c.Subject("noref-value"))
			c.Do("DELETE", nil, "/subjects/%s/versions/1", addr)
		}},
		{"normalize: spacing and key order with and without ?normalize=true", func(c *Client) {
			s := c.Subject("norm-value")
			a := register(c, s, schema(avroA))
			b := c.Do("POST", schema(avroASpaced), "/subjects/%s/versions?normalize=true", s).ID()
			c.Note("same id with normalize: %v", a == b)
			c.Do("POST", schema(avroASpaced), "/subjects/%s?normalize=true", s)
			c.Do("GET", nil, "/subjects/%s/versions", s)
		}},
		{"spacing and key order without normalize: a new version or the same?", func(c *Client) {
			s := c.Subject("nonorm-value")
			c.Do("PUT", obj{"compatibility": "NONE"}, "/config/%s", s)
			a := register(c, s, schema(avroA))
			b := register(c, s, schema(avroASpaced))
			c.Note("same id: %v", a == b)
			c.Do("GET", nil, "/subjects/%s/versions", s)
		}},
		{"schema types are separate: the same text as AVRO and as JSON", func(c *Client) {
			s1, s2 := c.Subject("ta-value"), c.Subject("tj-value")
			const text = `{"type":"string"}`
			a := register(c, s1, schema(text))
			b := register(c, s2, typed("JSON", text))
			c.Note("same id: %v", a == b)
			c.Do("GET", nil, "/schemas/ids/%v", b)
		}},
	}
}
