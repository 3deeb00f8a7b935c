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
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
)

// topicStore persists the registry's topic records. Every method is called
// with Broker.mu held for writing (loadAll: before the broker serves), so an
// implementation needs no locking of its own for the registry's sake.
type topicStore interface {
	// save stores rec durably, replacing the record with the same ID.
	save(rec topicRecord) error
	// saveAll stores recs durably, as save does, in one batch; on an
	// error none of them may be stored.
	saveAll(recs []topicRecord) error
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
	meta        atomic.Pointer[metadata.Partition] // cluster: the partition's state in etcd
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
	cleanList := b.dataDir.CleanShutdown()
	claimed := map[string]uuid{}
	var topics []*topic
	type open struct {
		t  *topic
		p  int32
		sc *storage.Config
	}
	var opens []open
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
		t.partitions = make([]*partition, rec.Partitions)
		sc := b.storageConfig(t)
		for p := int32(0); p < rec.Partitions; p++ {
			claimed[partitionDirName(rec.Name, p)] = id
			opens = append(opens, open{t, p, &sc})
		}
		topics = append(topics, t)
	}
	// Several logs at a time (Kafka's num.recovery.threads.per.data.dir),
	// their fsyncs left to one sync of the data directory.
	errs := make([]error, len(opens))
	storage.Parallel(len(opens), func(i int) {
		o := opens[i]
		o.t.partitions[o.p], errs[i] = b.openPartition(o.t, o.p, *o.sc)
	})
	failed := errors.Join(errs...)
	for _, t := range topics {
		if failed != nil && slices.Contains(t.partitions, nil) {
			for _, p := range t.partitions {
				if p != nil {
					p.log.Close()
				}
			}
			continue
		}
		b.putTopicLocked(t)
	}
	if failed != nil {
		return failed
	}
	if err := b.dataDir.Sync(); err != nil {
		return err
	}
	if err := b.scanDataDir(claimed, false); err != nil {
		return err
	}
	recovered := 0
	for _, o := range opens {
		if o.t.partitions[o.p].log.Recovered() {
			recovered++
		}
	}
	b.log.Info("loaded topics", "topics", len(b.topics), "partitions", len(opens), "recovered_after_unclean_shutdown", recovered,
		"clean_shutdown_list", cleanList, "elapsed", time.Since(start))
	return nil
}

// openPartition opens (or creates) partition p's log through the data
// directory; the caller syncs it (LogDir.Sync) before using the log.
func (b *Broker) openPartition(t *topic, p int32, sc storage.Config) (*partition, error) {
	l, err := b.dataDir.OpenLog(partitionDirName(t.name, p), sc)
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", t.name, p, err)
	}
	return &partition{topic: t, index: p, log: l}, nil
}

// retirePartitionDir retires p's directory (retireDir) once p's log is
// closed, unless the log never made one: a partition never written has no
// directory of its own, and one at its path is not Gregor's (dirInTheWay).
func (b *Broker) retirePartitionDir(p *partition) {
	if p.log.Unborn() {
		return
	}
	b.retireDir(filepath.Join(b.cfg.DataDir, partitionDirName(p.topic.name, p.index)))
}

