package broker

// Quota enforcement, with Kafka's semantics (ClientQuotaManager and
// ClientRequestQuotaManager).
//
// # Which quota applies
//
// Each quota type (produce, fetch, request) is resolved on its own: the
// first entity in this order that sets the type's key gives the bound
// (KIP-55 precedence):
//
//	/users/<u>/clients/<c>
//	/users/<u>/clients/<default>
//	/users/<u>
//	/users/<default>/clients/<c>
//	/users/<default>/clients/<default>
//	/users/<default>
//	/clients/<c>
//	/clients/<default>
//
// The user is the principal's name (ANONYMOUS without authentication), the
// client-id the request header's ("" when null). Connections share a rate
// when the matched entity names them alike: a /users/u quota is one rate for
// all of u's clients, a default entity is one rate per actual user or
// client-id.
//
// # Rates and throttle time
//
// A rate is Kafka's sampled Rate: quota.window.num samples (11) of
// quota.window.size.seconds (1); a sample older than num×size is reset; the
// rate is the samples' sum over the time since the oldest sample, stretched
// to at least (num-1)×size. A request is recorded first, then checked:
// when the rate exceeds the bound B the throttle time is
// (rate-B)/B × window, rounded to ms. Request quotas record the handler's
// time as a percentage of one thread (request_percentage), and their
// throttle is capped at one window.
//
// Produce records the request's size, Fetch (consumers, not followers) its
// response size; a Fetch is also capped at B×(num-1)×size bytes, and a
// throttled Fetch is answered empty (its bytes unrecorded), as Kafka does.
//
// # Throttling (KIP-219)
//
// The broker answers at once with throttle_time_ms set and then mutes the
// connection: it reads (or handles) nothing more from it until the throttle
// time has passed. With no quota configured the only cost on a request is
// one atomic load (Broker.quotas.index is nil).

