package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// maxWriteAttempts bounds how often a write decides again after losing a
// conditional append to another writer.
const maxWriteAttempts = 16

// Config configures a Registry.
type Config struct {
	// Log is the _schemas topic. Required.
	Log Log
	// Logger receives the registry's warnings (undecodable records, store
	// errors). Nil discards them.
	Logger *slog.Logger
	// Compatibility is the compatibility level used when the log holds no
	// global CONFIG record. Empty means BACKWARD.
	Compatibility string
	// Mode is the mode used when the log holds no global MODE record.
	// Empty means READWRITE.
	Mode string
	// Timeout bounds each request's reads and writes of the Log; past it
	// the request is answered 50002. Zero means 30 seconds.
	Timeout time.Duration
}

// Registry is Confluent Schema Registry over a Log: a view of the log kept
// in memory, brought up to date before each request, and written to with
// conditional appends.
type Registry struct {
	log     Log
	logger  *slog.Logger
	level   string
	mode    string
	timeout time.Duration

	writeMu sync.Mutex // serializes this instance's writes
	mu      sync.Mutex // guards view and the reads of the log into it
	view    *view
}

// New returns a Registry over cfg.Log. It reads nothing yet: the first
// request (or Sync) replays the log into the view.
func New(cfg Config) (*Registry, error) {
	if cfg.Log == nil {
		return nil, errors.New("schemaregistry: Config.Log is required")
	}
	r := &Registry{log: cfg.Log, logger: cfg.Logger, level: cfg.Compatibility, mode: cfg.Mode, timeout: cfg.Timeout}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.level == "" {
		r.level = CompatBackward
	}
	if !validLevel(r.level) {
		return nil, fmt.Errorf("schemaregistry: invalid compatibility level %q", r.level)
	}
	if r.mode == "" {
		r.mode = ModeReadWrite
	}
	if !validMode(r.mode) {
		return nil, fmt.Errorf("schemaregistry: invalid mode %q", r.mode)
	}
	if r.timeout <= 0 {
		r.timeout = 30 * time.Second
	}
	r.view = newView(r.logger)
	return r, nil
}

// Sync reads the log from where the view stopped to the log end and applies
// what it read. It costs one Log.Read when nothing is new.
func (r *Registry) Sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncLocked(ctx, -1)
}

// syncLocked reads until the log end, or, when upTo >= 0, until the view
// has applied offset upTo-1 (then at least to upTo). r.mu must be held.
func (r *Registry) syncLocked(ctx context.Context, upTo int64) error {
	for {
		recs, end, err := r.log.Read(ctx, r.view.next)
		if err != nil {
			return fmt.Errorf("schemaregistry: reading _schemas at %d: %w", r.view.next, err)
		}
		if len(recs) == 0 {
			if end > r.view.next {
				r.view.next = end // the rest was compacted away
			}
			if upTo >= 0 && r.view.next < upTo {
				return fmt.Errorf("schemaregistry: _schemas ends at %d before our record at %d", end, upTo-1)
			}
			return nil
		}
		for _, rec := range recs {
			if rec.Offset < r.view.next {
				continue
			}
			r.view.apply(rec)
		}
		if upTo >= 0 && r.view.next >= upTo && r.view.next >= end {
			return nil
		}
	}
}

// logRecord is a record to append.
type logRecord struct {
	key, value []byte
}

// write runs decide on an up-to-date view and appends the records it
// returns, each conditioned on the log end decide saw (plus the records
// before it); when another writer appended first it reads what they wrote
// and decides again. It returns once the view has applied its records.
// decide runs with r.mu held.
func (r *Registry) write(ctx context.Context, decide func(v *view) ([]logRecord, error)) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for range maxWriteAttempts {
		recs, end, err := r.decide(ctx, decide)
		if err != nil || len(recs) == 0 {
			return err
		}
		last, conflict := int64(-1), false
		for i, rec := range recs {
			off, err := r.log.Append(ctx, end+int64(i), rec.key, rec.value)
			if errors.Is(err, ErrConflict) {
				conflict = true
				break
			}
			if err != nil {
				return fmt.Errorf("schemaregistry: appending to _schemas: %w", err)
			}
			last = off
		}
		if conflict && last < 0 {
			continue // nothing of ours was written: decide again
		}
		r.mu.Lock()
		err = r.syncLocked(ctx, last+1)
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if !conflict {
			return nil
		}
		// Part of a multi-record write landed: decide the rest again.
	}
	return errTooManyConflicts
}

// decide runs decide on an up-to-date view under r.mu, released even if
// decide panics (a schema library's bug must not hang every later
// request), and returns the log end the view was read to.
func (r *Registry) decide(ctx context.Context, decide func(v *view) ([]logRecord, error)) ([]logRecord, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.syncLocked(ctx, -1); err != nil {
		return nil, 0, err
	}
	recs, err := decide(r.view)
	return recs, r.view.next, err
}

// errTooManyConflicts is returned when a write lost maxWriteAttempts
// conditional appends in a row.
var errTooManyConflicts = errors.New("schemaregistry: too many concurrent writes to _schemas")

// read runs fn on an up-to-date view.
func (r *Registry) read(ctx context.Context, fn func(v *view) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.syncLocked(ctx, -1); err != nil {
		return err
	}
	return fn(r.view)
}

// levelOf is the compatibility level in force for subject.
func (r *Registry) levelOf(v *view, subject string) string {
	if s := v.subjects[subject]; s != nil && s.config != "" {
		return s.config
	}
	return r.globalLevel(v)
}

func (r *Registry) globalLevel(v *view) string {
	if v.globalConfig != "" {
		return v.globalConfig
	}
	return r.level
}

// modeOf is the mode in force for subject.
func (r *Registry) modeOf(v *view, subject string) string {
	if s := v.subjects[subject]; s != nil && s.mode != "" {
		return s.mode
	}
	return r.globalMode(v)
}

func (r *Registry) globalMode(v *view) string {
	if v.globalMode != "" {
		return v.globalMode
	}
	return r.mode
}

// SubjectsOf returns the subjects under which schema id is registered and
// not deleted, sorted; none for an unknown id. It reads the log up to its
// end first, as a request does (a broker validating records with it sees
// every schema registered before the record was produced).
func (r *Registry) SubjectsOf(ctx context.Context, id int) ([]string, error) {
	var out []string
	err := r.read(ctx, func(v *view) error {
		for k := range v.users[id] {
			if sv := v.subjects[k.subject].versions[k.version]; sv != nil && !sv.Deleted && !slices.Contains(out, k.subject) {
				out = append(out, k.subject)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
