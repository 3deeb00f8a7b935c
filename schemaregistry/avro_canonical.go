package schemaregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
)

// The canonical text of an Avro schema is what Apache Avro Java's
// Schema.toString(refs, false) writes, which is Confluent's
// AvroSchema.canonicalString(): compact JSON, attributes in Java's order,
// a named type written in full once and by name afterwards, and the
// referenced schemas' top-level types by name from the start.
//
// Java keeps a default value and a property as the Jackson tree it parsed,
// and properties in the order they were given. hamba/avro keeps neither
// (defaults are converted to Go values, properties are a map), so the
// serializer walks hamba's parsed schema for the structure (types, names,
// namespaces, symbols, sizes, field order) beside the schema's own JSON
// text decoded in order, from which it takes docs, aliases of fields,
// properties and defaults as written.

// avroCanonical returns Java's Schema.toString(refs, false) of s, parsed
// from text; deps are the referenced schemas, dependencies first. It fails
// on a schema that hamba and Java read differently (see caseVariant).
func avroCanonical(s avro.Schema, text string, deps []avroDep) (string, error) {
	c := avroCanon{defs: map[string]jsonObject{}, spaces: map[string]string{}}
	// The referenced schemas are walked first, output discarded, for the
	// JSON of the named types they define: a type nested in a reference is
	// not known by name to Java, which writes it in full where the schema
	// first uses it.
	for _, d := range deps {
		c.known = map[string]bool{}
		node, err := decodeOrdered(d.text)
		if err != nil {
			return "", err
		}
		c.schema(d.schema, node, "")
	}
	c.buf.Reset()
	c.known = map[string]bool{}
	for _, d := range deps {
		if n, ok := deref(d.schema).(avro.NamedSchema); ok {
			c.known[c.javaFullName(n)] = true
		}
	}
	node, err := decodeOrdered(text)
	if err != nil {
		return "", err
	}
	c.schema(s, node, "")
	if c.err != nil {
		return "", c.err
	}
	return c.buf.String(), nil
}

// avroDep is a referenced schema: its parsed form and its text.
type avroDep struct {
	schema avro.Schema
	text   string
}

type avroCanon struct {
	buf    bytes.Buffer
	known  map[string]bool       // Java's full names written (Java's knownNames)
	defs   map[string]jsonObject // hamba's full name → the JSON object defining it
	spaces map[string]string     // hamba's full name → Java's namespace
	err    error                 // the first caseVariant found
}

// hamba's attributes of each kind of schema and of a field: the names
// that its JSON decoding (mapstructure) matches case-insensitively.
var (
	hambaRecordAttrs = []string{"type", "name", "namespace", "aliases", "doc", "fields"}
	hambaEnumAttrs   = []string{"type", "name", "namespace", "aliases", "doc", "symbols", "default"}
	hambaFixedAttrs  = []string{"type", "name", "namespace", "aliases", "size"}
	hambaFieldAttrs  = []string{"name", "aliases", "type", "doc", "default", "order"}
)

// caseVariant records an error if obj has an attribute that differs from
// one of attrs only in case while attrs' own spelling is absent
// ({"nAme":"R"}, {"Doc":"d"}). hamba reads it as that attribute, Java as
// a property (or fails for want of the attribute): the two would not be
// the same schema.
func (c *avroCanon) caseVariant(obj jsonObject, attrs []string) {
	for _, m := range obj {
		if c.err != nil || slices.Contains(attrs, m.key) {
			continue
		}
		for _, a := range attrs {
			if strings.EqualFold(m.key, a) {
				if _, ok := obj.lookup(a); !ok {
					c.err = fmt.Errorf("attribute %q is not %q: Avro's attribute names are case-sensitive", m.key, a)
				}
			}
		}
	}
}

