package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker is a single Kafka-compatible broker: its topics, their partition
// logs, and the connections it serves.
type Broker struct {
	cfg       Config
	log       *slog.Logger
	nodeID    int32
	clusterID string
	maxReq    int32
	reqBytes  byteBudget

	// mu guards the topic registry: the topics and topicsByID maps, and
	// each topic's partitions, configs and produce fields, which are
	// replaced under the write lock, never mutated, so a reader may keep
	// what it loaded under the read lock. The write lock is held across a
	// topic's creation, growth, config change and the removal of its
	// metadata, file writes included, so those changes are serialised.
	// Where it sits in the program's lock order: doc.go, "Lock order".
	mu         sync.RWMutex
	topics     map[string]*topic
	topicsByID map[uuid]*topic

	pids   producerIDs
	groups *coordinator.Coordinator
	txns   *coordinator.TxnCoordinator

	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup

	srv server

	obs    observer // metrics (observe.go)
	faults faultSet // fault injection (faults.go)
}

// topic is one topic; its partitions slice is replaced, never mutated, so
// readers may keep the slice they loaded under b.mu.
type topic struct {
	name       string
	id         uuid
	configs    map[string]string // overrides (DYNAMIC_TOPIC_CONFIG); replaced, not mutated
	produce    produceSettings   // parsed from configs; replaced with them
	partitions []*partition
}

// partition is one partition and its log. On a single broker it is always
// the leader, in leaderEpoch 0.
type partition struct {
	topic       *topic
	index       int32
	log         *storage.Log
	leaderEpoch int32
}

// New opens (or creates) the data directory, recovers every partition and
// returns a broker ready to Serve.
func New(cfg Config) (*Broker, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9092"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "./data"
	}
	if cfg.Props == nil {
		cfg.Props = map[string]string{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := validateProps(cfg.Props, cfg.Logger); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:        cfg,
		log:        cfg.Logger,
		nodeID:     int32(cfg.int64Prop("node.id")),
		maxReq:     int32(cfg.int64Prop("socket.request.max.bytes")),
		reqBytes:   byteBudget{limit: cfg.int64Prop("queued.max.request.bytes")},
		topics:     map[string]*topic{},
		topicsByID: map[uuid]*topic{},
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if err := os.MkdirAll(b.topicsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	var err error
	if b.clusterID, err = b.loadMetaProperties(); err != nil {
		return nil, err
	}
	if err := b.pids.open(filepath.Join(cfg.DataDir, metaDirName, producerIDsName)); err != nil {
		return nil, err
	}
	if err := b.loadTopics(); err != nil {
		b.closeLogs()
		return nil, err
	}
	if b.groups, err = b.openGroups(); err != nil {
		b.closeLogs()
		return nil, err
	}
	if b.txns, err = b.openTxns(); err != nil {
		b.groups.Close()
		b.closeLogs()
		return nil, err
	}
	b.startBackground()
	return b, nil
}

// loadTopics opens every persisted topic's partitions and removes directories
// left behind by interrupted creates and deletes.
func (b *Broker) loadTopics() error {
	start := time.Now()
	recs, err := b.loadTopicRecords()
	if err != nil {
		return err
	}
	claimed := map[string]uuid{}
	for _, rec := range recs {
		id, err := parseUUID(rec.ID)
		if err != nil {
			return fmt.Errorf("topic %s: %w", rec.Name, err)
		}
		t := &topic{name: rec.Name, id: id, configs: rec.Configs}
		if t.configs == nil {
			t.configs = map[string]string{}
		}
		t.produce = b.produceSettingsFor(t.configs)
		for p := int32(0); p < rec.Partitions; p++ {
			dir := filepath.Join(b.cfg.DataDir, partitionDirName(rec.Name, p))
			claimed[partitionDirName(rec.Name, p)] = id
			part, err := b.openPartition(t, p, dir)
			if err != nil {
				return err
			}
			t.partitions = append(t.partitions, part)
		}
		b.topics[t.name] = t
		b.topicsByID[t.id] = t
	}
	ents, err := os.ReadDir(b.cfg.DataDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || name == metaDirName {
			continue
		}
		dir := filepath.Join(b.cfg.DataDir, name)
		if strings.HasSuffix(name, deleteSuffix) {
			b.removeDirAsync(dir)
			continue
		}
		want, ok := claimed[name]
		if ok {
			if got, err := readPartitionMetadata(dir); err == nil && got == want {
				continue
			}
		}
		if i := strings.LastIndexByte(name, '-'); i <= 0 {
			continue // not a partition directory: leave it alone
		} else if _, err := strconv.Atoi(name[i+1:]); err != nil {
			continue
		}
		if ok {
			return fmt.Errorf("partition directory %s belongs to another topic id", dir)
		}
		b.log.Warn("removing stray partition directory", "dir", dir)
		b.retireDir(dir)
	}
	b.log.Info("loaded topics", "topics", len(b.topics), "elapsed", time.Since(start))
	return nil
}

func (b *Broker) openPartition(t *topic, p int32, dir string) (*partition, error) {
	l, err := storage.Open(dir, b.storageConfig(t))
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", t.name, p, err)
	}
	return &partition{topic: t, index: p, log: l}, nil
}

// retireDir renames a directory to a -delete name and removes it in the
// background.
func (b *Broker) retireDir(dir string) {
	// As Kafka does, shorten long names so the result fits in a file name.
	base := filepath.Base(dir)
	if len(base) > 200 {
		base = base[:200]
	}
	dead := filepath.Join(filepath.Dir(dir), base+"."+newUUID().String()+deleteSuffix)
	if err := os.Rename(dir, dead); err != nil {
		b.log.Error("rename for delete", "dir", dir, "err", err)
		return
	}
	b.removeDirAsync(dead)
}

func (b *Broker) removeDirAsync(dir string) {
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		if err := os.RemoveAll(dir); err != nil {
			b.log.Error("remove directory", "dir", dir, "err", err)
		}
	}()
}