import (
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaKind is an enforced quota type.
type quotaKind int8

const (
	kindProduce quotaKind = iota
	kindFetch
	kindRequest
	kindMutation // controller_mutation_rate (KIP-599), mutation_quota.go
	numQuotaKinds
)

var (
	quotaKindKeys  = [numQuotaKinds]string{keyProducerByteRate, keyConsumerByteRate, keyRequestPercentage, keyControllerMutationRate}
	quotaKindNames = [numQuotaKinds]string{"produce", "fetch", "request", "controller_mutation"}
)

// quotaIndex is the enforced quotas, by kind and entity id.
type quotaIndex struct {
	bounds [numQuotaKinds]map[string]float64
}

// buildQuotaIndex indexes records; nil when none sets an enforced key.
func buildQuotaIndex(recs map[string]quotaRecord) *quotaIndex {
	ix := &quotaIndex{}
	any := false
	for id, q := range recs {
		for k := range numQuotaKinds {
			if v, ok := q.Values[quotaKindKeys[k]]; ok {
				if ix.bounds[k] == nil {
					ix.bounds[k] = map[string]float64{}
				}
				ix.bounds[k][id] = v
				any = true
			}
		}
	}
	if !any {
		return nil
	}
	return ix
}

// sensorKey names a shared rate: its kind and the metric tags of the
// entity that matched.
type sensorKey struct {
	kind         quotaKind
	user, client string
}

// resolvedQuota is one kind's quota for a (user, client-id): nil sensor
// when there is none.
type resolvedQuota struct {
	bound  float64
	sensor *rateSensor
}

// connQuotas caches a connection's resolved quotas for one index, user and
// client-id.
type connQuotas struct {
	ix           *quotaIndex
	user, client string
	q            [numQuotaKinds]resolvedQuota
}

// resolve finds kind's bound for (user, client) by precedence, with the
// tags of its shared rate.
func (ix *quotaIndex) resolve(kind quotaKind, user, client string) (float64, string, string, bool) {
	m := ix.bounds[kind]
	if len(m) == 0 {
		return 0, "", "", false
	}
	u, c := "users/"+url.PathEscape(user), "clients/"+url.PathEscape(client)
	du, dc := "users/"+quotaDefaultName, "clients/"+quotaDefaultName
	order := [...]struct {
		id           string
		user, client string
	}{
		{u + "/" + c, user, client},
		{u + "/" + dc, user, client},
		{u, user, ""},
		{du + "/" + c, user, client},
		{du + "/" + dc, user, client},
		{du, user, ""},
		{c, "", client},
		{dc, "", client},
	}
	for _, o := range order {
		if v, ok := m[o.id]; ok {
			return v, o.user, o.client, true
		}
	}
	return 0, "", "", false
}

// quotasFor returns the request's resolved quotas under ix.
func (b *Broker) quotasFor(r *request, ix *quotaIndex) *connQuotas {
	user := r.principal()
	if i := strings.IndexByte(user, ':'); i >= 0 {
		user = user[i+1:]
	}
	client := ""
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	var c *conn
	if r.conn != nil {
		c = r.conn
		if cq := c.quotas.Load(); cq != nil && cq.ix == ix && cq.user == user && cq.client == client {
			return cq
		}
	}
	cq := &connQuotas{ix: ix, user: user, client: client}
	for k := range numQuotaKinds {
		if bound, tu, tc, ok := ix.resolve(k, user, client); ok {
			cq.q[k] = resolvedQuota{bound: bound, sensor: b.quotas.sensor(sensorKey{k, tu, tc})}
		}
	}
	if c != nil {
		c.quotas.Store(cq)
	}
	return cq
}

// sensor returns the shared rate of key, creating it; rates unused for an
// hour are dropped (Kafka expires its quota sensors alike).
func (s *quotaState) sensor(key sensorKey) *rateSensor {
	s.sensorMu.Lock()
	defer s.sensorMu.Unlock()
	if r := s.sensors[key]; r != nil {
		return r
	}
	now := time.Now()
	if now.Sub(s.lastSweep) > time.Minute {
		s.lastSweep = now
		for k, r := range s.sensors {
			if r.idleSince(now.UnixMilli()) > time.Hour.Milliseconds() {
				delete(s.sensors, k)
			}
		}
	}
	r := &rateSensor{key: key}
	s.sensors[key] = r
	return r
}

// record adds v to q's rate at now and returns the throttle time in ms
// (0 when the rate is within the bound); check false records without
// checking (an unrecord).
func (s *quotaState) record(q resolvedQuota, v float64, now time.Time, check bool) int64 {
	t := q.sensor.record(v, now.UnixMilli(), s.samples, s.windowMs, q.bound, check)
	if q.sensor.key.kind == kindRequest {
		t = min(t, s.windowMs)
	}
	return t
}

// maxFetchBytes is the most a throttled consumer may fetch at once: what
// the quota allows in (num-1) windows, as Kafka's getMaxValueInQuotaWindow.
func (s *quotaState) maxFetchBytes(q resolvedQuota) int64 {
	v := q.bound * float64(s.samples-1) * float64(s.windowMs) / 1000
	return int64(min(v, math.MaxInt32))
}

// rateSensor is Kafka's Rate over a SampledStat.
type rateSensor struct {
	key sensorKey

	mu       sync.Mutex
	samples  []rateSample
	cur      int
	lastUsed int64
	bound    float64 // the bound last checked against

	// The token bucket of a controller mutation quota (mutation_quota.go).
	tokens   float64
	bucketAt int64 // ms; 0 before first use, so the bucket starts full
}

type rateSample struct {
	start int64 // ms
	value float64
}

func (r *rateSensor) idleSince(now int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now - r.lastUsed
}

// record adds v at now (ms) and, when check is set, returns the throttle
// time (ms) for bound.
func (r *rateSensor) record(v float64, now int64, samples int, windowMs int64, bound float64, check bool) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastUsed = now
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{start: now})
		r.cur = 0
	}
	if now-r.samples[r.cur].start >= windowMs {
		r.cur = (r.cur + 1) % max(samples, 1)
		if r.cur >= len(r.samples) {
			r.samples = append(r.samples, rateSample{start: now})
		} else {
			r.samples[r.cur] = rateSample{start: now}
		}
	}
	r.samples[r.cur].value += v
	if check {
		r.bound = bound
	}
	if !check {
		return 0
	}
	rate, window := r.measureLocked(now, samples, windowMs)
	if rate <= bound {
		return 0
	}
	return int64(math.Round((rate - bound) / bound * float64(window)))
}

