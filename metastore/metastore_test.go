package metastore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A file of the owner's format: {"names":[...]}, a record per name.
func namesFile(path string, writes *int) FileConfig {
	return FileConfig{
		Path: path,
		Decode: func(data []byte) (Records, error) {
			var f struct{ Names []string }
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, err
			}
			recs := Records{}
			for _, n := range f.Names {
				recs[n] = []byte(`"` + n + `"`)
			}
			return recs, nil
		},
		Encode: func(recs Records) ([]byte, error) {
			var f struct{ Names []string }
			for k := range recs {
				f.Names = append(f.Names, k)
			}
			slices.Sort(f.Names)
			return json.Marshal(f)
		},
		Write: func(path string, data []byte) error {
			*writes++
			if string(data) == `{"Names":["fail"]}` {
				return errors.New("disk full")
			}
			return os.WriteFile(path, data, 0o644)
		},
	}
}

func TestFile_UpdatePersistsAndMovesTheRevision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "names.json")
	writes := 0
	f, err := OpenFile(namesFile(path, &writes))
	if err != nil {
		t.Fatal(err)
	}
	recs, rev0 := f.Snapshot()
	if len(recs) != 0 {
		t.Fatalf("a missing file: %v", recs)
	}
	if rev, err := f.Update(context.Background(), nil, nil); rev != 0 || err != nil || writes != 0 {
		t.Fatalf("empty update: %d, %v, %d writes", rev, err, writes)
	}
	rev1, err := f.Update(context.Background(), Records{"b": nil, "a": nil}, nil)
	if err != nil || rev1 <= rev0 {
		t.Fatalf("update: %d (from %d), %v", rev1, rev0, err)
	}
	rev2, err := f.Update(context.Background(), Records{"c": nil}, []string{"a", "zz"})
	if err != nil || rev2 <= rev1 {
		t.Fatalf("update: %d (from %d), %v", rev2, rev1, err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"Names":["b","c"]}` {
		t.Fatalf("file: %s", data)
	}
	// A failed write changes nothing.
	if _, err := f.Update(context.Background(), nil, []string{"b", "c"}); err != nil {
		t.Fatal(err)
	}
	_, before := f.Snapshot()
	if _, err := f.Update(context.Background(), Records{"fail": nil}, nil); err == nil {
		t.Fatal("a failed write succeeded")
	}
	if recs, rev := f.Snapshot(); len(recs) != 0 || rev != before {
		t.Fatalf("after a failed write: %v at %d, want none at %d", recs, rev, before)
	}
	// Reopened, the file's records are back.
	if _, err := f.Update(context.Background(), Records{"d": nil}, nil); err != nil {
		t.Fatal(err)
	}
	g, err := OpenFile(namesFile(path, &writes))
	if err != nil {
		t.Fatal(err)
	}
	if recs, _ := g.Snapshot(); len(recs) != 1 || string(recs["d"]) != `"d"` {
		t.Fatalf("reopened: %v", recs)
	}
}

func TestOpenFile_Undecodable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "names.json")
	os.WriteFile(path, []byte("{"), 0o644)
	writes := 0
	if _, err := OpenFile(namesFile(path, &writes)); err == nil {
		t.Fatal("an undecodable file opened")
	}
}

func TestView_DecodesOncePerRevision(t *testing.T) {
	m := Memory(Records{"a": []byte("1")})
	decodes := 0
	v := NewView(m, func(recs Records) int {
		decodes++
		return len(recs)
	})
	for range 3 {
		if n := v.Get(); n != 1 {
			t.Fatalf("Get: %d", n)
		}
	}
	if decodes != 1 {
		t.Fatalf("%d decodes of one revision", decodes)
	}
	m.Update(context.Background(), Records{"b": []byte("2")}, nil)
	if n := v.Get(); n != 2 || decodes != 2 {
		t.Fatalf("after an update: %d, %d decodes", n, decodes)
	}
}

// TestFile_RereadSeesAnotherWriter: with Reread, a File sees what another
// program wrote (here another File on the same path) as a new revision,
// keeps it when it updates, and keeps its records while the file does not
// decode.
func TestFile_RereadSeesAnotherWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "names.json")
	writes := 0
	cfg := namesFile(path, &writes)
	cfg.Reread = true
	a, err := OpenFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, rev0 := a.Snapshot()
	if _, err := b.Update(context.Background(), Records{"x": nil}, nil); err != nil {
		t.Fatal(err)
	}
	recs, rev1 := a.Snapshot()
	if _, ok := recs["x"]; !ok || rev1 <= rev0 {
		t.Fatalf("after another writer: %v at %d (from %d)", recs, rev1, rev0)
	}
	if _, rev := a.Snapshot(); rev != rev1 {
		t.Fatalf("an unchanged file moved the revision: %d, want %d", rev, rev1)
	}
	if _, err := a.Update(context.Background(), Records{"y": nil}, nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"Names":["x","y"]}` {
		t.Fatalf("file: %s", data)
	}
	_, rev2 := a.Snapshot()
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if recs, rev := a.Snapshot(); len(recs) != 2 || rev != rev2 {
		t.Fatalf("an undecodable file: %v at %d, want x and y at %d", recs, rev, rev2)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if recs, rev := a.Snapshot(); len(recs) != 0 || rev <= rev2 {
		t.Fatalf("a removed file: %v at %d (from %d)", recs, rev, rev2)
	}
}

// Modify sees the record as it is, writes only a change, and removes the
// record when fn returns nil; an error from fn writes nothing.
func TestFile_Modify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "names.json")
	var writes int
	f, err := OpenFile(namesFile(path, &writes))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var saw []string
	put := func(v string) func([]byte) ([]byte, error) {
		return func(cur []byte) ([]byte, error) {
			saw = append(saw, string(cur))
			if v == "" {
				return nil, nil
			}
			return []byte(v), nil
		}
	}
	if rev, err := f.Modify(ctx, "a", put(`"a"`)); err != nil || rev != 2 {
		t.Fatalf("create: rev %d, %v", rev, err)
	}
	if rev, err := f.Modify(ctx, "a", put(`"a"`)); err != nil || rev != 0 || writes != 1 {
		t.Fatalf("the same again: rev %d, %v, %d writes", rev, err, writes)
	}
	boom := errors.New("refused")
	if rev, err := f.Modify(ctx, "b", func([]byte) ([]byte, error) { return []byte(`"b"`), boom }); !errors.Is(err, boom) || rev != 0 || writes != 1 {
		t.Fatalf("refused: rev %d, %v, %d writes", rev, err, writes)
	}
	if rev, err := f.Modify(ctx, "a", put("")); err != nil || rev != 3 {
		t.Fatalf("remove: rev %d, %v", rev, err)
	}
	if rev, err := f.Modify(ctx, "a", put("")); err != nil || rev != 0 {
		t.Fatalf("remove what is not there: rev %d, %v", rev, err)
	}
	if want := []string{"", `"a"`, `"a"`, ""}; !slices.Equal(saw, want) {
		t.Fatalf("fn saw %q, want %q", saw, want)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"Names":null}` {
		t.Fatalf("file: %s", data)
	}
}
