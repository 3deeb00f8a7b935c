package quota

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metastore"
)

// Config is a Manager's settings, from Kafka's broker properties.
type Config struct {
	Samples  int   // quota.window.num
	WindowMs int64 // quota.window.size.seconds, in ms

	MutationSamples  int   // controller.quota.window.num
	MutationWindowMs int64 // controller.quota.window.size.seconds, in ms

	// Log is where undecodable stored records are reported; nil for none.
	Log *slog.Logger
}

// Manager is a broker's quotas: the records of a metastore collection, the
// Index decoded from them, and the shared rates. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg Config

	alterMu sync.Mutex // serialises Alter

	// view is the records of the store in use by entity ID; nil until
	// Use. Decoding a new revision publishes index and ips.
	view atomic.Pointer[metastore.View[map[string]Record]]

	// index is what enforcement reads: nil while no quota is configured,
	// so that requests then cost one atomic load.
	index atomic.Pointer[Index]
	ips   atomic.Pointer[map[string]float64] // connection_creation_rate by IP

	// clock, when set (tests), replaces time.Now for the controller
	// mutation and connection creation quotas; atomic, as tests set it
	// while the broker accepts.
	clock atomic.Pointer[func() time.Time]

	sensorMu  sync.Mutex
	sensors   map[sensorKey]*Sensor
	lastSweep time.Time

	conns connRates
}

// New returns a manager with no store: it enforces nothing until Use.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, sensors: map[sensorKey]*Sensor{}}
}

