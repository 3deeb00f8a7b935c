package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/clientmetrics"
	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/fetchsession"
	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/metastore"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/gregor-broker/gregor/share"
	"github.com/gregor-broker/gregor/storage"
)

// Broker is a single Kafka-compatible broker: its topics, their partition
// logs, and the connections it serves.
type Broker struct {
	cfg       Config
	log       *slog.Logger
	nodeID    int32
	clusterID string
	dirLock   *os.File // <data-dir>/.lock, flock'ed
	// dataDir opens and closes the partition logs in batches: their fsyncs
	// in a few syncs of the file system, one clean-shutdown list.
	dataDir  *storage.LogDir
	maxReq   int32
	reqBytes byteBudget

	// mu guards the topic registry (topics.go): the topics and topicsByID
	// maps, and each topic's partitions, configs and produce fields, which
	// are replaced under the write lock, never mutated, so a reader may keep
	// what it loaded under the read lock. The write lock is held across a
	// topic's creation, growth, config change and the removal of its
	// metadata, file writes included, so those changes are serialised.
	// Where it sits in the program's lock order: docs/LOCK_ORDER.md.
	mu         sync.RWMutex
	topics     map[string]*topic
	topicsByID map[uuid]*topic
	// topicsByMetricName: the topics whose names have '.' or '_', by
	// metricName, for collidingTopic (putTopicLocked, dropTopicLocked).
	topicsByMetricName map[string][]string
	topicRecords       topicStore // where the topic records are persisted

	// dataDirNames are the names the data directory held at its last
	// listing (scanDataDir) and those a delete could not rename aside;
	// nil before the first listing (mayHoldDir).
	dataDirNamesMu sync.Mutex
	dataDirNames   map[string]bool

	pids    producerIDs
	groups  *coordinator.Coordinator
	txns    *coordinator.TxnCoordinator
	offsets *internalTopic // __consumer_offsets (offsets_topic.go)
	txnLog  *internalTopic // __transaction_state (txn_topic.go)

	shareCoord    *coordinator.ShareCoordinator // share coordinator (share_state_topic.go)
	shareLog      *internalTopic                // __share_group_state
	shares        *share.Cache                  // the share-partitions this broker leads (shares.go)
	shareSessions *share.Sessions               // the share sessions on this broker
	fetchSessions *fetchsession.Cache           // incremental fetch sessions (KIP-227)
	fetchStamps   atomic.Int64                  // fetchStamp's stamps for rack-aware consumers

	// toldNotLeader is when a client was last answered
	// NOT_LEADER_OR_FOLLOWER (unix ns): a controlled shutdown serves on
	// until it is a moment ago (controlled_shutdown.go).
	toldNotLeader atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup
	logDir logDirState // logdir_failure.go

	srv server

	cluster *clusterState // nil on a single node (cluster.go)

	observer observer // the metrics, built on first use (metrics.go)

	cleaner      cleanerState   // the log cleaner threads (cleaner.go)
	dynConfigs   dynState       // dynamic broker configs (dynconfig.go)
	groupConfigs configMapStore // resource type GROUP: share groups' configs (groupconfigs.go)
	features     configMapStore // the finalized feature levels (features.go)
	faults       faultSet       // fault injection (faults.go)

	users      *authn.Users                 // SASL users (users.go, package security/authn)
	tokens     *authn.Tokens                // delegation tokens (delegation_tokens.go)
	localUsers *metastore.File              // __meta/users.json, the store on a single node
	sec        securityStats                // TLS and SASL counts (sasl.go)
	acl        *acl.Authorizer              // the authorizer (acl.go, package security/acl)
	quotas     *quota.Manager               // client quotas and connection rates (package quota; quotas.go)
	cm         *clientmetrics.Manager       // KIP-714 client metrics (package clientmetrics; clientmetrics.go)
	linkStore  *link.Store                  // cluster links' records (links.go, package link)
	links      atomic.Pointer[link.Manager] // runs the links on this broker, from Listen
	registry   *schemaRegistry              // the schema registry's listener; nil without one (schema_registry.go)
	schemaIDs  schemaIDCache                // schema ids' subjects for schema validation (schema_validation.go)
}

// dataDirLockTimeout is how long New waits for another broker to release
// the data directory (as bbolt's lock on groups.db waited before).
var dataDirLockTimeout = 5 * time.Second

