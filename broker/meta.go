package broker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/gregor-broker/gregor/storage"
)

// On-disk broker metadata, beside the partition directories:
//
//	<data-dir>/.lock                       empty; locked (flock) while a broker uses the directory (Kafka's name)
//	<data-dir>/meta.properties             version=1, node.id, cluster.id (Kafka's file)
//	<data-dir>/__meta/topics/<topic-id>.json  one topic: name, id, partitions, config overrides
//	                                       (named by id: a 249-character topic name would not fit)
//	<data-dir>/__meta/topics/batch-<uuid>.json  the records of the topics one CreateTopics made, a json array
//	<data-dir>/__meta/producer-ids         the end of the last producer-id block handed out
//	<data-dir>/<topic>-<p>/partition.metadata   "version: 0\ntopic_id: <id>\n" (Kafka's file)
//
// Every file is replaced atomically by storage.WriteFileAtomic (write a
// temporary file, fsync, rename, fsync the directory). A topic exists exactly when its record does:
// creation writes the json (a partition's directory appears with its first
// write, storage's unborn logs); deletion removes the json first. Partition directories that no json claims
// (or whose topic id differs) are left over from an interrupted create or
// delete: renamed aside as stray at start, never deleted at once; what
// holds no partition files is never touched (datadir.go).
const (
	metaDirName        = "__meta"
	topicsDirName      = "topics" // in metaDirName
	metaPropertiesName = "meta.properties"
	lockFileName       = ".lock"
	partitionMetaName  = "partition.metadata"
	producerIDsName    = "producer-ids"
	deleteSuffix       = "-delete"
)

// ownedPartitionFiles are the files the broker adds to a partition's log
// directory (storage.Config.OwnedFiles).
var ownedPartitionFiles = []string{partitionMetaName}

// topicRecord is the persisted form of a topic (see topicStore).
type topicRecord struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// uuid is a Kafka UUID (topic ids, cluster ids).
type uuid [16]byte

// newUUID is a random topic or cluster id (metadata.NewUUID).
func newUUID() uuid { return uuid(metadata.NewUUID()) }

// String is Kafka's text form: URL-safe base64 without padding.
func (u uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

func parseUUID(s string) (uuid, error) {
	var u uuid
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("invalid uuid %q", s)
	}
	copy(u[:], b)
	return u, nil
}

// fileTopicStore is the topicStore of a single broker: json files in dir
// (<data-dir>/__meta/topics). A topic's record is in <topic-id>.json, or,
// when one CreateTopics request made several topics, in that request's
// batch-<uuid>.json, a json array of their records, so that a request's
// records cost one file and one round of fsyncs however many topics it
// creates (Kafka's controller appends them to its metadata log as one
// batch). A record is in exactly one file: save and remove rewrite the
// file that holds it (a batch left empty is removed), each with an atomic
// replacement.
type fileTopicStore struct {
	dir string
	// batches are the batch files' records (file name → records in file
	// order); batchOf names the batch file of each topic id in one.
	batches map[string][]topicRecord
	batchOf map[string]string
}

// batchPrefix starts the name of a batch file; a topic id (22 characters
// of base64) never names a file of this length.
const batchPrefix = "batch-"

func newFileTopicStore(dir string) *fileTopicStore {
	return &fileTopicStore{dir: dir, batches: map[string][]topicRecord{}, batchOf: map[string]string{}}
}

func (s *fileTopicStore) path(id string) string { return filepath.Join(s.dir, id+".json") }

func (s *fileTopicStore) save(rec topicRecord) error {
	if name, ok := s.batchOf[rec.ID]; ok {
		recs := slices.Clone(s.batches[name])
		for i := range recs {
			if recs[i].ID == rec.ID {
				recs[i] = rec
			}
		}
		return s.writeBatch(name, recs)
	}
	return writeJSONFile(s.path(rec.ID), rec)
}

func (s *fileTopicStore) saveAll(recs []topicRecord) error {
	stored := slices.ContainsFunc(recs, func(r topicRecord) bool {
		_, ok := s.batchOf[r.ID]
		return ok || fileExists(s.path(r.ID))
	})
	if len(recs) < 2 || stored {
		for _, rec := range recs { // one record, or records to replace where they are
			if err := s.save(rec); err != nil {
				return err
			}
		}
		return nil
	}
	return s.writeBatch(batchPrefix+newUUID().String()+".json", recs)
}

// writeBatch replaces (or creates) the batch file name with recs, or
// removes it when recs is empty.
func (s *fileTopicStore) writeBatch(name string, recs []topicRecord) error {
	path := filepath.Join(s.dir, name)
	if len(recs) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := storage.SyncDir(s.dir); err != nil {
			return err
		}
	} else if err := writeJSONFile(path, recs); err != nil {
		return err
	}
	for _, r := range s.batches[name] {
		delete(s.batchOf, r.ID)
	}
	delete(s.batches, name)
	if len(recs) > 0 {
		s.batches[name] = recs
		for _, r := range recs {
			s.batchOf[r.ID] = name
		}
	}
	return nil
}

