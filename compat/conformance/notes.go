package conformance

// Notes explain known differences in the report, keyed "API: scenario".
// Each was measured against Kafka 4.4.0 (make conformance -v prints both
// answers in full).
var Notes = map[string]string{
	"ApiVersions: v3: error code and the advertised keys":                      "Kafka advertises more APIs (share groups, streams groups, KRaft and inter-broker APIs, telemetry); the versions both use are listed at the end.",
	"Metadata: unknown topic, auto-create on (first and later answer)":         "Kafka 4.4 answers the request that triggers the auto-creation with UNKNOWN_TOPIC_OR_PARTITION (the topic appears on a later request); Gregor creates the topic before answering and returns it at once. Clients retry either answer; not changed.",
	"CreateTopics: 3 partitions: answer with configs":                          "Kafka lists topic configs Gregor does not know (compression.*.level, remote.*, errors.deadletterqueue.group.enable, max.decompressed.message.bytes), and reports min.insync.replicas with source DYNAMIC_DEFAULT_BROKER_CONFIG (3): KRaft's format writes a cluster-level min.insync.replicas record. Gregor: DEFAULT_CONFIG (5).",
	"CreateTopics: 0 partitions and -1 (broker default)":                       "As above (configs), and on an error Kafka sends an empty Configs array where Gregor sends null.",
	"CreateTopics: validate only":                                              "As above (configs); Kafka also returns a (random) topic id for a validate-only create, Gregor a zero id.",
	"CreateTopics: duplicate":                                                  "On an error Kafka sends an empty Configs array, Gregor null (both allowed: the field is nullable).",
	"CreateTopics: invalid names (., slash, 250 chars)":                        "Configs: empty array (Kafka) against null (Gregor).",
	"CreateTopics: replication factor 3 on one broker":                         "Configs: empty array (Kafka) against null (Gregor).",
	"CreateTopics: unknown config key":                                         "Configs: empty array (Kafka) against null (Gregor).",
	"CreateTopics: bad config value":                                           "Configs: empty array (Kafka) against null (Gregor).",
	"CreateTopics: name colliding on . and _":                                  "Configs: empty array (Kafka) against null (Gregor).",
	"CreateTopics: same topic twice in one request":                            "Kafka answers a topic named twice with one entry (INVALID_REQUEST); Gregor with one entry per occurrence.",
	"DescribeConfigs: topic: chosen keys with an override":                     "min.insync.replicas: Kafka's source is DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster-level record KRaft's format writes).",
	"DescribeConfigs: broker 1: chosen keys":                                   "log.retention.ms is dynamically updatable in Kafka (ReadOnly false); Gregor marks it read-only.",
	"Produce: CreateTime older than message.timestamp.before.max.ms":           "Kafka lists the offending records (RecordErrors, relative offset 0 here); Gregor checks the batch's timestamps and lists none.",
	"Produce: null key on a compacted topic":                                   "Kafka lists the keyless records (RecordErrors); Gregor lists none.",
	"Produce: transactional batch without a transactional id":                  "Kafka: TRANSACTIONAL_ID_AUTHORIZATION_FAILED; Gregor: INVALID_RECORD.",
	"Fetch: unknown topic id":                                                  "On an errored partition Kafka sends an empty AbortedTransactions array, Gregor null.",
	"Fetch: partition out of range":                                            "On an errored partition Kafka sends an empty AbortedTransactions array, Gregor null.",
	"Produce: idempotent: duplicate of the last batch":                         "For a duplicate batch Kafka answers LogAppendTime = the original batch's max timestamp (even for a CreateTime topic); Gregor -1.",
	"DescribeProducers: after idempotent and plain batches":                    "CoordinatorEpoch of an idempotent (non-transactional) producer: Kafka -1, Gregor 0.",
	"ConsumerGroupHeartbeat: join a new KIP-848 group, then an unknown member": "A new member's first heartbeat: Kafka answers member epoch 2 (it bumps the group epoch for the subscription and again for the assignment), Gregor 1.",
	"EndTxn: commit, fetch read_committed, abort after commit":                 "A read_committed Fetch right after the commit: Kafka's answer stops before the commit marker, Gregor's includes it (LSO 3 on both).",
	"EndTxn: abort: read_committed sees the aborted transaction":               "As for commit: Kafka's answer stops before the abort marker, Gregor's includes it.",
	"DescribeTransactions: ongoing and unknown":                                "For an unknown transactional id (TRANSACTIONAL_ID_NOT_FOUND on both) Kafka fills producer id, epoch and start time with 0, Gregor with -1.",
}
