package registrycmp

import (
	"strings"
	"testing"
)

// TestNormalise_IDsMessagesSchemas checks the normalisation rules on
// answers as the two registries give them, without starting either.
func TestNormalise_IDsMessagesSchemas(t *testing.T) {
	c := NewClient("x", "http://unused")
	c.prefix = "s01-"
	for _, tc := range []struct {
		path string
		body any
		want string
	}{
		{"/subjects/a/versions", map[string]any{"id": 41.0}, `{"id":"#1"}`},
		{"/subjects/a/versions", map[string]any{"id": 41.0}, `{"id":"#1"}`},
		{"/subjects/b/versions", map[string]any{"id": 7.0}, `{"id":"#2"}`},
		{"/subjects/a", map[string]any{"error_code": 40401.0, "message": "Subject 'a' not found."}, `{"error_code":40401}`},
		{"/schemas/ids/1", map[string]any{"schema": `{ "type": "record", "name": "A", "fields": [] }`, "references": []any{}},
			`{"schema":"{\"fields\":[],\"name\":\"A\",\"type\":\"record\"}"}`},
		{"/subjects", []any{"s02-z", "s01-b", "s01-a"}, `["s01-a","s01-b"]`},
		{"/subjects/a/versions", []any{2.0, 1.0}, `[2,1]`},
		{"/subjects/a/versions/1/referencedby", []any{7.0}, `["#2"]`},
		{"/compatibility/subjects/a/versions/1", map[string]any{"is_compatible": false, "messages": []any{"x"}}, `{"is_compatible":false,"messages":"\u003cmessages\u003e"}`},
	} {
		if got := c.normalise(tc.path, tc.body); got != tc.want {
			t.Errorf("normalise(%s, %v) = %s, want %s", tc.path, tc.body, got, tc.want)
		}
	}
}

func TestDiff_MarksOwnLines(t *testing.T) {
	got := strings.Join(diff([]string{"a", "b", "c"}, []string{"a", "x", "c"}), "|")
	if want := "  a|+ x|- b|  c"; got != want {
		t.Fatalf("diff = %q, want %q", got, want)
	}
}
