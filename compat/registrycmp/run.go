// Package registrycmp compares Gregor's built-in schema registry with a
// second implementation of Confluent Schema Registry's REST API, Apicurio
// Registry's ccompat API (issue #24), as compat/conformance does for the
// Kafka protocol: each scenario sends the same requests to both, in the
// same order, and the answers (HTTP status and body) are normalised and
// compared. make registry-conformance writes docs/registry-conformance.md.
//
// # Normalisation
//
// Schema ids become marks (#1, #2, ...) in the order each side first
// returned them within the scenario, so two registries whose ids start at
// different bases still compare equal when they reuse ids the same way. "message" texts
// are dropped (error_code and the HTTP status are kept), an empty
// "references" list is taken as none, the compatibility
// check's "messages" become <messages> when present, a "schema" that parses
// as JSON (Avro, JSON Schema) is compared as parsed JSON (key order and
// spacing ignored), and arrays of strings and of objects are compared as
// sets. Subject listings are cut to the scenario's own subjects (the
// registries are shared by all scenarios).
//
// Confluent's own registry and Karapace cannot be installed here (not on
// Maven Central or PyPI); Apicurio is a second implementation, not the
// reference: where it departs from Confluent's API reference the report's
// notes say so.
package registrycmp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Scenario is one request sequence run once against each registry. Run
// sends its requests through c, which records them and their answers.
type Scenario struct {
	Name string
	Run  func(c *Client)
}

// Outcome is one scenario's normalised exchanges on each side.
type Outcome struct {
	Name             string
	Apicurio, Gregor []string
	Match            bool
	Elapsed          time.Duration
}

// Client sends requests to one registry and records each as a line:
// "METHOD path body -> status answer", normalised.
type Client struct {
	Name   string
	base   string
	http   *http.Client
	ids    map[int]int // raw schema id → mark, in order of first sight
	prefix string      // the scenario's subject prefix
	lines  []string
}

// ID is a schema id as a side returned it; in a path it is sent raw and
// recorded as its mark.
type ID int

// Answer is a decoded answer.
type Answer struct {
	Status int
	Body   any
}

// ID returns the answer's "id" field (0 when there is none).
func (a Answer) ID() ID {
	if m, ok := a.Body.(map[string]any); ok {
		if f, ok := m["id"].(float64); ok {
			return ID(f)
		}
	}
	return 0
}

// NewClient returns a client for the Confluent API at base.
func NewClient(name, base string) *Client {
	return &Client{Name: name, base: strings.TrimSuffix(base, "/"), http: &http.Client{Timeout: 30 * time.Second}, ids: map[int]int{}}
}

type failure struct{ msg string }

// fail ends the scenario on this side with msg.
func fail(format string, args ...any) { panic(failure{fmt.Sprintf(format, args...)}) }

// Do sends method to path (a format whose ID arguments are sent raw and
// recorded as marks) with body (nil for none, else marshalled as JSON),
// records the exchange and returns the answer.
func (c *Client) Do(method string, body any, path string, args ...any) Answer {
	raw, shown := make([]any, len(args)), make([]any, len(args))
	for i, a := range args {
		raw[i], shown[i] = a, a
		if id, ok := a.(ID); ok {
			raw[i], shown[i] = int(id), c.mark(int(id))
		}
	}
	p, sp := fmt.Sprintf(path, raw...), fmt.Sprintf(path, shown...)
	var rd io.Reader
	line := method + " " + sp
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			fail("marshal: %v", err)
		}
		rd = bytes.NewReader(b)
		line += " " + describeBody(body)
	}
	req, err := http.NewRequest(method, c.base+p, rd)
	if err != nil {
		fail("%v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	resp, err := c.http.Do(req)
	if err != nil {
		fail("%s %s: %v", method, sp, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := Answer{Status: resp.StatusCode}
	if err := json.Unmarshal(b, &a.Body); err != nil {
		a.Body = string(b) // e.g. GET .../schema of Protobuf is the text itself
	}
	c.lines = append(c.lines, fmt.Sprintf("%s -> %d %s", line, a.Status, c.normalise(p, a.Body)))
	return a
}

// Note records a line of the scenario's own (a value it computed).
func (c *Client) Note(format string, args ...any) {
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
}

func (c *Client) mark(id int) string {
	n, ok := c.ids[id]
	if !ok {
		n = len(c.ids) + 1
		c.ids[id] = n
	}
	return fmt.Sprintf("#%d", n)
}

// describeBody shows a request body briefly: its keys, and the schema type.
func describeBody(body any) string {
	b, _ := json.Marshal(body)
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return string(b)
	}
	if s, ok := m["schema"].(string); ok && len(s) > 60 {
		m["schema"] = s[:57] + "..."
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// Run runs every scenario against Apicurio, then against Gregor, one at a
// time. progress, if set, is told each outcome.
func Run(apicurioURL, gregorURL string, scenarios []Scenario, progress func(Outcome)) []Outcome {
	a, g := NewClient("apicurio", apicurioURL), NewClient("gregor", gregorURL)
	var out []Outcome
	for i, s := range scenarios {
		start := time.Now()
		o := Outcome{Name: s.Name}
		prefix := fmt.Sprintf("s%02d-", i+1)
		o.Apicurio = runOne(a, prefix, s)
		o.Gregor = runOne(g, prefix, s)
		o.Match = slices.Equal(o.Apicurio, o.Gregor)
		o.Elapsed = time.Since(start)
		if progress != nil {
			progress(o)
		}
		out = append(out, o)
	}
	return out
}

func runOne(c *Client, prefix string, s Scenario) (lines []string) {
	c.prefix, c.lines, c.ids = prefix, nil, map[int]int{}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
			if f, ok := r.(failure); ok {
				msg = "failed: " + f.msg
			}
			lines = append(c.lines, msg)
		}
	}()
	s.Run(c)
	return c.lines
}

// Subject is the scenario's subject named name: prefixed, so scenarios do
// not share subjects.
func (c *Client) Subject(name string) string { return c.prefix + name }

// Summary counts the scenarios that match.
func Summary(outs []Outcome) (matches, total int) {
	for _, o := range outs {
		if o.Match {
			matches++
		}
	}
	return matches, len(outs)
}
