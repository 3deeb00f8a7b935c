package schemaregistry

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// contentType is what every answer is sent as.
const contentType = "application/vnd.schemaregistry.v1+json"

// maxBody bounds a request body: a schema and its envelope.
const maxBody = 16 << 20

// Handler returns the REST API. Every request first brings the view up to
// the log end (Sync), so a read sees every write acknowledged before it,
// on any registry over the same log.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, fn func(w http.ResponseWriter, q *http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, q *http.Request) {
			ctx, cancel := context.WithTimeout(q.Context(), r.timeout)
			defer cancel()
			out, err := fn(w, q.WithContext(ctx))
			if err != nil {
				ae := toAPIError(err)
				if ae.Code >= 50000 {
					r.logger.Warn("schemaregistry: request failed", "method", q.Method, "path", q.URL.Path, "err", err)
				}
				writeJSON(w, ae.status(), ae)
				return
			}
			if raw, ok := out.(rawSchema); ok {
				w.Header().Set("Content-Type", contentType)
				_, _ = io.WriteString(w, string(raw))
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	h("GET /{$}", func(http.ResponseWriter, *http.Request) (any, error) { return struct{}{}, nil })
	h("GET /schemas/types", func(http.ResponseWriter, *http.Request) (any, error) {
		return []string{TypeJSON, TypeProtobuf, TypeAvro}, nil
	})
	h("GET /subjects", r.handleSubjects)
	h("GET /subjects/{subject}/versions", r.handleVersions)
	h("POST /subjects/{subject}/versions", r.handleRegister)
	h("GET /subjects/{subject}/versions/{version}", r.handleGetVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", r.handleGetVersionSchema)
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.handleReferencedBy)
	h("POST /subjects/{subject}", r.handleLookup)
	h("DELETE /subjects/{subject}", r.handleDeleteSubject)
	h("DELETE /subjects/{subject}/versions/{version}", r.handleDeleteVersion)
	h("GET /schemas/ids/{id}", r.handleSchemaByID)
	h("GET /schemas/ids/{id}/schema", r.handleSchemaByIDRaw)
	h("GET /schemas/ids/{id}/versions", r.handleIDVersions)
	h("GET /schemas/ids/{id}/subjects", r.handleIDSubjects)
	h("GET /config", r.handleGetConfig)
	h("PUT /config", r.handlePutConfig)
	h("DELETE /config", r.handleDeleteConfig)
	h("GET /config/{subject}", r.handleGetConfig)
	h("PUT /config/{subject}", r.handlePutConfig)
	h("DELETE /config/{subject}", r.handleDeleteConfig)
	h("GET /mode", r.handleGetMode)
	h("PUT /mode", r.handlePutMode)
	h("GET /mode/{subject}", r.handleGetMode)
	h("PUT /mode/{subject}", r.handlePutMode)
	h("DELETE /mode/{subject}", r.handleDeleteMode)
	h("POST /compatibility/subjects/{subject}/versions/{version}", r.handleCompatibility)
	h("POST /compatibility/subjects/{subject}/versions", r.handleCompatibility)
	return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		// Clients send POST /subjects/{subject}/ too.
		if len(q.URL.Path) > 1 && strings.HasSuffix(q.URL.Path, "/") {
			q.URL.Path = strings.TrimSuffix(q.URL.Path, "/")
			q.URL.RawPath = strings.TrimSuffix(q.URL.RawPath, "/")
		}
		if q.Body != nil && q.ContentLength != 0 && !acceptedContentType(q.Header.Get("Content-Type")) {
			writeJSON(w, http.StatusUnsupportedMediaType, apiErr(codeUnsupportedMediaType, "HTTP 415 Unsupported Media Type"))
			return
		}
		mux.ServeHTTP(w, q)
	})
}

// rawSchema is an answer sent as the schema text itself.
type rawSchema string

func acceptedContentType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
		"application/json", "application/octet-stream":
		return true
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(marshalJSON(v))
}

func decodeBody(q *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(q.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		return apiErr(codeUnprocessable, "Unrecognized request body: %v", err)
	}
	return nil
}

