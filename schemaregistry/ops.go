package schemaregistry

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// registerRequest is the body of POST /subjects/{subject}/versions and of
// POST /subjects/{subject}.
type registerRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	ID         int         `json:"id,omitempty"`
	Version    int         `json:"version,omitempty"`
}

func (q *registerRequest) typ() string {
	if q.SchemaType == "" {
		return TypeAvro
	}
	return strings.ToUpper(q.SchemaType)
}

// register registers a schema under subject and returns its id: the id of
// the same schema (by canonical form and references) if it is registered
// anywhere, a new one (the largest id seen plus one) otherwise; in IMPORT
// mode the request's id and version are kept.
func (r *Registry) register(ctx context.Context, subject string, q registerRequest, normalize bool) (int, error) {
	var id int
	err := r.write(ctx, func(v *view) ([]logRecord, error) {
		mode := r.modeOf(v, subject)
		if mode == ModeReadOnly {
			return nil, errReadOnly(subject)
		}
		if q.ID > 0 && mode != ModeImport {
			return nil, apiErr(codeOperationNotPermitted, "Subject %s is not in import mode", subject)
		}
		if q.ID <= 0 && mode != ModeReadWrite {
			return nil, apiErr(codeOperationNotPermitted, "Subject %s is not in read-write mode", subject)
		}
		typ := q.typ()
		p, err := v.parse(typ, q.Schema, q.References, normalize)
		if err != nil {
			return nil, err
		}
		all := v.versions(subject, true)
		next := 1
		if len(all) > 0 {
			next = all[len(all)-1].Version + 1
		}
		existing, found := v.idOf(typ, p, q.References)
		text := p.canonical
		switch {
		case found && (q.ID <= 0 || q.ID == existing):
			for _, sv := range all {
				if sv.ID == existing && !sv.Deleted {
					id = existing
					return nil, nil // already registered in this subject
				}
			}
			id = existing
			if sv := v.byID(id); sv != nil {
				text = sv.Schema // an id has one text, whoever stored it in whatever form
			}
		case q.ID > 0:
			if other := v.byID(q.ID); other != nil {
				return nil, apiErr(codeOperationNotPermitted, "Overwrite new schema with id %d is not permitted.", q.ID)
			}
			id = q.ID
		default:
			id = v.maxID + 1
		}
		if mode != ModeImport {
			level := r.levelOf(v, subject)
			previous, err := v.compatibilityTargets(level, subject, all)
			if err != nil {
				return nil, err
			}
			if msgs := compatible(level, p, previous); len(msgs) > 0 {
				return nil, apiErr(codeIncompatibleSchema, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]", subject, strings.Join(msgs, ", "))
			}
		}
		version := next
		if q.Version > 0 {
			if mode != ModeImport && q.Version != next {
				return nil, apiErr(codeInvalidSchema, "Version is not one more than previous version")
			}
			version = q.Version
		}
		recs := []logRecord{{
			key: schemaKey(subject, version),
			value: schemaRecordValue(schemaValue{
				Subject: subject, Version: version, ID: id, SchemaType: typ,
				References: q.References, Schema: text,
			}),
		}}
		for _, sv := range all {
			if sv.Deleted && sv.ID == id && sv.Version < version {
				recs = append(recs, logRecord{key: schemaKey(subject, sv.Version)}) // as Confluent: the soft-deleted version with this id goes
			}
		}
		return recs, nil
	})
	return id, err
}

// lookup finds the version of subject that holds the given schema.
func (r *Registry) lookup(v *view, subject string, q registerRequest, deleted, normalize bool) (*schemaVersion, error) {
	all := v.versions(subject, deleted)
	if len(all) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	p, err := v.parse(q.typ(), q.Schema, q.References, normalize)
	if err != nil {
		return nil, err
	}
	id, ok := v.idOf(q.typ(), p, q.References)
	if ok {
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].ID == id {
				return all[i], nil
			}
		}
	}
	return nil, apiErr(codeSchemaNotFound, "Schema not found")
}