// Now is the quotas' clock: time.Now unless a test set one.
func (m *Manager) Now() time.Time {
	if f := m.clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// SetClock makes f the clock of the controller mutation and connection
// creation quotas (tests).
func (m *Manager) SetClock(f func() time.Time) { m.clock.Store(&f) }

// Use makes c the store of the quotas and enforces what it holds.
func (m *Manager) Use(c metastore.Collection) {
	v := metastore.NewView(c, m.decode)
	m.view.Store(v)
	v.Get()
}

// decode turns the stored records into quotas by entity ID and publishes
// what enforcement reads of them; one that does not decode is logged and
// ignored.
func (m *Manager) decode(raw metastore.Records) map[string]Record {
	recs := make(map[string]Record, len(raw))
	for id, v := range raw {
		var q Record
		if err := json.Unmarshal(v, &q); err != nil {
			if m.cfg.Log != nil {
				m.cfg.Log.Warn("undecodable client quota in the metadata store, ignored", "id", id, "err", err)
			}
			continue
		}
		recs[id] = q
	}
	m.index.Store(BuildIndex(recs))
	m.ips.Store(ipRates(recs))
	return recs
}

// Records returns the quotas in force by entity ID, which the caller must
// not modify, after bringing enforcement in line with the store.
func (m *Manager) Records() map[string]Record {
	if v := m.view.Load(); v != nil {
		return v.Get()
	}
	return nil
}

// Index is what enforcement reads; nil while no quota is configured.
func (m *Manager) Index() *Index { return m.index.Load() }

// ErrNoStore is Alter's error before Use.
var ErrNoStore = errors.New("no quota store yet")

// Alter changes the quotas: change is given those in force and returns
// the changed records by entity ID (nil or empty Values removes the
// entity), which are stored and enforced. Alterations on one Manager run
// one at a time.
func (m *Manager) Alter(ctx context.Context, change func(cur map[string]Record) map[string]Record) error {
	v := m.view.Load()
	if v == nil {
		return ErrNoStore
	}
	m.alterMu.Lock()
	defer m.alterMu.Unlock()
	changed := change(v.Get())
	if len(changed) == 0 {
		return nil
	}
	put := metastore.Records{}
	var del []string
	for id, q := range changed {
		if len(q.Values) == 0 {
			del = append(del, id)
			continue
		}
		data, err := json.Marshal(q)
		if err != nil {
			return err
		}
		put[id] = data
	}
	if _, err := v.Collection().Update(ctx, put, del); err != nil {
		return err
	}
	v.Get()
	return nil
}

// Set is the quotas that apply to one (user, client-id) under one Index,
// each kind with its shared rate.
type Set struct {
	ix           *Index
	user, client string
	q            [NumKinds]resolved
}

// resolved is one kind's quota: nil sensor when there is none.
type resolved struct {
	bound  float64
	sensor *Sensor
}

// Of tells whether s was resolved for ix, user and client, so that a
// connection may keep using it.
func (s *Set) Of(ix *Index, user, client string) bool {
	return s.ix == ix && s.user == user && s.client == client
}

// Has tells whether a quota of kind k applies.
func (s *Set) Has(k Kind) bool { return s.q[k].sensor != nil }

// Bound is the bound of the quota of kind k; false when none applies.
func (s *Set) Bound(k Kind) (float64, bool) { return s.q[k].bound, s.q[k].sensor != nil }

// For resolves the quotas of (user, client) under ix, which must not be
// nil. user is the principal's name (ANONYMOUS without authentication),
// client the request header's client-id ("" when null).
func (m *Manager) For(ix *Index, user, client string) *Set {
	s := &Set{ix: ix, user: user, client: client}
	for k := range NumKinds {
		if bound, tu, tc, ok := ix.resolve(k, user, client); ok {
			s.q[k] = resolved{bound: bound, sensor: m.sensor(sensorKey{k, tu, tc})}
		}
	}
	return s
}

// sensor returns the shared rate of key, creating it; rates unused for an
// hour are dropped (Kafka expires its quota sensors alike).
func (m *Manager) sensor(key sensorKey) *Sensor {
	m.sensorMu.Lock()
	defer m.sensorMu.Unlock()
	if r := m.sensors[key]; r != nil {
		return r
	}
	now := time.Now()
	if now.Sub(m.lastSweep) > time.Minute {
		m.lastSweep = now
		for k, r := range m.sensors {
			if r.idleSince(now.UnixMilli()) > time.Hour.Milliseconds() {
				delete(m.sensors, k)
			}
		}
	}
	r := &Sensor{key: key}
	m.sensors[key] = r
	return r
}

// Record adds v to the rate of s's quota of kind k at now and returns the
// throttle time in ms, 0 when the rate is within the bound (and when no
// quota of the kind applies). A request quota's throttle is capped at one
// window.
func (m *Manager) Record(s *Set, k Kind, v float64, now time.Time) int64 {
	q := s.q[k]
	if q.sensor == nil {
		return 0
	}
	t := q.sensor.record(v, now.UnixMilli(), m.cfg.Samples, m.cfg.WindowMs, q.bound, true)
	if k == Request {
		t = min(t, m.cfg.WindowMs)
	}
	return t
}

// Unrecord takes v back from the rate of s's quota of kind k (a throttled
// Fetch, answered empty).
func (m *Manager) Unrecord(s *Set, k Kind, v float64, now time.Time) {
	if q := s.q[k]; q.sensor != nil {
		q.sensor.record(-v, now.UnixMilli(), m.cfg.Samples, m.cfg.WindowMs, q.bound, false)
	}
}

// MaxFetchBytes is the most a consumer under s's fetch quota may fetch at
// once: what the quota allows in (num-1) windows, as Kafka's
// getMaxValueInQuotaWindow; MaxInt32 when no fetch quota applies.
func (m *Manager) MaxFetchBytes(s *Set) int64 {
	q := s.q[Fetch]
	if q.sensor == nil {
		return math.MaxInt32
	}
	v := q.bound * float64(m.cfg.Samples-1) * float64(m.cfg.WindowMs) / 1000
	return int64(min(v, math.MaxInt32))
}

// EachRate calls f with the rate and bound of every client quota rate in
// use.
func (m *Manager) EachRate(f func(k Kind, user, client string, rate, bound float64)) {
	m.sensorMu.Lock()
	sensors := make([]*Sensor, 0, len(m.sensors))
	for _, r := range m.sensors {
		sensors = append(sensors, r)
	}
	m.sensorMu.Unlock()
	now := time.Now().UnixMilli()
	for _, r := range sensors {
		rate, bound := r.measure(now, m.cfg.Samples, m.cfg.WindowMs)
		f(r.key.kind, r.key.user, r.key.client, rate, bound)
	}
}

// RequestPercent converts handler time to the request quota's unit: a
// percentage of one thread over a second.
func RequestPercent(d time.Duration) float64 {
	return float64(d.Nanoseconds()) * 100 / float64(time.Second)
}
