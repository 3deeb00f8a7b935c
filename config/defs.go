package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Def describes one Kafka configuration property: its name, type,
// default, validation and, for topic configs, the broker property that
// supplies its default (Kafka's "synonym").
type Def struct {
	Name     string
	Type     kmsg.ConfigType
	Default  string
	Synonym  string // broker property that sets the topic default
	ReadOnly bool   // broker configs that can't change at runtime
	Validate func(string) error
	Doc      string
}

const maxLong = "9223372036854775807"

func atLeast(lo int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return errors.New("Not a number of type LONG")
		}
		if v < lo {
			return fmt.Errorf("Value must be at least %d", lo)
		}
		return nil
	}
}

func intAtLeast(lo int64) func(string) error {
	long := atLeast(lo)
	return func(s string) error {
		if err := long(s); err != nil {
			return err
		}
		if v, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64); v > math.MaxInt32 {
			return errors.New("Not a number of type INT")
		}
		return nil
	}
}

func oneOf(vals ...string) func(string) error {
	return func(s string) error {
		if slices.Contains(vals, s) {
			return nil
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(vals, ", "))
	}
}

func listOf(vals ...string) func(string) error {
	return func(s string) error {
		for _, e := range SplitList(s) {
			if !slices.Contains(vals, e) {
				return fmt.Errorf("String must be one of: %s", strings.Join(vals, ", "))
			}
		}
		return nil
	}
}

func boolean(s string) error {
	if s != "true" && s != "false" {
		return errors.New("Expected value to be either true or false")
	}
	return nil
}

func ratio(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil:
		return errors.New("Not a number of type DOUBLE")
	case v < 0:
		return errors.New("Value must be at least 0")
	case v > 1:
		return errors.New("Value must be no more than 1")
	}
	return nil
}

func anyString(string) error { return nil }

// intBetween is intAtLeast(lo) with an upper bound hi.
func intBetween(lo, hi int64) func(string) error {
	atLeastLo := intAtLeast(lo)
	return func(s string) error {
		if err := atLeastLo(s); err != nil {
			return err
		}
		if v, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64); v > hi {
			return fmt.Errorf("Value must be no more than %d", hi)
		}
		return nil
	}
}

// gzipLevel accepts -1 (the codec's default) or 1 to 9, as Kafka's
// compression.gzip.level does.
func gzipLevel(s string) error {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("Not a number of type INT")
	}
	if v != -1 && (v < 1 || v > 9) {
		return errors.New("Value must be between 1 and 9 or equal to -1")
	}
	return nil
}

// IntOr is s as an integer (spaces around it ignored), def when it is not
// one: how the security settings read their numbers.
func IntOr(s string, def int64) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return def
	}
	return n
}

// SplitList splits a comma-separated list, dropping empty elements and
// the spaces around each.
func SplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// WeekMs is Kafka's 7-day default in milliseconds: retention.ms, segment.ms
// (log.retention.hours and log.roll.hours 168) and
// transactional.id.expiration.ms. It equals storage.DefaultRetentionMs and
// coordinator.DefaultTxnIDExpiration (checked by a test).
const WeekMs = "604800000"

