package schemaregistry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestLog_RecordsInConfluentFormat checks the exact records a register, a
// config change, a soft delete and a hard delete write.
func TestLog_RecordsInConfluentFormat(t *testing.T) {
	s := newTestServer(t, nil)
	canon1 := `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"}]}`
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("PUT", "/config/s", map[string]string{"compatibility": "FULL"}, 200, `{"compatibility":"FULL"}`)
	s.expect("PUT", "/config", map[string]string{"compatibility": "NONE"}, 200, `{"compatibility":"NONE"}`)
	s.expect("PUT", "/mode", map[string]string{"mode": "READWRITE"}, 200, `{"mode":"READWRITE"}`)
	s.expect("POST", "/subjects/p/versions", map[string]any{"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\nmessage M { int32 a = 1; }\n"}, 200, `{"id":2}`)
	s.expect("DELETE", "/subjects/s/versions/1", nil, 200, `1`)
	s.expect("DELETE", "/subjects/s/versions/1?permanent=true", nil, 200, `1`)
	s.expect("DELETE", "/subjects/p", nil, 200, `[1]`)
	s.expect("DELETE", "/subjects/p?permanent=true", nil, 200, `[1]`)

	want := []struct{ key, value string }{
		{`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`, `{"subject":"s","version":1,"id":1,"schema":` + quote(canon1) + `,"deleted":false}`},
		{`{"keytype":"CONFIG","subject":"s","magic":0}`, `{"subject":"s","compatibilityLevel":"FULL"}`},
		{`{"keytype":"CONFIG","magic":0}`, `{"compatibilityLevel":"NONE"}`},
		{`{"keytype":"MODE","magic":0}`, `{"mode":"READWRITE"}`},
		{`{"keytype":"SCHEMA","subject":"p","version":1,"magic":1}`, `{"subject":"p","version":1,"id":2,"schemaType":"PROTOBUF","schema":"syntax = \"proto3\";\nmessage M { int32 a = 1; }","deleted":false}`},
		{`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`, `{"subject":"s","version":1,"id":1,"schema":` + quote(canon1) + `,"deleted":true}`},
		{`{"keytype":"CONFIG","subject":"s","magic":0}`, ``}, // the subject's last version went: its config goes too
		{`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`, ``},
		{`{"keytype":"DELETE_SUBJECT","subject":"p","magic":0}`, `{"subject":"p","version":1}`},
		{`{"keytype":"SCHEMA","subject":"p","version":1,"magic":1}`, ``},
	}
	recs := s.log.Records()
	if len(recs) != len(want) {
		for _, r := range recs {
			t.Logf("%d %s %s", r.Offset, r.Key, r.Value)
		}
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		if string(recs[i].Key) != w.key || string(recs[i].Value) != w.value || (w.value == "" && recs[i].Value != nil) {
			t.Errorf("record %d:\n got %s %s\nwant %s %s", i, recs[i].Key, recs[i].Value, w.key, w.value)
		}
	}
}