// Reserved attributes: every other attribute of a schema or a field is a
// property (Java's SCHEMA_RESERVED, ENUM_RESERVED and FIELD_RESERVED).
var (
	avroSchemaReserved = []string{"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
	avroEnumReserved   = append(slices.Clone(avroSchemaReserved), "default")
	avroFieldReserved  = []string{"default", "doc", "name", "order", "type", "aliases"}
)

// avroTypeNames are Java's Schema.Type names: a name equal to one is
// always written qualified.
var avroTypeNames = []string{"record", "enum", "array", "map", "union", "fixed", "string", "bytes", "int", "long", "float", "double", "boolean", "null"}

func (c *avroCanon) schema(s avro.Schema, node any, ns string) {
	// hamba also accepts {"type":[...]} and {"type":"Name"}, which Java
	// rejects; walk them as the union or the name they hold.
	if obj, ok := node.(jsonObject); ok {
		switch t := obj.get("type").(type) {
		case []any:
			node = t
		case string:
			if !slices.Contains(avroTypeNames, t) && t != "error" {
				node = t
			}
		}
	}
	obj, _ := node.(jsonObject)
	switch t := deref(s).(type) {
	case avro.NamedSchema:
		c.named(t, obj, ns)
	case *avro.UnionSchema:
		arr, _ := node.([]any)
		c.buf.WriteByte('[')
		for i, b := range t.Types() {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			var n any
			if len(arr) == len(t.Types()) {
				n = arr[i]
			}
			c.schema(b, n, ns)
		}
		c.buf.WriteByte(']')
	case *avro.ArraySchema:
		c.caseVariant(obj, []string{"type", "items"})
		c.buf.WriteString(`{"type":"array","items":`)
		c.schema(t.Items(), obj.get("items"), ns)
		c.props(obj, avroSchemaReserved, t)
		c.buf.WriteByte('}')
	case *avro.MapSchema:
		c.caseVariant(obj, []string{"type", "values"})
		c.buf.WriteString(`{"type":"map","values":`)
		c.schema(t.Values(), obj.get("values"), ns)
		c.props(obj, avroSchemaReserved, t)
		c.buf.WriteByte('}')
	default:
		c.primitive(s, obj)
	}
}

// primitive writes a primitive type: its name, or an object with the type
// first and then the properties (logicalType among them) when it has any.
func (c *avroCanon) primitive(s avro.Schema, obj jsonObject) {
	c.caseVariant(obj, []string{"type"})
	var props []jsonMember
	if obj != nil {
		props = obj.without(avroSchemaReserved)
	} else {
		props = hambaProps(s)
	}
	if len(props) == 0 {
		writeJacksonString(&c.buf, string(s.Type()))
		return
	}
	c.buf.WriteString(`{"type":`)
	writeJacksonString(&c.buf, string(s.Type()))
	c.members(props)
	c.buf.WriteByte('}')
}

// named writes a record, enum or fixed: by name if it was written before,
// else in full.
func (c *avroCanon) named(n avro.NamedSchema, obj jsonObject, ns string) {
	if obj != nil && definesName(obj) {
		switch n.(type) {
		case *avro.RecordSchema:
			c.caseVariant(obj, hambaRecordAttrs)
		case *avro.EnumSchema:
			c.caseVariant(obj, hambaEnumAttrs)
		case *avro.FixedSchema:
			c.caseVariant(obj, hambaFixedAttrs)
		}
		c.defs[n.FullName()] = obj
		c.spaces[n.FullName()] = javaNamespace(obj, ns)
	} else {
		obj = c.defs[n.FullName()]
	}
	full := c.javaFullName(n)
	if c.known[full] {
		writeJacksonString(&c.buf, qualified(full, ns))
		return
	}
	c.known[full] = true
	space := c.javaSpace(n)
	c.buf.WriteString(`{"type":`)
	switch t := n.(type) {
	case *avro.RecordSchema:
		if t.IsError() {
			c.buf.WriteString(`"error"`)
		} else {
			c.buf.WriteString(`"record"`)
		}
		c.name(n.Name(), space, ns)
		c.doc(obj, t.Doc())
		c.buf.WriteString(`,"fields":[`)
		objFields, _ := obj.get("fields").([]any)
		for i, f := range t.Fields() {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			var fobj jsonObject
			if len(objFields) == len(t.Fields()) {
				fobj, _ = objFields[i].(jsonObject)
			}
			c.field(f, fobj, space)
		}
		c.buf.WriteByte(']')
		c.props(obj, avroSchemaReserved, t)
	case *avro.EnumSchema:
		c.buf.WriteString(`"enum"`)
		c.name(n.Name(), space, ns)
		c.doc(obj, t.Doc())
		c.buf.WriteString(`,"symbols":[`)
		for i, sym := range t.Symbols() {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			writeJacksonString(&c.buf, sym)
		}
		c.buf.WriteByte(']')
		if t.HasDefault() {
			c.buf.WriteString(`,"default":`)
			writeJacksonString(&c.buf, t.Default())
		}
		c.props(obj, avroEnumReserved, t)
	case *avro.FixedSchema:
		c.buf.WriteString(`"fixed"`)
		c.name(n.Name(), space, ns)
		c.doc(obj, "") // hamba keeps no doc for a fixed
		c.buf.WriteString(`,"size":` + strconv.Itoa(t.Size()))
		c.props(obj, avroSchemaReserved, t)
	}
	c.aliases(n, obj, space)
	c.buf.WriteByte('}')
}

// javaNamespace is the namespace Java gives the named type that obj
// defines within the namespace ns: the one in a dotted name, else the
// "namespace" attribute, else ns. An empty "namespace" is no namespace
// (hamba takes it as ns: Java's names are the ones written).
func javaNamespace(obj jsonObject, ns string) string {
	name, _ := obj.get("name").(string)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i]
	}
	if space, ok := obj.get("namespace").(string); ok {
		return space
	}
	return ns
}

