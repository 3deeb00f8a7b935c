package quota

import "time"

// MutationQuota is one request's controller mutation quota (KIP-599); a
// nil one allows everything.
type MutationQuota struct {
	m          *Manager
	q          resolved
	strict     bool
	throttleMs int64
	at         time.Time // when throttleMs was set
}

// Mutation returns the controller mutation quota of s, strict for clients
// that understand THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+); nil when none applies.
func (m *Manager) Mutation(s *Set, strict bool) *MutationQuota {
	q := s.q[Mutation]
	if q.sensor == nil {
		return nil
	}
	return &MutationQuota{m: m, q: q, strict: strict}
}

// Record charges n partition mutations; false when the strict quota
// refuses them (the caller answers THROTTLING_QUOTA_EXCEEDED).
func (mq *MutationQuota) Record(n int) bool {
	if mq == nil {
		return true
	}
	now := mq.m.Now()
	t, refused := mq.q.sensor.mutate(float64(n), now.UnixMilli(), mq.m.cfg.MutationSamples, mq.m.cfg.MutationWindowMs, mq.q.bound, mq.strict)
	if t > 0 {
		mq.throttleMs, mq.at = t, now
	}
	return !refused
}

// Throttle is the request's throttle time in ms: the last throttle time
// less the time since, as Kafka's AbstractControllerMutationQuota
// throttleTime; 0 when none.
func (mq *MutationQuota) Throttle() int64 {
	if mq == nil || mq.throttleMs == 0 {
		return 0
	}
	return max(mq.throttleMs-mq.m.Now().Sub(mq.at).Milliseconds(), 0)
}
