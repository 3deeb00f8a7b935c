package schemaregistry

import (
	"fmt"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Schema types, as the REST API and the SCHEMA records name them.
const (
	TypeAvro     = "AVRO"
	TypeJSON     = "JSON"
	TypeProtobuf = "PROTOBUF"
)

// Compatibility levels.
const (
	CompatNone               = "NONE"
	CompatBackward           = "BACKWARD"
	CompatBackwardTransitive = "BACKWARD_TRANSITIVE"
	CompatForward            = "FORWARD"
	CompatForwardTransitive  = "FORWARD_TRANSITIVE"
	CompatFull               = "FULL"
	CompatFullTransitive     = "FULL_TRANSITIVE"
)

// Modes.
const (
	ModeReadWrite = "READWRITE"
	ModeReadOnly  = "READONLY"
	ModeImport    = "IMPORT"
)

func validLevel(l string) bool {
	switch l {
	case CompatNone, CompatBackward, CompatBackwardTransitive, CompatForward,
		CompatForwardTransitive, CompatFull, CompatFullTransitive:
		return true
	}
	return false
}

func validMode(m string) bool {
	return m == ModeReadWrite || m == ModeReadOnly || m == ModeImport
}

// parsed is a schema parsed by its type's library, with its canonical text:
// the text stored and used for identity.
type parsed struct {
	typ       string
	canonical string
	avro      avro.Schema
	json      any
	proto     protoreflect.FileDescriptor
}

// parseSchema parses text as a schema of typ ("" is AVRO) with the given
// resolved references, dependencies first.
func parseSchema(typ, text string, deps []resolvedRef, normalize bool) (*parsed, error) {
	switch typ {
	case "", TypeAvro:
		return parseAvro(text, deps)
	case TypeJSON:
		return parseJSONSchema(text, deps, normalize)
	case TypeProtobuf:
		return parseProtobuf(text, deps)
	}
	return nil, &invalidSchemaError{msg: fmt.Sprintf("Invalid schema type %s", typ)}
}

// compatible checks a new schema against previous ones (oldest first) at
// level and returns the reasons it is not compatible; none means it is.
func compatible(level string, next *parsed, previous []*parsed) []string {
	if level == CompatNone || len(previous) == 0 {
		return nil
	}
	if !transitive(level) {
		previous = previous[len(previous)-1:]
	}
	backward := level != CompatForward && level != CompatForwardTransitive
	forward := level != CompatBackward && level != CompatBackwardTransitive
	var msgs []string
	for i := len(previous) - 1; i >= 0; i-- {
		old := previous[i]
		if backward {
			msgs = append(msgs, compatiblePair(next, old)...)
		}
		if forward {
			msgs = append(msgs, compatiblePair(old, next)...)
		}
	}
	return msgs
}

// compatibilityTargets parses the versions (oldest first) that a new
// schema of subject is checked against at level: none at NONE, every one
// not deleted at a transitive level, else the latest not deleted.
func (v *view) compatibilityTargets(level, subject string, versions []*schemaVersion) ([]*parsed, error) {
	if level == CompatNone {
		return nil, nil
	}
	var live []*schemaVersion
	for _, sv := range versions {
		if !sv.Deleted {
			live = append(live, sv)
		}
	}
	if !transitive(level) && len(live) > 1 {
		live = live[len(live)-1:]
	}
	out := make([]*parsed, 0, len(live))
	for _, sv := range live {
		p, err := v.parseStored(sv)
		if err != nil {
			return nil, apiErr(codeStoreError, "Error parsing version %d of subject %s: %v", sv.Version, subject, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func transitive(level string) bool {
	return level == CompatBackwardTransitive || level == CompatForwardTransitive || level == CompatFullTransitive
}

// compatiblePair reports whether data written with writer can be read with
// reader, as each type's rules define it.
func compatiblePair(reader, writer *parsed) []string {
	if reader.typ != writer.typ {
		return []string{fmt.Sprintf("Incompatible because of different schema type: %s and %s", reader.typ, writer.typ)}
	}
	switch reader.typ {
	case TypeAvro:
		return avroCompatible(reader.avro, writer.avro)
	case TypeJSON:
		return jsonCompatible(reader.json, writer.json)
	case TypeProtobuf:
		return protoCompatible(reader.proto, writer.proto)
	}
	return nil
}