// New opens (or creates) the data directory, recovers every partition and
// returns a broker ready to Serve.
func New(cfg Config) (*Broker, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9092"
	}
	if cfg.Props == nil {
		cfg.Props = map[string]string{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir, err := dataDirOf(cfg.DataDir, cfg.Props, cfg.Logger)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dir
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := validateProps(cfg.Props, cfg.Logger); err != nil {
		return nil, err
	}
	if err := config.CheckGroupProps(cfg.int64Prop); err != nil {
		return nil, err
	}
	if cfg.clusterConfigured() && cfg.JoinCluster == nil {
		return nil, errNoClusterStore
	}
	b := &Broker{
		cfg:                cfg,
		log:                cfg.Logger,
		nodeID:             int32(cfg.int64Prop("node.id")),
		maxReq:             int32(cfg.int64Prop("socket.request.max.bytes")),
		reqBytes:           byteBudget{limit: cfg.int64Prop("queued.max.request.bytes")},
		topics:             map[string]*topic{},
		topicsByID:         map[uuid]*topic{},
		topicsByMetricName: map[string][]string{},
	}
	b.offsets, b.txnLog, b.shareLog = b.offsetsInternalTopic(), b.txnInternalTopic(), b.shareInternalTopic()
	b.shares = share.NewCache(sharePersister{b}, shareSettings{b}, b.log)
	b.shareSessions = share.NewSessions(b.shares)
	b.fetchSessions = fetchsession.NewCache(int(cfg.int64Prop("max.incremental.fetch.session.cache.slots")), func(p *fetchsession.Partition, watched any) {
		watched.(*storage.Log).Unwatch(p)
	})
	b.fetchSessions.Stamp = b.fetchStamp
	b.ctx, b.cancel = context.WithCancel(context.Background())
	ok := false // New succeeded; else the data dir lock is released
	topicsDir := filepath.Join(cfg.DataDir, metaDirName, topicsDirName)
	if err := os.MkdirAll(topicsDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if b.dirLock, err = lockDataDir(cfg.DataDir, dataDirLockTimeout); err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			b.dirLock.Close()
		}
	}()
	if b.dataDir, err = storage.OpenLogDir(cfg.DataDir); err != nil {
		return nil, err
	}
	b.dataDir.SetMaxOpenFiles(int(b.cfg.int64Prop("log.dir.max.open.files")))
	b.dataDir.SetInTheWay(b.dirInTheWay)
	b.topicRecords = newFileTopicStore(topicsDir)
	if err := b.initUsers(); err != nil {
		return nil, err
	}
	if err := b.initTokens(); err != nil {
		return nil, err
	}
	if err := b.initACLs(); err != nil {
		return nil, err
	}
	if err := b.initQuotas(); err != nil {
		return nil, err
	}
	if err := b.initClientMetrics(); err != nil {
		return nil, err
	}
	if err := b.initLinks(); err != nil {
		return nil, err
	}
	if b.clusterID, err = b.loadMetaProperties(); err != nil {
		return nil, err
	}
	if err := b.pids.open(filepath.Join(cfg.DataDir, metaDirName, producerIDsName)); err != nil {
		return nil, err
	}
	// In a cluster the topics come from etcd once the broker has joined
	// (Listen); the files under __meta/topics are a single node's. So are
	// the dynamic broker configs, read first: they set the topic defaults.
	if err := b.initBrokerConfigs(); err != nil {
		return nil, err
	}
	if !cfg.clusterConfigured() {
		if err := b.loadTopics(); err != nil {
			b.closeLogs()
			return nil, err
		}
	}
	if err := b.initGroupConfigs(); err != nil {
		b.closeLogs()
		return nil, err
	}
	if err := b.initFeatures(); err != nil {
		b.closeLogs()
		return nil, err
	}
	if b.groups, err = b.openGroups(); err != nil {
		b.closeLogs()
		return nil, err
	}
	if !cfg.clusterConfigured() && b.lookupTopic(offsetsTopicName) != nil {
		b.offsets.ensure() // loads it; in a cluster: as the metadata arrives
	}
	if b.txns, err = b.openTxns(); err != nil {
		b.groups.Close()
		b.closeLogs()
		return nil, err
	}
	if !cfg.clusterConfigured() && (b.lookupTopic(txnStateTopicName) != nil || b.txns.HasUnloggedState()) {
		b.txnLog.ensure() // loads it (migrating txns.db); in a cluster: as the metadata arrives
	}
	b.shareCoord = b.openShareCoordinator()
	if !cfg.clusterConfigured() && b.lookupTopic(shareStateTopicName) != nil {
		b.shareLog.ensure() // loads it; in a cluster: as the metadata arrives
	}
	b.startBackground()
	ok = true
	return b, nil
}

// startBackground runs retention and flush.ms checks.
func (b *Broker) startBackground() {
	every := func(ms int64, fn func(*partition)) {
		if ms <= 0 || ms > int64(24*time.Hour/time.Millisecond)*365 {
			return
		}
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			tick := time.NewTicker(time.Duration(ms) * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-b.ctx.Done():
					return
				case <-tick.C:
					for _, p := range b.allPartitions() {
						fn(p)
					}
				}
			}
		}()
	}
	every(b.cfg.int64Prop("log.retention.check.interval.ms"), func(p *partition) {
		if n, err := p.log.ApplyRetention(); err != nil {
			b.log.Error("retention", "topic", p.topic.name, "partition", p.index, "err", err)
		} else if n > 0 {
			b.log.Info("retention deleted segments", "topic", p.topic.name, "partition", p.index, "segments", n, "logStartOffset", p.log.LogStartOffset())
		}
	})
	b.startCleaner()
	if b.tokens.Enabled() {
		b.bg.Add(1)
		go b.expireTokens()
	}
	every(min(b.cfg.int64Prop("log.flush.scheduler.interval.ms"), 1000), func(p *partition) {
		if err := p.log.FlushIfDue(); err != nil {
			b.log.Error("flush", "topic", p.topic.name, "partition", p.index, "err", err)
		}
	})
}

