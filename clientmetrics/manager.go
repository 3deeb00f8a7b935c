package clientmetrics

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metastore"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Defaults of Config.
const (
	DefaultTelemetryMaxBytes = 1 << 20 // telemetry.max.bytes
	DefaultMaxInstances      = 16384
	DefaultMaxSeries         = 20000
	DefaultExpiry            = 5 * time.Minute
)

// AcceptedCompressionTypes are the codecs clients may compress pushes
// with, in Kafka's order of preference: zstd, lz4, gzip, snappy.
var AcceptedCompressionTypes = []int8{4, 3, 1, 2}

// Config configures a Manager. The zero value is usable.
type Config struct {
	// TelemetryMaxBytes is telemetry.max.bytes: the largest push
	// accepted (compressed).
	TelemetryMaxBytes int32
	// MaxInstances bounds the client instances kept; MaxSeries the
	// exported series.
	MaxInstances, MaxSeries int
	// Expiry is the least time a client instance is kept after its last
	// request (at least 3 push intervals).
	Expiry time.Duration
	// Decompress expands a push's payload compressed with codec (Kafka's
	// ids: 1 gzip, 2 snappy, 3 lz4, 4 zstd).
	Decompress func(codec int8, src []byte) ([]byte, error)
	Now        func() time.Time
	Log        *slog.Logger
}

// Manager keeps the subscriptions, the client instances and their
// exported metrics. Its methods are safe for concurrent use.
type Manager struct {
	cfg  Config
	view atomic.Pointer[metastore.View[map[string]*Subscription]]

	mu        sync.Mutex
	instances map[[16]byte]*instance
	series    int // exported series, over every instance
	dropped   atomic.Int64
}

// instance is a client instance as a Manager knows it. Guarded by
// Manager.mu.
type instance struct {
	id             [16]byte
	client         Client
	rev            int64 // the subscriptions' revision it was matched at
	subscriptionID int32
	metrics        []string
	intervalMs     int32
	lastGet        int64 // ms
	lastPush       int64 // ms
	lastSeen       time.Time
	terminating    bool
	lastErr        int16
	series         map[string]*series // by family name + labels
}

// Client is what a client says of itself: the connection's client id and
// source address and port, and the software name and version from its
// ApiVersions.
type Client struct {
	ClientID, SoftwareName, SoftwareVersion string
	SourceAddress                           string
	SourcePort                              int
}

