package broker

// The controller mutation quota (KIP-599): controller_mutation_rate bounds
// the partitions a user or client-id creates (CreateTopics,
// CreatePartitions) and deletes (DeleteTopics) per second, resolved like
// the other client quotas (quota_enforce.go) and enforced by each broker.
//
// It is Kafka's token bucket, not a sampled rate: the bucket holds
// controller.quota.window.num × controller.quota.window.size.seconds × the
// quota tokens (11 s worth), starts full, refills at the quota, and each
// mutated partition takes one token; it may go below zero. Below zero the
// quota is exhausted, and the time to refill to zero, -tokens/quota s, is
// the throttle time.
//
// Clients recent enough to understand THROTTLING_QUOTA_EXCEEDED
// (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) get the strict
// quota: a topic is refused with THROTTLING_QUOTA_EXCEEDED while the bucket
// is below zero, else it is accepted whole, whatever its size; the answer's
// throttle_time_ms is that of the last refusal. Older clients get the
// permissive one: every mutation is done and the answer is throttled when
// it left the bucket below zero. A throttled answer mutes the connection as
// other quotas do. As in KRaft, validate_only requests use the quota too.

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// mutationQuota is one request's controller mutation quota; nil when none
// applies.
type mutationQuota struct {
	s          *quotaState
	q          resolvedQuota
	strict     bool
	throttleMs int64
	at         time.Time // when throttleMs was set
}

// mutationQuotaFor returns r's controller mutation quota, strict from
// version strictSince on; nil when no quota applies.
func (b *Broker) mutationQuotaFor(r *request, strictSince int16) *mutationQuota {
	ix := b.quotas.index.Load()
	if ix == nil {
		return nil
	}
	q := b.quotasFor(r, ix).q[kindMutation]
	if q.sensor == nil {
		return nil
	}
	return &mutationQuota{s: &b.quotas, q: q, strict: r.hdr.Version >= strictSince}
}

// record charges n partition mutations; false when the strict quota
// refuses them (the caller answers THROTTLING_QUOTA_EXCEEDED).
func (m *mutationQuota) record(n int) bool {
	if m == nil {
		return true
	}
	now := m.s.now()
	t, refused := m.q.sensor.mutate(float64(n), now.UnixMilli(), m.s.ctrlSamples, m.s.ctrlWindowMs, m.q.bound, m.strict)
	if t > 0 {
		m.throttleMs, m.at = t, now
	}
	return !refused
}

// finish sets r's throttle from the quota: the last throttle time less
// the time since, as Kafka's AbstractControllerMutationQuota.throttleTime.
func (m *mutationQuota) finish(r *request) {
	if m == nil || m.throttleMs == 0 {
		return
	}
	t := m.throttleMs - m.s.now().Sub(m.at).Milliseconds()
	if t > 0 && t > r.throttleMs {
		r.throttleMs, r.throttleKind = t, kindMutation
	}
}

// throttledErr is the per-topic answer to a refused mutation.
var throttledErr = kerr.ThrottlingQuotaExceeded

// mutate is Kafka's TokenBucket under a Sensor: strict checks the bucket
// before taking v tokens (refusing them while it is below zero), else the
// tokens are taken and then checked. It returns the throttle time in ms.
// v is also recorded in the sampled rate, for the metrics.
func (r *rateSensor) mutate(v float64, now int64, samples int, windowMs int64, bound float64, strict bool) (int64, bool) {
	r.mu.Lock()
	burst := float64(samples) * float64(windowMs) / 1000 * bound
	refill := func() {
		r.tokens = min(burst, r.tokens+bound*float64(now-r.bucketAt)/1000)
		r.bucketAt = now
	}
	throttle := func() int64 { return int64(math.Round(-r.tokens / bound * 1000)) }
	refill()
	if strict && r.tokens < 0 {
		t := throttle()
		r.mu.Unlock()
		return t, true
	}
	r.tokens = min(burst, r.tokens-v)
	var t int64
	if !strict && r.tokens < 0 {
		t = throttle()
	}
	r.mu.Unlock()
	r.record(v, now, samples, windowMs, bound, false)
	r.mu.Lock()
	r.bound = bound
	r.mu.Unlock()
	return t, false
}