// TopicDefs are the per-topic configs Gregor knows, with Kafka 4's
// defaults and the broker properties that override those defaults.
var TopicDefs = []Def{
	{"cleanup.policy", kmsg.ConfigTypeList, "delete", "log.cleanup.policy", false, listOf("compact", "delete"), "The retention policy to use on log segments: delete or compact."},
	{"compression.type", kmsg.ConfigTypeString, "producer", "compression.type", false, oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "The final compression type for the topic; 'producer' keeps what the producer sent."},
	{"compression.gzip.level", kmsg.ConfigTypeInt, "-1", "compression.gzip.level", false, gzipLevel, "The gzip level used when the broker compresses with gzip (compression.type=gzip); -1 is the codec's default. Stored: Gregor keeps batches as the producer compressed them."},
	{"compression.lz4.level", kmsg.ConfigTypeInt, "9", "compression.lz4.level", false, intBetween(1, 17), "The lz4 level used when the broker compresses with lz4. Stored: Gregor keeps batches as the producer compressed them."},
	{"compression.zstd.level", kmsg.ConfigTypeInt, "3", "compression.zstd.level", false, intBetween(-131072, 22), "The zstd level used when the broker compresses with zstd. Stored: Gregor keeps batches as the producer compressed them."},
	{"delete.retention.ms", kmsg.ConfigTypeLong, "86400000", "log.cleaner.delete.retention.ms", false, atLeast(0), "How long delete tombstones are retained for compacted topics."},
	{"errors.deadletterqueue.group.enable", kmsg.ConfigTypeBoolean, "false", "", false, boolean, "Whether share groups may use this topic as a dead-letter queue (KIP-1191). Stored: Gregor's share groups have no dead-letter queues."},
	{"file.delete.delay.ms", kmsg.ConfigTypeLong, "60000", "log.segment.delete.delay.ms", false, atLeast(0), "The time to wait before deleting a file from the filesystem."},
	{"flush.messages", kmsg.ConfigTypeLong, maxLong, "log.flush.interval.messages", false, atLeast(1), "Fsync the log after this many messages; 1 fsyncs before every acknowledgement."},
	{"flush.ms", kmsg.ConfigTypeLong, maxLong, "log.flush.interval.ms", false, atLeast(0), "Fsync the log when its oldest unflushed data is this old."},
	{"follower.replication.throttled.replicas", kmsg.ConfigTypeList, "", "follower.replication.throttled.replicas", false, anyString, "Replicas whose follower replication is throttled."},
	{"index.interval.bytes", kmsg.ConfigTypeInt, "4096", "log.index.interval.bytes", false, intAtLeast(0), "How many bytes of log between offset index entries."},
	{"leader.replication.throttled.replicas", kmsg.ConfigTypeList, "", "leader.replication.throttled.replicas", false, anyString, "Replicas whose leader replication is throttled."},
	{"local.retention.bytes", kmsg.ConfigTypeLong, "-2", "log.local.retention.bytes", false, atLeast(-2), "Tiered storage: local retention by size (-2 = retention.bytes)."},
	{"local.retention.ms", kmsg.ConfigTypeLong, "-2", "log.local.retention.ms", false, atLeast(-2), "Tiered storage: local retention by time (-2 = retention.ms)."},
	{"max.compaction.lag.ms", kmsg.ConfigTypeLong, maxLong, "log.cleaner.max.compaction.lag.ms", false, atLeast(1), "The maximum time a message remains ineligible for compaction."},
	{"max.decompressed.message.bytes", kmsg.ConfigTypeInt, "2147483639", "max.decompressed.message.bytes", false, intBetween(1, 2147483639), "The largest a batch may be once decompressed. Stored: Gregor does not decompress batches on produce."},
	{"max.message.bytes", kmsg.ConfigTypeInt, "1048588", "message.max.bytes", false, intAtLeast(0), "The largest record batch size allowed."},
	{"message.timestamp.after.max.ms", kmsg.ConfigTypeLong, "3600000", "log.message.timestamp.after.max.ms", false, atLeast(0), "How far in the future a CreateTime timestamp may be."},
	{"message.timestamp.before.max.ms", kmsg.ConfigTypeLong, maxLong, "log.message.timestamp.before.max.ms", false, atLeast(0), "How far in the past a CreateTime timestamp may be."},
	{"message.timestamp.type", kmsg.ConfigTypeString, "CreateTime", "log.message.timestamp.type", false, oneOf("CreateTime", "LogAppendTime"), "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime)."},
	{"min.cleanable.dirty.ratio", kmsg.ConfigTypeDouble, "0.5", "log.cleaner.min.cleanable.ratio", false, ratio, "The dirty ratio above which the log is compacted."},
	{"min.compaction.lag.ms", kmsg.ConfigTypeLong, "0", "log.cleaner.min.compaction.lag.ms", false, atLeast(0), "The minimum time a message remains uncompacted."},
	{"min.insync.replicas", kmsg.ConfigTypeInt, "1", "min.insync.replicas", false, intAtLeast(1), "The minimum number of in-sync replicas for an acks=all write."},
	{"preallocate", kmsg.ConfigTypeBoolean, "false", "log.preallocate", false, boolean, "Preallocate segment files."},
	{"remote.copy.lag.bytes", kmsg.ConfigTypeLong, "-1", "log.remote.copy.lag.bytes", false, atLeast(-1), "Tiered storage: how far local data may run ahead of the remote copy; Gregor has no tiered storage."},
	{"remote.copy.lag.ms", kmsg.ConfigTypeLong, "0", "log.remote.copy.lag.ms", false, atLeast(-1), "Tiered storage: how long local data may wait to be copied; Gregor has no tiered storage."},
	{"remote.log.copy.disable", kmsg.ConfigTypeBoolean, "false", "", false, boolean, "Tiered storage: stop copying segments to remote storage; Gregor has no tiered storage."},
	{"remote.log.delete.on.disable", kmsg.ConfigTypeBoolean, "false", "", false, boolean, "Tiered storage: delete remote data when tiering is disabled; Gregor has no tiered storage."},
	{"remote.storage.enable", kmsg.ConfigTypeBoolean, "false", "remote.log.storage.system.enable", false, oneOf("false"), "Tiered storage; not supported by Gregor."},
	{"retention.bytes", kmsg.ConfigTypeLong, "-1", "log.retention.bytes", false, atLeast(-1), "The largest size a partition may grow to before old segments are deleted; -1 = no limit."},
	{"retention.ms", kmsg.ConfigTypeLong, WeekMs, "log.retention.ms", false, atLeast(-1), "How long a segment is kept before it is deleted; -1 = no limit."},
	{"segment.bytes", kmsg.ConfigTypeInt, "1073741824", "log.segment.bytes", false, intAtLeast(1 << 20), "The segment file size."},
	{"segment.index.bytes", kmsg.ConfigTypeInt, "10485760", "log.index.size.max.bytes", false, intAtLeast(4), "The offset index size."},
	{"segment.jitter.ms", kmsg.ConfigTypeLong, "0", "log.roll.jitter.ms", false, atLeast(0), "Random jitter subtracted from segment.ms."},
	{"segment.ms", kmsg.ConfigTypeLong, WeekMs, "log.roll.ms", false, atLeast(1), "Roll a new segment after this time even if the active one is not full."},
	{"unclean.leader.election.enable", kmsg.ConfigTypeBoolean, "false", "unclean.leader.election.enable", false, boolean, "Allow out-of-sync replicas to become leader."},
}

