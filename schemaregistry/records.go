package schemaregistry

// The records of the _schemas topic, in Confluent Schema Registry's format.
//
// Keys are JSON objects whose "keytype" names the record kind; "magic" is 1
// for SCHEMA keys and 0 for the others; a null subject is omitted (Confluent
// since 6.2 writes {"keytype":"CONFIG","magic":0} for the global config;
// older versions wrote "subject":null, which reads the same):
//
//	{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
//	{"keytype":"CONFIG","subject":"s","magic":0}     {"keytype":"CONFIG","magic":0}
//	{"keytype":"MODE","subject":"s","magic":0}       {"keytype":"MODE","magic":0}
//	{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
//	{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}
//	{"keytype":"NOOP","magic":0}
//
// Values:
//
//	SCHEMA          {"subject":"s","version":1,"id":1,"schemaType":"PROTOBUF","references":[{"name":"n","subject":"t","version":1}],"schema":"...","deleted":false}
//	                (schemaType omitted for AVRO, references omitted when empty, as Confluent 5.5-7.x write them)
//	CONFIG          {"subject":"s","compatibilityLevel":"BACKWARD"}   (subject omitted for the global config)
//	MODE            {"subject":"s","mode":"READONLY"}
//	DELETE_SUBJECT  {"subject":"s","version":3}   every version up to 3 is soft-deleted
//	CLEAR_SUBJECT   {"subject":"s"}               soft-deleted versions are forgotten
//
// A nil value (tombstone) hard-deletes a SCHEMA key and removes a CONFIG or
// MODE key. Unknown keytypes (CONTEXT, ASSOC, those of later versions) and
// unknown fields are skipped, as Confluent skips them.

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Key types of the _schemas topic.
const (
	keyTypeSchema        = "SCHEMA"
	keyTypeConfig        = "CONFIG"
	keyTypeMode          = "MODE"
	keyTypeDeleteSubject = "DELETE_SUBJECT"
	keyTypeClearSubject  = "CLEAR_SUBJECT"
	keyTypeNoop          = "NOOP"
)

// recordKey is every key type's JSON; field order is Confluent's.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

// Reference is a schema reference: the name the referring schema uses (an
// Avro full name, a .proto import path, a JSON Schema $ref URL) and the
// subject and version that hold the referenced schema.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaValue is a SCHEMA record's value.
type schemaValue struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted"`
}

type configValue struct {
	Subject            string `json:"subject,omitempty"`
	CompatibilityLevel string `json:"compatibilityLevel,omitempty"`
}

type modeValue struct {
	Subject string `json:"subject,omitempty"`
	Mode    string `json:"mode,omitempty"`
}

type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type clearSubjectValue struct {
	Subject string `json:"subject"`
}

// marshalJSON encodes v as Jackson does: no HTML escaping, no newline.
func marshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("schemaregistry: encoding %T: %v", v, err)) // only our own types are encoded
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func subjectPtr(subject string) *string {
	if subject == "" {
		return nil
	}
	return &subject
}

func schemaKey(subject string, version int) []byte {
	return marshalJSON(recordKey{KeyType: keyTypeSchema, Subject: &subject, Version: version, Magic: 1})
}

// configKey is the CONFIG key of subject, or the global one for "".
func configKey(subject string) []byte {
	return marshalJSON(recordKey{KeyType: keyTypeConfig, Subject: subjectPtr(subject)})
}

// modeKey is the MODE key of subject, or the global one for "".
func modeKey(subject string) []byte {
	return marshalJSON(recordKey{KeyType: keyTypeMode, Subject: subjectPtr(subject)})
}

func deleteSubjectKey(subject string) []byte {
	return marshalJSON(recordKey{KeyType: keyTypeDeleteSubject, Subject: &subject})
}

// schemaRecordValue encodes a SCHEMA value; schemaType AVRO is omitted.
func schemaRecordValue(v schemaValue) []byte {
	if v.SchemaType == TypeAvro {
		v.SchemaType = ""
	}
	return marshalJSON(v)
}

// decodeKey decodes a record key; ok is false for keys that are not JSON
// objects with a keytype, which are skipped.
func decodeKey(b []byte) (k recordKey, ok bool) {
	if err := json.Unmarshal(b, &k); err != nil || k.KeyType == "" {
		return recordKey{}, false
	}
	return k, true
}

func (k recordKey) subject() string {
	if k.Subject == nil {
		return ""
	}
	return *k.Subject
}
