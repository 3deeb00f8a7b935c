package broker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/gregor-broker/gregor/metadata"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/storage"
)

// On-disk broker metadata, beside the partition directories:
//
//	<data-dir>/.lock                       empty; locked (flock) while a broker uses the directory (Kafka's name)
//	<data-dir>/meta.properties             version=1, node.id, cluster.id (Kafka's file)
//	<data-dir>/__meta/topics/<topic-id>.json  one topic: name, id, partitions, config overrides
//	                                       (named by id: a 249-character topic name would not fit)
//	<data-dir>/__meta/producer-ids         the end of the last producer-id block handed out
//	<data-dir>/<topic>-<p>/partition.metadata   "version: 0\ntopic_id: <id>\n" (Kafka's file)
//
// Every file is replaced atomically by storage.WriteFileAtomic (write a
// temporary file, fsync, rename, fsync the directory). A topic exists exactly when its json file does:
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

// fileTopicStore is the topicStore of a single broker: one json file per
// topic in dir (<data-dir>/__meta/topics), named by topic id.
type fileTopicStore struct{ dir string }

func (s fileTopicStore) path(id string) string { return filepath.Join(s.dir, id+".json") }

func (s fileTopicStore) save(rec topicRecord) error {
	return writeJSONFile(s.path(rec.ID), rec)
}

func (s fileTopicStore) saveAll(recs []topicRecord) error {
	files := make([]storage.File, len(recs))
	for i, rec := range recs {
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		files[i] = storage.File{Path: s.path(rec.ID), Data: data}
	}
	if err := storage.WriteFilesAtomic(files); err != nil {
		for _, rec := range recs {
			os.Remove(s.path(rec.ID))
		}
		storage.SyncDir(s.dir)
		return err
	}
	return nil
}

func (s fileTopicStore) remove(id uuid) error {
	if err := os.Remove(s.path(id.String())); err != nil && !os.IsNotExist(err) {
		return err
	}
	return storage.SyncDir(s.dir)
}

func (s fileTopicStore) loadAll() ([]topicRecord, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var recs []topicRecord
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var rec topicRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("topic metadata %s: %w", e.Name(), err)
		}
		recs = append(recs, rec)
	}
	return recs, nil
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
