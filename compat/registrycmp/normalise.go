package registrycmp

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// normalise renders an answer body as canonical JSON after the rules in
// the package comment. path is the request's path (subject listings are
// cut to the scenario's prefix).
func (c *Client) normalise(path string, body any) string {
	if s, ok := body.(string); ok { // not JSON: the text, trimmed
		return fmt.Sprintf("%q", strings.TrimSpace(s))
	}
	if strings.HasPrefix(path, "/subjects") && !strings.Contains(strings.TrimPrefix(path, "/subjects"), "/") {
		if arr, ok := body.([]any); ok { // GET /subjects: this scenario's only
			var own []any
			for _, e := range arr {
				if s, ok := e.(string); ok && strings.HasPrefix(s, c.prefix) {
					own = append(own, e)
				}
			}
			body = own
			if own == nil {
				body = []any{}
			}
		}
	}
	if arr, ok := body.([]any); ok && strings.HasSuffix(path, "/referencedby") {
		ids := make([]any, len(arr)) // ids of the schemas that refer to it
		for i, e := range arr {
			ids[i] = c.walk("id", e)
		}
		body = ids
	}
	v := c.walk("", body)
	b, err := json.Marshal(v)
	if err != nil {
		return "marshal error: " + err.Error()
	}
	return string(b)
}

func (c *Client) walk(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch k {
			case "message":
				continue
			case "references":
				if arr, ok := e.([]any); ok && len(arr) == 0 {
					continue // an empty list is the same as none
				}
			case "messages":
				if arr, ok := e.([]any); ok && len(arr) > 0 {
					out[k] = "<messages>"
					continue
				}
			}
			out[k] = c.walk(k, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.walk(key, e)
		}
		if key == "" || key == "references" || key == "subjects" {
			sortSet(out)
		}
		return out
	case float64:
		if key == "id" {
			return c.mark(int(x))
		}
		return x
	case string:
		if key == "schema" {
			var parsed any
			if json.Unmarshal([]byte(x), &parsed) == nil {
				b, _ := json.Marshal(parsed) // keys sorted, no spacing
				return string(b)
			}
			return strings.TrimSpace(x)
		}
		return x
	}
	return v
}

// sortSet sorts an array of strings or of objects (by their JSON); arrays
// of numbers (versions, ids) keep their order.
func sortSet(a []any) {
	for _, e := range a {
		if _, ok := e.(float64); ok {
			return
		}
	}
	sort.SliceStable(a, func(i, j int) bool {
		bi, _ := json.Marshal(a[i])
		bj, _ := json.Marshal(a[j])
		return string(bi) < string(bj)
	})
}
