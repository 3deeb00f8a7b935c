package schemaregistry

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// avroGolden is testdata/avro_canonical.json: Avro schemas and what Apache
// Avro Java's Schema.toString(refs, false) writes for each, made by
// testdata/avrocanon/Generate.java.
type avroGolden struct {
	AvroVersion string `json:"avroVersion"`
	JavaVersion string `json:"javaVersion"`
	Cases       []struct {
		Name      string   `json:"name"`
		Schema    string   `json:"schema"`
		Refs      []string `json:"refs"`
		Java      string   `json:"java"`
		JavaError string   `json:"javaError"`
	} `json:"cases"`
}

// avroKnownDifferences are the golden cases where Gregor's canonical text
// is not Java's, and why. The test fails if one of them starts to match,
// so that this list stays true.
var avroKnownDifferences = map[string]string{
	"default double as NaN string":             "hamba rejects a double default given as a string, which Java reads with Double.parseDouble",
	"default float as number string":           "hamba rejects a float default given as a string, which Java reads with Double.parseDouble",
	"prop differing from an attribute in case": "hamba reads \"Doc\" as the doc, Java as a property: Gregor rejects the schema rather than store another one",
	"double printed long by JDK 17":            "Java before 19 writes more digits than needed for some doubles (JDK-4511638: 2.82879384806159008E17, 9.999999999999999E22); Gregor writes the shortest, as Java 19 and later do",
}

func loadAvroGolden(t *testing.T) avroGolden { return loadAvroGoldenF(t) }

func loadAvroGoldenF(t testing.TB) avroGolden {
	t.Helper()
	b, err := os.ReadFile("testdata/avro_canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var g avroGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func avroRefs(texts []string) []resolvedRef {
	var deps []resolvedRef
	for i, r := range texts {
		deps = append(deps, resolvedRef{Name: string(rune('a' + i)), Type: TypeAvro, Schema: r})
	}
	return deps
}

// TestAvroCanonical_MatchesJava checks that the canonical text of every
// schema in the golden table is, byte for byte, what Avro Java's
// Schema.toString(refs, false) wrote for it, and that the canonical text
// is a fixed point: Java's text canonicalizes to itself, as a schema
// stored by Confluent must. A schema Java rejects is rejected too.
func TestAvroCanonical_MatchesJava(t *testing.T) {
	g := loadAvroGolden(t)
	t.Logf("%d cases from Avro %s on Java %s", len(g.Cases), g.AvroVersion, g.JavaVersion)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			deps := avroRefs(c.Refs)
			p, err := parseAvro(c.Schema, deps)
			why, known := avroKnownDifferences[c.Name]
			switch {
			case c.JavaError != "" && err == nil:
				t.Fatalf("Java rejects it (%s), Gregor gives %s", c.JavaError, p.canonical)
			case c.JavaError != "":
				return
			case err != nil && known:
				t.Logf("known difference: %s: %v", why, err)
				return
			case err != nil:
				t.Fatalf("parse: %v", err)
			case known:
				if p.canonical == c.Java {
					t.Fatalf("listed as a known difference (%s) but matches Java now", why)
				}
				t.Logf("known difference: %s\n got: %s\njava: %s", why, p.canonical, c.Java)
				return
			}
			if p.canonical != c.Java {
				t.Fatalf("canonical text differs from Java's\n got: %s\njava: %s", p.canonical, c.Java)
			}
			again, err := parseAvro(c.Java, deps)
			if err != nil {
				t.Fatalf("parse Java's text: %v", err)
			}
			if again.canonical != c.Java {
				t.Fatalf("Java's text does not canonicalize to itself\n got: %s\njava: %s", again.canonical, c.Java)
			}
		})
	}
}