// topicConfigValue is a topic config's effective value and where it came
// from: the topic's override, the broker property, or Kafka's default.
func (b *Broker) topicConfigValue(overrides map[string]string, name string) (string, kmsg.ConfigSource) {
	if v, ok := overrides[name]; ok {
		return v, kmsg.ConfigSourceDynamicTopicConfig
	}
	d := topicConfigByName[name]
	if d == nil {
		return "", kmsg.ConfigSourceUnknown
	}
	if v, src := b.cfg.brokerValue(d.synonym); src == kmsg.ConfigSourceStaticBrokerConfig {
		return v, src
	}
	return d.def, kmsg.ConfigSourceDefaultConfig
}

func (b *Broker) topicInt(overrides map[string]string, name string) int64 {
	v, _ := b.topicConfigValue(overrides, name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// storageConfig maps a topic's effective configs to the log's.
func (b *Broker) storageConfig(t *topic) storage.Config {
	c := storage.DefaultConfig()
	o := t.configs
	c.SegmentBytes = b.topicInt(o, "segment.bytes")
	c.SegmentMs = b.topicInt(o, "segment.ms")
	c.IndexIntervalBytes = int32(b.topicInt(o, "index.interval.bytes"))
	c.RetentionMs = b.topicInt(o, "retention.ms")
	c.RetentionBytes = b.topicInt(o, "retention.bytes")
	c.FlushMessages = b.topicInt(o, "flush.messages")
	c.FlushMs = b.topicInt(o, "flush.ms")
	c.Now = b.cfg.Now
	c.Decompress = decompress
	c.Logger = b.log.With("topic", t.name)
	return c
}

// lookupTopic returns a topic by name, or nil.
func (b *Broker) lookupTopic(name string) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.topics[name]
}

// lookupTopicID returns a topic by id, or nil.
func (b *Broker) lookupTopicID(id uuid) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.topicsByID[id]
}