func (s *fileTopicStore) remove(id uuid) error {
	if name, ok := s.batchOf[id.String()]; ok {
		return s.writeBatch(name, slices.DeleteFunc(slices.Clone(s.batches[name]), func(r topicRecord) bool { return r.ID == id.String() }))
	}
	if err := os.Remove(s.path(id.String())); err != nil && !os.IsNotExist(err) {
		return err
	}
	return storage.SyncDir(s.dir)
}

func (s *fileTopicStore) loadAll() ([]topicRecord, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	clear(s.batches)
	clear(s.batchOf)
	var recs []topicRecord
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(name, batchPrefix) {
			var rec topicRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				return nil, fmt.Errorf("topic metadata %s: %w", name, err)
			}
			recs = append(recs, rec)
			continue
		}
		var batch []topicRecord
		if err := json.Unmarshal(data, &batch); err != nil {
			return nil, fmt.Errorf("topic metadata %s: %w", name, err)
		}
		for _, rec := range batch {
			if other, ok := s.batchOf[rec.ID]; ok {
				return nil, fmt.Errorf("topic metadata %s: topic id %s is in %s too", name, rec.ID, other)
			}
			s.batchOf[rec.ID] = name
		}
		s.batches[name] = batch
		recs = append(recs, batch...)
	}
	return recs, nil
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// loadMetaProperties reads or creates meta.properties and returns the
// cluster id.
func (b *Broker) loadMetaProperties() (string, error) {
	path := filepath.Join(b.cfg.DataDir, metaPropertiesName)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		id := newUUID().String()
		content := fmt.Sprintf("#Written by gregor\nversion=1\nnode.id=%d\ncluster.id=%s\n", b.nodeID, id)
		return id, storage.WriteFileAtomic(path, []byte(content))
	}
	if err != nil {
		return "", err
	}
	props := map[string]string{}
	if err := ParseProperties(strings.NewReader(string(data)), props); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	// Kafka's versions: 0 (ZooKeeper mode, also when the line is
	// missing) and 1 (KRaft). A newer one may mean something this broker
	// cannot honour: refuse it, as Kafka does.
	if v, ok := props["version"]; ok && v != "0" && v != "1" {
		return "", fmt.Errorf("%s: unknown meta.properties version %s (this broker knows versions 0 and 1)", path, v)
	}
	if n, ok := props["node.id"]; ok && n != strconv.Itoa(int(b.nodeID)) {
		return "", fmt.Errorf("%s: node.id %s does not match configured node.id %d", path, n, b.nodeID)
	}
	if props["cluster.id"] == "" {
		return "", fmt.Errorf("%s: no cluster.id", path)
	}
	return props["cluster.id"], nil
}

// lockDataDir takes an exclusive lock (tryLockFile: flock, or LockFileEx on
// Windows) on <dir>/.lock, waiting up to
// timeout for another broker to release it, so that two brokers never
// share a data directory. (groups.db's bbolt lock did this before that file
// became lazily created.) The lock lasts until the file is closed or the
// process exits; creating the empty file needs no fsync.
func lockDataDir(dir string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		held, err := tryLockFile(f)
		if err == nil {
			return f, nil
		}
		if !held || time.Now().After(deadline) {
			f.Close()
			if held {
				return nil, fmt.Errorf("data dir %s is in use by another broker", dir)
			}
			return nil, fmt.Errorf("data dir: lock %s: %w", lockFileName, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeMetaProperties rewrites meta.properties with the current cluster id
// (a cluster's id, adopted when this broker joins it).
func (b *Broker) writeMetaProperties() error {
	path := filepath.Join(b.cfg.DataDir, metaPropertiesName)
	content := fmt.Sprintf("#Written by gregor\nversion=1\nnode.id=%d\ncluster.id=%s\n", b.nodeID, b.clusterID)
	return storage.WriteFileAtomic(path, []byte(content))
}

func partitionDirName(topic string, p int32) string {
	return topic + "-" + strconv.Itoa(int(p))
}

// partitionMetadata is the content of a partition's partition.metadata.
// A new partition's log writes it when it creates its directory
// (storage.Log.AddFile: a partition never written has none), replacing it
// atomically but without an fsync: a partition's files need none at
// creation (storage), and a claimed partition whose file a crash lost or
// left unreadable gets it written again at start (scanDataDir,
// newClusterPartition), as Kafka writes a missing one.
func partitionMetadata(id uuid) []byte {
	return []byte("version: 0\ntopic_id: " + id.String() + "\n")
}

// writePartitionMetadata writes dir's partition.metadata (see
// partitionMetadata).
func writePartitionMetadata(dir string, id uuid) error {
	path := filepath.Join(dir, partitionMetaName)
	if err := os.WriteFile(path+".tmp", partitionMetadata(id), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func readPartitionMetadata(dir string) (uuid, error) {
	data, err := os.ReadFile(filepath.Join(dir, partitionMetaName))
	if err != nil {
		return uuid{}, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			return parseUUID(strings.TrimSpace(v))
		}
	}
	return uuid{}, fmt.Errorf("%s: no topic_id", dir)
}
