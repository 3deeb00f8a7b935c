package schemaregistry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
)

// parseAvro parses an Avro schema; deps of type AVRO are parsed first into
// the same cache, so the schema can name their types. A panic in hamba
// (an empty union with a default panics in v2.31.0) is an invalid schema.
func parseAvro(text string, deps []resolvedRef) (p *parsed, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", r)}
		}
	}()
	cache := &avro.SchemaCache{}
	var parsedDeps []avroDep
	for _, d := range deps {
		if d.Type != TypeAvro {
			continue
		}
		ds, err := avro.ParseWithCache(d.Schema, "", cache)
		if err != nil {
			return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: reference %s: %v", d.Name, err)}
		}
		parsedDeps = append(parsedDeps, avroDep{ds, d.Schema})
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
	}
	canon, err := avroCanonical(s, text, parsedDeps)
	if err != nil {
		return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
	}
	return &parsed{typ: TypeAvro, canonical: canon, avro: s}, nil
}

// avroCompatible applies Avro's schema resolution rules: can data written
// with writer be read with reader?
func avroCompatible(reader, writer avro.Schema) []string {
	c := avroChecker{memo: map[[2]*avro.RecordSchema]*avroPairResult{}}
	c.check(reader, writer, "")
	return c.msgs
}

type avroChecker struct {
	// memo holds the record pairs checked or under check, so recursive
	// types end: a pair under check is assumed compatible (the check is
	// coinductive), a checked pair answers its result again. A record is
	// one pointer wherever it is referenced in its schema.
	memo map[[2]*avro.RecordSchema]*avroPairResult
	msgs []string
}

type avroPairResult struct {
	done bool
	msgs []string
}

// sub checks reader against writer with the same memo but its own messages.
func (c *avroChecker) sub(reader, writer avro.Schema, path string) []string {
	s := avroChecker{memo: c.memo}
	s.check(reader, writer, path)
	return s.msgs
}

func (c *avroChecker) fail(kind, path, format string, args ...any) {
	if path == "" {
		path = "/"
	}
	c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', description:'%s', path:'%s'}", kind, fmt.Sprintf(format, args...), path))
}

func deref(s avro.Schema) avro.Schema {
	for {
		r, ok := s.(*avro.RefSchema)
		if !ok {
			return s
		}
		s = r.Schema()
	}
}

// avroPromotable reports whether a writer primitive can be read as a reader
// primitive (the spec's promotions, and identical types).
func avroPromotable(reader, writer avro.Type) bool {
	if reader == writer {
		return true
	}
	switch writer {
	case avro.Int:
		return reader == avro.Long || reader == avro.Float || reader == avro.Double
	case avro.Long:
		return reader == avro.Float || reader == avro.Double
	case avro.Float:
		return reader == avro.Double
	case avro.String:
		return reader == avro.Bytes
	case avro.Bytes:
		return reader == avro.String
	}
	return false
}

// namesMatch is the spec's rule for named types: the unqualified names
// match, or the reader has an alias for the writer's full name.
func namesMatch(reader, writer avro.NamedSchema) bool {
	if reader.Name() == writer.Name() || reader.FullName() == writer.FullName() {
		return true
	}
	for _, a := range reader.Aliases() {
		if a == writer.FullName() || a == writer.Name() {
			return true
		}
	}
	return false
}

func (c *avroChecker) check(reader, writer avro.Schema, path string) {
	reader, writer = deref(reader), deref(writer)
	if w, ok := writer.(*avro.UnionSchema); ok {
		// Every branch the writer may have written must be readable.
		for i, wt := range w.Types() {
			c.check(reader, wt, fmt.Sprintf("%s/%d", path, i))
		}
		return
	}
	if r, ok := reader.(*avro.UnionSchema); ok {
		for _, rt := range r.Types() {
			if len(c.sub(rt, writer, path)) == 0 {
				return
			}
		}
		c.fail("MISSING_UNION_BRANCH", path, "The new union has no branch that can read the old schema's %s", typeName(writer))
		return
	}
	if reader.Type() != writer.Type() {
		if avroPromotable(reader.Type(), writer.Type()) {
			return
		}
		c.fail("TYPE_MISMATCH", path, "The type of the new schema (%s) cannot read the old schema's type (%s)", reader.Type(), writer.Type())
		return
	}
	switch r := reader.(type) {
	case *avro.RecordSchema:
		w := writer.(*avro.RecordSchema)
		if !namesMatch(r, w) {
			c.fail("NAME_MISMATCH", path, "The name of the new record (%s) does not match the old one (%s)", r.FullName(), w.FullName())
			return
		}
		pair := [2]*avro.RecordSchema{r, w}
		if res := c.memo[pair]; res != nil {
			if res.done {
				c.msgs = append(c.msgs, res.msgs...)
			}
			return
		}
		res := &avroPairResult{}
		c.memo[pair] = res
		before := len(c.msgs)
		defer func() { res.done, res.msgs = true, append([]string(nil), c.msgs[before:]...) }()
		for i, rf := range r.Fields() {
			wf := avroWriterField(w, rf)
			fpath := fmt.Sprintf("%s/fields/%d", path, i)
			if wf == nil {
				if !rf.HasDefault() {
					c.fail("READER_FIELD_MISSING_DEFAULT_VALUE", fpath, "The field '%s' in the new schema has no default value and is missing in the old schema", rf.Name())
				}
				continue
			}
			c.check(rf.Type(), wf.Type(), fpath+"/type")
		}
	case *avro.EnumSchema:
		w := writer.(*avro.EnumSchema)
		if !namesMatch(r, w) {
			c.fail("NAME_MISMATCH", path, "The name of the new enum (%s) does not match the old one (%s)", r.FullName(), w.FullName())
			return
		}
		if r.HasDefault() {
			return
		}
		var missing []string
		for _, s := range w.Symbols() {
			if !slices.Contains(r.Symbols(), s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			c.fail("MISSING_ENUM_SYMBOLS", path+"/symbols", "The new enum %s has no symbols [%s] of the old one and no default", r.FullName(), strings.Join(missing, ", "))
		}
	case *avro.FixedSchema:
		w := writer.(*avro.FixedSchema)
		if !namesMatch(r, w) {
			c.fail("NAME_MISMATCH", path, "The name of the new fixed (%s) does not match the old one (%s)", r.FullName(), w.FullName())
			return
		}
		if r.Size() != w.Size() {
			c.fail("FIXED_SIZE_MISMATCH", path+"/size", "The size of the new fixed %s (%d) differs from the old one (%d)", r.FullName(), r.Size(), w.Size())
		}
	case *avro.ArraySchema:
		c.check(r.Items(), writer.(*avro.ArraySchema).Items(), path+"/items")
	case *avro.MapSchema:
		c.check(r.Values(), writer.(*avro.MapSchema).Values(), path+"/values")
	}
}

// avroWriterField finds the writer field a reader field reads: by name, or
// by one of the reader field's aliases.
func avroWriterField(w *avro.RecordSchema, rf *avro.Field) *avro.Field {
	for _, wf := range w.Fields() {
		if wf.Name() == rf.Name() {
			return wf
		}
	}
	for _, a := range rf.Aliases() {
		for _, wf := range w.Fields() {
			if wf.Name() == a {
				return wf
			}
		}
	}
	return nil
}

func typeName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}
