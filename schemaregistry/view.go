package schemaregistry

import (
	"encoding/json"
	"log/slog"
	"slices"
)

// schemaVersion is one version of a subject as the view holds it.
type schemaVersion struct {
	Subject    string
	Version    int
	ID         int
	Type       string // AVRO, JSON or PROTOBUF, never empty
	References []Reference
	Schema     string
	Deleted    bool
}

// subjectState is what the view knows of one subject.
type subjectState struct {
	versions map[int]*schemaVersion
	config   string // compatibility level; "" when not set
	mode     string // "" when not set
}

// svKey names one subject-version.
type svKey struct {
	subject string
	version int
}

// view is the registry's state, built by applying the _schemas records in
// offset order. It is not safe for concurrent use; Registry.mu guards it.
type view struct {
	next         int64 // the offset after the last record applied (the log end as last read)
	subjects     map[string]*subjectState
	globalConfig string // "" means the registry's default
	globalMode   string
	maxID        int
	users        map[int]map[svKey]struct{} // schema id → subject-versions carrying it
	identities   map[string]int             // identity (type, canonical text, references) → id (and see idOf)
	parsed       map[int]parsedEntry        // stored schemas parsed, by id (parseStored)
	log          *slog.Logger
}

// parsedEntry is a stored schema's parsed form and the text it was parsed
// from. at is -1, or, for a schema that references the latest version of
// a subject (which moves), the view's next offset when it was parsed: the
// entry holds only while the view has applied nothing since.
type parsedEntry struct {
	typ, text string
	p         *parsed
	at        int64
}

// maxParsed bounds the parsed schemas a view keeps.
const maxParsed = 4096

func newView(log *slog.Logger) *view {
	return &view{
		subjects:   map[string]*subjectState{},
		users:      map[int]map[svKey]struct{}{},
		identities: map[string]int{},
		parsed:     map[int]parsedEntry{},
		log:        log,
	}
}

func (v *view) subject(name string) *subjectState {
	s := v.subjects[name]
	if s == nil {
		s = &subjectState{versions: map[int]*schemaVersion{}}
		v.subjects[name] = s
	}
	return s
}

// apply applies one record. Records that do not decode are logged and
// skipped, as Confluent skips them.
func (v *view) apply(rec Record) {
	v.next = rec.Offset + 1
	k, ok := decodeKey(rec.Key)
	if !ok {
		v.log.Warn("schemaregistry: skipping record with an undecodable key", "offset", rec.Offset)
		return
	}
	subj := k.subject()
	switch k.KeyType {
	case keyTypeSchema:
		if subj == "" || k.Version <= 0 {
			v.log.Warn("schemaregistry: skipping SCHEMA record without subject or version", "offset", rec.Offset)
			return
		}
		if rec.Value == nil {
			v.removeVersion(subj, k.Version)
			return
		}
		var sv schemaValue
		if err := json.Unmarshal(rec.Value, &sv); err != nil || sv.ID <= 0 || sv.Schema == "" {
			v.log.Warn("schemaregistry: skipping undecodable SCHEMA value", "offset", rec.Offset, "err", err)
			return
		}
		if sv.SchemaType == "" {
			sv.SchemaType = TypeAvro
		}
		v.putVersion(&schemaVersion{
			Subject: subj, Version: k.Version, ID: sv.ID, Type: sv.SchemaType,
			References: sv.References, Schema: sv.Schema, Deleted: sv.Deleted,
		})
	case keyTypeConfig:
		level := ""
		if rec.Value != nil {
			var cv configValue
			if err := json.Unmarshal(rec.Value, &cv); err != nil {
				v.log.Warn("schemaregistry: skipping undecodable CONFIG value", "offset", rec.Offset, "err", err)
				return
			}
			level = cv.CompatibilityLevel
		}
		if subj == "" {
			v.globalConfig = level
		} else {
			v.subject(subj).config = level
		}
	case keyTypeMode:
		mode := ""
		if rec.Value != nil {
			var mv modeValue
			if err := json.Unmarshal(rec.Value, &mv); err != nil {
				v.log.Warn("schemaregistry: skipping undecodable MODE value", "offset", rec.Offset, "err", err)
				return
			}
			mode = mv.Mode
		}
		if subj == "" {
			v.globalMode = mode
		} else {
			v.subject(subj).mode = mode
		}
	case keyTypeDeleteSubject:
		if rec.Value == nil {
			return
		}
		var dv deleteSubjectValue
		if err := json.Unmarshal(rec.Value, &dv); err != nil {
			v.log.Warn("schemaregistry: skipping undecodable DELETE_SUBJECT value", "offset", rec.Offset, "err", err)
			return
		}
		if dv.Subject == "" {
			dv.Subject = subj
		}
		if s := v.subjects[dv.Subject]; s != nil {
			for ver, sv := range s.versions {
				if ver <= dv.Version {
					sv.Deleted = true
				}
			}
		}
	case keyTypeClearSubject:
		if rec.Value == nil {
			return
		}
		var cv clearSubjectValue
		_ = json.Unmarshal(rec.Value, &cv)
		if cv.Subject == "" {
			cv.Subject = subj
		}
		for name, s := range v.subjects {
			if cv.Subject != "" && name != cv.Subject {
				continue
			}
			for ver, sv := range s.versions {
				if sv.Deleted {
					v.removeVersion(name, ver)
				}
			}
		}
	default:
		// NOOP, and CONTEXT, ASSOC and key types of later versions: nothing
		// this registry serves.
	}
}

