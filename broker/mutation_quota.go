package broker

// The controller mutation quota (KIP-599): controller_mutation_rate bounds
// the partitions a user or client-id creates (CreateTopics,
// CreatePartitions) and deletes (DeleteTopics) per second, resolved like
// the other client quotas (package quota) and enforced by each broker.
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
	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kerr"
)

// mutationQuotaFor returns r's controller mutation quota, strict from
// version strictSince on; nil when no quota applies.
func (b *Broker) mutationQuotaFor(r *request, strictSince int16) *quota.MutationQuota {
	ix := b.quotas.Index()
	if ix == nil {
		return nil
	}
	return b.quotas.Mutation(b.quotasFor(r, ix), r.hdr.Version >= strictSince)
}

// finishMutations sets r's throttle from its mutation quota, when that is
// the larger, as Kafka's sendResponseMaybeThrottleWithControllerQuota.
func finishMutations(r *request, mq *quota.MutationQuota) {
	if t := mq.Throttle(); t > 0 && t > r.throttleMs {
		r.throttleMs, r.throttleKind = t, quota.Mutation
	}
}

// throttledErr is the per-topic answer to a refused mutation.
var throttledErr = kerr.ThrottlingQuotaExceeded