// Close stops serving, waits for connections to finish, flushes and closes
// every log (writing clean-shutdown markers).
func (b *Broker) Close() error {
	b.cancel()
	if m := b.links.Load(); m != nil {
		m.Close()
	}
	if b.registry != nil {
		b.registry.close()
	}
	b.srv.close()
	b.bg.Wait()
	b.stopCluster()
	var errs []error
	if b.txns != nil {
		errs = append(errs, b.txns.Close())
	}
	if b.groups != nil {
		errs = append(errs, b.groups.Close())
	}
	errs = append(errs, b.closeLogs())
	if b.dirLock != nil {
		errs = append(errs, b.dirLock.Close())
		b.dirLock = nil
	}
	return errors.Join(errs...)
}

// openGroups opens the group coordinator, its state in
// <data-dir>/__meta/groups.db.
func (b *Broker) openGroups() (*coordinator.Coordinator, error) {
	ms := func(name string) time.Duration { return time.Duration(b.cfg.int64Prop(name)) * time.Millisecond }
	delay := ms("group.initial.rebalance.delay.ms")
	if delay == 0 {
		delay = -1 // the coordinator reads 0 as "default"; Kafka's 0 means none
	}
	streamsDelay := ms("group.streams.initial.rebalance.delay.ms")
	if streamsDelay == 0 {
		streamsDelay = -1 // as above
	}
	return coordinator.Open(coordinator.Config{
		Dir:                           filepath.Join(b.cfg.DataDir, metaDirName),
		Now:                           b.cfg.Now,
		InitialRebalanceDelay:         delay,
		MinSessionTimeout:             ms("group.min.session.timeout.ms"),
		MaxSessionTimeout:             ms("group.max.session.timeout.ms"),
		OffsetsRetention:              time.Duration(b.cfg.int64Prop("offsets.retention.minutes")) * time.Minute,
		OffsetsRetentionCheckInterval: ms("offsets.retention.check.interval.ms"),
		OffsetMetadataMaxSize:         int(b.cfg.int64Prop("offset.metadata.max.bytes")),
		MaxGroupSize:                  int(b.cfg.int64Prop("group.max.size")),
		TopicPartitions:               b.topicPartitionCount,
		Topics:                        b.consumerTopics,
		ConsumerSessionTimeout:        ms("group.consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval:     ms("group.consumer.heartbeat.interval.ms"),
		ConsumerGroupTimeouts:         b.consumerTimeouts,
		ConsumerAssignors:             config.SplitList(b.cfg.stringProp("group.consumer.assignors")),
		ConsumerMigrationPolicy:       b.cfg.stringProp("group.consumer.migration.policy"),
		ShareSessionTimeout:           ms("group.share.session.timeout.ms"),
		ShareHeartbeatInterval:        ms("group.share.heartbeat.interval.ms"),
		ShareGroupTimeouts:            b.shareTimeouts,
		StreamsSessionTimeout:         ms("group.streams.session.timeout.ms"),
		StreamsHeartbeatInterval:      ms("group.streams.heartbeat.interval.ms"),
		StreamsNumStandbyReplicas:     int(b.cfg.int64Prop("group.streams.num.standby.replicas")),
		StreamsTopologyDescriptions:   b.cfg.Props["group.streams.topology.description.plugin.class"] != "",
		StreamsInitialRebalanceDelay:  streamsDelay,
		StreamsGroupSettings:          b.streamsSettings,
		OnShareMemberLeave:            b.shareSessions.MemberLeft,
		OnShareGroupDeleted:           b.onShareGroupDeleted,
		Logger:                        b.log.With("component", "groups"),
		Log:                           groupLog{b: b, topic: offsetsTopicName},
		LogPartitions:                 int32(b.cfg.int64Prop("offsets.topic.num.partitions")),
		LogReplicated:                 b.cfg.clusterConfigured(),
	})
}

// closeLogs closes every partition's log, several at a time, with one sync
// of the data directory and its clean-shutdown list for all of them.
func (b *Broker) closeLogs() error {
	parts := b.allPartitions()
	logs := make([]*storage.Log, len(parts))
	for i, p := range parts {
		logs[i] = p.log
	}
	closeErrs, err := b.dataDir.CloseLogs(logs)
	errs := []error{err}
	for i, err := range closeErrs {
		if err != nil && !errors.Is(err, storage.ErrLogClosed) {
			errs = append(errs, fmt.Errorf("%s-%d: %w", parts[i].topic.name, parts[i].index, err))
		}
	}
	return errors.Join(errs...)
}

// ClusterID returns the cluster id stored in meta.properties.
func (b *Broker) ClusterID() string { return b.clusterID }