func boolParam(q *http.Request, name string) bool {
	b, _ := strconv.ParseBool(q.URL.Query().Get(name))
	return b
}

// versionAnswer is a subject-version as GET /subjects/{s}/versions/{v} and
// POST /subjects/{s} answer it.
type versionAnswer struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted,omitempty"`
}

func answerVersion(sv *schemaVersion) versionAnswer {
	a := versionAnswer{Subject: sv.Subject, Version: sv.Version, ID: sv.ID, SchemaType: sv.Type,
		References: sv.References, Schema: sv.Schema, Deleted: sv.Deleted}
	if a.SchemaType == TypeAvro {
		a.SchemaType = ""
	}
	return a
}

func (r *Registry) handleSubjects(_ http.ResponseWriter, q *http.Request) (any, error) {
	var out []string
	prefix := q.URL.Query().Get("subjectPrefix")
	if prefix == ":*:" {
		prefix = ""
	}
	err := r.read(q.Context(), func(v *view) error {
		out = subjectNames(v, boolParam(q, "deleted"), prefix)
		return nil
	})
	return out, err
}

func (r *Registry) handleVersions(_ http.ResponseWriter, q *http.Request) (any, error) {
	subject := q.PathValue("subject")
	out := []int{}
	err := r.read(q.Context(), func(v *view) error {
		all := v.versions(subject, boolParam(q, "deleted"))
		if len(all) == 0 {
			return errSubjectNotFound(subject)
		}
		for _, sv := range all {
			out = append(out, sv.Version)
		}
		return nil
	})
	return out, err
}

func (r *Registry) handleRegister(_ http.ResponseWriter, q *http.Request) (any, error) {
	var body registerRequest
	if err := decodeBody(q, &body); err != nil {
		return nil, err
	}
	if body.Schema == "" {
		return nil, apiErr(codeInvalidSchema, "Empty schema")
	}
	id, err := r.register(q.Context(), q.PathValue("subject"), body, boolParam(q, "normalize"))
	if err != nil {
		return nil, err
	}
	return map[string]int{"id": id}, nil
}

func (r *Registry) handleGetVersion(_ http.ResponseWriter, q *http.Request) (any, error) {
	var out versionAnswer
	err := r.read(q.Context(), func(v *view) error {
		sv, err := r.version(v, q.PathValue("subject"), q.PathValue("version"), boolParam(q, "deleted"))
		if err == nil {
			out = answerVersion(sv)
		}
		return err
	})
	return out, err
}

func (r *Registry) handleGetVersionSchema(_ http.ResponseWriter, q *http.Request) (any, error) {
	var out rawSchema
	err := r.read(q.Context(), func(v *view) error {
		sv, err := r.version(v, q.PathValue("subject"), q.PathValue("version"), boolParam(q, "deleted"))
		if err == nil {
			out = rawSchema(sv.Schema)
		}
		return err
	})
	return out, err
}

func (r *Registry) handleReferencedBy(_ http.ResponseWriter, q *http.Request) (any, error) {
	out := []int{}
	err := r.read(q.Context(), func(v *view) error {
		sv, err := r.version(v, q.PathValue("subject"), q.PathValue("version"), true)
		if err == nil {
			if ids := v.referencedBy(sv.Subject, sv.Version); ids != nil {
				out = ids
			}
		}
		return err
	})
	return out, err
}

func (r *Registry) handleLookup(_ http.ResponseWriter, q *http.Request) (any, error) {
	var body registerRequest
	if err := decodeBody(q, &body); err != nil {
		return nil, err
	}
	var out versionAnswer
	err := r.read(q.Context(), func(v *view) error {
		sv, err := r.lookup(v, q.PathValue("subject"), body, boolParam(q, "deleted"), boolParam(q, "normalize"))
		if err == nil {
			out = answerVersion(sv)
		}
		return err
	})
	return out, err
}

func (r *Registry) handleDeleteSubject(_ http.ResponseWriter, q *http.Request) (any, error) {
	return r.deleteSubject(q.Context(), q.PathValue("subject"), boolParam(q, "permanent"))
}

