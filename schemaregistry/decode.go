package schemaregistry

// Decoding values in Confluent's wire format through the registry's
// schemas, for display (the broker's admin console shows records so):
//
//	0x00  4-byte big-endian schema id  [Protobuf: message indexes]  payload
//
// The message indexes are zigzag varints: a count, then that many indexes,
// the first into the file's top-level messages and each next into the
// nested messages of the one before; a single 0 byte stands for [0], the
// first message. The payload is decoded into JSON:
//
//	AVRO      Avro's JSON encoding, as kafka-avro-console-consumer prints
//	          it: record fields in schema order, a union's non-null value
//	          wrapped as {"branch": value} (the branch's full name for a
//	          named type, else its type), bytes and fixed as strings of
//	          code points U+0000-U+00FF, logical types as their underlying
//	          values; NaN and infinities as the strings "NaN", "Infinity",
//	          "-Infinity". The whole payload must be one value.
//	JSON      the payload itself, which must be JSON, compacted.
//	PROTOBUF  protojson with default values (as Confluent's
//	          includingDefaultValueFields): JSON field names, enums by
//	          name, 64-bit integers as strings.
//
// The parsed schema is the one the registry keeps by id (view.parsed), so
// a page of records with one schema parses it once.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ErrNotWireFormat is returned by Decode when the data is not in
// Confluent's wire format: shorter than 5 bytes or without the magic byte
// 0.
var ErrNotWireFormat = errors.New("not in the schema registry's wire format")

// ErrUnknownSchema is returned by Decode (wrapped, with the id) when no
// subject-version of the registry carries the schema id.
var ErrUnknownSchema = errors.New("unknown schema id")

// Decode bounds.
const (
	// maxDecodedJSON bounds the JSON of one decoded value.
	maxDecodedJSON = 2 << 20
	// maxAvroDepth bounds the nesting of an Avro value (recursive types).
	maxAvroDepth = 256
	// maxMessageIndexes bounds a Protobuf value's message indexes.
	maxMessageIndexes = 64
)

// Decoded is a value in Confluent's wire format decoded through its
// schema.
type Decoded struct {
	ID   int
	Type string // AVRO, JSON or PROTOBUF; "" when the id is unknown
	// Subjects are the subjects whose live versions carry the id, sorted;
	// when every one is soft-deleted, those.
	Subjects []string
	// Message is the Protobuf message type's full name.
	Message string
	// JSON is the value as compact JSON.
	JSON []byte
}

// Decode decodes data, a key or value in Confluent's wire format, into
// JSON through the schema its id names (see decode.go for the forms).
// When the id is not in the view, the log is read to its end first, so a
// schema registered before the value was produced is found.
//
// Its error is ErrNotWireFormat, ErrUnknownSchema (wrapped), the Log's
// when the log could not be read, or why the schema does not parse or the
// payload does not decode with it; the Decoded returned with an error
// still has the id, and the type and subjects when the id is known.
func (r *Registry) Decode(ctx context.Context, data []byte) (Decoded, error) {
	if len(data) < 5 || data[0] != 0 {
		return Decoded{}, ErrNotWireFormat
	}
	d := Decoded{ID: int(int32(binary.BigEndian.Uint32(data[1:5])))}
	p, subjects, err := r.parsedByID(ctx, d.ID)
	if subjects != nil {
		d.Type, d.Subjects = p.typ, subjects
	}
	if err != nil {
		return d, err
	}
	payload := data[5:]
	switch p.typ {
	case TypeAvro:
		d.JSON, err = avroJSON(p.avro, payload)
	case TypeJSON:
		d.JSON, err = jsonPayload(payload)
	case TypeProtobuf:
		d.Message, d.JSON, err = protoJSON(p.proto, payload)
	default:
		err = fmt.Errorf("schema type %s", p.typ)
	}
	return d, err
}

// parsedByID returns the parsed schema of id and its subjects; the
// subjects (and the parsed schema, type only) even when it does not parse.
func (r *Registry) parsedByID(ctx context.Context, id int) (*parsed, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.view
	if len(v.users[id]) == 0 {
		if err := r.syncLocked(ctx, -1); err != nil {
			return nil, nil, err
		}
	}
	var live, deleted []string
	for k := range v.users[id] {
		if v.subjects[k.subject].versions[k.version].Deleted {
			deleted = append(deleted, k.subject)
		} else {
			live = append(live, k.subject)
		}
	}
	subjects := live
	if len(subjects) == 0 {
		subjects = deleted
	}
	if len(subjects) == 0 {
		return nil, nil, fmt.Errorf("%w %d", ErrUnknownSchema, id)
	}
	slices.Sort(subjects)
	subjects = slices.Compact(subjects)
	sv := v.byID(id)
	p, err := v.parseStored(sv)
	if err != nil {
		return &parsed{typ: sv.Type}, subjects, fmt.Errorf("schema %d does not parse: %w", id, err)
	}
	return p, subjects, nil
}

