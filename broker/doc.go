// Package broker is Gregor's Kafka-compatible broker: it accepts client
// connections, decodes requests, answers each API from a handler of its own,
// and owns the topics, their partition logs (package storage) and the group
// and transaction coordinators (package coordinator). A Broker is made with
// New, bound with Listen, served with Serve and stopped with Close; programs
// that embed one use its Go API (CreateTopic, Topics, Groups, ReadRecords,
// Metrics, InjectFault; in a cluster ClusterTopics and ClusterGroups ask
// the other brokers too, inspect_cluster.go).
//
// # Connections
//
// Each connection has a reader and a writer goroutine (server.go). The
// reader reads a frame's size (bounded by socket.request.max.bytes), waits
// for room in the broker-wide budget of request bytes in flight
// (queued.max.request.bytes), reads the frame into a pooled buffer (given
// back, with its budget, only when the answer is written: deliver), checks
// its API key and version against the registry before anything of the body
// is decoded, and runs the handler. Requests run one at a time in arrival
// order on the reader, as in Kafka: an idempotent producer's pipelined
// batches must be appended in the order sent. Only handlers registered with
// runAsync, which may wait a long time (JoinGroup and SyncGroup during a
// rebalance), run in goroutines of their own, and a handler that must wait
// after it has done its work (a Fetch with no data yet, the long poll; an
// acks=all produce waiting for the ISR) sets request.wait, which finishes
// in a goroutine; both hold up only the responses queued behind them. The
// writer sends responses strictly in request order, at most maxInFlight
// behind the reader; when nothing is queued, the reader writes an answer it
// produced itself directly, without waking the writer (a batch-1 producer's
// round trip then costs no goroutine hand-off). An
// unknown key, an unsupported version (except ApiVersions, which is answered
// with UNSUPPORTED_VERSION), an undecodable request or a handler's Go error
// closes the connection; Kafka-visible failures are error codes in the
// response.
//
// A plain TCP connection (past its authentication) that sends nothing for
// parkAfter (1 s), with nothing buffered and no answer in flight, is
// parked (park_linux.go): its reader and writer goroutines end and its
// read buffer goes back to a pool, and one epoll instance for the broker
// starts a reader for it again when a byte arrives. An idle connection then
// holds about 2 KB of live memory instead of a goroutine stack grown to
// 8 KB and a 4 KiB buffer. The parker closes parked connections idle for
// connections.max.idle.ms; other systems do not park.
//
// # Listeners and security
//
// A broker serves one or more listeners (listeners.go): Kafka's listeners,
// advertised.listeners, listener.security.protocol.map and
// inter.broker.listener.name, or Config.Listen as one PLAINTEXT listener.
// Each connection knows its listener; Metadata, DescribeCluster,
// FindCoordinator and the KIP-951 leader hints are rewritten to the
// addresses of that listener (rewriteEndpoints, from the listeners every
// broker registers in etcd). SSL and SASL_SSL listeners wrap connections in
// TLS (package security/authn's TLS: PEM, PKCS12 and JKS key and trust
// stores, reloaded when their files change, ssl.client.auth,
// ssl.principal.mapping.rules); responses then go through
// Out.WriteToWriter and a buffer, since sendfile cannot cross TLS.
// SASL_PLAINTEXT and SASL_SSL connections must authenticate first
// (sasl.go: the states, SaslHandshake and SaslAuthenticate, KIP-368
// re-authentication; the mechanisms' server sides are security/authn's)
// against the user store (authn.Users over a metastore collection: users.go
// opens a file under __meta on one node, etcd in a cluster), managed with
// DescribeUserScramCredentials and AlterUserScramCredentials (a change
// conditioned on the user as read, so two brokers' changes both land).
// Delegation tokens (KIP-48, delegation_tokens.go and 38-41: authn.Tokens
// over a metastore collection) authenticate through SCRAM with
// tokenauth=true. Topics may ask for broker-side schema ID validation
// (schema_validation.go, Confluent's confluent.*.schema.validation
// configs) against this broker's schema registry. Inter-broker clients use the inter-broker
// listener's TLS and SASL settings (interbroker.go). With
// authorizer.class.name set, the authorizer (package security/acl; its
// settings and store: acl.go) checks each request
// against Kafka's ACLs (the checks: acl_checks.go, acl_apis.go, listed in
// docs/security.md; CreateAcls, DescribeAcls
// and DeleteAcls: 29_acls.go), kept in __meta/acls.json or etcd.
//
// # Handlers registry
//
// There is one file per API, named by key number and name (00_produce.go,
// 01_fetch.go, …), opening with a version header ("Fetch: v4-17") and the
// API's rules, and registering its versions in init with register. The
// group and transaction APIs, answered by package coordinator, are
// registered in groups.go and txns.go, with a version note beside each
// registration. ApiVersions is built from the registry (handlers.go), so
// what is advertised is exactly what is handled; advertiseFrom advertises
// versions below the served ones where clients need it (Produce v0-2).
//
// # Topics
//
// The topic registry is Broker.topics and Broker.topicsByID, under
// Broker.mu. A topic's partitions slice and its configs map are replaced,
// never mutated, so a handler may keep the snapshot it loaded under the
// lock. A topic exists exactly when its record under
// <data-dir>/__meta/topics does (meta.go): creation writes the record (a
// partition's directory appears with its first write: storage's unborn
// logs), deletion removes the record first and renames the directories
// aside to be removed in the background; one CreateTopics request's
// topics are created together, their partitions several at a time (a new
// log writes nothing) and their records in one file, with one round of
// fsyncs. Topic names with '.' or '_' are indexed by their metric name
// (Broker.topicsByMetricName) for the collision check. New opens every topic's partitions several at a time
// through the data directory's storage.LogDir (each log recovered as
// needed, their fsyncs in one sync of the file system, trusted without
// recovery when the last stop's clean-shutdown list names them; Close
// writes that list) and deals with
// the rest of the data directory (datadir.go): partitions being deleted are
// removed, stray ones renamed aside (<name>.<id>-stray, kept for
// log.stray.retention.ms), and nothing without partition files is touched;
// a removal takes only the partition's own files (storage.RemoveLogDir),
// keeping the directory of one that holds anything else.
// That listing's names (Broker.mayHoldDir) are the only ones a new
// partition's directory is looked for at creation; one that appears since
// is met by the partition's first write (dirInTheWay), and a topic's
// deletion retires only the directories its partitions made.
// A failed write takes the log dir offline (logdir_failure.go): produces
// answer KAFKA_STORAGE_ERROR until a probe write succeeds, and in a cluster
// the controller moves the broker's leaderships away, as it does for a
// broker stopping on SIGTERM (controlled_shutdown.go).
//
// # Configs
//
// Broker properties (Config.Props) are Kafka's names, validated at New;
// those Kafka lets an operator change at runtime are dynamic broker configs
// (dynconfig.go, KIP-226: a broker's own, then the cluster-wide default,
// over the properties). Topic configs (package config defines them) are the topic's overrides
// (DYNAMIC_TOPIC_CONFIG), else the broker property that is their synonym
// (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG), as
// DescribeConfigs reports them. AlterConfigs and IncrementalAlterConfigs
// persist a topic's new overrides and apply them at once: to every
// partition's log (storage.Config) and to the settings Produce consults,
// which are parsed once per change.
//
// # Cluster mode
//
// With controller.quorum.voters or etcd.endpoints set, the broker is one
// node of a cluster (cluster.go). It does not keep the cluster's metadata
// itself: it is given a store that does, Config.JoinCluster, through the
// Cluster interface over package metadata's model; cmd/gregor gives it
// package cluster's etcd node, and a program that gives none (gregortest)
// links no etcd and is refused cluster mode. The broker makes its logs
// follow the metadata (applyMetadata: open what is assigned here, lead
// with a replication.Leader what it was elected for, follow the rest with
// replication.Fetchers), proposes ISR changes in batches (AlterPartitions),
// forwards what only a partition's leader or a coordinator can answer to
// the broker that can, and keeps ACLs, quotas, users, dynamic broker and
// group configs in the store rather than under __meta. SIGTERM runs
// ControlledShutdown first (controlled_shutdown.go): the leadership of this
// broker's partitions moves to in-sync followers, the broker serves on until
// no client has been told NOT_LEADER_OR_FOLLOWER for a moment, and a
// follower of a stopping leader waits for its election rather than send a
// producer back with a stale hint, so producers follow without a metadata
// refresh.
//
// # Internal topics and quotas
//
// The coordinators' internal topics, __consumer_offsets, __transaction_state
// and __share_group_state (internal_topic.go, offsets_topic.go,
// txn_topic.go, share_state_topic.go), are created on first use, compacted
// with no retention; each coordinator (package coordinator's runtime) loads
// the partitions this broker leads and unloads those it stops leading.
// Quotas: which quota applies and the rates are package quota's; the
// broker enforces them on the connection (quota_enforce.go: bytes of
// Produce and consumer Fetch, handler time of the rest, KIP-219's throttle
// then mute), and keeps the connection-creation and controller-mutation
// quotas (conn_quota.go, mutation_quota.go).
//
// # Metadata quorum, features and client metrics
//
// UpdateFeatures (57_update_features.go) finalizes feature levels
// (features.go) as Kafka 4.4's controller validates them; the levels and
// their epoch are a metastore collection (__meta/features.json or etcd's
// features), which ApiVersions reports on every broker.
//
// DescribeQuorum (55_describe_quorum.go) describes etcd's raft group as
// Kafka describes its KRaft quorum (Cluster.DescribeQuorum: the raft
// leader, term, commit index and members' raft indexes), forwarded to the
// broker whose member leads, which knows its followers' progress; a single
// node answers as a single-node KRaft combined broker. The voter and
// registration APIs answer as a static KRaft quorum does: AddRaftVoter and
// RemoveRaftVoter (80_raft_voters.go) UNSUPPORTED_VERSION after Kafka's
// checks, UnregisterController (94_unregister_controller.go) Kafka's
// refusals, UnregisterBroker (64_unregister_broker.go) drops the lasting
// registration of a broker whose session has ended (Cluster.
// UnregisterBroker; DescribeCluster v2 lists such brokers as fenced) and
// refuses a live one. KIP-714 client
// metrics (clientmetrics.go, package clientmetrics): CLIENT_METRICS
// subscriptions are a metastore collection (__meta/client-metrics.json or
// etcd), set and described through IncrementalAlterConfigs and
// DescribeConfigs and listed by ListConfigResources;
// GetTelemetrySubscriptions and PushTelemetry are answered by a
// clientmetrics.Manager, whose pushed metrics are series of the broker's
// registry (Metrics), served on the admin listener's /metrics.
//
// # Schema registry
//
// With schema.registry.listeners set (http://HOST:PORT) the broker serves
// Confluent Schema Registry's REST API (package schemaregistry) on that
// listener, its state in the compacted topic _schemas, one partition,
// created on first use (schema_registry.go). The registry reads the
// partition to its high watermark and appends conditioned on the log end
// it read, so ids stay unique. In a cluster every broker registers its
// registry's URL, and the others forward each request to the registry of
// the leader of _schemas-0, as Confluent's followers forward to its leader.
// A broker that does not lead _schemas-0 reads the registry's records from
// its leader (a Fetch up to the leader's high watermark), not from its own
// replica, which lags: its view, used by schema ID validation
// (schema_validation.go) and by the console (SchemaRegistry), holds every
// schema the leader acknowledged, and a broker with no replica has one too.
//
// # Cluster links
//
// Every broker runs a link.Manager (links.go) over the links' metastore
// collection and is its link.Host: it fetches from a link's source the
// mirror partitions it leads and appends the source's batches at their
// offsets (mirrorLog.AppendMirrored), and on the controller it creates
// mirror topics and copies group offsets and ACLs through Execute, as the
// broker itself (Caller.internal). A mirror topic refuses produce with
// POLICY_VIOLATION until promoted (produceReadOnly), producer ids are
// handed out above every mirrored one (producerIDs.floor), and `gregor
// link` reaches the manager with Gregor's own, unadvertised API key 32000
// (32000_links.go); the admin listener with Broker.Links.
//
// # Transactions and markers
//
// Transactional state lives in coordinator.TxnCoordinator (txns.go opens
// it, with its file in <data-dir>/__meta). InitProducerId with a
// transactional id goes to it; Produce asks it (CheckProduce) whether each
// partition of a transactional batch is in the producer's transaction. When
// a transaction ends, the coordinator calls writeMarkers, which appends a
// COMMIT or ABORT control batch to every partition of the transaction with
// storage's AppendMarker (through WriteTxnMarkers for partitions led
// elsewhere); partitions of deleted topics are skipped. In a cluster the
// markers carry the coordinator epoch, the leader epoch of the
// transactional id's partition of __transaction_state, and a broker that
// no longer leads that partition, or is fenced, writes none; a marker
// counts as written once it is on the partition's ISR (acks=all), so that
// a leader that dies with a marker only it had does not lose a committed
// transaction. Fetch and
// ListOffsets with read_committed stop at each partition's last stable
// offset, and Fetch lists the aborted transactions in what it returns.
// Producer ids, transactional or not, come from producerIDs
// (producerids.go), which persists the end of each block before handing out
// an id from it.
//
// # Share groups
//
// Share group membership is the group coordinator's (package coordinator,
// 76_share_group_heartbeat.go); the partition leader's side is package
// share (shares.go): its Sessions are the share sessions of ShareFetch
// (78) and ShareAcknowledge (79), closed with the connection that opened
// them, and its Cache the share-partitions this broker leads, read from
// and written to the share coordinator through sharePersister
// (share_state_topic.go: __share_group_state, this broker's share
// coordinator or another's). The broker keeps the wire: the handlers,
// the partition lookup (shareTarget), the log reads that ShareFetch
// acquires records from (shareAcquire), the group configs share groups
// are tuned by (groupconfigs.go, shareSettings) and the inter-broker share
// state requests by which the group coordinator reaches the leaders'
// state (83_share_group_state.go) for the offset admin APIs (90-92) and
// group deletion.
//
// # Streams groups
//
// Streams group membership (KIP-1071) is the group coordinator's
// (coordinator/streams*.go; 88_streams_group_heartbeat.go,
// 89_streams_group_describe.go), gated by the streams.version feature
// (features.go). The broker's part is creating the internal topics a
// group's topology needs (repartition and changelog topics, with the
// partition counts the coordinator derives), after the heartbeat that
// found them missing, as Kafka's KafkaApis does. Topology descriptions
// (KIP-1331, 93_streams_group_topology_description_update.go) are kept by
// the coordinator when group.streams.topology.description.plugin.class is
// set (coordinator/streams_description.go).
//
// # Fault injection
//
// InjectFault makes the broker misbehave on purpose, for testing clients
// (faults.go): requests of one API key, optionally naming a topic and
// partition, are delayed, answered with an error code without being
// executed, or have their connection closed, for a number of requests or
// until ClearFaults. Faults are checked in the reader before the handler
// runs; with none active the check is one atomic load.
//
// # Lock order
//
// The lock order of the whole program is docs/LOCK_ORDER.md.
package broker