// measure returns the current rate (per second) and the bound it was last
// checked against.
func (r *rateSensor) measure(now int64, samples int, windowMs int64) (float64, float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rate, _ := r.measureLocked(now, samples, windowMs)
	return rate, r.bound
}

// measureLocked is Kafka's Rate.measure: the rate and the window (ms) it
// is taken over. Lock should be held.
func (r *rateSensor) measureLocked(now int64, samples int, windowMs int64) (float64, int64) {
	expire := int64(samples) * windowMs
	total := 0.0
	oldest := now
	for i := range r.samples {
		s := &r.samples[i]
		if now-s.start >= expire {
			*s = rateSample{start: now}
		}
		total += s.value
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full, minFull := elapsed/windowMs, int64(samples-1); full < minFull {
		elapsed += (minFull - full) * windowMs
	}
	window := max(elapsed, 1)
	return total / (float64(window) / 1000), window
}

// quotaExempt tells whether a request is outside the request quota, as
// Kafka exempts ApiVersions, the SASL exchange and replication.
func quotaExempt(r *request) bool {
	switch kmsg.Key(r.hdr.Key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	case kmsg.Fetch:
		return fetchReplicaID(r.msg.(*kmsg.FetchRequest)) >= 0
	}
	return false
}

// throttleAfterHandler records a handled request against the quotas of its
// client (produce bytes and request time; Fetch records its own) and sets
// its throttle time.
func (b *Broker) throttleAfterHandler(r *request, ix *quotaIndex, handlerTime time.Duration) {
	if quotaExempt(r) {
		return
	}
	cq := b.quotasFor(r, ix)
	now := time.Now()
	var bw, req int64
	produce, isProduce := r.msg.(*kmsg.ProduceRequest)
	if isProduce && cq.q[kindProduce].sensor != nil {
		bw = b.quotas.record(cq.q[kindProduce], float64(r.size), now, true)
	}
	if cq.q[kindRequest].sensor != nil && (!isProduce || produce.Acks != 0) {
		req = b.quotas.record(cq.q[kindRequest], requestPercent(handlerTime), now, true)
	}
	// The larger throttle wins, with one a handler set (the controller
	// mutation quota), as Kafka's sendResponseMaybeThrottleWithControllerQuota.
	switch {
	case bw > 0 && bw > req && bw > r.throttleMs:
		r.throttleMs, r.throttleKind = bw, kindProduce
	case req > 0 && req >= r.throttleMs:
		r.throttleMs, r.throttleKind = req, kindRequest
	}
}

// requestPercent converts handler time to the request quota's unit: a
// percentage of one thread over a second.
func requestPercent(d time.Duration) float64 {
	return float64(d.Nanoseconds()) * 100 / float64(time.Second)
}

// applyThrottle sets a response's throttle time, mutes the connection for
// it and counts it. It is called by conn.finish.
func (c *conn) applyThrottle(r *request, resp kmsg.Response) {
	if r.throttleMs <= 0 {
		return
	}
	if resp != nil {
		if st, ok := resp.(kmsg.SetThrottleResponse); ok {
			st.SetThrottle(int32(min(r.throttleMs, math.MaxInt32)))
		}
	}
	c.mutedUntil.Store(time.Now().Add(time.Duration(r.throttleMs) * time.Millisecond).UnixNano())
	c.b.metrics().throttle[r.throttleKind].Observe(float64(r.throttleMs))
}

// waitMuted waits while the connection is muted by a throttle; false when
// the connection is closing.
func (c *conn) waitMuted() bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}