// jsonPayload checks a JSON Schema value is JSON and compacts it.
func jsonPayload(payload []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Compact(&out, payload); err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	if out.Len() > maxDecodedJSON {
		return nil, errTooLarge
	}
	return out.Bytes(), nil
}

var errTooLarge = fmt.Errorf("decoded value larger than %d bytes", maxDecodedJSON)

// protoJSON decodes a Protobuf value: its message indexes, then the
// message they name in fd.
func protoJSON(fd protoreflect.FileDescriptor, data []byte) (string, []byte, error) {
	idx, payload, err := messageIndexes(data)
	if err != nil {
		return "", nil, err
	}
	md, err := messageAt(fd, idx)
	if err != nil {
		return "", nil, err
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(payload, m); err != nil {
		return string(md.FullName()), nil, fmt.Errorf("protobuf %s: %w", md.FullName(), err)
	}
	js, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return string(md.FullName()), nil, fmt.Errorf("protobuf %s: %w", md.FullName(), err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, js); err != nil { // protojson varies its spacing
		return string(md.FullName()), nil, err
	}
	if out.Len() > maxDecodedJSON {
		return string(md.FullName()), nil, errTooLarge
	}
	return string(md.FullName()), out.Bytes(), nil
}

// messageIndexes reads the message indexes before a Protobuf payload.
func messageIndexes(data []byte) ([]int, []byte, error) {
	n, k := binary.Varint(data)
	if k <= 0 {
		return nil, nil, errors.New("protobuf: no message indexes")
	}
	data = data[k:]
	if n == 0 {
		return []int{0}, data, nil
	}
	if n < 0 || n > maxMessageIndexes {
		return nil, nil, fmt.Errorf("protobuf: %d message indexes", n)
	}
	idx := make([]int, n)
	for i := range idx {
		x, k := binary.Varint(data)
		if k <= 0 || x < 0 || x > math.MaxInt32 {
			return nil, nil, errors.New("protobuf: bad message index")
		}
		idx[i], data = int(x), data[k:]
	}
	return idx, data, nil
}

// messageAt is the message the indexes name in fd.
func messageAt(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	ms := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range idx {
		if i >= ms.Len() {
			return nil, fmt.Errorf("protobuf: message index %v not in the schema", idx[:depth+1])
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	return md, nil
}

// avroJSON decodes an Avro value into Avro's JSON encoding.
func avroJSON(s avro.Schema, payload []byte) ([]byte, error) {
	w := avroJSONWriter{r: avro.NewReader(nil, 0).Reset(payload)}
	w.value(s, 0)
	if w.err == nil && w.r.Error != nil {
		w.err = w.r.Error
	}
	if w.err == nil {
		if w.r.Peek(); w.r.Error == nil {
			w.err = errors.New("bytes left after the value")
		}
	}
	switch {
	case errors.Is(w.err, io.EOF) || errors.Is(w.err, io.ErrUnexpectedEOF):
		return nil, errors.New("avro: the payload ends inside the value")
	case w.err != nil:
		return nil, fmt.Errorf("avro: %s", strings.TrimPrefix(w.err.Error(), "avro: "))
	}
	return w.out, nil
}

// avroJSONWriter writes the JSON of the value r reads.
type avroJSONWriter struct {
	r   *avro.Reader
	out []byte
	err error
}

// ok tells whether decoding goes on: no read error, the output in bounds.
func (w *avroJSONWriter) ok() bool {
	if w.err == nil && w.r.Error != nil {
		w.err = w.r.Error
	}
	if w.err == nil && len(w.out) > maxDecodedJSON {
		w.err = errTooLarge
	}
	return w.err == nil
}

func (w *avroJSONWriter) value(s avro.Schema, depth int) {
	if !w.ok() {
		return
	}
	if depth > maxAvroDepth {
		w.err = fmt.Errorf("nested deeper than %d", maxAvroDepth)
		return
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		w.value(s.Schema(), depth)
	case *avro.NullSchema:
		w.out = append(w.out, "null"...)
	case *avro.PrimitiveSchema:
		w.primitive(s.Type())
	case *avro.RecordSchema:
		w.out = append(w.out, '{')
		for i, f := range s.Fields() {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.out = appendJSONString(w.out, f.Name())
			w.out = append(w.out, ':')
			w.value(f.Type(), depth+1)
			if !w.ok() {
				return
			}
		}
		w.out = append(w.out, '}')
	case *avro.EnumSchema:
		i := w.r.ReadInt()
		if !w.ok() {
			return
		}
		if i < 0 || int(i) >= len(s.Symbols()) {
			w.err = fmt.Errorf("enum %s has no symbol %d", s.FullName(), i)
			return
		}
		w.out = appendJSONString(w.out, s.Symbols()[i])
	case *avro.ArraySchema:
		w.out = append(w.out, '[')
		w.blocks(func(first bool) {
			if !first {
				w.out = append(w.out, ',')
			}
			w.value(s.Items(), depth+1)
		})
		w.out = append(w.out, ']')
	case *avro.MapSchema:
		w.out = append(w.out, '{')
		w.blocks(func(first bool) {
			if !first {
				w.out = append(w.out, ',')
			}
			w.out = appendJSONString(w.out, w.r.ReadString())
			w.out = append(w.out, ':')
			w.value(s.Values(), depth+1)
		})
		w.out = append(w.out, '}')
	case *avro.UnionSchema:
		i := w.r.ReadLong()
		if !w.ok() {
			return
		}
		types := s.Types()
		if i < 0 || i >= int64(len(types)) {
			w.err = fmt.Errorf("union has no branch %d", i)
			return
		}
		b := types[i]
		if ref, ok := b.(*avro.RefSchema); ok {
			b = ref.Schema()
		}
		if b.Type() == avro.Null {
			w.out = append(w.out, "null"...)
			return
		}
		name := string(b.Type())
		if n, ok := b.(avro.NamedSchema); ok {
			name = n.FullName()
		}
		w.out = append(appendJSONString(append(w.out, '{'), name), ':')
		w.value(b, depth+1)
		w.out = append(w.out, '}')
	case *avro.FixedSchema:
		buf := make([]byte, s.Size())
		w.r.Read(buf)
		w.out = appendLatin1(w.out, buf)
	default:
		w.err = fmt.Errorf("schema type %s", s.Type())
	}
}

// blocks reads an array's or map's blocks, calling item for each item.
func (w *avroJSONWriter) blocks(item func(first bool)) {
	first := true
	for w.ok() {
		n, _ := w.r.ReadBlockHeader()
		if !w.ok() || n == 0 {
			return
		}
		for ; n > 0; n-- {
			item(first)
			first = false
			if !w.ok() {
				return
			}
		}
	}
}

func (w *avroJSONWriter) primitive(t avro.Type) {
	switch t {
	case avro.Null:
		w.out = append(w.out, "null"...)
	case avro.Boolean:
		w.out = strconv.AppendBool(w.out, w.r.ReadBool())
	case avro.Int:
		w.out = strconv.AppendInt(w.out, int64(w.r.ReadInt()), 10)
	case avro.Long:
		w.out = strconv.AppendInt(w.out, w.r.ReadLong(), 10)
	case avro.Float:
		w.out = appendFloat(w.out, float64(w.r.ReadFloat()), 32)
	case avro.Double:
		w.out = appendFloat(w.out, w.r.ReadDouble(), 64)
	case avro.String:
		w.out = appendJSONString(w.out, w.r.ReadString())
	case avro.Bytes:
		w.out = appendLatin1(w.out, w.r.ReadBytes())
	default:
		w.err = fmt.Errorf("schema type %s", t)
	}
}

// appendFloat appends f as encoding/json does; NaN and the infinities as
// strings.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, bits)
}

// appendLatin1 appends bytes as Avro's JSON encoding does: a string of the
// code points of the bytes' values.
func appendLatin1(b, data []byte) []byte {
	var s strings.Builder
	for _, c := range data {
		s.WriteRune(rune(c))
	}
	return appendJSONString(b, s.String())
}

// appendJSONString appends s as a JSON string, invalid UTF-8 as U+FFFD and
// without escaping <, > and & (the console escapes its HTML itself).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', byte(c))
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	return append(b, '"')
}
