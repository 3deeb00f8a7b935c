package schemaregistry

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMemoryLog_AppendIsConditional(t *testing.T) {
	ctx := context.Background()
	l := NewMemoryLog()
	if off, err := l.Append(ctx, 0, []byte("k"), []byte("v")); err != nil || off != 0 {
		t.Fatalf("append: %d %v", off, err)
	}
	if _, err := l.Append(ctx, 0, []byte("k"), []byte("w")); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale end: %v", err)
	}
	if off, err := l.Append(ctx, 1, []byte("k"), nil); err != nil || off != 1 {
		t.Fatalf("tombstone: %d %v", off, err)
	}
	for i := 2; i < 200; i++ {
		if _, err := l.Append(ctx, int64(i), []byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	recs, end, err := l.Read(ctx, 0)
	if err != nil || end != 200 || len(recs) != memoryReadBatch || recs[1].Value != nil {
		t.Fatalf("read: %d records, end %d, %v", len(recs), end, err)
	}
	if recs, end, _ := l.Read(ctx, 200); len(recs) != 0 || end != 200 {
		t.Fatalf("read at end: %d records, end %d", len(recs), end)
	}
}

// countingLog counts reads, to check that Sync with nothing new costs one.
type countingLog struct {
	*MemoryLog
	reads int
}

func (l *countingLog) Read(ctx context.Context, from int64) ([]Record, int64, error) {
	l.reads++
	return l.MemoryLog.Read(ctx, from)
}

func TestRegistry_SyncIsOneReadWhenNothingIsNew(t *testing.T) {
	ctx := context.Background()
	l := &countingLog{MemoryLog: NewMemoryLog()}
	for i := range 150 {
		if _, err := l.Append(ctx, int64(i), []byte(`{"keytype":"NOOP","magic":0}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Config{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	l.reads = 0
	if err := r.Sync(ctx); err != nil || l.reads != 1 {
		t.Fatalf("sync: %d reads, %v", l.reads, err)
	}
}

// failingLog fails every read or append.
type failingLog struct{ appendErr, readErr error }

func (l failingLog) Append(context.Context, int64, []byte, []byte) (int64, error) {
	return 0, l.appendErr
}

func (l failingLog) Read(context.Context, int64) ([]Record, int64, error) {
	return nil, 0, l.readErr
}

func TestREST_StoreErrorsAndTimeouts(t *testing.T) {
	for _, c := range []struct {
		log        Log
		code       int
		method     string
		path, body string
	}{
		{failingLog{readErr: errors.New("broker down")}, codeStoreError, "GET", "/subjects", ""},
		{failingLog{readErr: context.DeadlineExceeded}, codeOperationTimeout, "GET", "/subjects", ""},
		{failingLog{appendErr: errors.New("not leader")}, codeStoreError, "PUT", "/config", `{"compatibility":"FULL"}`},
		{failingLog{appendErr: ErrConflict}, codeStoreError, "PUT", "/config", `{"compatibility":"FULL"}`},
	} {
		r, err := New(Config{Log: c.log})
		if err != nil {
			t.Fatal(err)
		}
		s := &testServer{t: t, reg: r}
		s.srv = newHTTPTestServer(t, r)
		var body any
		if c.body != "" {
			body = map[string]string{"compatibility": "FULL"}
		}
		s.expectCode(c.method, c.path, body, 500, c.code)
	}
}

func TestREST_SubjectNamesNeedEscaping(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/a%2Fb%20c/versions", schemaBody(`"string"`), 200, `{"id":1}`)
	s.expect("GET", "/subjects", nil, 200, `["a/b c"]`)
	s.expect("GET", "/subjects/a%2Fb%20c/versions", nil, 200, `[1]`)
}

func TestREST_ReRegisterSoftDeletedSchema(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("DELETE", "/subjects/s/versions/1", nil, 200, `1`)
	// The same schema again: the same id, a new version; the soft-deleted
	// version with that id is tombstoned, as Confluent does.
	s.expect("POST", "/subjects/s/versions", schemaBody(avroUserV1), 200, `{"id":1}`)
	s.expect("GET", "/subjects/s/versions?deleted=true", nil, 200, `[2]`)
	recs := s.log.Records()
	last := recs[len(recs)-1]
	if !strings.Contains(string(last.Key), `"version":1`) || last.Value != nil {
		t.Errorf("last record %s %s", last.Key, last.Value)
	}
}