// retireDir renames a directory to a -delete name and removes it in the
// background.
func (b *Broker) retireDir(dir string) {
	dead, err := renameAside(dir, deleteSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return // a partition never written: its log had no directory
	}
	if err != nil {
		b.log.Error("rename for delete", "dir", dir, "err", err)
		b.setMayHoldDir(filepath.Base(dir), true)
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

// removeDirAsync removes a retired or stray partition directory in the
// background, as far as it is Gregor's: its log's files and
// partition.metadata (storage.RemoveLogDir). What another program put in
// it is kept, with the directory.
func (b *Broker) removeDirAsync(dir string) {
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		kept, err := storage.RemoveLogDir(dir, ownedPartitionFiles...)
		if err != nil {
			b.log.Error("remove directory", "dir", dir, "err", err)
		}
		if len(kept) > 0 {
			b.log.Warn("removed a partition directory's files but kept the directory: it holds files Gregor did not write", "dir", dir, "kept", kept)
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
	ts, errs := b.createTopics([]newTopic{{name: name, partitions: partitions, replicationFactor: replicationFactor, assignment: assignment, configs: configs}})
	return ts[0], errs[0]
}

// newTopic is a topic to create: createTopicAssigned's arguments.
type newTopic struct {
	name              string
	partitions        int32
	replicationFactor int16
	assignment        map[int32][]int32
	configs           map[string]string
}

// createTopics creates topics as createTopicAssigned does, one CreateTopics
// request's at once: on a single node the partitions of all of them
// several at a time and their records in one durable batch (one fsync
// round rather than two fsyncs a topic). ts[i] and errs[i] are specs[i]'s.
func (b *Broker) createTopics(specs []newTopic) (ts []*topic, errs []error) {
	ts, errs = make([]*topic, len(specs)), make([]error, len(specs))
	if len(specs) == 0 {
		return ts, errs
	}
	if b.cluster != nil {
		for i, s := range specs {
			ts[i], errs[i] = b.clusterCreateTopic(s.name, s.partitions, s.replicationFactor, s.assignment, s.configs)
		}
		return ts, errs
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := map[string]string{} // names made in this batch, by their '.'/'_' form
	var made []int
	for i, s := range specs {
		norm := metricName(s.name)
		if _, ok := b.topics[s.name]; ok || batch[norm] == s.name {
			errs[i] = errTopicExists
			continue
		}
		other := b.collidingTopicLocked(s.name)
		if other == "" {
			other = batch[norm]
		}
		if other != "" {
			errs[i] = fmt.Errorf("%w %s: topics may not differ only in '.' and '_'", errTopicCollides, other)
			continue
		}
		batch[norm] = s.name
		t := &topic{name: s.name, id: newUUID(), configs: maps.Clone(s.configs)}
		if t.configs == nil {
			t.configs = map[string]string{}
		}
		t.produce = b.produceSettingsFor(t.configs)
		ts[i] = t
		made = append(made, i)
	}
	storage.Parallel(len(made), func(k int) {
		i := made[k]
		ts[i].partitions, errs[i] = b.createLogs(ts[i], 0, specs[i].partitions)
	})
	var recs []topicRecord
	var saved []int
	for _, i := range made {
		if errs[i] != nil {
			ts[i] = nil
			continue
		}
		t := ts[i]
		recs = append(recs, topicRecord{Name: t.name, ID: t.id.String(), Partitions: specs[i].partitions, Configs: t.configs})
		saved = append(saved, i)
	}
	if err := b.topicRecords.saveAll(recs); err != nil {
		for _, i := range saved {
			for _, p := range ts[i].partitions {
				p.log.Delete()
			}
			ts[i], errs[i] = nil, fmt.Errorf("persist topic: %w", err)
		}
		return ts, errs
	}
	for _, i := range saved {
		t := ts[i]
		b.putTopicLocked(t)
		b.log.Info("created topic", "topic", t.name, "id", t.id, "partitions", len(t.partitions), "configs", t.configs)
	}
	return ts, errs
}

// putTopicLocked adds t to the broker's topics. Lock should be held.
func (b *Broker) putTopicLocked(t *topic) {
	b.topics[t.name] = t
	b.topicsByID[t.id] = t
	if strings.ContainsAny(t.name, "._") {
		m := metricName(t.name)
		if !slices.Contains(b.topicsByMetricName[m], t.name) {
			b.topicsByMetricName[m] = append(b.topicsByMetricName[m], t.name)
		}
	}
}

// dropTopicLocked removes t from the broker's topics (a name or id taken
// since by another topic stays). Lock should be held.
func (b *Broker) dropTopicLocked(t *topic) {
	if b.topicsByID[t.id] == t {
		delete(b.topicsByID, t.id)
	}
	if b.topics[t.name] != t {
		return
	}
	delete(b.topics, t.name)
	m := metricName(t.name)
	if names := slices.DeleteFunc(b.topicsByMetricName[m], func(n string) bool { return n == t.name }); len(names) > 0 {
		b.topicsByMetricName[m] = names
	} else {
		delete(b.topicsByMetricName, m)
	}
}

// createLogs creates and opens partitions from to count-1 of t,
// several at a time; on an error it deletes the ones it made. A new log
// has nothing on disk until its first write (storage's unborn logs), when
// it creates its directory with its partition.metadata
// (partitionMetadata): the topic record, written after, is what makes
// them exist. Lock should be held.
func (b *Broker) createLogs(t *topic, from, count int32) ([]*partition, error) {
	parts := make([]*partition, count-from)
	errs := make([]error, len(parts))
	sc := b.storageConfig(t)
	storage.Parallel(len(parts), func(i int) {
		parts[i], errs[i] = b.createPartition(t, from+int32(i), sc)
	})
	if err := errors.Join(errs...); err != nil {
		for _, p := range parts {
			if p != nil {
				p.log.Delete()
			}
		}
		return nil, err
	}
	if err := b.dataDir.Sync(); err != nil { // nothing to sync unless a directory was reused
		for _, p := range parts {
			p.log.Delete()
		}
		return nil, err
	}
	return parts, nil
}

// createPartition creates and opens partition p of t, whose storage
// configuration is sc.
func (b *Broker) createPartition(t *topic, p int32, sc storage.Config) (*partition, error) {
	name := partitionDirName(t.name, p)
	dir := filepath.Join(b.cfg.DataDir, name)
	absent := true
	if b.mayHoldDir(name) {
		var held bool
		var err error
		if absent, held, err = checkPartitionDir(dir); err != nil {
			b.log.Error("cannot create a partition", "topic", t.name, "partition", p, "err", err)
			return nil, err
		}
		if held {
			if err := b.strayDir(dir, "left over from an interrupted delete, or an earlier topic of the same name"); err != nil {
				return nil, err
			}
			absent = true
		}
		if absent {
			b.setMayHoldDir(name, false)
		}
	}
	open := b.dataDir.OpenLog
	if absent {
		open = b.dataDir.CreateLog // an unborn log, without another look
	}
	l, err := open(name, sc)
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", t.name, p, err)
	}
	part := &partition{topic: t, index: p, log: l}
	if err := part.log.AddFile(partitionMetaName, partitionMetadata(t.id)); err != nil {
		part.log.Delete()
		return nil, err
	}
	return part, nil
}

// deleteTopic removes a topic: its metadata first, then its logs.
func (b *Broker) deleteTopic(t *topic) error {
	if b.cluster != nil {
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
	b.dropTopicLocked(t)
	parts := t.partitions
	b.mu.Unlock()
	for _, p := range parts {
		if err := p.log.Close(); err != nil && !errors.Is(err, storage.ErrLogClosed) {
			b.log.Warn("close deleted partition", "topic", t.name, "partition", p.index, "err", err)
		}
		b.retirePartitionDir(p)
	}
	if b.groups != nil {
		b.groups.DeleteTopicOffsets(t.name)
	}
	b.log.Info("deleted topic", "topic", t.name, "id", t.id)
	return nil
}

// addPartitions grows t to count partitions.
func (b *Broker) addPartitions(t *topic, count int32) error {
	if b.cluster != nil {
		return b.clusterAddPartitions(t, count)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	added, err := b.createLogs(t, int32(len(t.partitions)), count)
	if err != nil {
		return err
	}
	parts := append(slices.Clone(t.partitions), added...)
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
	if b.cluster != nil {
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