func (r *Registry) handleDeleteVersion(_ http.ResponseWriter, q *http.Request) (any, error) {
	return r.deleteVersion(q.Context(), q.PathValue("subject"), q.PathValue("version"), boolParam(q, "permanent"))
}

// schemaByID finds the schema with the id in the path, preferring a
// version of the subject parameter.
func (r *Registry) schemaByID(v *view, q *http.Request) (*schemaVersion, error) {
	id, err := strconv.Atoi(q.PathValue("id"))
	if err != nil {
		return nil, apiErr(codeSchemaNotFound, "Schema %s not found", q.PathValue("id"))
	}
	sv := v.byID(id)
	if sv == nil {
		return nil, apiErr(codeSchemaNotFound, "Schema %d not found", id)
	}
	if subject := q.URL.Query().Get("subject"); subject != "" {
		for k := range v.users[id] {
			if k.subject == subject {
				return v.subjects[k.subject].versions[k.version], nil
			}
		}
	}
	return sv, nil
}

func (r *Registry) handleSchemaByID(_ http.ResponseWriter, q *http.Request) (any, error) {
	type answer struct {
		SchemaType string      `json:"schemaType,omitempty"`
		References []Reference `json:"references,omitempty"`
		Schema     string      `json:"schema"`
	}
	var out answer
	err := r.read(q.Context(), func(v *view) error {
		sv, err := r.schemaByID(v, q)
		if err == nil {
			out = answer{SchemaType: sv.Type, References: sv.References, Schema: sv.Schema}
			if out.SchemaType == TypeAvro {
				out.SchemaType = ""
			}
		}
		return err
	})
	return out, err
}

func (r *Registry) handleSchemaByIDRaw(_ http.ResponseWriter, q *http.Request) (any, error) {
	var out rawSchema
	err := r.read(q.Context(), func(v *view) error {
		sv, err := r.schemaByID(v, q)
		if err == nil {
			out = rawSchema(sv.Schema)
		}
		return err
	})
	return out, err
}

