package acl

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/metastore"
)

// Config is an Authorizer's settings, from Kafka's broker properties.
type Config struct {
	// Enabled turns authorization on (authorizer.class.name set); when
	// off every request is allowed.
	Enabled bool
	// AllowIfNone allows a request on a resource that no binding names
	// (allow.everyone.if.no.acl.found).
	AllowIfNone bool
	// SuperUsers are allowed everything (super.users).
	SuperUsers []string
	// Log is where undecodable stored bindings are reported; nil for
	// none.
	Log *slog.Logger
}

// ParseSuperUsers splits super.users ("User:a;User:b").
func ParseSuperUsers(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Authorizer decides requests by the bindings of a metastore collection.
// Its methods are safe for concurrent use.
type Authorizer struct {
	enabled     bool
	allowIfNone bool
	superUsers  map[string]bool
	log         *slog.Logger

	alterMu sync.Mutex // serialises Alter

	// view is the bindings of the store in use; nil until Use.
	view atomic.Pointer[metastore.View[[]Binding]]
}

// New returns an authorizer with no store: it sees no bindings until Use.
func New(cfg Config) *Authorizer {
	a := &Authorizer{enabled: cfg.Enabled, allowIfNone: cfg.AllowIfNone, superUsers: map[string]bool{}, log: cfg.Log}
	for _, u := range cfg.SuperUsers {
		a.superUsers[u] = true
	}
	return a
}

// Enabled reports whether authorization is on.
func (a *Authorizer) Enabled() bool { return a.enabled }

// Use makes c the store of the bindings.
func (a *Authorizer) Use(c metastore.Collection) {
	a.view.Store(metastore.NewView(c, a.decode))
}

// decode turns the stored records into bindings; one that does not decode
// is logged and ignored.
func (a *Authorizer) decode(recs metastore.Records) []Binding {
	out := make([]Binding, 0, len(recs))
	for id, v := range recs {
		var b Binding
		if err := json.Unmarshal(v, &b); err != nil {
			if a.log != nil {
				a.log.Warn("undecodable ACL binding in the metadata store, ignored", "id", id, "err", err)
			}
			continue
		}
		out = append(out, b)
	}
	return out
}

// Records encodes bindings as the store keeps them.
func Records(bs []Binding) metastore.Records {
	recs := metastore.Records{}
	for i := range bs {
		v, _ := json.Marshal(&bs[i]) // strings and integers only: cannot fail
		recs[bs[i].ID()] = v
	}
	return recs
}

// Bindings returns the bindings in force, which the caller must not
// modify.
func (a *Authorizer) Bindings() []Binding {
	if v := a.view.Load(); v != nil {
		return v.Get()
	}
	return nil
}

// Revision is the revision of the bindings in force: it changes with
// every change of them (0 before Use).
func (a *Authorizer) Revision() int64 {
	v := a.view.Load()
	if v == nil {
		return 0
	}
	_, rev := v.Collection().Snapshot()
	return rev
}

// ErrNoStore is Alter's error before Use.
var ErrNoStore = errors.New("no ACL store yet")

// Alter changes the bindings: change is given those in force and returns
// the bindings to add and those to delete, which are then written to the
// store. Alterations on one Authorizer run one at a time.
func (a *Authorizer) Alter(ctx context.Context, change func(cur []Binding) (add, del []Binding)) error {
	v := a.view.Load()
	if v == nil {
		return ErrNoStore
	}
	a.alterMu.Lock()
	defer a.alterMu.Unlock()
	add, del := change(v.Get())
	if len(add) == 0 && len(del) == 0 {
		return nil
	}
	ids := make([]string, 0, len(del))
	for i := range del {
		ids = append(ids, del[i].ID())
	}
	_, err := v.Collection().Update(ctx, Records(add), ids)
	return err
}

// Authorize decides whether principal, connected from host, may do op on
// a resource.
func (a *Authorizer) Authorize(principal, host string, op Operation, typ ResourceType, name string) bool {
	if !a.enabled || a.superUsers[principal] {
		return true
	}
	found, allowed := false, false
	for i, bs := 0, a.Bindings(); i < len(bs); i++ {
		b := &bs[i]
		if !b.covers(typ, name) {
			continue
		}
		found = true
		if !b.names(principal, host) {
			continue
		}
		if b.Permission == Deny {
			if b.Operation == All || b.Operation == op {
				return false
			}
			continue
		}
		if grants(b.Operation, op) {
			allowed = true
		}
	}
	if !found {
		return a.allowIfNone
	}
	return allowed
}

// AuthorizeAny decides whether principal may do op on some resource of the
// type (Kafka's authorizeByResourceType): an Allow binding for it whose
// pattern no Deny binding covers.
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, typ ResourceType) bool {
	if !a.enabled || a.superUsers[principal] {
		return true
	}
	bs := a.Bindings()
	denied := func(b *Binding) bool {
		for i := range bs {
			d := &bs[i]
			if d.Permission != Deny || d.ResourceType != typ || !d.names(principal, host) || (d.Operation != All && d.Operation != op) {
				continue
			}
			switch {
			case d.PatternType == Literal && d.ResourceName == "*":
				return true
			case d.PatternType == Literal && b.PatternType == Literal && d.ResourceName == b.ResourceName:
				return true
			case d.PatternType == Prefixed && strings.HasPrefix(b.ResourceName, d.ResourceName):
				return true
			}
		}
		return false
	}
	any := false
	for i := range bs {
		b := &bs[i]
		if b.ResourceType != typ {
			continue
		}
		any = true
		if b.Permission == Allow && b.names(principal, host) && grants(b.Operation, op) && !denied(b) {
			return true
		}
	}
	return !any && a.allowIfNone
}