// javaSpace is the namespace Java gives n: the one its definition's JSON
// says, else hamba's.
func (c *avroCanon) javaSpace(n avro.NamedSchema) string {
	if space, ok := c.spaces[n.FullName()]; ok {
		return space
	}
	return n.Namespace()
}

func (c *avroCanon) javaFullName(n avro.NamedSchema) string {
	if space := c.javaSpace(n); space != "" {
		return space + "." + n.Name()
	}
	return n.Name()
}

// definesName reports whether obj is a named type's definition (not, say,
// a primitive written as an object).
func definesName(obj jsonObject) bool {
	t, _ := obj.get("type").(string)
	return t == "record" || t == "error" || t == "enum" || t == "fixed"
}

// name writes the short name, and the namespace where it differs from the
// enclosing one ("" for no namespace within one).
func (c *avroCanon) name(name, space, ns string) {
	c.buf.WriteString(`,"name":`)
	writeJacksonString(&c.buf, name)
	if space != ns {
		c.buf.WriteString(`,"namespace":`)
		writeJacksonString(&c.buf, space)
	}
}

// qualified is a full name as written where ns is the enclosing namespace:
// the short name in the same namespace, unless it is a type's name.
func qualified(full, ns string) string {
	i := strings.LastIndexByte(full, '.')
	if i < 0 || full[:i] != ns || slices.Contains(avroTypeNames, full[i+1:]) {
		return full
	}
	return full[i+1:]
}

// doc writes the doc as given in the JSON (an empty one too), else hamba's.
func (c *avroCanon) doc(obj jsonObject, hambaDoc string) {
	doc, ok := obj.get("doc").(string)
	if obj == nil {
		doc, ok = hambaDoc, hambaDoc != ""
	}
	if ok {
		c.buf.WriteString(`,"doc":`)
		writeJacksonString(&c.buf, doc)
	}
}

// aliases writes a named type's aliases, once each (by full name), each
// qualified against the type's namespace, where an undotted alias is.
func (c *avroCanon) aliases(n avro.NamedSchema, obj jsonObject, space string) {
	var full []string
	add := func(a string) {
		if !slices.Contains(full, a) {
			full = append(full, a)
		}
	}
	if arr, ok := obj.get("aliases").([]any); ok {
		for _, v := range arr {
			a, _ := v.(string)
			if !strings.Contains(a, ".") && space != "" {
				a = space + "." + a
			}
			add(a)
		}
	} else if obj == nil {
		for _, a := range n.Aliases() {
			add(a)
		}
	}
	if len(full) == 0 {
		return
	}
	c.buf.WriteString(`,"aliases":[`)
	for i, a := range full {
		if i > 0 {
			c.buf.WriteByte(',')
		}
		writeJacksonString(&c.buf, qualified(a, space))
	}
	c.buf.WriteByte(']')
}

func (c *avroCanon) field(f *avro.Field, obj jsonObject, ns string) {
	c.caseVariant(obj, hambaFieldAttrs)
	c.buf.WriteString(`{"name":`)
	writeJacksonString(&c.buf, f.Name())
	c.buf.WriteString(`,"type":`)
	c.schema(f.Type(), obj.get("type"), ns)
	c.doc(obj, f.Doc())
	if def, ok := obj.lookup("default"); ok {
		// Java reads a float or double field's default given as a string
		// as a double.
		if str, isStr := def.(string); isStr {
			if t := deref(f.Type()).Type(); t == avro.Float || t == avro.Double {
				def = javaParseDouble(str)
			}
		}
		c.buf.WriteString(`,"default":`)
		writeJacksonValue(&c.buf, def)
	} else if obj == nil && f.HasDefault() {
		c.buf.WriteString(`,"default":`)
		writeJacksonValue(&c.buf, goToJSON(f.Default()))
	}
	if o := f.Order(); o != "" && o != avro.Asc {
		c.buf.WriteString(`,"order":`)
		writeJacksonString(&c.buf, string(o))
	}
	var aliases []string
	if obj != nil {
		arr, _ := obj.get("aliases").([]any)
		for _, a := range arr {
			if s, ok := a.(string); ok && !slices.Contains(aliases, s) {
				aliases = append(aliases, s)
			}
		}
	} else {
		for _, a := range f.Aliases() {
			if !slices.Contains(aliases, a) {
				aliases = append(aliases, a)
			}
		}
	}
	if len(aliases) > 0 {
		c.buf.WriteString(`,"aliases":[`)
		for i, a := range aliases {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			writeJacksonString(&c.buf, a)
		}
		c.buf.WriteByte(']')
	}
	if obj != nil {
		c.members(obj.without(avroFieldReserved))
	} else {
		c.members(sortedProps(f.Props()))
	}
	c.buf.WriteByte('}')
}

