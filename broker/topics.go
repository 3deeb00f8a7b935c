package broker

// The topic registry: every topic by name and by id, its partitions and its
// config overrides, and the operations that change them (create, delete,
// add partitions, set configs). Broker.mu guards the maps and each topic's
// partitions, configs and produce fields; those are replaced, never mutated,
// so a reader may keep what it loaded under the lock.
//
// The registry's durable form is one topicRecord per topic, kept by a
// topicStore: today fileTopicStore, the files under <data-dir>/__meta/topics
// (meta.go). The partition directories and their logs stay local to the
// broker; only the records would move to a shared store (etcd) in a cluster.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/cluster"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
)

// topicStore persists the registry's topic records. Every method is called
// with Broker.mu held for writing (loadAll: before the broker serves), so an
// implementation needs no locking of its own for the registry's sake.
type topicStore interface {
	// save stores rec durably, replacing the record with the same ID.
	save(rec topicRecord) error
	// remove deletes the record of topic id durably; a missing record is
	// not an error.
	remove(id uuid) error
	// loadAll returns every stored record, in no particular order.
	loadAll() ([]topicRecord, error)
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
// the leader, in leaderEpoch 0. In a cluster (cluster.go) log is nil when
// no replica is assigned to this broker (a partition object is replaced
// when that changes, so log never changes), and the rest follows the
// metadata.
type partition struct {
	topic *topic
	index int32
	log   *storage.Log

	epoch       atomic.Int32                       // the current leader epoch
	meta        atomic.Pointer[cluster.Partition]  // cluster: the partition's state in etcd
	leader      atomic.Pointer[replication.Leader] // cluster: set while this broker leads
	followEpoch atomic.Int32                       // cluster: the epoch the fetcher follows
}

// loadTopics opens every persisted topic's partitions and deals with the
// rest of the data directory (datadir.go): partitions being deleted are
// removed, stray ones renamed aside, anything else left alone.
func (b *Broker) loadTopics() error {
	start := time.Now()
	recs, err := b.topicRecords.loadAll()
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
	if err := b.scanDataDir(claimed, false); err != nil {
		return err
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
	dead, err := renameAside(dir, deleteSuffix)
	if err != nil {
		b.log.Error("rename for delete", "dir", dir, "err", err)
		return
	}
	b.removeDirAsync(dead)
}

// renameAside renames dir to <name>.<id><suffix> beside it (the names
// retiredName matches) and returns the new path. As Kafka does, a long
// name is shortened so that the result fits in a file name.
func renameAside(dir, suffix string) (string, error) {
	base := filepath.Base(dir)
	if len(base) > 200 {
		base = base[:200]
	}
	to := filepath.Join(filepath.Dir(dir), base+"."+newUUID().String()+suffix)
	return to, os.Rename(dir, to)
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

// createTopic creates a topic durably with the default replication factor.
// Caller validated name and configs.
func (b *Broker) createTopic(name string, partitions int32, configs map[string]string) (*topic, error) {
	return b.createTopicAssigned(name, partitions, -1, nil, configs)
}

// createTopicAssigned creates a topic with replicationFactor replicas per
// partition (-1: default.replication.factor) or the given assignment. A
// single node validated both to be itself alone.
func (b *Broker) createTopicAssigned(name string, partitions int32, replicationFactor int16, assignment map[int32][]int32, configs map[string]string) (*topic, error) {
	if b.cl != nil {
		return b.clusterCreateTopic(name, partitions, replicationFactor, assignment, configs)
	}
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
	if err := b.topicRecords.save(topicRecord{Name: name, ID: t.id.String(), Partitions: partitions, Configs: t.configs}); err != nil {
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
	held, err := checkPartitionDir(dir)
	if err != nil {
		b.log.Error("cannot create a partition", "topic", t.name, "partition", p, "err", err)
		return nil, err
	}
	if held {
		b.strayDir(dir, "left over from an interrupted delete, or an earlier topic of the same name")
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
	if b.cl != nil {
		return b.clusterDeleteTopic(t)
	}
	b.mu.Lock()
	if b.topics[t.name] != t {
		b.mu.Unlock()
		return nil
	}
	if err := b.topicRecords.remove(t.id); err != nil {
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
	if b.cl != nil {
		return b.clusterAddPartitions(t, count)
	}
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
	if err := b.topicRecords.save(topicRecord{Name: t.name, ID: t.id.String(), Partitions: count, Configs: t.configs}); err != nil {
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
	if b.cl != nil {
		return b.clusterSetTopicConfigs(t, configs)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.topicRecords.save(topicRecord{Name: t.name, ID: t.id.String(), Partitions: int32(len(t.partitions)), Configs: configs}); err != nil {
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

// allPartitions returns every partition with a log on this broker (in a
// cluster, the partitions it is a replica of).
func (b *Broker) allPartitions() []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*partition
	for _, t := range b.topics {
		for _, p := range t.partitions {
			if p.log != nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// topicList returns every topic.
func (b *Broker) topicList() []*topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		out = append(out, t)
	}
	return out
}
