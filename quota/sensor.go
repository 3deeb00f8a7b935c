package quota

import (
	"math"
	"sync"
)

// sensorKey names a shared rate: its kind and the metric tags of the
// entity that matched.
type sensorKey struct {
	kind         Kind
	user, client string
}

// Sensor is Kafka's Rate over a SampledStat, and for a controller mutation
// quota its TokenBucket. Its methods are safe for concurrent use.
type Sensor struct {
	key sensorKey

	mu       sync.Mutex
	samples  []rateSample
	cur      int
	lastUsed int64
	bound    float64 // the bound last checked against

	// The token bucket of a controller mutation quota.
	tokens   float64
	bucketAt int64 // ms; 0 before first use, so the bucket starts full
}

type rateSample struct {
	start int64 // ms
	value float64
}

func (r *Sensor) idleSince(now int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now - r.lastUsed
}

// record adds v at now (ms) and, when check is set, returns the throttle
// time (ms) for bound.
func (r *Sensor) record(v float64, now int64, samples int, windowMs int64, bound float64, check bool) int64 {
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
func (r *Sensor) measure(now int64, samples int, windowMs int64) (float64, float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rate, _ := r.measureLocked(now, samples, windowMs)
	return rate, r.bound
}

// measureLocked is Kafka's Rate.measure: the rate and the window (ms) it
// is taken over. Lock should be held.
func (r *Sensor) measureLocked(now int64, samples int, windowMs int64) (float64, int64) {
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

// mutate is Kafka's TokenBucket under a Sensor: strict checks the bucket
// before taking v tokens (refusing them while it is below zero), else the
// tokens are taken and then checked. It returns the throttle time in ms.
// v is also recorded in the sampled rate, for the metrics.
func (r *Sensor) mutate(v float64, now int64, samples int, windowMs int64, bound float64, strict bool) (int64, bool) {
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