// New returns a Manager with cfg; its subscriptions are in memory until
// Use gives it a collection.
func New(cfg Config) *Manager {
	if cfg.TelemetryMaxBytes <= 0 {
		cfg.TelemetryMaxBytes = DefaultTelemetryMaxBytes
	}
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = DefaultMaxInstances
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	if cfg.Expiry <= 0 {
		cfg.Expiry = DefaultExpiry
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	m := &Manager{cfg: cfg, instances: map[[16]byte]*instance{}}
	m.Use(metastore.Memory(nil))
	return m
}

// Use makes c the store of the subscriptions.
func (m *Manager) Use(c metastore.Collection) {
	m.view.Store(metastore.NewView(c, decodeSubscriptions))
}

func (m *Manager) coll() metastore.Collection { return m.view.Load().Collection() }

func (m *Manager) subscriptions() map[string]*Subscription { return m.view.Load().Get() }

func (m *Manager) revision() int64 {
	_, rev := m.coll().Snapshot()
	return rev
}

// TelemetrySubscription is GetTelemetrySubscriptions' answer.
type TelemetrySubscription struct {
	ClientInstanceID         [16]byte
	SubscriptionID           int32
	AcceptedCompressionTypes []int8
	PushIntervalMs           int32
	TelemetryMaxBytes        int32
	DeltaTemporality         bool
	RequestedMetrics         []string
}

// GetSubscriptions answers a GetTelemetrySubscriptions from client for
// instance id (zero: a new instance id). The error code is Kafka's (0,
// THROTTLING_QUOTA_EXCEEDED); the answer is valid only without one.
func (m *Manager) GetSubscriptions(id [16]byte, client Client) (TelemetrySubscription, int16) {
	if id == ([16]byte{}) {
		id = m.newInstanceID()
	}
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	inst := m.instanceLocked(id, client, now)
	// Kafka's validateGetRequest: a GetTelemetrySubscriptions sooner than
	// the push interval after the last request is throttled.
	if ms := now.UnixMilli(); ms-max(inst.lastGet, inst.lastPush) < int64(inst.intervalMs) {
		return TelemetrySubscription{}, kerr.ThrottlingQuotaExceeded.Code
	} else {
		inst.lastGet = ms
	}
	inst.lastErr = 0
	return TelemetrySubscription{
		ClientInstanceID:         id,
		SubscriptionID:           inst.subscriptionID,
		AcceptedCompressionTypes: slices.Clone(AcceptedCompressionTypes),
		PushIntervalMs:           inst.intervalMs,
		TelemetryMaxBytes:        m.cfg.TelemetryMaxBytes,
		DeltaTemporality:         true,
		RequestedMetrics:         slices.Clone(inst.metrics),
	}, 0
}

// Push is one PushTelemetry.
type Push struct {
	ClientInstanceID [16]byte
	SubscriptionID   int32
	Terminating      bool
	CompressionType  int8
	Metrics          []byte
}

// Push handles a PushTelemetry from client and returns Kafka's error code
// for it (0 if accepted) and a message.
func (m *Manager) Push(p Push, client Client) (int16, string) {
	if p.ClientInstanceID == ([16]byte{}) || p.ClientInstanceID == reservedOne {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid request from the client [%s], invalid client instance id", uuidString(p.ClientInstanceID))
	}
	now := m.cfg.Now()
	m.mu.Lock()
	inst := m.instanceLocked(p.ClientInstanceID, client, now)
	code, msg := m.validatePushLocked(inst, p, now)
	inst.terminating = p.Terminating
	inst.lastErr = code
	m.mu.Unlock()
	if code != 0 || len(p.Metrics) == 0 {
		return code, msg
	}
	data := p.Metrics
	if p.CompressionType != 0 {
		d, err := m.cfg.Decompress(p.CompressionType, p.Metrics)
		if err != nil {
			return kerr.InvalidRecord.Code, "The telemetry payload does not decompress: " + err.Error()
		}
		data = d
	}
	points, err := decodeOTLP(data)
	if err != nil {
		return kerr.InvalidRecord.Code, "The telemetry payload is not OTLP metrics: " + err.Error()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.instances[p.ClientInstanceID]; cur != nil {
		m.recordLocked(cur, points, now)
	}
	return 0, ""
}

func (m *Manager) validatePushLocked(inst *instance, p Push, now time.Time) (int16, string) {
	id := uuidString(p.ClientInstanceID)
	if inst.terminating {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Client [%s] sent the previous request with state terminating to TRUE, can not accept any requests after that", id)
	}
	// Kafka's maybeUpdatePushRequestTimestamp: the first push after a
	// GetTelemetrySubscriptions is accepted at once (clients jitter
	// their interval), later ones one interval apart.
	ms := now.UnixMilli()
	accept := inst.lastGet > inst.lastPush || ms-inst.lastPush >= int64(inst.intervalMs)
	if accept {
		inst.lastPush = ms
	} else if !p.Terminating {
		return kerr.ThrottlingQuotaExceeded.Code, fmt.Sprintf("Request from the client [%s] arrived before the next push interval time", id)
	}
	if p.SubscriptionID != inst.subscriptionID {
		return kerr.UnknownSubscriptionID.Code, fmt.Sprintf("Unknown client subscription id for the client [%s]", id)
	}
	if p.CompressionType < 0 || p.CompressionType > 4 {
		return kerr.UnsupportedCompressionType.Code, fmt.Sprintf("Unknown compression type [%d] is received in telemetry request from [%s]", p.CompressionType, id)
	}
	if len(p.Metrics) > int(m.cfg.TelemetryMaxBytes) {
		return kerr.TelemetryTooLarge.Code, fmt.Sprintf("Telemetry request from [%s] is larger than the maximum allowed size [%d]", id, m.cfg.TelemetryMaxBytes)
	}
	return 0, ""
}

// reservedOne is Kafka's Uuid.ONE_UUID, reserved like the zero uuid.
var reservedOne = [16]byte{15: 1}

// instanceLocked returns the instance id, made (or matched again, when
// the subscriptions changed since) for client. Lock held.
func (m *Manager) instanceLocked(id [16]byte, client Client, now time.Time) *instance {
	m.expireLocked(now)
	rev := m.revision()
	inst := m.instances[id]
	if inst == nil {
		if len(m.instances) >= m.cfg.MaxInstances {
			m.evictOldestLocked()
		}
		inst = &instance{id: id, client: client, rev: -1}
		m.instances[id] = inst
	}
	inst.lastSeen = now
	if inst.rev != rev {
		m.matchLocked(inst, rev)
	}
	return inst
}

// matchLocked matches inst against every subscription (see the package
// documentation).
func (m *Manager) matchLocked(inst *instance, rev int64) {
	interval := int32(DefaultIntervalMs)
	set := map[string]bool{}
	all := false
	for _, s := range m.subscriptions() {
		if !inst.matches(s) {
			continue
		}
		for _, x := range s.Metrics {
			set[x] = true
			all = all || x == AllMetrics
		}
		interval = min(interval, s.IntervalMs)
	}
	metrics := slices.Sorted(maps.Keys(set))
	if all {
		metrics = []string{AllMetrics}
	}
	inst.rev, inst.metrics, inst.intervalMs = rev, metrics, interval
	inst.subscriptionID = subscriptionID(metrics, interval, inst.id)
}

func (inst *instance) matches(s *Subscription) bool {
	for k, rx := range s.Match {
		var v string
		switch k {
		case MatchClientID:
			v = inst.client.ClientID
		case MatchClientInstanceID:
			v = uuidString(inst.id)
		case MatchClientSoftwareName:
			v = inst.client.SoftwareName
		case MatchClientSoftwareVersion:
			v = inst.client.SoftwareVersion
		case MatchClientSourceAddress:
			v = inst.client.SourceAddress
		case MatchClientSourcePort:
			v = strconv.Itoa(inst.client.SourcePort)
		}
		if !rx.MatchString(v) {
			return false
		}
	}
	return true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// subscriptionID is a CRC32C of the metrics (written as Java prints a
// set) and the interval, XORed with a hash of the instance id (Java's
// Uuid.hashCode), as Kafka computes it.
func subscriptionID(metrics []string, intervalMs int32, id [16]byte) int32 {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, x := range metrics {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	b.WriteByte(']')
	b.WriteString(strconv.Itoa(int(intervalMs)))
	crc := int32(crc32.Checksum(b.Bytes(), castagnoli))
	var hi, lo int64
	for i := range 8 {
		hi = hi<<8 | int64(id[i])
		lo = lo<<8 | int64(id[8+i])
	}
	x := hi ^ lo
	return crc ^ int32(x>>32) ^ int32(x)
}

// expireLocked forgets instances not seen for max(3 push intervals,
// Expiry), with their series.
func (m *Manager) expireLocked(now time.Time) {
	for id, inst := range m.instances {
		ttl := max(m.cfg.Expiry, 3*time.Duration(inst.intervalMs)*time.Millisecond)
		if now.Sub(inst.lastSeen) > ttl {
			m.dropLocked(id)
		}
	}
}

func (m *Manager) evictOldestLocked() {
	var oldest *instance
	for _, inst := range m.instances {
		if oldest == nil || inst.lastSeen.Before(oldest.lastSeen) {
			oldest = inst
		}
	}
	if oldest != nil {
		m.dropLocked(oldest.id)
	}
}

func (m *Manager) dropLocked(id [16]byte) {
	if inst := m.instances[id]; inst != nil {
		m.series -= len(inst.series)
		delete(m.instances, id)
	}
}

// Instances returns the number of client instances kept.
func (m *Manager) Instances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.instances)
}

func (m *Manager) newInstanceID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		m.mu.Lock()
		_, taken := m.instances[id]
		m.mu.Unlock()
		if !taken && id != reservedOne {
			return id
		}
	}
}

// uuidString formats id as Kafka's Uuid.toString does: URL-safe base64
// without padding.
func uuidString(id [16]byte) string {
	return base64URL.EncodeToString(id[:])
}