// topicPartitions returns the current partitions of the named topic, nil
// when it does not exist.
func (b *Broker) topicPartitions(name string) []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if t := b.topics[name]; t != nil {
		return t.partitions
	}
	return nil
}

// partitionAt returns parts[p], or nil when p is out of range.
func partitionAt(parts []*partition, p int32) *partition {
	if p < 0 || int(p) >= len(parts) {
		return nil
	}
	return parts[p]
}

// partitionsOf returns the current partitions of t (consistent snapshot).
func (b *Broker) partitionsOf(t *topic) []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.partitions
}

// produceSettings are the topic configs every produce consults, parsed
// once per change of the topic's configs instead of on every request.
type produceSettings struct {
	maxMessageBytes   int64
	minInsyncReplicas int64
	logAppendTime     bool
	tsAfterMaxMs      int64
	tsBeforeMaxMs     int64
}

func (b *Broker) produceSettingsFor(overrides map[string]string) produceSettings {
	ts, _ := b.topicConfigValue(overrides, "message.timestamp.type")
	return produceSettings{
		maxMessageBytes:   b.topicInt(overrides, "max.message.bytes"),
		minInsyncReplicas: b.topicInt(overrides, "min.insync.replicas"),
		logAppendTime:     ts == "LogAppendTime",
		tsAfterMaxMs:      b.topicInt(overrides, "message.timestamp.after.max.ms"),
		tsBeforeMaxMs:     b.topicInt(overrides, "message.timestamp.before.max.ms"),
	}
}

// produceSnapshot returns t's produce settings and partitions under the lock.
func (b *Broker) produceSnapshot(t *topic) (produceSettings, []*partition) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.produce, t.partitions
}

// topicSnapshot returns t's configs and partitions under the lock.
func (b *Broker) topicSnapshot(t *topic) (map[string]string, []*partition) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.configs, t.partitions
}

var (
	errTopicExists   = errors.New("topic already exists")
	errTopicCollides = errors.New("topic name collides with an existing topic")
)

// createTopic creates a topic durably. Caller validated name and configs.
func (b *Broker) createTopic(name string, partitions int32, configs map[string]string) (*topic, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[name]; ok {
		return nil, errTopicExists
	}
	if other := b.collidingTopicLocked(name); other != "" {
		return nil, fmt.Errorf("%w %s: topics may not differ only in '.' and '_'", errTopicCollides, other)
	}
	t := &topic{name: name, id: newUUID(), configs: maps.Clone(configs)}
	if t.configs == nil {
		t.configs = map[string]string{}
	}
	t.produce = b.produceSettingsFor(t.configs)
	for p := int32(0); p < partitions; p++ {
		part, err := b.createPartition(t, p)
		if err != nil {
			for _, pp := range t.partitions {
				pp.log.Delete()
			}
			return nil, err
		}
		t.partitions = append(t.partitions, part)
	}
	if err := b.saveTopic(topicRecord{Name: name, ID: t.id.String(), Partitions: partitions, Configs: t.configs}); err != nil {
		for _, pp := range t.partitions {
			pp.log.Delete()
		}
		return nil, fmt.Errorf("persist topic: %w", err)
	}
	b.topics[name] = t
	b.topicsByID[t.id] = t
	b.log.Info("created topic", "topic", name, "id", t.id, "partitions", partitions, "configs", t.configs)
	return t, nil
}

// createPartition creates and opens partition p of t. Lock should be held.
func (b *Broker) createPartition(t *topic, p int32) (*partition, error) {
	dir := filepath.Join(b.cfg.DataDir, partitionDirName(t.name, p))
	if _, err := os.Stat(dir); err == nil {
		b.retireDir(dir) // left over from an interrupted delete
	}
	part, err := b.openPartition(t, p, dir)
	if err != nil {
		return nil, err
	}
	if err := writePartitionMetadata(dir, t.id); err != nil {
		part.log.Delete()
		return nil, err
	}
	return part, nil
}