// BrokerDefs are the broker properties Gregor reads or reports, by name.
// The topic-default properties (the synonyms above) and the security
// properties are added by init.
var BrokerDefs = []Def{
	{"node.id", kmsg.ConfigTypeInt, "0", "", true, intAtLeast(0), "This broker's node id."},
	{"advertised.listeners", kmsg.ConfigTypeString, "", "", true, anyString, "The host:port advertised to clients (default: the bound address)."},
	{"listeners", kmsg.ConfigTypeString, "PLAINTEXT://127.0.0.1:9092", "", true, anyString, "The address the broker listens on."},
	{"log.dirs", kmsg.ConfigTypeString, "./data", "", true, anyString, "The data directory (one: Gregor keeps every partition in it); --data-dir wins over it."},
	{"log.dir", kmsg.ConfigTypeString, "./data", "", true, anyString, "The data directory when log.dirs is not set."},
	{"log.stray.retention.ms", kmsg.ConfigTypeLong, WeekMs, "", true, atLeast(-1), "How long a stray partition directory (renamed <name>.<id>-stray at start: a partition of a topic this broker no longer has) is kept before it is deleted; -1 keeps it until removed by hand (Gregor's own setting)."},
	{"log.dir.max.open.files", kmsg.ConfigTypeInt, "0", "", true, intAtLeast(0), "At most this many segments keep their .log file open and their indexes mapped; those unused longest are closed and reopened when needed. 0: half the open-file limit (ulimit -n), at most (vm.max_map_count - 8192) / 2 (Gregor's own setting)."},
	{"num.partitions", kmsg.ConfigTypeInt, "1", "", false, intAtLeast(1), "The default number of partitions of a created topic."},
	{"default.replication.factor", kmsg.ConfigTypeInt, "1", "", false, intAtLeast(1), "The default replication factor of a created topic."},
	{"auto.create.topics.enable", kmsg.ConfigTypeBoolean, "true", "", false, boolean, "Create a topic when metadata is requested for one that does not exist."},
	{"delete.topic.enable", kmsg.ConfigTypeBoolean, "true", "", false, boolean, "Allow topics to be deleted."},
	{"socket.request.max.bytes", kmsg.ConfigTypeInt, "104857600", "", true, intAtLeast(1), "The largest request accepted; a larger size prefix closes the connection."},
	{"queued.max.request.bytes", kmsg.ConfigTypeLong, "268435456", "", true, atLeast(-1), "Request bytes read but not yet answered, across all connections; readers wait beyond it (-1 = no limit)."},
	{"connections.max.idle.ms", kmsg.ConfigTypeLong, "600000", "", true, atLeast(0), "Idle connections are closed after this long."},
	{"quota.window.num", kmsg.ConfigTypeInt, "11", "", true, intAtLeast(1), "The number of samples a client quota's rate is taken over."},
	{"quota.window.size.seconds", kmsg.ConfigTypeInt, "1", "", true, intAtLeast(1), "The time span of each sample of a client quota's rate."},
	{"controller.quota.window.num", kmsg.ConfigTypeInt, "11", "", true, intAtLeast(1), "The controller mutation quota's token bucket holds this many windows of its rate (KIP-599)."},
	{"controller.quota.window.size.seconds", kmsg.ConfigTypeInt, "1", "", true, intAtLeast(1), "The time span of each window of the controller mutation quota."},
	{"max.connection.creation.rate", kmsg.ConfigTypeInt, "2147483647", "", true, intAtLeast(0), "New connections per second the broker accepts across its listeners but the inter-broker one; over it a listener waits before serving (KIP-612). listener.name.<l>.max.connection.creation.rate bounds one listener."},
	{"max.connections", kmsg.ConfigTypeInt, "2147483647", "", true, intAtLeast(0), "The most connections the broker accepts at once."},
	{"log.retention.check.interval.ms", kmsg.ConfigTypeLong, "300000", "", true, atLeast(1), "How often retention is checked."},
	{"log.cleaner.enable", kmsg.ConfigTypeBoolean, "true", "", true, boolean, "Run the log cleaner, which compacts topics with cleanup.policy=compact."},
	{"log.cleaner.threads", kmsg.ConfigTypeInt, "1", "", false, intAtLeast(0), "The number of log cleaner threads."},
	{"log.cleaner.backoff.ms", kmsg.ConfigTypeLong, "15000", "", false, atLeast(0), "How long a cleaner thread sleeps when no log needs cleaning."},
	{"log.cleaner.dedupe.buffer.size", kmsg.ConfigTypeLong, "134217728", "", false, atLeast(1), "Memory for the cleaners' key maps, shared among the threads (24 bytes a key)."},
	{"log.cleaner.io.buffer.load.factor", kmsg.ConfigTypeDouble, "0.9", "", false, ratio, "How full a cleaner's key map may get."},
	{"log.cleaner.io.max.bytes.per.second", kmsg.ConfigTypeDouble, "1.7976931348623157E308", "", false, anyString, "The cleaners' combined read and write rate limit."},
	{"log.flush.scheduler.interval.ms", kmsg.ConfigTypeLong, maxLong, "", true, atLeast(1), "How often partitions are checked for flush.ms."},
	{"log.retention.hours", kmsg.ConfigTypeInt, "168", "", false, intAtLeast(-1), "Retention in hours (used when log.retention.ms and log.retention.minutes are unset)."},
	{"log.retention.minutes", kmsg.ConfigTypeInt, "", "", false, intAtLeast(-1), "Retention in minutes (used when log.retention.ms is unset)."},
	{"log.roll.hours", kmsg.ConfigTypeInt, "168", "", false, intAtLeast(1), "Segment roll time in hours (used when log.roll.ms is unset)."},
	{"group.initial.rebalance.delay.ms", kmsg.ConfigTypeInt, "3000", "", true, intAtLeast(0), "How long a new group waits for more members before its first rebalance."},
	{"group.min.session.timeout.ms", kmsg.ConfigTypeInt, "6000", "", true, intAtLeast(0), "The smallest session timeout a member may ask for."},
	{"group.max.session.timeout.ms", kmsg.ConfigTypeInt, "1800000", "", true, intAtLeast(0), "The largest session timeout a member may ask for."},
	{"group.max.size", kmsg.ConfigTypeInt, "2147483647", "", true, intAtLeast(1), "The most members a consumer group may have."},
	{"group.consumer.session.timeout.ms", kmsg.ConfigTypeInt, "45000", "", true, intAtLeast(1), "The session timeout of consumer-protocol (KIP-848) group members."},
	{"group.consumer.heartbeat.interval.ms", kmsg.ConfigTypeInt, "5000", "", true, intAtLeast(1), "The heartbeat interval of consumer-protocol (KIP-848) group members."},
	{"group.share.session.timeout.ms", kmsg.ConfigTypeInt, "45000", "", true, intAtLeast(1), "The session timeout of share group (KIP-932) members."},
	{"group.share.heartbeat.interval.ms", kmsg.ConfigTypeInt, "5000", "", true, intAtLeast(1), "The heartbeat interval of share group members."},
	{"group.streams.session.timeout.ms", kmsg.ConfigTypeInt, "45000", "", true, intAtLeast(1), "The session timeout of streams group (KIP-1071) members."},
	{"group.streams.heartbeat.interval.ms", kmsg.ConfigTypeInt, "5000", "", true, intAtLeast(1), "The heartbeat interval of streams group members."},
	{"group.streams.num.standby.replicas", kmsg.ConfigTypeInt, "0", "", true, intAtLeast(0), "The standby replicas of each task of a streams group."},
	{"group.streams.topology.description.plugin.class", kmsg.ConfigTypeClass, "", "", true, oneOf("", InMemoryTopologyDescriptionPlugin), "Where streams groups' topology descriptions (KIP-1331, StreamsGroupTopologyDescriptionUpdate) are kept: unset, nowhere (the push is UNSUPPORTED_VERSION); " + InMemoryTopologyDescriptionPlugin + ", in the group coordinator's memory, as Kafka's reference plugin keeps them."},
	{"group.streams.initial.rebalance.delay.ms", kmsg.ConfigTypeInt, "3000", "", true, intAtLeast(0), "How long the first assignment of a streams group waits for more members."},
	{"group.share.record.lock.duration.ms", kmsg.ConfigTypeInt, "30000", "", true, intBetween(1000, 3600000), "The acquisition lock duration of records fetched by share groups."},
	{"group.share.delivery.count.limit", kmsg.ConfigTypeInt, "5", "", true, intBetween(2, 10), "The deliveries of a record to a share group after which it is archived."},
	{"group.share.partition.max.record.locks", kmsg.ConfigTypeInt, "2000", "", true, intBetween(100, 10000), "The records a share partition keeps in flight at most."},
	{"group.consumer.min.session.timeout.ms", kmsg.ConfigTypeInt, "45000", "", true, intAtLeast(1), "The smallest consumer.session.timeout.ms a consumer group (KIP-848) may be given."},
	{"group.consumer.max.session.timeout.ms", kmsg.ConfigTypeInt, "60000", "", true, intAtLeast(1), "The largest consumer.session.timeout.ms a consumer group (KIP-848) may be given."},
	{"group.consumer.min.heartbeat.interval.ms", kmsg.ConfigTypeInt, "5000", "", true, intAtLeast(1), "The smallest consumer.heartbeat.interval.ms a consumer group (KIP-848) may be given."},
	{"group.consumer.max.heartbeat.interval.ms", kmsg.ConfigTypeInt, "15000", "", true, intAtLeast(1), "The largest consumer.heartbeat.interval.ms a consumer group (KIP-848) may be given."},
	{"group.share.min.session.timeout.ms", kmsg.ConfigTypeInt, "45000", "", true, intAtLeast(1), "The smallest share.session.timeout.ms a share group may be given."},
	{"group.share.max.session.timeout.ms", kmsg.ConfigTypeInt, "60000", "", true, intAtLeast(1), "The largest share.session.timeout.ms a share group may be given."},
	{"group.share.min.heartbeat.interval.ms", kmsg.ConfigTypeInt, "5000", "", true, intAtLeast(1), "The smallest share.heartbeat.interval.ms a share group may be given."},
	{"group.share.max.heartbeat.interval.ms", kmsg.ConfigTypeInt, "15000", "", true, intAtLeast(1), "The largest share.heartbeat.interval.ms a share group may be given."},
	{"group.share.min.record.lock.duration.ms", kmsg.ConfigTypeInt, "15000", "", true, intBetween(1000, 30000), "The smallest share.record.lock.duration.ms a share group may be given."},
	{"group.share.max.record.lock.duration.ms", kmsg.ConfigTypeInt, "60000", "", true, intBetween(30000, 3600000), "The largest share.record.lock.duration.ms a share group may be given."},
	{"group.share.min.delivery.count.limit", kmsg.ConfigTypeInt, "2", "", true, intBetween(2, 5), "The smallest share.delivery.count.limit a share group may be given."},
	{"group.share.max.delivery.count.limit", kmsg.ConfigTypeInt, "10", "", true, intBetween(5, 25), "The largest share.delivery.count.limit a share group may be given."},
	{"group.share.min.partition.max.record.locks", kmsg.ConfigTypeInt, "100", "", true, intBetween(100, 2000), "The smallest share.partition.max.record.locks a share group may be given."},
	{"group.share.max.partition.max.record.locks", kmsg.ConfigTypeInt, "4000", "", true, intBetween(2000, 10000), "The largest share.partition.max.record.locks a share group may be given."},
	{"group.streams.min.session.timeout.ms", kmsg.ConfigTypeInt, "45000", "", true, intAtLeast(1), "The smallest streams.session.timeout.ms a streams group may be given."},
	{"group.streams.max.session.timeout.ms", kmsg.ConfigTypeInt, "60000", "", true, intAtLeast(1), "The largest streams.session.timeout.ms a streams group may be given."},
	{"group.streams.min.heartbeat.interval.ms", kmsg.ConfigTypeInt, "5000", "", true, intAtLeast(1), "The smallest streams.heartbeat.interval.ms a streams group may be given."},
	{"group.streams.max.heartbeat.interval.ms", kmsg.ConfigTypeInt, "15000", "", true, intAtLeast(1), "The largest streams.heartbeat.interval.ms a streams group may be given."},
	{"group.streams.max.standby.replicas", kmsg.ConfigTypeInt, "2", "", true, intAtLeast(0), "The largest streams.num.standby.replicas a streams group may be given."},
	{"group.share.max.share.sessions", kmsg.ConfigTypeInt, "2000", "", true, intAtLeast(1), "The share sessions a broker keeps at most; one more answers SHARE_SESSION_LIMIT_REACHED."},
	{"group.consumer.migration.policy", kmsg.ConfigTypeString, "bidirectional", "", true, oneOf("bidirectional", "upgrade", "downgrade", "disabled"), "Which online conversions of non-empty groups between the classic and the consumer (KIP-848) protocol are allowed: bidirectional, upgrade, downgrade or disabled."},
	{"group.consumer.assignors", kmsg.ConfigTypeList, "uniform,range", "", true, listOf("uniform", "range"), "The server-side assignors of consumer-protocol groups; the first is the default."},
	{"offsets.retention.minutes", kmsg.ConfigTypeInt, "10080", "", true, intAtLeast(1), "Committed offsets of an empty group are kept this long."},
	{"offsets.topic.num.partitions", kmsg.ConfigTypeInt, "50", "", true, intAtLeast(1), "The number of partitions of __consumer_offsets (read when it is created)."},
	{"offsets.topic.replication.factor", kmsg.ConfigTypeInt, "3", "", true, intAtLeast(1), "The replication factor of __consumer_offsets, capped at the number of live brokers when it is created."},
	{"offsets.retention.check.interval.ms", kmsg.ConfigTypeLong, "600000", "", true, atLeast(1), "How often expired offsets are removed."},
	{"transaction.state.log.num.partitions", kmsg.ConfigTypeInt, "50", "", true, intAtLeast(1), "The number of partitions of __transaction_state (read when it is created)."},
	{"transaction.state.log.replication.factor", kmsg.ConfigTypeShort, "3", "", true, intAtLeast(1), "The replication factor of __transaction_state, capped at the number of live brokers when it is created."},
	{"transaction.state.log.min.isr", kmsg.ConfigTypeInt, "2", "", true, intAtLeast(1), "min.insync.replicas of __transaction_state, capped at its replication factor."},
	{"share.coordinator.state.topic.num.partitions", kmsg.ConfigTypeInt, "50", "", true, intAtLeast(1), "The number of partitions of __share_group_state (read when it is created)."},
	{"share.coordinator.state.topic.replication.factor", kmsg.ConfigTypeShort, "3", "", true, intAtLeast(1), "The replication factor of __share_group_state, capped at the number of live brokers when it is created."},
	{"share.coordinator.state.topic.min.isr", kmsg.ConfigTypeInt, "2", "", true, intAtLeast(1), "min.insync.replicas of __share_group_state, capped at its replication factor."},
	{"share.coordinator.snapshot.update.records.per.snapshot", kmsg.ConfigTypeInt, "500", "", true, intAtLeast(0), "The ShareUpdate records of a share-partition after which the share coordinator writes a ShareSnapshot again."},
	{"add.partitions.to.txn.retry.backoff.max.ms", kmsg.ConfigTypeInt, "100", "", true, intAtLeast(0), "How long a partition leader retries adding a partition to a transaction (transaction version 2) while the coordinator answers CONCURRENT_TRANSACTIONS."},
	{"add.partitions.to.txn.retry.backoff.ms", kmsg.ConfigTypeInt, "20", "", true, intAtLeast(1), "The pause between those retries."},
	{"transaction.max.timeout.ms", kmsg.ConfigTypeInt, "900000", "", true, intAtLeast(1), "The largest transaction timeout a producer may ask for."},
	{"transaction.abort.timed.out.transaction.cleanup.interval.ms", kmsg.ConfigTypeInt, "10000", "", true, intAtLeast(1), "How often transactions past their timeout are aborted."},
	{"transaction.remove.expired.transaction.cleanup.interval.ms", kmsg.ConfigTypeInt, "3600000", "", true, intAtLeast(1), "How often expired transactional ids are removed."},
	{"transactional.id.expiration.ms", kmsg.ConfigTypeInt, WeekMs, "", true, intAtLeast(1), "A transactional id unused for this long is forgotten."},
	{"controller.quorum.voters", kmsg.ConfigTypeList, "", "", true, anyString, "Cluster mode: the nodes that run the embedded etcd members, id@host:port (their etcd peer addresses)."},
	{"controller.listener.names", kmsg.ConfigTypeList, "CONTROLLER", "", true, anyString, "Cluster mode: the listener in listeners with this name (the first of the list that is there) is where the embedded etcd member binds its peer port, while controller.quorum.voters holds the address it advertises; it serves no Kafka requests. Without one the member binds its voter address."},
	{"etcd.endpoints", kmsg.ConfigTypeList, "", "", true, anyString, "Cluster mode with an external etcd: its client URLs (Gregor's own setting)."},
	{"controlled.shutdown.enable", kmsg.ConfigTypeBoolean, "true", "", true, boolean, "Cluster mode: a broker stopping on SIGTERM first has the leadership of its partitions moved to other in-sync replicas (waiting at most controlled.shutdown.timeout.ms)."},
	{"controlled.shutdown.timeout.ms", kmsg.ConfigTypeLong, "30000", "", true, atLeast(0), "How long a controlled shutdown waits for the leadership of this broker's partitions to move (Gregor's own setting; Kafka bounds it by retries of its ControlledShutdown request)."},
	{"broker.rack", kmsg.ConfigTypeString, "", "", true, anyString, "This broker's rack; replicas of a partition are spread over racks."},
	{"broker.session.timeout.ms", kmsg.ConfigTypeInt, "3000", "", true, intAtLeast(1000), "How long a broker that stops renewing its etcd lease stays registered (whole seconds); Kafka's default is 9000, Gregor's is shorter to keep failover under 6 s."},
	{"replica.lag.time.max.ms", kmsg.ConfigTypeLong, "30000", "", true, atLeast(1), "A follower not caught up for this long leaves the ISR."},
	{"max.incremental.fetch.session.cache.slots", kmsg.ConfigTypeInt, "1000", "", true, intAtLeast(0), "The incremental fetch sessions (KIP-227) a broker keeps at most; 0 makes none."},
	{"replica.socket.timeout.ms", kmsg.ConfigTypeInt, "30000", "", true, intAtLeast(1), "How long a follower waits for its leader's answer beyond a Fetch's replica.fetch.wait.max.ms."},
	{"replica.fetch.wait.max.ms", kmsg.ConfigTypeInt, "500", "", true, intAtLeast(0), "How long a follower's Fetch waits for data at the leader."},
	{"replica.fetch.min.bytes", kmsg.ConfigTypeInt, "1", "", true, intAtLeast(1), "The bytes a follower's Fetch waits for."},
	{"replica.fetch.max.bytes", kmsg.ConfigTypeInt, "1048576", "", true, intAtLeast(0), "The bytes a follower fetches per partition."},
	{"replica.fetch.response.max.bytes", kmsg.ConfigTypeInt, "10485760", "", true, intAtLeast(0), "The bytes a follower fetches per request."},
	{"replica.selector.class", kmsg.ConfigTypeClass, "", "", true, oneOf("", RackAwareReplicaSelector), "Where consumers fetch from (KIP-392): unset, always the leader; " + RackAwareReplicaSelector + ", an in-sync follower in the consumer's rack (client.rack) when the leader is in another."},
	{"replica.fetch.backoff.ms", kmsg.ConfigTypeInt, "1000", "", true, intAtLeast(0), "How long a follower waits after a failed fetch."},
	{"num.io.threads", kmsg.ConfigTypeInt, "8", "", false, intAtLeast(1), "Kafka's request handler threads; accepted and reported, Gregor serves each connection on its own goroutines."},
	{"num.network.threads", kmsg.ConfigTypeInt, "3", "", false, intAtLeast(1), "Kafka's network threads; accepted and reported, Gregor serves each connection on its own goroutines."},
	{"num.replica.fetchers", kmsg.ConfigTypeInt, "1", "", false, intAtLeast(1), "Kafka's replica fetcher threads per source broker; accepted and reported, Gregor has no such thread pool."},
	{"background.threads", kmsg.ConfigTypeInt, "10", "", false, intAtLeast(1), "Kafka's background task threads; accepted and reported."},
	{"schema.registry.listeners", kmsg.ConfigTypeString, "", "", true, anyString, "The schema registry's listener, http://HOST:PORT: Confluent Schema Registry's REST API with its state in the topic _schemas (Gregor's own setting; off when empty)."},
	{"offset.metadata.max.bytes", kmsg.ConfigTypeInt, "4096", "", true, intAtLeast(0), "The largest metadata string of a committed offset."},
	{"delegation.token.secret.key", kmsg.ConfigTypePassword, "", "", true, anyString, "The key of delegation tokens' HMACs; the same on every broker. Delegation tokens are off without it."},
	{"delegation.token.master.key", kmsg.ConfigTypePassword, "", "", true, anyString, "Deprecated: delegation.token.secret.key."},
	{"delegation.token.max.lifetime.ms", kmsg.ConfigTypeLong, "604800000", "", true, atLeast(1), "The longest a delegation token may live, renewals included."},
	{"delegation.token.expiry.time.ms", kmsg.ConfigTypeLong, "86400000", "", true, atLeast(1), "How long a delegation token lives until renewed."},
	{"delegation.token.expiry.check.interval.ms", kmsg.ConfigTypeLong, "3600000", "", true, atLeast(1), "How often expired delegation tokens are removed."},
}

