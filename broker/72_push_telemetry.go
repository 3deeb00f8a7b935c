package broker

// PushTelemetry (72): v0
//
// KIP-714: a client pushes its metrics, an OTLP MetricsData payload,
// optionally compressed (gzip, snappy, lz4, zstd, decompressed as record
// batches are). Package clientmetrics checks it as Kafka's
// ClientMetricsManager does (INVALID_REQUEST for a reserved instance id
// or a push after a terminating one, THROTTLING_QUOTA_EXCEEDED sooner than
// the push interval, UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE,
// TELEMETRY_TOO_LARGE over telemetry.max.bytes, INVALID_RECORD when the
// payload does not decompress or decode) and exports the metrics on
// /metrics. Needs no ACL, as in Kafka.

import (
	"github.com/gregor-broker/gregor/clientmetrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.PushTelemetry, 0, 0, (*Broker).handlePushTelemetry) }

func (b *Broker) handlePushTelemetry(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	code, msg := b.cm.Push(clientmetrics.Push{
		ClientInstanceID: req.ClientInstanceID,
		SubscriptionID:   req.SubscriptionID,
		Terminating:      req.Terminating,
		CompressionType:  req.CompressionType,
		Metrics:          req.Metrics,
	}, telemetryClient(r))
	if code != 0 {
		b.log.Debug("push telemetry refused", "code", code, "msg", msg)
	}
	resp.ErrorCode = code
	return resp, nil
}