// idUsages lists the subject-versions carrying the id in the path, sorted.
func (r *Registry) idUsages(v *view, q *http.Request) ([]*schemaVersion, error) {
	sv, err := r.schemaByID(v, q)
	if err != nil {
		return nil, err
	}
	deleted := boolParam(q, "deleted")
	var out []*schemaVersion
	for k := range v.users[sv.ID] {
		u := v.subjects[k.subject].versions[k.version]
		if deleted || !u.Deleted {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *schemaVersion) int {
		if c := strings.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return out, nil
}

func (r *Registry) handleIDVersions(_ http.ResponseWriter, q *http.Request) (any, error) {
	type sv struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []sv{}
	err := r.read(q.Context(), func(v *view) error {
		us, err := r.idUsages(v, q)
		for _, u := range us {
			out = append(out, sv{u.Subject, u.Version})
		}
		return err
	})
	return out, err
}

func (r *Registry) handleIDSubjects(_ http.ResponseWriter, q *http.Request) (any, error) {
	out := []string{}
	err := r.read(q.Context(), func(v *view) error {
		us, err := r.idUsages(v, q)
		for _, u := range us {
			if !slices.Contains(out, u.Subject) {
				out = append(out, u.Subject)
			}
		}
		return err
	})
	return out, err
}

type configAnswer struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

func (r *Registry) handleGetConfig(_ http.ResponseWriter, q *http.Request) (any, error) {
	subject := q.PathValue("subject")
	var out configAnswer
	err := r.read(q.Context(), func(v *view) error {
		if subject == "" {
			out.CompatibilityLevel = r.globalLevel(v)
			return nil
		}
		if s := v.subjects[subject]; s != nil && s.config != "" {
			out.CompatibilityLevel = s.config
			return nil
		}
		if boolParam(q, "defaultToGlobal") {
			out.CompatibilityLevel = r.globalLevel(v)
			return nil
		}
		return apiErr(codeSubjectConfigNotFound, "Subject '%s' does not have subject-level compatibility configured", subject)
	})
	return out, err
}

func (r *Registry) handlePutConfig(_ http.ResponseWriter, q *http.Request) (any, error) {
	var body struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decodeBody(q, &body); err != nil {
		return nil, err
	}
	if err := r.setConfig(q.Context(), q.PathValue("subject"), body.Compatibility); err != nil {
		return nil, err
	}
	return map[string]string{"compatibility": strings.ToUpper(body.Compatibility)}, nil
}

func (r *Registry) handleDeleteConfig(_ http.ResponseWriter, q *http.Request) (any, error) {
	old, err := r.deleteConfig(q.Context(), q.PathValue("subject"))
	return configAnswer{CompatibilityLevel: old}, err
}

type modeAnswer struct {
	Mode string `json:"mode"`
}

func (r *Registry) handleGetMode(_ http.ResponseWriter, q *http.Request) (any, error) {
	subject := q.PathValue("subject")
	var out modeAnswer
	err := r.read(q.Context(), func(v *view) error {
		if subject == "" {
			out.Mode = r.globalMode(v)
			return nil
		}
		if s := v.subjects[subject]; s != nil && s.mode != "" {
			out.Mode = s.mode
			return nil
		}
		if boolParam(q, "defaultToGlobal") {
			out.Mode = r.globalMode(v)
			return nil
		}
		return apiErr(codeSubjectModeNotFound, "Subject '%s' does not have subject-level mode configured", subject)
	})
	return out, err
}

func (r *Registry) handlePutMode(_ http.ResponseWriter, q *http.Request) (any, error) {
	var body modeAnswer
	if err := decodeBody(q, &body); err != nil {
		return nil, err
	}
	if err := r.setMode(q.Context(), q.PathValue("subject"), body.Mode, boolParam(q, "force")); err != nil {
		return nil, err
	}
	return modeAnswer{Mode: strings.ToUpper(body.Mode)}, nil
}

func (r *Registry) handleDeleteMode(_ http.ResponseWriter, q *http.Request) (any, error) {
	old, err := r.deleteMode(q.Context(), q.PathValue("subject"))
	return modeAnswer{Mode: old}, err
}

// handleCompatibility checks a schema against one version of the subject
// (non-transitively, in the directions of the subject's level), or, with no
// version in the path, against the versions the level names.
func (r *Registry) handleCompatibility(_ http.ResponseWriter, q *http.Request) (any, error) {
	var body registerRequest
	if err := decodeBody(q, &body); err != nil {
		return nil, err
	}
	subject, vs := q.PathValue("subject"), q.PathValue("version")
	type answer struct {
		IsCompatible bool      `json:"is_compatible"`
		Messages     *[]string `json:"messages,omitempty"`
	}
	verbose := boolParam(q, "verbose")
	var out answer
	err := r.read(q.Context(), func(v *view) error {
		var targets []*schemaVersion
		if vs != "" {
			// As Confluent: a missing version is 40402 (even of a missing
			// subject), a missing latest is nothing to check against.
			n, err := parseVersion(vs)
			if err != nil {
				return err
			}
			sv, err := r.version(v, subject, vs, false)
			switch {
			case err == nil:
				targets = []*schemaVersion{sv}
			case n != -1:
				return errVersionNotFound(n)
			}
		} else {
			targets = v.versions(subject, false)
		}
		var msgs []string
		p, err := v.parse(body.typ(), body.Schema, body.References, boolParam(q, "normalize"))
		switch {
		case err != nil && verbose:
			msgs = []string{toAPIError(err).Message}
		case err != nil:
			return err
		default:
			level := r.levelOf(v, subject)
			previous, err := v.compatibilityTargets(level, subject, targets)
			if err != nil {
				return err
			}
			msgs = compatible(level, p, previous)
		}
		out.IsCompatible = len(msgs) == 0
		if verbose {
			msgs = append([]string{}, msgs...)
			out.Messages = &msgs
		}
		return nil
	})
	return out, err
}