var (
	topicByName  = map[string]*Def{}
	brokerByName = map[string]*Def{}
)

func init() {
	BrokerDefs = append(BrokerDefs, securityDefs...)
	for i := range TopicDefs {
		d := &TopicDefs[i]
		topicByName[d.Name] = d
		if _, dup := brokerByName[d.Synonym]; !dup && d.Synonym != "" {
			bd := *d
			bd.Name, bd.Synonym = d.Synonym, ""
			if d.Synonym == "log.retention.ms" || d.Synonym == "log.roll.ms" {
				bd.Default = "" // derived from the hours/minutes properties, as in Kafka
			}
			BrokerDefs = append(BrokerDefs, bd)
		}
	}
	slices.SortFunc(BrokerDefs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	for i := range BrokerDefs {
		brokerByName[BrokerDefs[i].Name] = &BrokerDefs[i]
	}
}

// Topic returns the definition of a topic config, nil for an unknown one.
func Topic(name string) *Def { return topicByName[name] }

// Broker returns the definition of a broker property, nil for an unknown
// one (a listener's own properties are known by ListenerConfigName).
func Broker(name string) *Def { return brokerByName[name] }

// ValidateTopic checks one topic config name and value.
func ValidateTopic(name, value string) error {
	d, ok := topicByName[name]
	if !ok {
		return fmt.Errorf("unknown topic config name: %s", name)
	}
	if reason := TypeError(d.Type, value); reason != "" {
		return fmt.Errorf("Invalid value %s for configuration %s: %s", value, name, reason)
	}
	if err := d.Validate(value); err != nil {
		return fmt.Errorf("Invalid value %s for configuration %s: %w", value, name, err)
	}
	return nil
}

// TypeError is why v is not a value of type t, as Kafka's ConfigDef.parseType
// words it ("Not a number of type LONG"), or "" when it is one.
func TypeError(t kmsg.ConfigType, v string) string {
	s := strings.TrimSpace(v)
	switch t {
	case kmsg.ConfigTypeLong:
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return "Not a number of type LONG"
		}
	case kmsg.ConfigTypeInt:
		if _, err := strconv.ParseInt(s, 10, 32); err != nil {
			return "Not a number of type INT"
		}
	case kmsg.ConfigTypeShort:
		if _, err := strconv.ParseInt(s, 10, 16); err != nil {
			return "Not a number of type SHORT"
		}
	case kmsg.ConfigTypeDouble:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return "Not a number of type DOUBLE"
		}
	case kmsg.ConfigTypeBoolean:
		if !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
			return "Expected value to be either true or false"
		}
	}
	return ""
}

// Synonym is one entry of a DescribeConfigs synonym list.
func Synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, kmsg.StringPtr(value), src
	return s
}