// TestRegistry_EarlierStoredFormsKeepTheirIDs replays a _schemas holding
// Avro texts in the forms stored before the canonical form was Java's:
// hamba's json.Marshal (what Gregor stored) and Java's toString (what
// Confluent stored). Registering the same schemas again, as their authors
// wrote them, finds their ids and versions.
func TestRegistry_EarlierStoredFormsKeepTheirIDs(t *testing.T) {
	const (
		// Re-canonicalized on replay to what the author's text gives.
		eventAuthor = `{"namespace":"ev","type":"record","name":"Event","doc":"an event","fields":[{"name":"id","type":"string"},{"name":"payload","type":["null",{"type":"record","name":"Payload","fields":[{"name":"n","type":"int","default":0}]}],"default":null},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}}]}`
		eventHamba  = `{"name":"ev.Event","doc":"an event","type":"record","fields":[{"name":"id","type":"string"},{"name":"payload","type":["null",{"name":"ev.Payload","type":"record","fields":[{"name":"n","type":"int","default":0}]}],"default":null},{"name":"kind","type":{"name":"ev.Kind","type":"enum","symbols":["A","B"]}}]}`
		// hamba's form lost the order of the decimal's and the field's
		// properties, the digits of the double default, and the bytes
		// default (written as base64): found by that form instead.
		accountAuthor = `{"type":"record","name":"Account","namespace":"bank","fields":[{"name":"balance","type":{"type":"bytes","scale":2,"precision":12,"logicalType":"decimal"}},{"name":"rate","type":"double","default":1.0},{"name":"tag","type":"bytes","default":"\u00ff"},{"name":"owner","type":"string","x-pii":true,"avro.java.string":"String"}]}`
		accountHamba  = `{"name":"bank.Account","type":"record","fields":[{"name":"balance","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},{"name":"rate","type":"double","default":1},{"name":"tag","type":"bytes","default":"/w=="},{"name":"owner","type":"string","avro.java.string":"String","x-pii":true}]}`
		// hamba wrote a fixed's default as an array, which does not parse.
		hashAuthor = `{"type":"record","name":"H","fields":[{"name":"h","type":{"type":"fixed","name":"F","size":2},"default":"\u0001\u00fe"}]}`
		hashHamba  = `{"name":"H","type":"record","fields":[{"name":"h","type":{"name":"F","type":"fixed","size":2},"default":[1,254]}]}`
		// Confluent stored Java's form, which is Gregor's canonical form.
		orderAuthor = `{"name":"Order","type":"record","namespace":"shop","fields":[{"type":{"type":"array","items":{"name":"Line","type":"record","fields":[{"type":"string","name":"sku"}]}},"name":"lines"},{"name":"first","type":"Line"}],"java-class":"shop.Order"}`
		orderJava   = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"}]}}},{"name":"first","type":"Line"}],"java-class":"shop.Order"}`
	)
	p, err := parseAvro(eventHamba, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := parseAvro(eventAuthor, nil); p.canonical != q.canonical {
		t.Fatalf("hamba's form of Event re-canonicalizes to\n%s\nthe author's text to\n%s", p.canonical, q.canonical)
	}

	log := NewMemoryLog()
	ctx := context.Background()
	for i, kv := range [][2]string{
		{`{"keytype":"SCHEMA","subject":"event","version":1,"magic":1}`, `{"subject":"event","version":1,"id":1,"schema":` + quote(eventHamba) + `,"deleted":false}`},
		{`{"keytype":"SCHEMA","subject":"account","version":1,"magic":1}`, `{"subject":"account","version":1,"id":2,"schema":` + quote(accountHamba) + `,"deleted":false}`},
		{`{"keytype":"SCHEMA","subject":"order","version":1,"magic":1}`, `{"subject":"order","version":1,"id":3,"schema":` + quote(orderJava) + `,"deleted":false}`},
		{`{"keytype":"SCHEMA","subject":"hash","version":1,"magic":1}`, `{"subject":"hash","version":1,"id":4,"schema":` + quote(hashHamba) + `,"deleted":false}`},
	} {
		if _, err := log.Append(ctx, int64(i), []byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	s := newTestServer(t, log)
	// Registered again under their subjects: the versions they have.
	s.expect("POST", "/subjects/event/versions", schemaBody(eventAuthor), 200, `{"id":1}`)
	s.expect("POST", "/subjects/account/versions", schemaBody(accountAuthor), 200, `{"id":2}`)
	s.expect("POST", "/subjects/order/versions", schemaBody(orderAuthor), 200, `{"id":3}`)
	s.expect("POST", "/subjects/hash/versions", schemaBody(hashAuthor), 200, `{"id":4}`)
	s.expect("GET", "/subjects/account/versions", nil, 200, `[1]`)
	s.expect("POST", "/subjects/account", schemaBody(accountAuthor), 200,
		`{"subject":"account","version":1,"id":2,"schema":`+quote(accountHamba)+`}`)
	// Under other subjects: the same ids, and the id's one text.
	s.expect("POST", "/subjects/event2/versions", schemaBody(eventAuthor), 200, `{"id":1}`)
	s.expect("POST", "/subjects/account2/versions", schemaBody(accountAuthor), 200, `{"id":2}`)
	s.expect("GET", "/subjects/account2/versions/1/schema", nil, 200, accountHamba)
	s.expect("POST", "/subjects/order2/versions", schemaBody(orderAuthor), 200, `{"id":3}`)
	// A new schema is stored in Java's form.
	s.expect("POST", "/subjects/new/versions", schemaBody(`{"fields":[],"name":"N","type":"record"}`), 200, `{"id":5}`)
	s.expect("GET", "/schemas/ids/5/schema", nil, 200, `{"type":"record","name":"N","fields":[]}`)
}

// FuzzAvroCanonical: for any text hamba parses, the canonical text never
// panics, is JSON, parses again, and is a fixed point (it canonicalizes to
// itself), so a stored canonical text keeps its identity on replay.
func FuzzAvroCanonical(f *testing.F) {
	for _, c := range loadAvroGoldenF(f).Cases {
		if len(c.Refs) == 0 {
			f.Add(c.Schema)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := parseAvro(text, nil)
		if err != nil {
			return
		}
		if !json.Valid([]byte(p.canonical)) {
			t.Fatalf("canonical text is not JSON: %s", p.canonical)
		}
		again, err := parseAvro(p.canonical, nil)
		if err != nil {
			t.Fatalf("canonical text %s does not parse: %v", p.canonical, err)
		}
		if again.canonical != p.canonical {
			t.Fatalf("not a fixed point:\n%s\n%s", p.canonical, again.canonical)
		}
	})
}