// parseVersion parses a version path parameter: a number from 1, or
// "latest" (or -1), which is returned as -1.
func parseVersion(s string) (int, error) {
	if s == "latest" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n == 0 || n < -1 {
		return 0, errInvalidVersion(s)
	}
	return n, nil
}

// version finds a version of subject (-1 for the latest).
func (r *Registry) version(v *view, subject, vs string, deleted bool) (*schemaVersion, error) {
	n, err := parseVersion(vs)
	if err != nil {
		return nil, err
	}
	all := v.versions(subject, deleted)
	if len(all) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	if n == -1 {
		return all[len(all)-1], nil
	}
	for _, sv := range all {
		if sv.Version == n {
			return sv, nil
		}
	}
	return nil, errVersionNotFound(n)
}

// deleteVersion soft-deletes a version, or hard-deletes a soft-deleted one.
func (r *Registry) deleteVersion(ctx context.Context, subject, vs string, permanent bool) (int, error) {
	var deleted int
	err := r.write(ctx, func(v *view) ([]logRecord, error) {
		if r.modeOf(v, subject) == ModeReadOnly {
			return nil, errReadOnly(subject)
		}
		n, err := parseVersion(vs)
		if err != nil {
			return nil, err
		}
		all := v.versions(subject, true)
		live := v.versions(subject, false)
		if len(all) == 0 {
			return nil, errSubjectNotFound(subject)
		}
		var sv *schemaVersion
		switch {
		case n == -1 && !permanent && len(live) > 0:
			sv = live[len(live)-1]
		case n == -1:
			sv = all[len(all)-1]
		default:
			sv = v.subjects[subject].versions[n]
		}
		if sv == nil {
			return nil, errVersionNotFound(n)
		}
		if !permanent && sv.Deleted {
			return nil, apiErr(codeVersionSoftDeleted, "Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", subject, sv.Version)
		}
		if permanent && !sv.Deleted {
			return nil, apiErr(codeVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, sv.Version)
		}
		if ids := v.referencedBy(subject, sv.Version); len(ids) > 0 {
			return nil, apiErr(codeReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}.", subject, sv.Version)
		}
		deleted = sv.Version
		if permanent {
			return []logRecord{{key: schemaKey(subject, sv.Version)}}, nil
		}
		val := schemaValue{Subject: subject, Version: sv.Version, ID: sv.ID, SchemaType: sv.Type,
			References: sv.References, Schema: sv.Schema, Deleted: true}
		recs := []logRecord{{key: schemaKey(subject, sv.Version), value: schemaRecordValue(val)}}
		if len(live) == 1 {
			recs = append(recs, r.dropSubjectSettings(v, subject)...)
		}
		return recs, nil
	})
	return deleted, err
}

// dropSubjectSettings tombstones a subject's config and mode, as Confluent
// does when a subject's last live version is deleted.
func (r *Registry) dropSubjectSettings(v *view, subject string) []logRecord {
	var recs []logRecord
	if s := v.subjects[subject]; s != nil {
		if s.mode != "" {
			recs = append(recs, logRecord{key: modeKey(subject)})
		}
		if s.config != "" {
			recs = append(recs, logRecord{key: configKey(subject)})
		}
	}
	return recs
}

