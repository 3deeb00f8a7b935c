package schemaregistry

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// The registry's state read from Go, for the broker's admin console: the
// subjects with their latest versions and levels (Overview), one subject's
// versions (Subject). Like a REST request, each reads the log to its end
// first.

// ErrSubjectNotFound is returned by Subject when the subject has no
// version, live or soft-deleted.
var ErrSubjectNotFound = errors.New("schemaregistry: subject not found")

// VersionInfo is one version of a subject.
type VersionInfo struct {
	Subject    string
	Version    int
	ID         int
	Type       string // AVRO, JSON or PROTOBUF
	References []Reference
	Schema     string // the stored (canonical) text
	Deleted    bool   // soft-deleted
}

// SubjectInfo is a subject with its latest version and the levels in force
// for it.
type SubjectInfo struct {
	Name string
	// Latest is the latest version not soft-deleted; when every version
	// is soft-deleted (Deleted), the latest of those.
	Latest VersionInfo
	// Versions counts the versions, soft-deleted ones included.
	Versions int
	// Deleted is set when every version is soft-deleted: the subject is
	// listed only by GET /subjects?deleted=true.
	Deleted bool
	// Compatibility is the compatibility level in force: the subject's
	// own when OwnCompatibility, else the global one.
	Compatibility    string
	OwnCompatibility bool
	// Mode is the mode in force: the subject's own when OwnMode, else the
	// global one.
	Mode    string
	OwnMode bool
}

// Overview is the registry's state: its global level and mode and every
// subject with a version (soft-deleted subjects included), by name.
type Overview struct {
	// Compatibility is the global compatibility level; DefaultCompatibility
	// says it is Config.Compatibility (no PUT /config has set one).
	Compatibility        string
	DefaultCompatibility bool
	// Mode is the global mode; DefaultMode says it is Config.Mode.
	Mode        string
	DefaultMode bool
	Subjects    []SubjectInfo
}

// Overview returns the registry's global level and mode and its subjects.
// Its error is the Log's when the log could not be read to its end.
func (r *Registry) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	err := r.read(ctx, func(v *view) error {
		o.Compatibility, o.DefaultCompatibility = r.globalLevel(v), v.globalConfig == ""
		o.Mode, o.DefaultMode = r.globalMode(v), v.globalMode == ""
		for name := range v.subjects {
			if s, ok := r.subjectInfo(v, name); ok {
				o.Subjects = append(o.Subjects, s)
			}
		}
		return nil
	})
	slices.SortFunc(o.Subjects, func(a, b SubjectInfo) int { return strings.Compare(a.Name, b.Name) })
	return o, err
}

// Subject returns a subject and its versions, soft-deleted ones included,
// oldest first. Its error is ErrSubjectNotFound when the subject has no
// version, else the Log's when the log could not be read to its end.
func (r *Registry) Subject(ctx context.Context, name string) (SubjectInfo, []VersionInfo, error) {
	var s SubjectInfo
	var out []VersionInfo
	err := r.read(ctx, func(v *view) error {
		var ok bool
		if s, ok = r.subjectInfo(v, name); !ok {
			return ErrSubjectNotFound
		}
		for _, sv := range v.versions(name, true) {
			out = append(out, versionInfo(sv))
		}
		return nil
	})
	if err != nil {
		return SubjectInfo{}, nil, err
	}
	return s, out, nil
}

// subjectInfo describes a subject; false when it has no version.
func (r *Registry) subjectInfo(v *view, name string) (SubjectInfo, bool) {
	all := v.versions(name, true)
	if len(all) == 0 {
		return SubjectInfo{}, false
	}
	st := v.subjects[name]
	s := SubjectInfo{Name: name, Versions: len(all), Deleted: true,
		Compatibility: r.levelOf(v, name), OwnCompatibility: st.config != "",
		Mode: r.modeOf(v, name), OwnMode: st.mode != ""}
	latest := all[len(all)-1]
	for i := len(all) - 1; i >= 0; i-- {
		if !all[i].Deleted {
			latest, s.Deleted = all[i], false
			break
		}
	}
	s.Latest = versionInfo(latest)
	return s, true
}

func versionInfo(sv *schemaVersion) VersionInfo {
	return VersionInfo{Subject: sv.Subject, Version: sv.Version, ID: sv.ID, Type: sv.Type,
		References: slices.Clone(sv.References), Schema: sv.Schema, Deleted: sv.Deleted}
}