// props writes the properties of a schema: the attributes of its JSON
// object that are not reserved, in their order; without the JSON, hamba's
// properties sorted by name.
func (c *avroCanon) props(obj jsonObject, reserved []string, s avro.Schema) {
	if obj != nil {
		c.members(obj.without(reserved))
		return
	}
	c.members(hambaProps(s))
}

func (c *avroCanon) members(ms []jsonMember) {
	for _, m := range ms {
		c.buf.WriteByte(',')
		writeJacksonString(&c.buf, m.key)
		c.buf.WriteByte(':')
		writeJacksonValue(&c.buf, m.val)
	}
}

// hambaProps are a schema's properties as hamba keeps them, for a schema
// whose JSON is not at hand: the logical type first (hamba takes it out of
// the properties), then the rest sorted by name.
func hambaProps(s avro.Schema) []jsonMember {
	var out []jsonMember
	var props map[string]any
	if p, ok := s.(interface{ Props() map[string]any }); ok {
		props = p.Props()
	}
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		if _, has := props["logicalType"]; !has {
			out = append(out, jsonMember{"logicalType", string(l.Logical().Type())})
			if d, ok := l.Logical().(*avro.DecimalLogicalSchema); ok {
				if _, has := props["precision"]; !has {
					out = append(out, jsonMember{"precision", json.Number(strconv.Itoa(d.Precision()))})
				}
				if _, has := props["scale"]; !has && d.Scale() > 0 {
					out = append(out, jsonMember{"scale", json.Number(strconv.Itoa(d.Scale()))})
				}
			}
		}
	}
	return append(out, sortedProps(props)...)
}

func sortedProps(props map[string]any) []jsonMember {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]jsonMember, 0, len(keys))
	for _, k := range keys {
		out = append(out, jsonMember{k, goToJSON(props[k])})
	}
	return out
}

// goToJSON converts a Go value from hamba (a default or a property) to
// the JSON tree written here; bytes become the string of their code
// points, as Avro writes bytes and fixed defaults.
func goToJSON(v any) any {
	switch t := v.(type) {
	case nil, bool, string, json.Number:
		return t
	case []byte:
		r := make([]rune, len(t))
		for i, b := range t {
			r[i] = rune(b)
		}
		return string(r)
	case float32:
		return float64(t)
	case float64:
		return t
	case int:
		return json.Number(strconv.Itoa(t))
	case int32:
		return json.Number(strconv.FormatInt(int64(t), 10))
	case int64:
		return json.Number(strconv.FormatInt(t, 10))
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = goToJSON(e)
		}
		return out
	case map[string]any:
		return jsonObject(sortedProps(t))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out, _ := decodeOrdered(string(b))
	return out
}

// jsonObject is a JSON object with its members in the order given; a
// repeated name keeps its first place and its last value, as Jackson's
// tree does.
type jsonObject []jsonMember

type jsonMember struct {
	key string
	val any
}

func (o jsonObject) lookup(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

func (o jsonObject) get(key string) any {
	v, _ := o.lookup(key)
	return v
}

// without returns the members whose names are not in reserved.
func (o jsonObject) without(reserved []string) []jsonMember {
	var out []jsonMember
	for _, m := range o {
		if !slices.Contains(reserved, m.key) {
			out = append(out, m)
		}
	}
	return out
}

// decodeOrdered decodes JSON text into nil, bool, string, json.Number,
// []any and jsonObject. Text that is not one JSON value is an error: hamba
// (jsoniter) also takes a bare name (string), control characters in
// strings and more, which Java's parser rejects.
func decodeOrdered(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more than one value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := jsonObject{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if i := slices.IndexFunc(obj, func(m jsonMember) bool { return m.key == key }); i >= 0 {
					obj[i].val = val
				} else {
					obj = append(obj, jsonMember{key, val})
				}
			}
			_, err := dec.Token() // '}'
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
	}
	return tok, nil
}

