package coordinator

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Defaults applied by Open to zero fields of Config. They are Kafka's broker
// defaults of the same names.
const (
	DefaultInitialRebalanceDelay         = 3 * time.Second  // group.initial.rebalance.delay.ms
	DefaultMinSessionTimeout             = 6 * time.Second  // group.min.session.timeout.ms
	DefaultMaxSessionTimeout             = 30 * time.Minute // group.max.session.timeout.ms
	DefaultOffsetsRetention              = week             // offsets.retention.minutes
	DefaultOffsetsRetentionCheckInterval = 10 * time.Minute // offsets.retention.check.interval.ms
	DefaultOffsetMetadataMaxSize         = 4096             // offset.metadata.max.bytes
	DefaultNewMemberJoinTimeout          = 5 * time.Minute  // group.new.member.join.timeout.ms
	dbFileName                           = "groups.db"      // Config.Dir/groups.db
	noTimeout                            = time.Duration(math.MaxInt64)

	// week is Kafka's default for how long idle state is kept: the
	// offsets of an empty group, an unused transactional id.
	week = 7 * 24 * time.Hour
)

// ErrClosed is returned by Close when the coordinator was already closed.
var ErrClosed = errors.New("coordinator: closed")

// Config configures a Coordinator. Zero fields take the Default* values.
type Config struct {
	// Dir holds the bbolt file groups.db; it is created on the first write
	// if missing.
	Dir string
	// Now is the clock for sessions, rebalance delays and retention.
	Now func() time.Time
	// AfterFunc schedules f after d on the same clock as Now. It must not
	// call f synchronously (f takes the coordinator's lock).
	AfterFunc func(d time.Duration, f func()) Timer

	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms; a negative value means none
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	NewMemberJoinTimeout  time.Duration // group.new.member.join.timeout.ms

	// OffsetsRetention is how long the committed offsets of a group are kept
	// once the group is Empty (offsets.retention.minutes).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is the period of the expiry loop.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxSize bounds the metadata string of a commit.
	OffsetMetadataMaxSize int
	// MaxGroupSize is group.max.size.
	MaxGroupSize int

	// TopicPartitions reports a topic's partition count; commits to unknown
	// topics or partitions get UNKNOWN_TOPIC_OR_PARTITION. Nil accepts all.
	TopicPartitions func(topic string) (partitions int32, ok bool)

	Logger *slog.Logger

	// Log, if set, keeps groups and offsets in __consumer_offsets, of
	// LogPartitions partitions, and the coordinator serves only the
	// groups of the partitions loaded with LoadPartition (grouplog.go).
	Log           GroupLog
	LogPartitions int32
	// LogReplicated is set when Log is replicated (a cluster), where a
	// broker that was leader of a partition may have its uncommitted
	// tail truncated and replaced by another leader's records. Then
	// LoadPartition rebuilds the partition's view from the log start
	// instead of replaying the log from the view's checkpoint.
	LogReplicated bool

	// Consumer-protocol groups (consumer.go). Topics lists the broker's
	// topics, for topic ids, partition counts and regex subscriptions; nil
	// means none.
	Topics                    func() []ConsumerTopic
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	// ConsumerGroupTimeouts, if set, gives a consumer group's own
	// consumer.session.timeout.ms and consumer.heartbeat.interval.ms.
	ConsumerGroupTimeouts GroupTimeouts
	// ConsumerAssignors are the server assignors offered, the first the
	// default (group.consumer.assignors); names other than "uniform" and
	// "range" are dropped.
	ConsumerAssignors []string
	// ConsumerMigrationPolicy is group.consumer.migration.policy: which
	// online conversions of non-empty groups between the classic and the
	// consumer protocol are allowed (migrate.go), MigrationBidirectional
	// (the default), MigrationUpgrade, MigrationDowngrade or
	// MigrationDisabled; an unknown value disables both, as Kafka parses it.
	ConsumerMigrationPolicy string

	// Share groups (share.go). ShareGroupTimeouts, if set, gives a group's
	// own share.session.timeout.ms and share.heartbeat.interval.ms.
	ShareSessionTimeout    time.Duration // group.share.session.timeout.ms
	ShareHeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	ShareGroupTimeouts     ShareTimeouts
	// OnShareMemberLeave is called (with the coordinator's lock held: it
	// must not call back) when a share group member leaves or expires, so
	// that the records it acquired are released; OnShareGroupDeleted when
	// a share group is deleted, so that its share-partition state goes.
	OnShareMemberLeave  func(group, member string)
	OnShareGroupDeleted func(group string)

	// Streams groups (streams.go).
	StreamsSessionTimeout     time.Duration // group.streams.session.timeout.ms
	StreamsHeartbeatInterval  time.Duration // group.streams.heartbeat.interval.ms
	StreamsNumStandbyReplicas int           // group.streams.num.standby.replicas
	// StreamsGroupSettings, if set, gives a group's own streams.* group
	// configs (zero values take the ones above).
	StreamsGroupSettings func(group string) StreamsSettings
	// StreamsInitialRebalanceDelay holds back the first target
	// assignment of a group that gets its first member
	// (group.streams.initial.rebalance.delay.ms); negative means none.
	StreamsInitialRebalanceDelay time.Duration
	// StreamsTopologyDescriptions keeps the topology descriptions members
	// push (group.streams.topology.description.plugin.class set,
	// streams_description.go).
	StreamsTopologyDescriptions bool
}

