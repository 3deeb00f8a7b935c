package schemaregistry

import (
	"context"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoMainFile is the name the schema being parsed is compiled under.
const protoMainFile = "schemaregistry/schema.proto"

// parseProtobuf compiles a .proto schema with protocompile; its imports are
// the references' names (and the well-known google/protobuf files). The
// canonical form is the text with surrounding space trimmed.
func parseProtobuf(text string, deps []resolvedRef) (*parsed, error) {
	files := map[string]string{protoMainFile: text}
	for _, d := range deps {
		if d.Type == TypeProtobuf {
			files[d.Name] = d.Schema
		}
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(files),
		}),
	}
	out, err := c.Compile(context.Background(), protoMainFile)
	if err != nil {
		return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema: %v", err)}
	}
	return &parsed{typ: TypeProtobuf, canonical: strings.TrimSpace(text), proto: out[0]}, nil
}

// protoCompatible applies Confluent's Protobuf rules, comparing the writer
// (original) with the reader (update). Compatible: messages, enums, enum
// values, fields and oneofs added or removed (not a message removed), fields
// renamed, a field moved out of a oneof. Incompatible: the package changed,
// a message removed, a field's kind (scalar, message, map) changed, a
// scalar changed across wire-compatible groups (int32/int64/uint32/uint64/
// bool; sint32/sint64; fixed32/sfixed32; fixed64/sfixed64; float; double;
// string/bytes), a message or enum field's type changed, a numeric field's
// label changed between singular and repeated, a required field added or
// removed, more than one existing field moved into a new oneof, a field
// moved into an existing oneof.
func protoCompatible(reader, writer protoreflect.FileDescriptor) []string {
	c := protoChecker{}
	if reader.Package() != writer.Package() {
		c.fail("PACKAGE_CHANGED", "#/", "The package changed from %s to %s", writer.Package(), reader.Package())
	}
	rm := protoMessages(reader.Messages(), map[string]protoreflect.MessageDescriptor{})
	wm := protoMessages(writer.Messages(), map[string]protoreflect.MessageDescriptor{})
	for name, w := range wm {
		r, ok := rm[name]
		if !ok {
			c.fail("MESSAGE_REMOVED", "#/"+name, "The message %s was removed", name)
			continue
		}
		c.message(r, w, "#/"+name)
	}
	return c.msgs
}

type protoChecker struct{ msgs []string }

func (c *protoChecker) fail(kind, path, format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', description:'%s', path:'%s'}", kind, fmt.Sprintf(format, args...), path))
}

// protoMessages indexes messages (nested too, map entries left out) by
// name relative to the package.
func protoMessages(ms protoreflect.MessageDescriptors, out map[string]protoreflect.MessageDescriptor) map[string]protoreflect.MessageDescriptor {
	for i := range ms.Len() {
		m := ms.Get(i)
		if m.IsMapEntry() {
			continue
		}
		name := string(m.FullName())
		if pkg := string(m.ParentFile().Package()); pkg != "" {
			name = strings.TrimPrefix(name, pkg+".")
		}
		out[name] = m
		protoMessages(m.Messages(), out)
	}
	return out
}

type protoKind int

const (
	kindScalar protoKind = iota
	kindMessage
	kindMap
)

func fieldKind(f protoreflect.FieldDescriptor) protoKind {
	switch {
	case f.IsMap():
		return kindMap
	case f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind:
		return kindMessage
	}
	return kindScalar // enums are scalars on the wire
}

// scalarGroup is the wire-compatible group of a scalar kind.
func scalarGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return "general number"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "signed number"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "string or bytes"
	case protoreflect.EnumKind:
		return "enum"
	}
	return k.String()
}

func relName(f protoreflect.Descriptor) string {
	name := string(f.FullName())
	if pkg := string(f.ParentFile().Package()); pkg != "" {
		name = strings.TrimPrefix(name, pkg+".")
	}
	return name
}