// deleteSubject soft-deletes every live version of subject (one
// DELETE_SUBJECT record), or hard-deletes a soft-deleted subject (a
// tombstone per version).
func (r *Registry) deleteSubject(ctx context.Context, subject string, permanent bool) ([]int, error) {
	var deleted []int
	err := r.write(ctx, func(v *view) ([]logRecord, error) {
		if r.modeOf(v, subject) == ModeReadOnly {
			return nil, errReadOnly(subject)
		}
		all := v.versions(subject, true)
		live := v.versions(subject, false)
		if len(all) == 0 {
			return nil, errSubjectNotFound(subject)
		}
		if !permanent && len(live) == 0 {
			return nil, apiErr(codeSubjectSoftDeleted, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
		}
		if permanent && len(live) > 0 {
			return nil, apiErr(codeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", subject)
		}
		targets := live
		if permanent {
			targets = all
		}
		deleted = deleted[:0]
		for _, sv := range targets {
			if ids := v.referencedBy(subject, sv.Version); len(ids) > 0 {
				return nil, apiErr(codeReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}.", subject, sv.Version)
			}
			deleted = append(deleted, sv.Version)
		}
		if permanent {
			recs := make([]logRecord, 0, len(targets))
			for _, sv := range targets {
				recs = append(recs, logRecord{key: schemaKey(subject, sv.Version)})
			}
			return recs, nil
		}
		recs := []logRecord{{
			key:   deleteSubjectKey(subject),
			value: marshalJSON(deleteSubjectValue{Subject: subject, Version: live[len(live)-1].Version}),
		}}
		return append(recs, r.dropSubjectSettings(v, subject)...), nil
	})
	return deleted, err
}

// setConfig writes a compatibility level for subject ("" global).
func (r *Registry) setConfig(ctx context.Context, subject, level string) error {
	level = strings.ToUpper(level)
	if !validLevel(level) {
		return apiErr(codeInvalidCompatibility, "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	return r.write(ctx, func(v *view) ([]logRecord, error) {
		return []logRecord{{key: configKey(subject), value: marshalJSON(configValue{Subject: subject, CompatibilityLevel: level})}}, nil
	})
}

// deleteConfig removes subject's compatibility level ("" the global one)
// and returns the level removed (for the global one: the level in force).
func (r *Registry) deleteConfig(ctx context.Context, subject string) (string, error) {
	var old string
	err := r.write(ctx, func(v *view) ([]logRecord, error) {
		if subject == "" {
			old = r.globalLevel(v)
			return []logRecord{{key: configKey("")}}, nil
		}
		s := v.subjects[subject]
		if s == nil || s.config == "" {
			return nil, errSubjectNotFound(subject) // as Confluent answers a subject without its own level
		}
		old = s.config
		return []logRecord{{key: configKey(subject)}}, nil
	})
	return old, err
}

// setMode writes a mode for subject ("" global). IMPORT needs no live
// subjects in its scope unless force is set.
func (r *Registry) setMode(ctx context.Context, subject, mode string, force bool) error {
	mode = strings.ToUpper(mode)
	if !validMode(mode) {
		return apiErr(codeInvalidMode, "Invalid mode. Valid values are READWRITE, READONLY and IMPORT.")
	}
	return r.write(ctx, func(v *view) ([]logRecord, error) {
		if mode == ModeImport && !force && r.modeOf(v, subject) != ModeImport {
			for name := range v.subjects {
				if (subject == "" || name == subject) && len(v.versions(name, false)) > 0 {
					return nil, apiErr(codeOperationNotPermitted, "Cannot import since found existing subjects")
				}
			}
		}
		return []logRecord{{key: modeKey(subject), value: marshalJSON(modeValue{Subject: subject, Mode: mode})}}, nil
	})
}

// deleteMode removes subject's mode and returns it.
func (r *Registry) deleteMode(ctx context.Context, subject string) (string, error) {
	var old string
	err := r.write(ctx, func(v *view) ([]logRecord, error) {
		s := v.subjects[subject]
		if s == nil || s.mode == "" {
			return nil, errSubjectNotFound(subject) // as Confluent answers a subject without its own mode
		}
		old = s.mode
		return []logRecord{{key: modeKey(subject)}}, nil
	})
	return old, err
}

// subjectNames lists subjects with a live version (or any version when
// deleted is set) that start with prefix, sorted.
func subjectNames(v *view, deleted bool, prefix string) []string {
	out := []string{}
	for name := range v.subjects {
		if strings.HasPrefix(name, prefix) && len(v.versions(name, deleted)) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
