package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonBase is the URL a JSON schema and its references are compiled under:
// a reference named "address.json" is found at jsonBase+"address.json" as
// well as under its own name when that is absolute.
const jsonBase = "https://schemaregistry.gregor.invalid/"

// noLoader refuses every URL the compiler was not given: the registry never
// fetches schemas from the network or the disk.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference %s is not among the schema's references", url)
}

// parseJSONSchema parses a JSON Schema, checks it compiles (with its
// references), and returns its compacted text as canonical form; normalize
// also sorts object keys.
func parseJSONSchema(text string, deps []resolvedRef, normalize bool) (*parsed, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	for _, d := range deps {
		if d.Type != TypeJSON {
			continue
		}
		ddoc, err := jsonschema.UnmarshalJSON(strings.NewReader(d.Schema))
		if err != nil {
			return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: reference %s: %v", d.Name, err)}
		}
		if strings.Contains(d.Name, "://") {
			_ = c.AddResource(d.Name, ddoc)
		}
		_ = c.AddResource(jsonBase+strings.TrimPrefix(d.Name, "/"), ddoc)
	}
	if err := c.AddResource(jsonBase+"schema.json", doc); err != nil {
		return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
	}
	if _, err := c.Compile(jsonBase + "schema.json"); err != nil {
		return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
	}
	var canon string
	if normalize {
		canon = string(marshalJSON(doc))
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(text)); err != nil {
			return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
		}
		canon = buf.String()
	}
	return &parsed{typ: TypeJSON, canonical: canon, json: doc}, nil
}

// jsonCompatible applies Confluent's JSON Schema rules: can every document
// valid against writer be read (is valid) against reader? Properties follow
// the open/closed content model: additionalProperties absent or true is
// open, false is closed, a schema is partially open.
func jsonCompatible(reader, writer any) []string {
	c := jsonChecker{}
	c.check(writer, reader, "#")
	return c.msgs
}

type jsonChecker struct{ msgs []string }

func (c *jsonChecker) fail(kind, path, format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', description:'%s', path:'%s'}", kind, fmt.Sprintf(format, args...), path))
}

// acceptsAll reports whether a schema accepts every document (true or {}).
func acceptsAll(s any) bool {
	switch s := s.(type) {
	case bool:
		return s
	case map[string]any:
		for k := range s {
			switch k {
			case "$schema", "$id", "id", "title", "description", "$comment", "default", "examples":
			default:
				return false
			}
		}
		return true
	}
	return false
}

func jsonTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func num(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

func (c *jsonChecker) check(w, r any, path string) {
	if acceptsAll(r) {
		return
	}
	if b, ok := w.(bool); ok && !b {
		return
	}
	rm, rok := r.(map[string]any)
	if !rok { // reader is false
		c.fail("SCHEMA_NARROWED", path, "The new schema accepts nothing")
		return
	}
	wm, wok := w.(map[string]any)
	if !wok { // writer is true: it accepts anything, the reader does not
		wm = map[string]any{}
	}
	// Types: every type the writer allows must be allowed by the reader.
	if rt := jsonTypes(rm); rt != nil {
		wt := jsonTypes(wm)
		if wt == nil {
			c.fail("TYPE_NARROWED", path, "The new schema restricts the type to %v", rt)
		}
		for _, t := range wt {
			if !slices.Contains(rt, t) && (t != "integer" || !slices.Contains(rt, "number")) {
				if len(wt) == 1 && len(rt) == 1 {
					c.fail("TYPE_CHANGED", path, "The type changed from %s to %s", t, rt[0])
				} else {
					c.fail("TYPE_NARROWED", path, "The new schema does not allow type %s", t)
				}
			}
		}
	}
	// Bounds: a new or tighter bound rejects old documents.
	for _, k := range []string{"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"} {
		if rv, ok := num(rm[k]); ok {
			wv, wok := num(wm[k])
			if !wok {
				c.fail(strings.ToUpper(k)+"_ADDED", path, "%s was added", k)
			} else if rv < wv {
				c.fail(strings.ToUpper(k)+"_DECREASED", path, "%s decreased from %v to %v", k, wv, rv)
			}
		}
	}
	for _, k := range []string{"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"} {
		if rv, ok := num(rm[k]); ok {
			wv, wok := num(wm[k])
			if !wok && rv > 0 {
				c.fail(strings.ToUpper(k)+"_ADDED", path, "%s was added", k)
			} else if wok && rv > wv {
				c.fail(strings.ToUpper(k)+"_INCREASED", path, "%s increased from %v to %v", k, wv, rv)
			}
		}
	}
	if rv, ok := num(rm["multipleOf"]); ok && rv != 0 {
		wv, wok := num(wm["multipleOf"])
		if !wok || math.Mod(wv, rv) != 0 {
			c.fail("MULTIPLE_OF_CHANGED", path, "multipleOf %v does not divide the old one", rv)
		}
	}
	if rp, ok := rm["pattern"].(string); ok && rp != wm["pattern"] {
		c.fail("PATTERN_CHANGED", path, "pattern %q was added or changed", rp)
	}
	if re, ok := rm["enum"].([]any); ok {
		we, wok := wm["enum"].([]any)
		if !wok {
			c.fail("ENUM_ARRAY_NARROWED", path, "enum was added")
		}
		for _, v := range we {
			if !slices.ContainsFunc(re, func(x any) bool { return jsonEqual(x, v) }) {
				c.fail("ENUM_ARRAY_NARROWED", path, "enum value %v was removed", v)
			}
		}
	}
	if rc, ok := rm["const"]; ok {
		if wc, wok := wm["const"]; !wok || !jsonEqual(rc, wc) {
			c.fail("CONST_CHANGED", path, "const was added or changed")
		}
	}
	if rr, ok := rm["$ref"].(string); ok && rr != wm["$ref"] {
		c.fail("REF_CHANGED", path, "$ref %s was added or changed", rr)
	}
	c.checkObject(wm, rm, path)
	c.checkArray(wm, rm, path)
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		c.checkCombined(wm, rm, k, path)
	}
}