func (v *view) putVersion(sv *schemaVersion) {
	s := v.subject(sv.Subject)
	if old := s.versions[sv.Version]; old != nil && old.ID != sv.ID {
		v.dropUser(old.ID, svKey{sv.Subject, sv.Version})
	}
	s.versions[sv.Version] = sv
	if v.users[sv.ID] == nil {
		v.users[sv.ID] = map[svKey]struct{}{}
		for _, ident := range v.identitiesOf(sv) {
			v.identities[ident] = sv.ID
		}
	}
	v.users[sv.ID][svKey{sv.Subject, sv.Version}] = struct{}{}
	v.maxID = max(v.maxID, sv.ID)
}

func (v *view) removeVersion(subject string, version int) {
	s := v.subjects[subject]
	if s == nil || s.versions[version] == nil {
		return
	}
	old := s.versions[version]
	delete(s.versions, version)
	v.dropUser(old.ID, svKey{subject, version})
}

func (v *view) dropUser(id int, k svKey) {
	u := v.users[id]
	delete(u, k)
	if len(u) > 0 {
		return
	}
	delete(v.users, id)
	for ident, i := range v.identities {
		if i == id {
			delete(v.identities, ident)
		}
	}
}

// identitiesOf are the identities of a stored schema: its type, its
// canonical text (the stored text re-canonicalized, so that a schema stored
// by another registry matches the same schema registered here) and its
// references; and, for an Avro text stored in another form (or that no
// longer parses, as hamba's form of a fixed's default), that text as an
// earlier form (see idOf).
func (v *view) identitiesOf(sv *schemaVersion) []string {
	text := sv.Schema
	p, err := v.parseStored(sv)
	if err == nil {
		text = p.canonical
	}
	out := []string{identity(sv.Type, text, sv.References)}
	if sv.Type == TypeAvro && (text != sv.Schema || err != nil) {
		out = append(out, earlierIdentity(sv.Schema, sv.References))
	}
	return out
}

// idOf returns the id of the schema p with refs if it is registered: a
// stored schema with the same identity, else, for Avro, one stored in the
// form Gregor stored before its canonical form was Java's (hamba's
// json.Marshal), which loses what makes some schemas re-canonicalize
// differently (the order of properties, a default's digits, bytes
// defaults), so that registering such a schema again finds its old id.
func (v *view) idOf(typ string, p *parsed, refs []Reference) (int, bool) {
	if id, ok := v.identities[identity(typ, p.canonical, refs)]; ok {
		return id, true
	}
	if p.avro == nil {
		return 0, false
	}
	hambaForm, err := json.Marshal(p.avro)
	if err != nil {
		return 0, false
	}
	id, ok := v.identities[earlierIdentity(string(hambaForm), refs)]
	return id, ok
}

