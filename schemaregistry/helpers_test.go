package schemaregistry

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// testServer is a Registry over a log behind an httptest server.
type testServer struct {
	t   *testing.T
	log *MemoryLog
	reg *Registry
	srv *httptest.Server
}

func newTestServer(t *testing.T, log *MemoryLog) *testServer {
	t.Helper()
	if log == nil {
		log = NewMemoryLog()
	}
	reg, err := New(Config{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{t: t, log: log, reg: reg, srv: newHTTPTestServer(t, reg)}
}

func newHTTPTestServer(t *testing.T, reg *Registry) *httptest.Server {
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// do sends a request and returns the status and the body.
func (s *testServer) do(method, path string, body any) (int, string) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != contentType {
		s.t.Errorf("%s %s: content type %q", method, path, ct)
	}
	return resp.StatusCode, string(b)
}

// expect sends a request and checks the status and the exact body.
func (s *testServer) expect(method, path string, body any, status int, want string) {
	s.t.Helper()
	gotStatus, got := s.do(method, path, body)
	if gotStatus != status || got != want {
		s.t.Errorf("%s %s:\n got %d %s\nwant %d %s", method, path, gotStatus, got, status, want)
	}
}

// expectCode sends a request and checks the status and the error code.
func (s *testServer) expectCode(method, path string, body any, status, code int) {
	s.t.Helper()
	gotStatus, got := s.do(method, path, body)
	var e apiError
	_ = json.Unmarshal([]byte(got), &e)
	if gotStatus != status || e.Code != code || e.Message == "" {
		s.t.Errorf("%s %s: got %d %s, want %d with error_code %d", method, path, gotStatus, got, status, code)
	}
}

func schemaBody(schema string) map[string]any { return map[string]any{"schema": schema} }
