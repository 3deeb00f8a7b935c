// Package clientmetrics is Gregor's side of KIP-714, client metrics and
// observability: the CLIENT_METRICS subscriptions an operator sets with
// kafka-client-metrics (IncrementalAlterConfigs, resource type 16), what a
// client is asked to send (GetTelemetrySubscriptions), and the metrics it
// pushes (PushTelemetry), which Gregor exports on the admin listener's
// Prometheus endpoint. It owns its state and imports nothing of the
// broker's; the broker's handlers call a Manager.
//
// # Subscriptions
//
// A subscription is a name and three configs, validated as Kafka's
// ClientMetricsConfigs validates them: metrics (a list of metric name
// prefixes, "*" for all, empty for none), interval.ms (the push interval,
// 100 to 3600000, default 300000) and match (a list of key=regex, the keys
// client_id, client_instance_id, client_software_name,
// client_software_version, client_source_address and client_source_port,
// each regex matching the whole value; no match criteria matches every
// client). Subscriptions are records of a metastore.Collection keyed by
// name, each {"name": ..., "configs": {...}}: a file under __meta on a
// single node, etcd keys in a cluster, so they survive restarts and every
// broker of a cluster answers alike. A subscription left with no configs
// is removed.
//
// # Client instances
//
// As in Kafka's ClientMetricsManager, each client instance (its uuid; a
// client that sends the zero uuid is given a new one) is matched against
// every subscription when it is first seen and again after any
// subscription changes: its requested metrics are the union of the
// matching subscriptions' prefixes (just "*" when one of them has it), its
// push interval the smallest of theirs (the default when none matches),
// and its subscription id a CRC32C of the metrics and interval XORed with
// a hash of the instance id. A second GetTelemetrySubscriptions, or a
// PushTelemetry, sooner than the push interval after the last one is
// THROTTLING_QUOTA_EXCEEDED (the first push after a
// GetTelemetrySubscriptions is always accepted, since clients jitter their
// interval); a push with another subscription id is
// UNKNOWN_SUBSCRIPTION_ID, with an unknown compression type
// UNSUPPORTED_COMPRESSION_TYPE, larger than telemetry.max.bytes
// TELEMETRY_TOO_LARGE, after a terminating push INVALID_REQUEST, and one
// whose payload does not decompress or decode as OTLP MetricsData
// INVALID_RECORD. The instances kept are bounded (MaxInstances, the least
// recently seen evicted) and forgotten after max(3 × push interval,
// Expiry) without a request.
//
// # Export (Gregor's addition)
//
// Kafka hands pushed metrics to a ClientTelemetryReceiver plugin and
// exports nothing itself. Gregor decodes the OTLP payload and keeps the
// latest value of each gauge and sum data point (delta sums are added up
// into totals; histograms give _count and _sum) as a Prometheus series
// named after the metric (org.apache.kafka.producer.record.send.rate →
// org_apache_kafka_producer_record_send_rate), labelled with
// client_instance_id, the resource's attributes and the point's own. The
// series are bounded (MaxSeries in all; new series past the bound are
// dropped and counted in gregor_client_metrics_series_dropped_total) and a
// client's series go when the client instance is forgotten.
package clientmetrics