// Coordinator is the classic group coordinator of one broker: it owns every
// group, its membership state machine and its committed offsets. All methods
// are safe for concurrent use.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	db  *boltFile

	// newUUID makes the random part of member ids; tests replace it.
	newUUID func() string

	// coordinatorRuntime holds the lock (mu), the closed flag, the
	// timers and, with a Log, the load state of each partition of
	// __consumer_offsets, its batches in flight and checkpoint (runtime.go).
	coordinatorRuntime

	groups map[string]*group
	shares map[string]*shareGroup // share groups (share.go)
	parked int                    // blocked JoinGroup/SyncGroup calls, for tests
	expiry timerSlot
	// txnPending holds TxnOffsetCommit offsets until their transaction
	// ends (txn_offsets.go).
	txnPending txnPendingOffsets
}

// Open opens Dir/groups.db (created on the first write if missing) and
// restores every group and its committed offsets from it, as Kafka does
// from __consumer_offsets: members come back with fresh session timers, so
// they expire unless their clients heartbeat again.
func Open(cfg Config) (*Coordinator, error) {
	cfg = withDefaults(cfg)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	db, err := openBoltFile(filepath.Join(cfg.Dir, dbFileName))
	if err != nil {
		return nil, fmt.Errorf("coordinator: open %s: %w", dbFileName, err)
	}
	c := &Coordinator{
		cfg:        cfg,
		log:        cfg.Logger,
		db:         db,
		newUUID:    randomUUID,
		groups:     make(map[string]*group),
		shares:     make(map[string]*shareGroup),
		txnPending: make(txnPendingOffsets),
	}
	c.initRuntime("__consumer_offsets", cfg.Log, cfg.LogPartitions, cfg.AfterFunc)
	if err := c.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("coordinator: load %s: %w", dbFileName, err)
	}
	c.mu.Lock()
	for _, g := range c.groups {
		for _, id := range g.order {
			c.scheduleHeartbeatLocked(g, g.members[id], g.members[id].sessionTimeout)
		}
	}
	c.scheduleModernTimersLocked(nil)
	c.scheduleExpiryLocked()
	c.mu.Unlock()
	return c, nil
}

