package broker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The records of the topics one CreateTopics made are one file; updating
// or deleting one of them rewrites that file, and a batch left empty is
// removed. What a new store loads is what was saved.
func TestFileTopicStore_OneFilePerBatch(t *testing.T) {
	dir := t.TempDir()
	rec := func(name string, parts int32) topicRecord {
		return topicRecord{Name: name, ID: newUUID().String(), Partitions: parts}
	}
	files := func() []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	loaded := func() map[string]topicRecord {
		t.Helper()
		recs, err := newFileTopicStore(dir).loadAll()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]topicRecord{}
		for _, r := range recs {
			if _, dup := m[r.Name]; dup {
				t.Fatalf("topic %s loaded twice", r.Name)
			}
			m[r.Name] = r
		}
		return m
	}
	s := newFileTopicStore(dir)
	a, b, c, d := rec("a", 1), rec("b", 2), rec("c", 3), rec("d", 4)
	if err := s.saveAll([]topicRecord{a, b, c}); err != nil {
		t.Fatal(err)
	}
	if err := s.saveAll([]topicRecord{d}); err != nil {
		t.Fatal(err)
	}
	if f := files(); len(f) != 2 || !slices.ContainsFunc(f, func(n string) bool { return strings.HasPrefix(n, batchPrefix) }) || !slices.Contains(f, d.ID+".json") {
		t.Fatalf("files %v, want one batch and %s.json", f, d.ID)
	}
	b.Configs = map[string]string{"retention.ms": "1000"}
	b.Partitions = 5
	if err := s.save(b); err != nil {
		t.Fatal(err)
	}
	if err := s.remove(uuidOf(t, a.ID)); err != nil {
		t.Fatal(err)
	}
	got := loaded()
	if len(got) != 3 || got["b"].Partitions != 5 || got["b"].Configs["retention.ms"] != "1000" || got["c"].ID != c.ID || got["d"].ID != d.ID {
		t.Fatalf("loaded %v", got)
	}

	// A store that loaded the batch rewrites it too.
	s = newFileTopicStore(dir)
	if _, err := s.loadAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.remove(uuidOf(t, b.ID)); err != nil {
		t.Fatal(err)
	}
	if err := s.remove(uuidOf(t, c.ID)); err != nil {
		t.Fatal(err)
	}
	if f := files(); len(f) != 1 || f[0] != d.ID+".json" {
		t.Fatalf("files %v after the batch's last topic went, want only %s.json", f, d.ID)
	}
	// Records already stored are replaced where they are, not batched
	// again.
	d.Partitions = 6
	e := rec("e", 1)
	if err := s.saveAll([]topicRecord{d, e}); err != nil {
		t.Fatal(err)
	}
	got = loaded()
	if len(got) != 2 || got["d"].Partitions != 6 || got["e"].ID != e.ID {
		t.Fatalf("loaded %v", got)
	}
	if f := files(); len(f) != 2 || !slices.Contains(f, d.ID+".json") || !slices.Contains(f, e.ID+".json") {
		t.Fatalf("files %v", f)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) > 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

func uuidOf(t *testing.T, s string) uuid {
	t.Helper()
	u, err := parseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
