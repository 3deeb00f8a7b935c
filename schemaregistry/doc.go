// Package schemaregistry serves Confluent Schema Registry's REST API from
// Gregor, with its state in the compacted topic _schemas in Confluent's own
// record format: a registry's _schemas (or a backup of it) is served with
// the same ids, versions and configs, and Confluent's tooling reads what
// this package writes.
//
// # The seam
//
// The broker gives New a Log: the one partition of _schemas, with a
// conditional Append (the record is written only if the log end is still
// the one the writer saw, else ErrConflict) and a batched Read. Registry
// keeps a view of the log in memory. Every request first reads the log from
// where the view stopped to its end (Sync: one Read when nothing is new),
// so a read sees every write acknowledged before it on any registry over
// the same log. A write reads to the end, decides (a new id is the largest
// id seen plus one, a new version the subject's largest plus one, ...),
// appends conditioned on that end, and on ErrConflict reads what the other
// writer appended and decides again (at most 16 times). It answers only
// once the view has applied its own record. Nothing runs in the background.
// NewMemoryLog is a Log in memory, for tests.
//
// # Records
//
// records.go describes the keys and values. What is written follows
// Confluent 6.2 to 7.x: a null subject is omitted from keys, schemaType is
// omitted for AVRO (Confluent 8 writes "AVRO"; both read the same), a
// subject's CONFIG value carries its subject. What is read also includes
// older forms ("subject":null) and newer fields (md5, metadata, ruleSet,
// which are ignored); unknown key types (CONTEXT, ASSOC, NOOP, later ones)
// and undecodable records are skipped with a warning. A soft delete of a
// version rewrites its SCHEMA record with "deleted":true; a soft delete of
// a subject is one DELETE_SUBJECT record; a hard delete is a tombstone per
// version. When a subject's last live version goes, its CONFIG and MODE
// records are tombstoned, as Confluent does.
//
// # REST API
//
// Served: GET / ; GET /schemas/types ; GET /subjects (deleted,
// subjectPrefix) ; GET|POST /subjects/{subject}/versions (normalize on
// POST) ; GET /subjects/{subject}/versions/{version} (a number, latest or
// -1; deleted) and its /schema and /referencedby ; POST /subjects/{subject}
// (lookup; deleted, normalize) ; DELETE /subjects/{subject} and
// /subjects/{subject}/versions/{version} (permanent) ; GET
// /schemas/ids/{id} (subject) and its /schema, /versions, /subjects ;
// GET|PUT|DELETE /config and /config/{subject} (defaultToGlobal) ;
// GET|PUT /mode, GET|PUT|DELETE /mode/{subject} (force, defaultToGlobal) ;
// POST /compatibility/subjects/{subject}/versions[/{version}] (verbose).
// Answers are application/vnd.schemaregistry.v1+json; request bodies may
// also be application/json, application/vnd.schemaregistry+json or
// application/octet-stream (else 415). Errors are Confluent's
// {"error_code":40401,"message":"..."} with the HTTP status its first three
// digits: 40401 subject, 40402 version, 40403 schema not found; 40404
// subject and 40406 version soft-deleted (a second soft delete); 40405 and
// 40407 not soft-deleted (a hard delete first); 40408 and 40409 no
// subject-level config or mode on GET (on DELETE 40401, as Confluent); 409
// incompatible; 42201 invalid schema (or
// a version that is not the next outside IMPORT); 42202 invalid version;
// 42203 invalid compatibility level; 42204 invalid mode; 42205 operation
// not permitted (READONLY, an id outside IMPORT, no id in IMPORT, an
// imported id holding another schema, IMPORT over existing subjects without
// force); 42206 a
// referenced version deleted; 50001 store error; 50002 timeout.
//
// Not served: schema contexts (":.ctx:subject"), data contracts (metadata,
// ruleSet, the config fields beyond compatibilityLevel), /exporters,
// /contexts, /keks and /deks, READONLY_OVERRIDE, leader forwarding (there
// is no leader: any registry over the log writes), the format parameter,
// GET /schemas and /subjects/{subject}/metadata.
//
// # Go API
//
// Besides the REST API, the broker's admin console reads the registry
// from Go: Overview (the global level and mode, every subject with its
// latest version, its level and mode and whether they are its own,
// soft-deleted subjects included), Subject (a subject's versions) and
// Decode (a key or value in Confluent's wire format, magic byte 0 and a
// 4-byte schema id, into JSON through its schema: Avro binary into Avro's
// JSON encoding, a JSON Schema value as its JSON, Protobuf after its
// message indexes through protojson; decode.go). Each reads the log to its
// end first, as a request does; Decode only when the id is not in the view
// yet. Decode reuses the parsed schemas the view keeps by id, and bounds
// its work (2 MiB of JSON, 256 levels of Avro nesting, 64 message
// indexes). Its errors: ErrNotWireFormat, ErrUnknownSchema, the Log's, or
// why the payload does not decode.
//
// # Schemas and identity
//
// AVRO is parsed with github.com/hamba/avro/v2, JSON with
// github.com/santhosh-tekuri/jsonschema/v6 (which must compile it, with
// its references and without network or file access), PROTOBUF with
// github.com/bufbuild/protocompile (imports are the references' names and
// the google/protobuf well-known files). References are resolved from the
// registry, transitively. The text stored and served is the canonical form.
//
// Avro's is Confluent's, AvroSchema.canonicalString(): what Apache Avro
// Java's Schema.toString(refs, false) writes (avro_canonical.go). Compact
// JSON; a record is type, name, namespace (only where it differs from the
// enclosing one, "" for none within one), doc, fields, properties,
// aliases; a field name, type, doc, default, order (unless ascending),
// aliases, properties; an enum type, name, namespace, doc, symbols,
// default, properties, aliases; a fixed type, name, namespace, doc, size,
// properties, aliases; a primitive a bare name unless it has properties
// (logicalType is one); a named type in full once, then by name (the short
// name within its own namespace); the referenced schemas' types by name.
// Properties are in the order given and defaults as written (integers as
// given, other numbers as Java's doubles: 1.0, 1.0E10), strings escaped as
// Jackson does. hamba keeps neither property order nor a default's
// spelling, so these come from the schema's JSON text, decoded in order
// beside hamba's parse.
// testdata/avro_canonical.json holds schemas and Java's text for each
// (Avro 1.11.4, 1.12.0 and 1.12.2 write the same); the test checks Gregor
// writes the same bytes. Where it does not: a float or double default given
// as a string ("NaN", "1.5"), which Java reads and hamba rejects; doubles
// that Java before 19 writes with more digits than needed
// (2.82879384806159008E17: Gregor writes the shortest, as Java 19 and
// later); and an attribute that differs from Avro's only in case with
// Avro's absent ({"Doc":...}), which hamba reads as the attribute and Java
// as a property, rejected here. Text that is not one JSON value (a bare
// type name, trailing text) is rejected, as Java does. normalize=true
// changes nothing for Avro (Confluent's normalized form is not written).
//
// JSON Schema is compacted as written (normalize=true also sorts keys);
// Confluent re-writes it through Jackson, which differs where the text
// escapes a character Jackson writes raw (\u00e9 for é) or spells a
// number another way than Jackson does. Protobuf is trimmed
// (normalize=true changes nothing more: there is no .proto printer here),
// where Confluent prints its own .proto form.
//
// Two schemas are the same, and share an id, when type, canonical form and
// references are equal. A stored schema is re-canonicalized on replay, so
// one stored by Confluent in Java's form, or by an earlier Gregor in
// hamba's form ({"name":"ns.R","type":"record",...}), matches the same
// schema registered now. hamba's form lost what makes some schemas
// canonicalize differently (the order of properties, a default's digits,
// bytes defaults, which it wrote in base64), so an Avro text stored in
// another form than the canonical one is also found by hamba's form of a
// schema registered now. A version added for an existing id stores the
// id's text: an id has one text. Stored schemas are kept parsed by id (at
// most 4096); one that references the latest version of a subject only
// until the view applies another record.
//
// # Compatibility
//
// BACKWARD: the new schema reads data written with the latest version;
// FORWARD: the latest reads the new; FULL: both; the _TRANSITIVE levels
// check against every live version instead of the latest. A schema of
// another type is never compatible.
//
// Avro follows the specification's schema resolution: promotions int to
// long, float, double; long to float, double; float to double; string and
// bytes both ways; a reader field missing from the writer needs a default;
// writer fields missing from the reader are skipped; fields match by name
// or reader alias; named types match by name or reader alias; enums need
// every writer symbol unless the reader has a default; fixed sizes must
// match; every branch of a writer union must be readable, and a reader
// union needs a branch that reads a non-union writer; recursive types end.
// Logical types are not compared (as Java's check).
//
// JSON Schema follows Confluent's content models: additionalProperties
// absent or true is open, false closed, a schema partially open. A property
// added to an open model is incompatible (old documents may carry it with
// any value), to a closed one compatible, to a partially open one if the
// old additionalProperties fits it; removed from a closed model
// incompatible, from an open one compatible, from a partially open one if
// the new additionalProperties fits it. Also checked: type narrowed or
// changed (integer to number widens), maxLength/maxItems/maxProperties/
// maximum/exclusiveMaximum added or decreased, their min counterparts
// added or increased, multipleOf, pattern, enum narrowed, const, required
// added without a default, additionalProperties narrowed or closed, items,
// and anyOf/oneOf/allOf branch by branch. Not checked: $ref targets (a
// changed $ref string is incompatible, the referenced schemas are not
// compared), if/then/else, not, dependencies, patternProperties,
// propertyNames, contains, prefixItems, and $defs except through
// properties.
//
// Protobuf follows Confluent's list: messages, enums, enum values, fields
// and oneofs added or removed are compatible (except a message removed),
// as is a field renamed (fields match by number) or moved out of a oneof;
// incompatible are a package change, a message removed, a field's kind
// (scalar, message, map) changed, a scalar changed across wire groups
// (int32/int64/uint32/uint64/bool; sint32/sint64; fixed32/sfixed32;
// fixed64/sfixed64; float; double; string/bytes), a message or enum field's
// type changed, a numeric field changed between singular and repeated, a
// required field added or removed, two or more existing fields moved into
// a new oneof, a field moved into an existing oneof. Not checked: services,
// options, a base64 FileDescriptorProto given as the schema (it does not
// parse), proto2 groups and extensions beyond their kind.
package schemaregistry