// deleteTopic removes a topic: its metadata first, then its logs.
func (b *Broker) deleteTopic(t *topic) error {
	b.mu.Lock()
	if b.topics[t.name] != t {
		b.mu.Unlock()
		return nil
	}
	if err := b.removeTopicRecord(t.id); err != nil {
		b.mu.Unlock()
		return err
	}
	delete(b.topics, t.name)
	delete(b.topicsByID, t.id)
	parts := t.partitions
	b.mu.Unlock()
	for _, p := range parts {
		if err := p.log.Close(); err != nil && !errors.Is(err, storage.ErrLogClosed) {
			b.log.Warn("close deleted partition", "topic", t.name, "partition", p.index, "err", err)
		}
		b.retireDir(filepath.Join(b.cfg.DataDir, partitionDirName(t.name, p.index)))
	}
	if b.groups != nil {
		b.groups.DeleteTopicOffsets(t.name)
	}
	b.log.Info("deleted topic", "topic", t.name, "id", t.id)
	return nil
}

// addPartitions grows t to count partitions.
func (b *Broker) addPartitions(t *topic, count int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	parts := slices.Clone(t.partitions)
	for p := int32(len(parts)); p < count; p++ {
		part, err := b.createPartition(t, p)
		if err != nil {
			for _, pp := range parts[len(t.partitions):] {
				pp.log.Delete()
			}
			return err
		}
		parts = append(parts, part)
	}
	if err := b.saveTopic(topicRecord{Name: t.name, ID: t.id.String(), Partitions: count, Configs: t.configs}); err != nil {
		for _, pp := range parts[len(t.partitions):] {
			pp.log.Delete()
		}
		return err
	}
	t.partitions = parts
	b.log.Info("added partitions", "topic", t.name, "partitions", count)
	return nil
}

// setTopicConfigs replaces t's overrides, persists them and applies them to
// every partition's log.
func (b *Broker) setTopicConfigs(t *topic, configs map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.saveTopic(topicRecord{Name: t.name, ID: t.id.String(), Partitions: int32(len(t.partitions)), Configs: configs}); err != nil {
		return err
	}
	t.configs = configs
	t.produce = b.produceSettingsFor(configs)
	sc := b.storageConfig(t)
	for _, p := range t.partitions {
		p.log.UpdateConfig(sc)
	}
	b.log.Info("altered topic configs", "topic", t.name, "configs", configs)
	return nil
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
	every(min(b.cfg.int64Prop("log.flush.scheduler.interval.ms"), 1000), func(p *partition) {
		if err := p.log.FlushIfDue(); err != nil {
			b.log.Error("flush", "topic", p.topic.name, "partition", p.index, "err", err)
		}
	})
}

func (b *Broker) allPartitions() []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*partition
	for _, t := range b.topics {
		out = append(out, t.partitions...)
	}
	return out
}

// Close stops serving, waits for connections to finish, flushes and closes
// every log (writing clean-shutdown markers).
func (b *Broker) Close() error {
	b.cancel()
	b.srv.close()
	b.bg.Wait()
	var errs []error
	if b.txns != nil {
		errs = append(errs, b.txns.Close())
	}
	if b.groups != nil {
		errs = append(errs, b.groups.Close())
	}
	errs = append(errs, b.closeLogs())
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
		Logger:                        b.log.With("component", "groups"),
	})
}

func (b *Broker) closeLogs() error {
	var errs []error
	for _, p := range b.allPartitions() {
		if err := p.log.Close(); err != nil && !errors.Is(err, storage.ErrLogClosed) {
			errs = append(errs, fmt.Errorf("%s-%d: %w", p.topic.name, p.index, err))
		}
	}
	return errors.Join(errs...)
}

// ClusterID returns the cluster id stored in meta.properties.
func (b *Broker) ClusterID() string { return b.clusterID }