// TestRegistry_ReplayServesTheSame builds a second Registry on the log the
// first wrote and checks it answers the same.
func TestRegistry_ReplayServesTheSame(t *testing.T) {
	a := newTestServer(t, nil)
	a.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	a.expect("POST", "/subjects/s/versions", schemaBody(avroUserV2), 200, `{"id":2}`)
	a.expect("POST", "/subjects/t/versions", schemaBody(avroUserV2), 200, `{"id":2}`)
	a.expect("POST", "/subjects/j/versions", map[string]any{"schemaType": "JSON", "schema": `{"type":"string"}`}, 200, `{"id":3}`)
	a.expect("PUT", "/config/s", map[string]string{"compatibility": "FORWARD"}, 200, `{"compatibility":"FORWARD"}`)
	a.expect("PUT", "/config", map[string]string{"compatibility": "FULL_TRANSITIVE"}, 200, `{"compatibility":"FULL_TRANSITIVE"}`)
	a.expect("PUT", "/mode/t", map[string]string{"mode": "READONLY"}, 200, `{"mode":"READONLY"}`)
	a.expect("DELETE", "/subjects/s/versions/1", nil, 200, `1`)

	b := newTestServer(t, a.log)
	for _, path := range []string{
		"/subjects", "/subjects?deleted=true", "/subjects/s/versions", "/subjects/s/versions?deleted=true",
		"/subjects/s/versions/2", "/subjects/s/versions/1?deleted=true", "/subjects/j/versions/latest",
		"/schemas/ids/1", "/schemas/ids/2/versions", "/schemas/ids/3", "/config", "/config/s", "/mode/t", "/mode",
	} {
		sa, wa := a.do("GET", path, nil)
		sb, wb := b.do("GET", path, nil)
		if sa != sb || wa != wb {
			t.Errorf("GET %s: first %d %s, replayed %d %s", path, sa, wa, sb, wb)
		}
	}
	// The same schema gets the same id after replay, a new one the next id.
	b.expect("POST", "/subjects/u/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	b.expect("POST", "/subjects/u2/versions", schemaBody(`"bytes"`), 200, `{"id":4}`)
	// And the first registry sees the second's writes on its next request.
	a.expect("GET", "/subjects/u2/versions", nil, 200, `[1]`)
}

// TestRegistry_ReplaysConfluentWrittenRecords replays records as older and
// newer Confluent versions write them, with records it must skip.
func TestRegistry_ReplaysConfluentWrittenRecords(t *testing.T) {
	log := NewMemoryLog()
	ctx := context.Background()
	for i, kv := range [][2]string{
		{`{"keytype":"NOOP","magic":0}`, `null`},
		{`{"keytype":"CONFIG","subject":null,"magic":0}`, `{"compatibilityLevel":"NONE"}`},
		{`{"keytype":"SCHEMA","subject":"old","version":1,"magic":1}`, `{"subject":"old","version":1,"id":7,"schema":"\"string\"","deleted":false}`},
		{`{"keytype":"SCHEMA","subject":"old","version":2,"magic":1}`, `{"subject":"old","version":2,"id":9,"md5":"abc","schemaType":"AVRO","references":[],"metadata":{"properties":{}},"schema":"\"int\"","deleted":false,"ts":1}`},
		{`{"keytype":"CONTEXT","tenant":"default","context":".ctx","magic":0}`, `{"tenant":"default","context":".ctx"}`},
		{`{"keytype":"SOMETHING_NEW","magic":0}`, `{"x":1}`},
		{`not json`, `{}`},
		{`{"keytype":"SCHEMA","subject":"old","version":3,"magic":1}`, `not json`},
		{`{"keytype":"DELETE_SUBJECT","subject":"gone","magic":0}`, `{"subject":"gone","version":1}`},
		{`{"keytype":"MODE","subject":"old","magic":0}`, `{"subject":"old","mode":"READONLY"}`},
	} {
		var value []byte
		if kv[1] != "null" {
			value = []byte(kv[1])
		}
		if _, err := log.Append(ctx, int64(i), []byte(kv[0]), value); err != nil {
			t.Fatal(err)
		}
	}
	s := newTestServer(t, log)
	s.expect("GET", "/config", nil, 200, `{"compatibilityLevel":"NONE"}`)
	s.expect("GET", "/subjects/old/versions", nil, 200, `[1,2]`)
	s.expect("GET", "/schemas/ids/9", nil, 200, `{"schema":"\"int\""}`)
	s.expect("GET", "/mode/old", nil, 200, `{"mode":"READONLY"}`)
	s.expect("POST", "/subjects/new/versions", schemaBody(`"string"`), 200, `{"id":7}`)
	s.expect("POST", "/subjects/new/versions", schemaBody(`"long"`), 200, `{"id":10}`)
}

// TestRegistry_ConcurrentWritersGetUniqueIDs has two registries over one
// log register different schemas at once: the conditional append keeps
// ids and versions unique.
func TestRegistry_ConcurrentWritersGetUniqueIDs(t *testing.T) {
	log := NewMemoryLog()
	var regs [2]*Registry
	for i := range regs {
		r, err := New(Config{Log: log, Compatibility: CompatNone})
		if err != nil {
			t.Fatal(err)
		}
		regs[i] = r
	}
	const writers, each = 6, 8
	type result struct {
		subject, schema string
		id              int
	}
	results := make(chan result, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := regs[w%2]
			for i := range each {
				schema := fmt.Sprintf(`{"type":"enum","name":"E","symbols":["W%d_%d"]}`, w, i)
				subject := fmt.Sprintf("s%d", (w+i)%3) // subjects shared between writers
				id, err := reg.register(context.Background(), subject, registerRequest{Schema: schema}, false)
				if err != nil {
					t.Error(err)
					return
				}
				results <- result{subject, schema, id}
			}
		}()
	}
	wg.Wait()
	close(results)
	ids := map[int]string{}
	for r := range results {
		if prev, ok := ids[r.id]; ok {
			t.Errorf("id %d given to %s and %s", r.id, prev, r.schema)
		}
		ids[r.id] = r.schema
	}
	if len(ids) != writers*each {
		t.Fatalf("%d ids for %d schemas", len(ids), writers*each)
	}
	// Versions per subject are 1..n without gaps or repeats, the same on both.
	for _, reg := range regs {
		if err := reg.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		total := 0
		for subject, st := range reg.view.subjects {
			vs := reg.view.versions(subject, false)
			for i, sv := range vs {
				if sv.Version != i+1 {
					t.Errorf("%s: versions %d at %d", subject, sv.Version, i)
				}
			}
			total += len(st.versions)
		}
		if total != writers*each {
			t.Errorf("%d versions, want %d", total, writers*each)
		}
	}
	// Every record in the log is a SCHEMA record: no write was lost or doubled.
	for _, rec := range log.Records() {
		if !strings.Contains(string(rec.Key), `"SCHEMA"`) {
			t.Errorf("unexpected record %s", rec.Key)
		}
	}
}