func jsonEqual(a, b any) bool {
	return bytes.Equal(marshalJSON(a), marshalJSON(b))
}

func (c *jsonChecker) checkObject(wm, rm map[string]any, path string) {
	wp, _ := wm["properties"].(map[string]any)
	rp, _ := rm["properties"].(map[string]any)
	wa, wHas := wm["additionalProperties"]
	ra, rHas := rm["additionalProperties"]
	if !wHas {
		wa = true
	}
	if !rHas {
		ra = true
	}
	for _, name := range sortedKeys(rp) {
		p := path + "/properties/" + name
		if ws, ok := wp[name]; ok {
			c.check(ws, rp[name], p)
			continue
		}
		// Added: old documents may carry the property if the old model let
		// them.
		switch {
		case wa == false:
		case acceptsAll(wa):
			if !acceptsAll(rp[name]) {
				c.fail("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p, "The property %s was added to an open content model", name)
			}
		default:
			sub := jsonChecker{}
			sub.check(wa, rp[name], p)
			if len(sub.msgs) > 0 {
				c.fail("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p, "The property %s was added and the old additionalProperties do not fit it", name)
			}
		}
	}
	for _, name := range sortedKeys(wp) {
		if _, ok := rp[name]; ok {
			continue
		}
		p := path + "/properties/" + name
		switch {
		case ra == false:
			c.fail("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", p, "The property %s was removed from a closed content model", name)
		case acceptsAll(ra):
		default:
			sub := jsonChecker{}
			sub.check(wp[name], ra, p)
			if len(sub.msgs) > 0 {
				c.fail("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p, "The property %s was removed and the new additionalProperties do not fit it", name)
			}
		}
	}
	if !acceptsAll(ra) && wa != false {
		switch {
		case ra == false:
			c.fail("ADDITIONAL_PROPERTIES_REMOVED", path, "additionalProperties became false")
		case acceptsAll(wa):
			c.fail("ADDITIONAL_PROPERTIES_NARROWED", path, "additionalProperties were narrowed")
		default:
			c.check(wa, ra, path+"/additionalProperties")
		}
	}
	wr := stringSet(wm["required"])
	for _, name := range sortedKeys(stringSet(rm["required"])) {
		if wr[name] != nil {
			continue
		}
		if ps, ok := rp[name].(map[string]any); ok {
			if _, hasDefault := ps["default"]; hasDefault {
				continue
			}
		}
		c.fail("REQUIRED_ATTRIBUTE_ADDED", path+"/required", "The property %s became required", name)
	}
}

func (c *jsonChecker) checkArray(wm, rm map[string]any, path string) {
	ri, rok := rm["items"]
	if !rok {
		return
	}
	wi, wok := wm["items"]
	if !wok {
		wi = true
	}
	rl, rList := ri.([]any)
	wl, wList := wi.([]any)
	switch {
	case rList && wList:
		for i := range rl {
			if i < len(wl) {
				c.check(wl[i], rl[i], fmt.Sprintf("%s/items/%d", path, i))
			}
		}
	case !rList && !wList:
		c.check(wi, ri, path+"/items")
	default:
		c.fail("ITEMS_CHANGED", path+"/items", "items changed between a list and a schema")
	}
}

// checkCombined compares anyOf/oneOf/allOf: every writer branch (or the
// writer itself) must be readable by some reader branch.
func (c *jsonChecker) checkCombined(wm, rm map[string]any, k, path string) {
	rb, rok := rm[k].([]any)
	wb, wok := wm[k].([]any)
	if !rok && !wok {
		return
	}
	if !wok {
		wb = []any{wm}
	}
	if !rok {
		return // a branch dropped from the reader: its other keywords were checked above
	}
	if k == "allOf" {
		// Every reader branch must hold for the writer's documents: each
		// must read some writer branch.
		for i, r := range rb {
			if !slices.ContainsFunc(wb, func(w any) bool { s := jsonChecker{}; s.check(w, r, path); return len(s.msgs) == 0 }) {
				c.fail("COMBINED_TYPE_SUBSCHEMAS_CHANGED", fmt.Sprintf("%s/%s/%d", path, k, i), "allOf branch %d of the new schema is not implied by the old one", i)
			}
		}
		return
	}
	for i, w := range wb {
		if !slices.ContainsFunc(rb, func(r any) bool { s := jsonChecker{}; s.check(w, r, path); return len(s.msgs) == 0 }) {
			c.fail("COMBINED_TYPE_SUBSCHEMAS_CHANGED", fmt.Sprintf("%s/%s/%d", path, k, i), "no %s branch of the new schema reads branch %d of the old one", k, i)
		}
	}
}

func stringSet(v any) map[string]any {
	out := map[string]any{}
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
