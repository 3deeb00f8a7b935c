package conformance

// Notes explain known differences in the report, keyed "API: scenario".
// Each was measured against Kafka 4.4.0 (make conformance -v prints both
// answers in full).
var Notes = map[string]string{
	"ApiVersions: v3: error code and the advertised keys":                      "Kafka advertises more APIs (share groups, streams groups, KRaft and inter-broker APIs, telemetry); the versions both use are listed at the end.",
	"Metadata: unknown topic, auto-create on (first and later answer)":         "Kafka 4.4 answers the request that triggers the auto-creation with UNKNOWN_TOPIC_OR_PARTITION (the topic appears on a later request); Gregor creates the topic before answering and returns it at once. Clients retry either answer; not changed.",
	"CreateTopics: 3 partitions: answer with configs":                          "Kafka lists topic configs Gregor does not know (compression.*.level, remote.*, errors.deadletterqueue.group.enable, max.decompressed.message.bytes), and reports min.insync.replicas with source DYNAMIC_DEFAULT_BROKER_CONFIG (3): KRaft's format writes a cluster-level min.insync.replicas record. Gregor: DEFAULT_CONFIG (5).",
	"CreateTopics: 0 partitions and -1 (broker default)":                       "As above (configs).",
	"CreateTopics: validate only":                                              "As above (configs).",
	"DescribeConfigs: topic: chosen keys with an override":                     "min.insync.replicas: Kafka's source is DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster-level record KRaft's format writes).",
	"DescribeProducers: after idempotent and plain batches":                    "CoordinatorEpoch of an idempotent (non-transactional) producer: Kafka -1, Gregor 0. Kafka keeps -1 until a transaction marker for the producer is written to the partition, then the marker's coordinator epoch; matching it needs that epoch in storage's producer state and its snapshot (a format version), not done yet.",
	"ConsumerGroupHeartbeat: join a new KIP-848 group, then an unknown member": "A new member's first heartbeat: Kafka 4.4 answers member epoch 2, Gregor 1. Kafka's algorithm as read (one group-epoch bump for the new subscription, the metadata-hash check folded into the same bump, member epoch = target assignment epoch) gives 1; the second bump probably comes from the topic created just before reaching the group coordinator's metadata image. Not changed until measured.",
	"EndTxn: commit, fetch read_committed, abort after commit":                 "A read_committed Fetch after the commit: Kafka's answer stops before the commit marker, Gregor's includes it (LSO and high watermark 3 on both). Not timing: the scenario waits for LSO 3 and fetches again. Consumers skip control batches, so the records delivered are the same; cause in Kafka not pinned down, not changed.",
	"EndTxn: abort: read_committed sees the aborted transaction":               "As for commit: Kafka's answer stops before the abort marker, Gregor's includes it.",
}
