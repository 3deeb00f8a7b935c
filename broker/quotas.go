package broker

// Client quotas (KIP-13, KIP-124, KIP-219, KIP-546): their entities, store
// and the index the enforcement reads (quota_enforce.go).
//
// An entity names up to one user, one client-id, or one ip; a nil name is
// that type's default entity. Kafka allows user, client-id, (user,
// client-id) and ip entities; ip may not be combined with the others. The
// keys are producer_byte_rate, consumer_byte_rate (bytes per second, LONG),
// request_percentage and controller_mutation_rate (DOUBLE) for user and
// client-id entities, connection_creation_rate (INT) for ip entities.
//
// The quotas are a metastore collection: on a single node
// <data-dir>/__meta/quotas.json, replaced whole (storage.WriteFileAtomic),
// beside users.json and acls.json; in a cluster etcd's keys under
// /gregor/quotas/<entity id> (Cluster.Collection), in every broker's
// metadata snapshot, so each broker enforces a change as its watch
// delivers it (applyMetadata). Decoding a new revision rebuilds the index
// enforcement reads.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metastore"
)

// quotasFileName is the single-node quota store under __meta.
const quotasFileName = "quotas.json"

// Quota entity types and keys, as Kafka names them.
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
	quotaIP       = "ip"

	keyProducerByteRate       = "producer_byte_rate"
	keyConsumerByteRate       = "consumer_byte_rate"
	keyRequestPercentage      = "request_percentage"
	keyControllerMutationRate = "controller_mutation_rate"
	keyConnectionCreationRate = "connection_creation_rate"
)

// quotaKeyKind is a quota key's Kafka config type, which bounds its values.
type quotaKeyKind int8

const (
	quotaLong quotaKeyKind = iota
	quotaDouble
	quotaInt
)