// writeJacksonValue writes a JSON tree as Jackson writes it: integers as
// their digits, other numbers as Java doubles, objects in order.
func writeJacksonValue(buf *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case string:
		writeJacksonString(buf, t)
	case json.Number:
		writeJacksonNumber(buf, string(t))
	case float64:
		writeJavaDouble(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJacksonValue(buf, e)
		}
		buf.WriteByte(']')
	case jsonObject:
		buf.WriteByte('{')
		for i, m := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJacksonString(buf, m.key)
			buf.WriteByte(':')
			writeJacksonValue(buf, m.val)
		}
		buf.WriteByte('}')
	}
}

// writeJacksonNumber writes a JSON number as Jackson's tree keeps it: an
// integer (no fraction, no exponent) as an int, long or BigInteger, any
// other number as a double.
func writeJacksonNumber(buf *bytes.Buffer, s string) {
	if !strings.ContainsAny(s, ".eE") {
		if i, ok := new(big.Int).SetString(s, 10); ok {
			buf.WriteString(i.String())
			return
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		buf.WriteString(s)
		return
	}
	writeJavaDouble(buf, f)
}

// javaParseDouble is Java's Double.parseDouble for the strings a default
// may hold; what it does not parse stays the string it was (Java fails).
func javaParseDouble(s string) any {
	t := strings.Trim(s, " \t\n\r\f\v\x00")
	switch strings.TrimLeft(t, "+-") {
	case "NaN":
		return math.NaN()
	case "Infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	t = strings.TrimRight(t, "dDfF")
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !math.IsInf(f, 0) {
		return s
	}
	return f
}

// writeJavaDouble writes f as Jackson writes a double: Java's
// Double.toString (the shortest digits that read back as f, at least two,
// plain from 10^-3 to 10^7 with at least one fraction digit, else
// d.dddE±n), NaN and the infinities as strings. Java before 19 wrote more
// digits than needed for a few doubles (JDK-4511638); this writes what
// Java 19 and later write.
func writeJavaDouble(buf *bytes.Buffer, f float64) {
	switch {
	case math.IsNaN(f):
		buf.WriteString(`"NaN"`)
		return
	case math.IsInf(f, 1):
		buf.WriteString(`"Infinity"`)
		return
	case math.IsInf(f, -1):
		buf.WriteString(`"-Infinity"`)
		return
	case f == 0:
		if math.Signbit(f) {
			buf.WriteString("-0.0")
		} else {
			buf.WriteString("0.0")
		}
		return
	}
	if f < 0 {
		buf.WriteByte('-')
		f = -f
	}
	// d.ddde±x: the digits and the decimal exponent of the first one.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	if !strings.Contains(e, ".") {
		// Java writes at least two digits, and of the two-digit decimals
		// the closest (4.9E-324, not 5.0E-324).
		e = strconv.FormatFloat(f, 'e', 1, 64)
	}
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		digits = "0"
	}
	if f >= 1e-3 && f < 1e7 {
		if exp >= 0 {
			for len(digits) < exp+1 {
				digits += "0"
			}
			frac := digits[exp+1:]
			if frac == "" {
				frac = "0"
			}
			buf.WriteString(digits[:exp+1] + "." + frac)
		} else {
			buf.WriteString("0." + strings.Repeat("0", -exp-1) + digits)
		}
		return
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	buf.WriteString(digits[:1] + "." + frac + "E" + strconv.Itoa(exp))
}

// writeJacksonString writes s quoted as Jackson does: '"' and '\\'
// escaped, \b \t \n \f \r short, other control characters as \u00XX
// (upper-case hex), everything else, '/' and non-ASCII included, as is.
func writeJacksonString(buf *bytes.Buffer, s string) {
	const hex = "0123456789ABCDEF"
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '"' || b == '\\':
			buf.WriteByte('\\')
			buf.WriteByte(b)
		case b == '\b':
			buf.WriteString(`\b`)
		case b == '\t':
			buf.WriteString(`\t`)
		case b == '\n':
			buf.WriteString(`\n`)
		case b == '\f':
			buf.WriteString(`\f`)
		case b == '\r':
			buf.WriteString(`\r`)
		case b < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hex[b>>4])
			buf.WriteByte(hex[b&0xF])
		default:
			buf.WriteByte(b)
		}
	}
	buf.WriteByte('"')
}