// earlierIdentity is the identity of an Avro text stored in Gregor's
// earlier form; its type keeps it apart from every canonical identity.
func earlierIdentity(text string, refs []Reference) string {
	return identity("AVRO (hamba form)", text, refs)
}

func identity(typ, canonical string, refs []Reference) string {
	return string(marshalJSON([]any{typ, canonical, refs}))
}

// byID returns a subject-version carrying id, the lowest subject and
// version first; nil when no subject-version carries it.
func (v *view) byID(id int) *schemaVersion {
	var best *schemaVersion
	for k := range v.users[id] {
		sv := v.subjects[k.subject].versions[k.version]
		if best == nil || k.subject < best.Subject || (k.subject == best.Subject && k.version < best.Version) {
			best = sv
		}
	}
	return best
}

// versions returns the subject's versions in ascending order, soft-deleted
// ones only if deleted is set.
func (v *view) versions(subject string, deleted bool) []*schemaVersion {
	s := v.subjects[subject]
	if s == nil {
		return nil
	}
	out := make([]*schemaVersion, 0, len(s.versions))
	for _, sv := range s.versions {
		if deleted || !sv.Deleted {
			out = append(out, sv)
		}
	}
	slices.SortFunc(out, func(a, b *schemaVersion) int { return a.Version - b.Version })
	return out
}

// referencedBy returns the ids of the live schemas that reference
// subject-version k.
func (v *view) referencedBy(subject string, version int) []int {
	var ids []int
	for _, s := range v.subjects {
		for _, sv := range s.versions {
			if sv.Deleted {
				continue
			}
			for _, r := range sv.References {
				if r.Subject == subject && r.Version == version && !slices.Contains(ids, sv.ID) {
					ids = append(ids, sv.ID)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// parse parses a schema of type typ with its references resolved from the
// view.
func (v *view) parse(typ, text string, refs []Reference, normalize bool) (*parsed, error) {
	deps, err := v.resolve(refs, map[svKey]bool{})
	if err != nil {
		return nil, err
	}
	return parseSchema(typ, text, deps, normalize)
}

// parseStored parses a stored version, from the cache when this id was
// parsed from the same text before. A schema whose references name the
// latest version of a subject is parsed again once the view has applied
// another record (the latest may have moved).
func (v *view) parseStored(sv *schemaVersion) (*parsed, error) {
	if e, ok := v.parsed[sv.ID]; ok && e.typ == sv.Type && e.text == sv.Schema && (e.at < 0 || e.at == v.next) {
		return e.p, nil
	}
	p, err := v.parse(sv.Type, sv.Schema, sv.References, false)
	if err != nil {
		return nil, err
	}
	at := int64(-1)
	for _, r := range sv.References {
		if r.Version == -1 {
			at = v.next
		}
	}
	if len(v.parsed) >= maxParsed {
		for id := range v.parsed { // any one
			delete(v.parsed, id)
			break
		}
	}
	v.parsed[sv.ID] = parsedEntry{sv.Type, sv.Schema, p, at}
	return p, nil
}

// resolve returns the transitive references, dependencies first.
func (v *view) resolve(refs []Reference, seen map[svKey]bool) ([]resolvedRef, error) {
	var out []resolvedRef
	for _, r := range refs {
		k := svKey{r.Subject, r.Version}
		s := v.subjects[r.Subject]
		var sv *schemaVersion
		if s != nil {
			if r.Version == -1 {
				if vs := v.versions(r.Subject, false); len(vs) > 0 {
					sv = vs[len(vs)-1]
				}
			} else {
				sv = s.versions[r.Version]
			}
		}
		if sv == nil {
			return nil, &invalidSchemaError{msg: "Invalid schema: reference " + r.Name + " to subject " + r.Subject + " not found"}
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		deps, err := v.resolve(sv.References, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, deps...)
		out = append(out, resolvedRef{Name: r.Name, Type: sv.Type, Schema: sv.Schema})
	}
	return out, nil
}

// resolvedRef is one referenced schema's text, under the name the
// referring schema uses for it.
type resolvedRef struct {
	Name, Type, Schema string
}

// invalidSchemaError is a schema that does not parse (42201).
type invalidSchemaError struct{ msg string }

func (e *invalidSchemaError) Error() string { return e.msg }