var (
	clientQuotaKeys = map[string]quotaKeyKind{
		keyProducerByteRate:       quotaLong,
		keyConsumerByteRate:       quotaLong,
		keyRequestPercentage:      quotaDouble,
		keyControllerMutationRate: quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyKind{keyConnectionCreationRate: quotaInt}
)

// quotaEntity is one entity: a name per entity type present, nil for the
// type's default entity.
type quotaEntity map[string]*string

// quotaDefaultName stands for a default entity in ids, as in Kafka's
// ZooKeeper paths; escaping keeps it apart from a real name "<default>".
const quotaDefaultName = "<default>"

// id is the entity's key in etcd and in the index: Kafka's config path of
// the entity (users/<u>/clients/<c>, users/<u>, clients/<c>, ips/<ip>),
// names path-escaped.
func (e quotaEntity) id() string {
	seg := func(n *string) string {
		if n == nil {
			return quotaDefaultName
		}
		return url.PathEscape(*n)
	}
	var parts []string
	if n, ok := e[quotaUser]; ok {
		parts = append(parts, "users", seg(n))
	}
	if n, ok := e[quotaClientID]; ok {
		parts = append(parts, "clients", seg(n))
	}
	if n, ok := e[quotaIP]; ok {
		parts = append(parts, "ips", seg(n))
	}
	return strings.Join(parts, "/")
}

// quotaRecord is one entity's stored quotas.
type quotaRecord struct {
	Entity quotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// validateQuotaEntity checks an entity's types, names and combination, as
// Kafka's controller does, and returns the keys it may carry. A non-empty
// message is an INVALID_REQUEST.
func validateQuotaEntity(types []string, e quotaEntity) (map[string]quotaKeyKind, string) {
	if len(types) == 0 {
		return nil, "Invalid empty client quota entity"
	}
	seen := map[string]bool{}
	for _, t := range types {
		if seen[t] {
			return nil, "Invalid empty client quota entity, duplicate entity entry " + t
		}
		seen[t] = true
		switch t {
		case quotaUser, quotaClientID, quotaIP:
		default:
			return nil, "Unhandled client quota entity type: " + t
		}
		if n := e[t]; n != nil && *n == "" {
			return nil, "Empty " + t + " not supported"
		}
	}
	if _, ok := e[quotaIP]; ok {
		if len(e) > 1 {
			return nil, "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
		}
		if n := e[quotaIP]; n != nil && net.ParseIP(*n) == nil {
			return nil, *n + " is not a valid IP or resolvable host."
		}
		return ipQuotaKeys, ""
	}
	return clientQuotaKeys, ""
}

// validateQuotaValue checks one value set for key, as Kafka's controller
// does (positive; integral and in range for INT and LONG keys).
func validateQuotaValue(keys map[string]quotaKeyKind, key string, v float64) string {
	kind, ok := keys[key]
	if !ok {
		return "Invalid configuration key " + key
	}
	if !(v > 0) { // NaN too
		return "Quota " + key + " must be greater than 0"
	}
	switch kind {
	case quotaInt:
		if v > math.MaxInt32 {
			return "Proposed value for " + key + " is too large for an INT."
		}
	case quotaLong:
		if v > math.MaxInt64 {
			return "Proposed value for " + key + " is too large for a LONG."
		}
	default:
		if math.IsInf(v, 0) {
			return "Proposed value for " + key + " is not finite."
		}
		return ""
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return key + " cannot be a fractional value."
	}
	return ""
}

// quotaState is the broker's quota store and enforcement state.
type quotaState struct {
	alterMu sync.Mutex // serialises AlterClientQuotas on this broker

	// view is the records of the store in use (the file on a single node,
	// etcd's collection in a cluster) by entity id; nil until there is
	// one. Decoding a new revision publishes index and ips.
	view atomic.Pointer[metastore.View[map[string]quotaRecord]]
	log  *slog.Logger

	// index is what enforcement reads: nil while no quota is configured,
	// so that requests then cost one atomic load.
	index atomic.Pointer[quotaIndex]
	ips   atomic.Pointer[map[string]float64] // connection_creation_rate by IP (conn_quota.go)

	samples  int   // quota.window.num
	windowMs int64 // quota.window.size.seconds, in ms

	ctrlSamples  int   // controller.quota.window.num
	ctrlWindowMs int64 // controller.quota.window.size.seconds, in ms
	// clock, when set (tests), replaces time.Now for the controller
	// mutation and connection creation quotas; atomic, as tests set it
	// while the broker accepts.
	clock atomic.Pointer[func() time.Time]

	sensorMu  sync.Mutex
	sensors   map[sensorKey]*rateSensor
	lastSweep time.Time
}

// now is the quotas' clock: time.Now unless a test set one (setClock).
func (s *quotaState) now() time.Time {
	if f := s.clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// setClock makes f the quotas' clock (tests).
func (s *quotaState) setClock(f func() time.Time) { s.clock.Store(&f) }

// initQuotas reads the quota settings and the single node's quotas.
func (b *Broker) initQuotas() error {
	s := &b.quotas
	s.samples = int(b.cfg.int64Prop("quota.window.num"))
	s.windowMs = b.cfg.int64Prop("quota.window.size.seconds") * 1000
	s.ctrlSamples = int(b.cfg.int64Prop("controller.quota.window.num"))
	s.ctrlWindowMs = b.cfg.int64Prop("controller.quota.window.size.seconds") * 1000
	s.sensors = map[sensorKey]*rateSensor{}
	s.log = b.log
	if b.cfg.clusterConfigured() {
		return nil // the cluster's collection, once joined (startCluster)
	}
	f, err := openListFile(filepath.Join(b.cfg.DataDir, metaDirName, quotasFileName), "quotas", func(q *quotaRecord) string { return q.Entity.id() })
	if err != nil {
		return err
	}
	s.use(f)
	return nil
}

// use makes c the store of the quotas and enforces what it holds.
func (s *quotaState) use(c metastore.Collection) {
	v := metastore.NewView(c, s.decode)
	s.view.Store(v)
	v.Get()
}

// decode turns the stored records into quotas by entity id and publishes
// what enforcement reads of them; one that does not decode is logged and
// ignored.
func (s *quotaState) decode(raw metastore.Records) map[string]quotaRecord {
	recs := make(map[string]quotaRecord, len(raw))
	for id, v := range raw {
		var q quotaRecord
		if err := json.Unmarshal(v, &q); err != nil {
			if s.log != nil {
				s.log.Warn("undecodable client quota in the metadata store, ignored", "id", id, "err", err)
			}
			continue
		}
		recs[id] = q
	}
	s.setIndex(recs)
	return recs
}

// quotaRecords returns the quotas in force by entity id, which the caller
// must not modify, after bringing enforcement in line with the store.
func (b *Broker) quotaRecords() map[string]quotaRecord {
	if v := b.quotas.view.Load(); v != nil {
		return v.Get()
	}
	return nil
}

// updateQuotas stores the changed records (nil Values, or none, removes the
// entity) in the store in use, and enforces them.
func (b *Broker) updateQuotas(ctx context.Context, changed map[string]quotaRecord) error {
	v := b.quotas.view.Load()
	if v == nil {
		return errors.New("no quota store yet")
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

// quotaTimeout bounds a quota change in etcd.
const quotaTimeout = 10 * time.Second

// setIndex publishes what enforcement reads of recs.
func (s *quotaState) setIndex(recs map[string]quotaRecord) {
	s.index.Store(buildQuotaIndex(recs))
	s.ips.Store(buildIPRates(recs))
}