func withDefaults(cfg Config) Config {
	clockDefaults(&cfg.Now, &cfg.AfterFunc, &cfg.Logger)
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	} else if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout == 0 {
		cfg.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if cfg.NewMemberJoinTimeout == 0 {
		cfg.NewMemberJoinTimeout = DefaultNewMemberJoinTimeout
	}
	if cfg.OffsetsRetention == 0 {
		cfg.OffsetsRetention = DefaultOffsetsRetention
	}
	if cfg.OffsetsRetentionCheckInterval == 0 {
		cfg.OffsetsRetentionCheckInterval = DefaultOffsetsRetentionCheckInterval
	}
	if cfg.OffsetMetadataMaxSize == 0 {
		cfg.OffsetMetadataMaxSize = DefaultOffsetMetadataMaxSize
	}
	if cfg.LogPartitions <= 0 {
		cfg.LogPartitions = 50
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = DefaultConsumerHeartbeatInterval
	}
	if cfg.ShareSessionTimeout <= 0 {
		cfg.ShareSessionTimeout = DefaultShareSessionTimeout
	}
	if cfg.ShareHeartbeatInterval <= 0 {
		cfg.ShareHeartbeatInterval = DefaultShareHeartbeatInterval
	}
	if cfg.StreamsSessionTimeout <= 0 {
		cfg.StreamsSessionTimeout = DefaultStreamsSessionTimeout
	}
	if cfg.StreamsHeartbeatInterval <= 0 {
		cfg.StreamsHeartbeatInterval = DefaultStreamsHeartbeatInterval
	}
	if cfg.StreamsInitialRebalanceDelay == 0 {
		cfg.StreamsInitialRebalanceDelay = DefaultStreamsInitialRebalanceDelay
	} else if cfg.StreamsInitialRebalanceDelay < 0 {
		cfg.StreamsInitialRebalanceDelay = 0
	}
	var assignors []string
	for _, a := range cfg.ConsumerAssignors {
		if slices.Contains(consumerAssignors, a) && !slices.Contains(assignors, a) {
			assignors = append(assignors, a)
		}
	}
	if len(assignors) == 0 {
		assignors = consumerAssignors
	}
	cfg.ConsumerAssignors = assignors
	cfg.ConsumerMigrationPolicy = normalizePolicy(cfg.ConsumerMigrationPolicy)
	if cfg.MaxGroupSize <= 0 {
		cfg.MaxGroupSize = math.MaxInt32
	}
	return cfg
}

// Close stops every timer, answers every blocked JoinGroup and SyncGroup with
// COORDINATOR_NOT_AVAILABLE and closes the bbolt file. Committed offsets were
// already durable when their commits were acknowledged.
func (c *Coordinator) Close() error {
	err := c.close(func() {
		c.timers.cancelLocked(&c.expiry)
		c.cancelShareTimersLocked()
		for _, g := range c.groups {
			c.cancelGroupTimersLocked(g)
			for _, id := range g.order {
				m := g.members[id]
				c.completeJoinLocked(m, joinError(id, kerr.CoordinatorNotAvailable))
				c.completeSyncLocked(m, syncError(kerr.CoordinatorNotAvailable))
			}
		}
	})
	if err != nil {
		return err
	}
	return c.db.Close()
}

// waiter is a blocked JoinGroup or SyncGroup call. It is completed at most
// once, under the lock; the channel is buffered so completing never blocks.
type waiter[T any] struct {
	ch   chan T
	done bool
}

// newWaiterLocked registers a blocked call.
//
// Lock should be held.
func newWaiterLocked[T any](c *Coordinator) *waiter[T] {
	c.parked++
	return &waiter[T]{ch: make(chan T, 1)}
}

// completeWaiterLocked answers w unless it was already answered or abandoned.
//
// Lock should be held.
func completeWaiterLocked[T any](c *Coordinator, w *waiter[T], v T) {
	if w == nil || w.done {
		return
	}
	w.done = true
	c.parked--
	w.ch <- v
}

// wait blocks until w is answered or ctx ends; then it returns onCancel.
func wait[T any](c *Coordinator, ctxDone <-chan struct{}, w *waiter[T], onCancel T) T {
	select {
	case v := <-w.ch:
		return v
	case <-ctxDone:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.done {
		return <-w.ch
	}
	w.done = true
	c.parked--
	return onCancel
}

// parkedCalls reports how many JoinGroup/SyncGroup calls are blocked.
func (c *Coordinator) parkedCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked
}

func randomUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
