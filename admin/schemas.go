package admin

// The schema registry in the console: GET /schemas lists the subjects
// (latest version, its id and type, the compatibility level and mode in
// force and whether they are the subject's own or the global ones,
// soft-deleted subjects marked) with the global level and mode; GET
// /schemas/{subject}[?version=N] lists a subject's versions (id, type,
// references, soft-deleted ones marked) and shows a version's schema
// text, JSON (AVRO, JSON) pretty-printed. The record browser decodes keys
// and values in Confluent's wire format through the registry (decoder).
//
// The registry read is this broker's (broker.Broker.SchemaRegistry): its
// view of _schemas-0, read to the high watermark first (of its own replica
// when it leads the partition, of the leader's otherwise). Without a
// registry (schema.registry.listeners unset) the pages say so.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/schemaregistry"
)

// schemaRegistry is what the console reads of the broker's schema
// registry; *schemaregistry.Registry, which broker.Broker.SchemaRegistry
// returns, has it.
type schemaRegistry interface {
	Overview(ctx context.Context) (schemaregistry.Overview, error)
	Subject(ctx context.Context, name string) (schemaregistry.SubjectInfo, []schemaregistry.VersionInfo, error)
	Decode(ctx context.Context, data []byte) (schemaregistry.Decoded, error)
}

// registry is the broker's schema registry; nil without one.
func (s *Server) registry() schemaRegistry {
	if r := s.b.SchemaRegistry(); r != nil {
		return r
	}
	return nil
}

// registryOff is what the pages say without a registry.
const registryOff = "The schema registry is not enabled on this broker: set schema.registry.listeners (e.g. --set schema.registry.listeners=http://127.0.0.1:8081)."

// schemasPage is schemas.html's data.
type schemasPage struct {
	Off string // registryOff, or "" with a registry
	Err string
	schemaregistry.Overview
	Live, Deleted int
}

// subjectPage is schema.html's data.
type subjectPage struct {
	Off, Err string
	Subject  schemaregistry.SubjectInfo
	Versions []schemaregistry.VersionInfo
	Shown    *schemaregistry.VersionInfo // the version whose text is shown
	Text     string                      // its schema text, pretty-printed when JSON
}

func (s *Server) registerSchemas(mux *http.ServeMux) {
	mux.HandleFunc("GET /schemas", func(w http.ResponseWriter, r *http.Request) {
		var p schemasPage
		reg := s.registry()
		if reg == nil {
			p.Off = registryOff
			s.renderStatus(w, r, http.StatusOK, "schemas.html", "Schemas", p)
			return
		}
		o, err := reg.Overview(r.Context())
		if err != nil {
			p.Err = err.Error()
			s.renderStatus(w, r, http.StatusServiceUnavailable, "schemas.html", "Schemas", p)
			return
		}
		p.Overview = o
		for _, sub := range o.Subjects {
			if sub.Deleted {
				p.Deleted++
			} else {
				p.Live++
			}
		}
		s.renderStatus(w, r, http.StatusOK, "schemas.html", "Schemas", p)
	})
	mux.HandleFunc("GET /schemas/{subject}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("subject")
		title := "Subject " + name
		var p subjectPage
		reg := s.registry()
		if reg == nil {
			p.Off = registryOff
			s.renderStatus(w, r, http.StatusNotFound, "schema.html", title, p)
			return
		}
		sub, versions, err := reg.Subject(r.Context(), name)
		if errors.Is(err, schemaregistry.ErrSubjectNotFound) {
			p.Err = "No subject " + strconv.Quote(name) + " in the registry."
			s.renderStatus(w, r, http.StatusNotFound, "schema.html", title, p)
			return
		}
		if err != nil {
			p.Err = err.Error()
			s.renderStatus(w, r, http.StatusServiceUnavailable, "schema.html", title, p)
			return
		}
		p.Subject, p.Versions = sub, versions
		want := sub.Latest.Version
		if q := r.URL.Query().Get("version"); q != "" {
			if want, err = strconv.Atoi(q); err != nil {
				want = -1
			}
		}
		for i := range versions {
			if versions[i].Version == want {
				p.Shown = &versions[i]
			}
		}
		if p.Shown == nil {
			p.Err = "Subject " + name + " has no version " + strconv.Quote(r.URL.Query().Get("version")) + "."
			s.renderStatus(w, r, http.StatusNotFound, "schema.html", title, p)
			return
		}
		p.Text = schemaText(*p.Shown)
		s.renderStatus(w, r, http.StatusOK, "schema.html", title, p)
	})
}

// schemaText is a version's schema text as the subject page shows it:
// JSON (AVRO, JSON) indented, a .proto as stored.
func schemaText(v schemaregistry.VersionInfo) string {
	if v.Type != schemaregistry.TypeProtobuf {
		var out bytes.Buffer
		if json.Indent(&out, []byte(v.Schema), "", "  ") == nil {
			return out.String()
		}
	}
	return v.Schema
}

// decoder decodes the keys and values one records page shows, through
// the registry: a lookup that failed for an id (unknown, or the registry
// unreadable) is not tried again on the same page.
type decoder struct {
	ctx    context.Context
	reg    schemaRegistry
	topic  string
	failed map[int]error
}

// newDecoder returns the page's decoder; nil without a registry, which
// renders wire-format data as before (its schema id, the payload raw).
func (s *Server) newDecoder(ctx context.Context, topic string) *decoder {
	reg := s.registry()
	if reg == nil {
		return nil
	}
	return &decoder{ctx: ctx, reg: reg, topic: topic, failed: map[int]error{}}
}

// render shows b (a key or value, by part) decoded when it is in the wire
// format and decodes; else as renderBytes does, with why it was not
// decoded. A nil decoder (no registry, format=hex) renders as renderBytes.
func (d *decoder) render(b []byte, part string, hex bool) shownBytes {
	s := renderBytes(b, hex)
	if d == nil || !s.Wire {
		return s
	}
	id := int(int32(s.Schema))
	if err, ok := d.failed[id]; ok {
		s.Why = err.Error()
		return s
	}
	dec, err := d.reg.Decode(d.ctx, b)
	if err != nil {
		if dec.Type == "" { // the id, not this payload
			d.failed[id] = err
		}
		s.Why = err.Error()
		return s
	}
	var out bytes.Buffer
	if json.Indent(&out, dec.JSON, "", "  ") != nil {
		out.Reset()
		out.Write(dec.JSON)
	}
	s.Kind, s.Text = "decoded", out.String()
	s.SchemaType, s.Message = dec.Type, dec.Message
	s.Subject, s.MoreSubjects = subjectFor(d.topic, part, dec.Subjects)
	return s
}

// subjectFor picks the subject shown beside a decoded value: the one
// TopicNameStrategy names (<topic>-key, <topic>-value), else one
// TopicRecordNameStrategy would (<topic>-…), else the first; and how many
// others carry the id.
func subjectFor(topic, part string, subjects []string) (string, int) {
	if len(subjects) == 0 {
		return "", 0
	}
	pick := subjects[0]
	for _, s := range subjects {
		if s == topic+"-"+part {
			pick = s
			break
		}
		if strings.HasPrefix(s, topic+"-") && !strings.HasPrefix(pick, topic+"-") {
			pick = s
		}
	}
	return pick, len(subjects) - 1
}