func (c *protoChecker) message(r, w protoreflect.MessageDescriptor, path string) {
	rf, wf := r.Fields(), w.Fields()
	movedToNewOneof := map[protoreflect.Name]int{}
	for i := range wf.Len() {
		wfd := wf.Get(i)
		rfd := rf.ByNumber(wfd.Number())
		fpath := fmt.Sprintf("%s/%d", path, wfd.Number())
		if rfd == nil {
			if wfd.Cardinality() == protoreflect.Required {
				c.fail("REQUIRED_FIELD_REMOVED", fpath, "The required field %s was removed", wfd.Name())
			}
			continue
		}
		if (rfd.Cardinality() == protoreflect.Required) != (wfd.Cardinality() == protoreflect.Required) {
			c.fail("REQUIRED_FIELD_CHANGED", fpath, "The field %s changed between required and not", wfd.Name())
		}
		rk, wk := fieldKind(rfd), fieldKind(wfd)
		switch {
		case rk != wk:
			c.fail("FIELD_KIND_CHANGED", fpath, "The field %s changed kind", wfd.Name())
		case rk == kindScalar:
			if scalarGroup(rfd.Kind()) != scalarGroup(wfd.Kind()) {
				c.fail("FIELD_SCALAR_KIND_CHANGED", fpath, "The field %s changed from %s to %s", wfd.Name(), wfd.Kind(), rfd.Kind())
			} else if rfd.Kind() == protoreflect.EnumKind && relName(rfd.Enum()) != relName(wfd.Enum()) {
				c.fail("FIELD_NAMED_TYPE_CHANGED", fpath, "The field %s changed enum type", wfd.Name())
			} else if rfd.Kind() != protoreflect.StringKind && rfd.Kind() != protoreflect.BytesKind &&
				rfd.Kind() != protoreflect.EnumKind && rfd.IsList() != wfd.IsList() {
				c.fail("FIELD_NUMERIC_LABEL_CHANGED", fpath, "The numeric field %s changed between singular and repeated", wfd.Name())
			}
		case rk == kindMessage:
			if relName(rfd.Message()) != relName(wfd.Message()) {
				c.fail("FIELD_NAMED_TYPE_CHANGED", fpath, "The field %s changed message type from %s to %s", wfd.Name(), relName(wfd.Message()), relName(rfd.Message()))
			}
		case rk == kindMap:
			rk2, wk2 := rfd.MapKey(), wfd.MapKey()
			rv, wv := rfd.MapValue(), wfd.MapValue()
			if rk2.Kind() != wk2.Kind() || rv.Kind() != wv.Kind() ||
				(rv.Message() != nil && wv.Message() != nil && relName(rv.Message()) != relName(wv.Message())) {
				c.fail("FIELD_NAMED_TYPE_CHANGED", fpath, "The map field %s changed key or value type", wfd.Name())
			}
		}
		ro, wo := rfd.ContainingOneof(), wfd.ContainingOneof()
		if ro != nil && !ro.IsSynthetic() && (wo == nil || wo.IsSynthetic()) {
			if w.Oneofs().ByName(ro.Name()) != nil {
				c.fail("FIELD_MOVED_TO_EXISTING_ONEOF", fpath, "The field %s moved into the existing oneof %s", wfd.Name(), ro.Name())
			} else {
				movedToNewOneof[ro.Name()]++
			}
		}
	}
	for name, n := range movedToNewOneof {
		if n > 1 {
			c.fail("MULTIPLE_FIELDS_MOVED_TO_ONEOF", path, "%d existing fields moved into the new oneof %s", n, name)
		}
	}
	for i := range rf.Len() {
		rfd := rf.Get(i)
		if rfd.Cardinality() == protoreflect.Required && wf.ByNumber(rfd.Number()) == nil {
			c.fail("REQUIRED_FIELD_ADDED", fmt.Sprintf("%s/%d", path, rfd.Number()), "The required field %s was added", rfd.Name())
		}
	}
}
