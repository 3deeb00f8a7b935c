package broker

// GetTelemetrySubscriptions (71): v0
//
// KIP-714: a client asks which of its metrics to push, and how often. The
// answer is package clientmetrics' (the matching CLIENT_METRICS
// subscriptions; a client instance id generated for a client that sends
// the zero uuid; THROTTLING_QUOTA_EXCEEDED when asked again sooner than the
// push interval). Needs no ACL, as in Kafka. Kafka 4.4 serves this API only
// with a client telemetry receiver plugin configured; Gregor always does,
// its receiver being its own /metrics (clientmetrics.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.GetTelemetrySubscriptions, 0, 0, (*Broker).handleGetTelemetrySubscriptions)
}

func (b *Broker) handleGetTelemetrySubscriptions(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	sub, code := b.cm.GetSubscriptions(req.ClientInstanceID, telemetryClient(r))
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	resp.ClientInstanceID = sub.ClientInstanceID
	resp.SubscriptionID = sub.SubscriptionID
	resp.AcceptedCompressionTypes = sub.AcceptedCompressionTypes
	resp.PushIntervalMillis = sub.PushIntervalMs
	resp.TelemetryMaxBytes = sub.TelemetryMaxBytes
	resp.DeltaTemporality = sub.DeltaTemporality
	resp.RequestedMetrics = sub.RequestedMetrics
	if resp.RequestedMetrics == nil {
		resp.RequestedMetrics = []string{}
	}
	return resp, nil
}
