package cluster

import (
	"encoding/hex"
	"encoding/json"
	"maps"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/metadata"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Keys in etcd; see the package documentation.
const (
	keyPrefix      = "/gregor/"
	keyClusterID   = "/gregor/cluster-id"
	keyBrokers     = "/gregor/brokers/"
	keyRegistered  = "/gregor/registered-brokers/"
	keyController  = "/gregor/controller/"
	keyTopics      = "/gregor/topics/"
	keyPartitions  = "/gregor/partitions/"
	keyProducerIDs = "/gregor/producer-ids"
)

func brokerKey(id int32) string     { return keyBrokers + strconv.Itoa(int(id)) }
func registeredKey(id int32) string { return keyRegistered + strconv.Itoa(int(id)) }
func topicKey(name string) string   { return keyTopics + name }
func partitionsPrefix(topic string) string {
	return keyPartitions + topic + "/"
}
func partitionKey(topic string, p int32) string {
	return partitionsPrefix(topic) + strconv.Itoa(int(p))
}

// brokerJSON is the value of /gregor/brokers/<id>.
type brokerJSON struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Listeners was added with the security listeners; older
	// registrations lack it.
	Listeners map[string]Endpoint `json:"listeners,omitempty"`
	// LogDirOffline: see Broker.
	LogDirOffline bool `json:"log_dir_offline,omitempty"`
	// ControlledShutdown: see Broker.
	ControlledShutdown bool `json:"controlled_shutdown,omitempty"`
	// SchemaRegistry: see Broker.
	SchemaRegistry string `json:"schema_registry,omitempty"`
}

// topicJSON is the value of /gregor/topics/<name>.
type topicJSON struct {
	ID      string            `json:"id"` // 32 hex digits
	Configs map[string]string `json:"configs,omitempty"`
}

// partitionJSON is the value of /gregor/partitions/<topic>/<index>.
type partitionJSON struct {
	Replicas          []int32 `json:"replicas"`
	ISR               []int32 `json:"isr"`
	Leader            int32   `json:"leader"`
	LeaderEpoch       int32   `json:"leaderEpoch"`
	PartitionEpoch    int32   `json:"partitionEpoch"`
	AddingReplicas    []int32 `json:"addingReplicas,omitempty"`
	RemovingReplicas  []int32 `json:"removingReplicas,omitempty"`
	LeaderBrokerEpoch int64   `json:"leaderBrokerEpoch,omitempty"`
}

func partitionToJSON(p *Partition) []byte {
	b, _ := json.Marshal(partitionJSON{
		Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
		LeaderBrokerEpoch: p.LeaderBrokerEpoch,
	})
	return b
}

func parsePartition(index int32, kv *mvccpb.KeyValue) (Partition, error) {
	var j partitionJSON
	if err := json.Unmarshal(kv.Value, &j); err != nil {
		return Partition{}, err
	}
	return Partition{
		Index: index, Replicas: j.Replicas, ISR: j.ISR, Leader: j.Leader,
		LeaderEpoch: j.LeaderEpoch, PartitionEpoch: j.PartitionEpoch,
		AddingReplicas: j.AddingReplicas, RemovingReplicas: j.RemovingReplicas,
		LeaderBrokerEpoch: j.LeaderBrokerEpoch, Version: kv.ModRevision,
	}, nil
}

func parseBroker(kv *mvccpb.KeyValue) (Broker, error) {
	var j brokerJSON
	if err := json.Unmarshal(kv.Value, &j); err != nil {
		return Broker{}, err
	}
	return Broker{ID: j.ID, Host: j.Host, Port: j.Port, Rack: j.Rack, Listeners: j.Listeners, Epoch: kv.CreateRevision, LogDirOffline: j.LogDirOffline, ControlledShutdown: j.ControlledShutdown, SchemaRegistry: j.SchemaRegistry}, nil
}

func topicToJSON(id [16]byte, configs map[string]string) []byte {
	b, _ := json.Marshal(topicJSON{ID: hex.EncodeToString(id[:]), Configs: configs})
	return b
}

func parseTopic(name string, kv *mvccpb.KeyValue) (*Topic, error) {
	var j topicJSON
	if err := json.Unmarshal(kv.Value, &j); err != nil {
		return nil, err
	}
	t := &Topic{Name: name, Configs: j.Configs, Version: kv.ModRevision}
	if t.Configs == nil {
		t.Configs = map[string]string{}
	}
	if _, err := hex.Decode(t.ID[:], []byte(j.ID)); err != nil {
		return nil, err
	}
	return t, nil
}

// state is the watcher's mirror of the keys under /gregor/ that make up
// the metadata, kept by kind, and the snapshot last made of them. A watch
// event re-parses only what it touched: each snapshot shares with the
// previous one every topic, the brokers and every collection that did not
// change, so a leadership change of a few partitions costs the same at
// 100 or at 100,000 partitions (a snapshot used to parse every partition
// record, a quarter of a second at 30,000).
type state struct {
	other      map[string]*mvccpb.KeyValue   // cluster id, brokers, controller candidates
	topics     map[string]*mvccpb.KeyValue   // by topic name
	partitions map[string][]*mvccpb.KeyValue // by topic name, then partition index; nil where none
	records    map[string]map[string][]byte  // by collection name, then record key
	// colRev is each collection's revision: the revision the mirror was
	// loaded at, then that of the last event under its prefix.
	colRev map[string]int64

	prev *Metadata // the last snapshot; nil until the first
	// What changed since prev.
	otherChanged bool
	topicChanged map[string]bool
	colChanged   map[string]bool
}

// newState is the mirror of a load at rev.
func newState(kvs []*mvccpb.KeyValue, rev int64) *state {
	s := &state{
		other: map[string]*mvccpb.KeyValue{}, topics: map[string]*mvccpb.KeyValue{},
		partitions: map[string][]*mvccpb.KeyValue{}, records: map[string]map[string][]byte{},
		colRev: map[string]int64{}, topicChanged: map[string]bool{}, colChanged: map[string]bool{},
	}
	for _, name := range collectionNames {
		s.colRev[name] = rev
	}
	for _, kv := range kvs {
		s.set(string(kv.Key), kv)
	}
	return s
}

// put notes a key written at kv.ModRevision.
func (s *state) put(kv *mvccpb.KeyValue) {
	s.set(string(kv.Key), kv)
	s.changed(string(kv.Key), kv.ModRevision)
}

// del notes a key deleted at rev.
func (s *state) del(key string, rev int64) {
	s.set(key, nil)
	s.changed(key, rev)
}

// changed moves the revision of key's collection, if it is in one, to rev.
func (s *state) changed(key string, rev int64) {
	if name, _, ok := collectionOf(key); ok {
		s.colRev[name] = rev
	}
}

// set files kv under key (nil: deleted) by kind and marks what it changes.
func (s *state) set(key string, kv *mvccpb.KeyValue) {
	if name, rec, ok := collectionOf(key); ok {
		recs := s.records[name]
		if kv == nil {
			delete(recs, rec)
		} else {
			if recs == nil {
				recs = map[string][]byte{}
				s.records[name] = recs
			}
			recs[rec] = kv.Value
		}
		s.colChanged[name] = true
		return
	}
	switch {
	case key == keyClusterID || strings.HasPrefix(key, keyBrokers) || strings.HasPrefix(key, keyController):
		if kv == nil {
			delete(s.other, key)
		} else {
			s.other[key] = kv
		}
		s.otherChanged = true
	case strings.HasPrefix(key, keyTopics):
		name := key[len(keyTopics):]
		if kv == nil {
			delete(s.topics, name)
		} else {
			s.topics[name] = kv
		}
		s.topicChanged[name] = true
	case strings.HasPrefix(key, keyPartitions):
		rest := key[len(keyPartitions):]
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			return
		}
		idx, err := strconv.ParseInt(rest[i+1:], 10, 32)
		if err != nil || idx < 0 || idx > maxPartitionIndex {
			return
		}
		name := rest[:i]
		ps := s.partitions[name]
		if kv == nil {
			if int(idx) < len(ps) {
				ps[idx] = nil
				for len(ps) > 0 && ps[len(ps)-1] == nil {
					ps = ps[:len(ps)-1]
				}
			}
		} else {
			for len(ps) <= int(idx) {
				ps = append(ps, nil)
			}
			ps[idx] = kv
		}
		if len(ps) == 0 {
			delete(s.partitions, name)
		} else {
			s.partitions[name] = ps
		}
		s.topicChanged[name] = true
	}
}

// maxPartitionIndex bounds the partition index a key may name (the
// mirror keeps a topic's partitions in a slice indexed by it); Kafka's
// partition counts are far below it.
const maxPartitionIndex = 1 << 24

// snapshot makes the Metadata of the mirror at rev, sharing with the
// previous snapshot what did not change since. Malformed values are
// skipped (nothing but this package writes under /gregor/).
func (s *state) snapshot(rev int64) *Metadata {
	prev := s.prev
	m := &Metadata{Revision: rev, ControllerID: -1, Topics: make(map[string]*Topic, len(s.topics)), Collections: make(map[string]metadata.RecordSet, len(s.colRev))}
	if prev != nil && !s.otherChanged {
		m.ClusterID, m.ControllerID, m.Brokers = prev.ClusterID, prev.ControllerID, prev.Brokers
	} else {
		s.snapshotOther(m)
	}
	for name, r := range s.colRev {
		if prev != nil && !s.colChanged[name] {
			m.Collections[name] = prev.Collections[name]
			continue
		}
		rs := metadata.RecordSet{Revision: r}
		if recs := s.records[name]; len(recs) > 0 {
			rs.Records = maps.Clone(recs)
		}
		m.Collections[name] = rs
	}
	for name, kv := range s.topics {
		if prev != nil && !s.topicChanged[name] {
			if t := prev.Topics[name]; t != nil {
				m.Topics[name] = t
			}
			continue
		}
		var old *Topic
		if prev != nil {
			old = prev.Topics[name]
		}
		if t := s.snapshotTopic(name, kv, old); t != nil {
			m.Topics[name] = t
		}
	}
	s.prev, s.otherChanged = m, false
	clear(s.topicChanged)
	clear(s.colChanged)
	return m
}

// snapshotOther fills in the cluster id, the brokers and the controller.
func (s *state) snapshotOther(m *Metadata) {
	m.Brokers = map[int32]Broker{}
	var ctrlRev int64
	for k, kv := range s.other {
		switch {
		case k == keyClusterID:
			m.ClusterID = string(kv.Value)
		case strings.HasPrefix(k, keyBrokers):
			if b, err := parseBroker(kv); err == nil {
				m.Brokers[b.ID] = b
			}
		case strings.HasPrefix(k, keyController):
			if ctrlRev == 0 || kv.CreateRevision < ctrlRev {
				if id, err := strconv.ParseInt(string(kv.Value), 10, 32); err == nil {
					ctrlRev, m.ControllerID = kv.CreateRevision, int32(id)
				}
			}
		}
	}
}

// snapshotTopic parses a topic's record and its partitions, reusing those
// of old (the previous snapshot's) whose records did not change; nil when
// the topic's record is malformed.
func (s *state) snapshotTopic(name string, kv *mvccpb.KeyValue, old *Topic) *Topic {
	t, err := parseTopic(name, kv)
	if err != nil {
		return nil
	}
	kvs := s.partitions[name]
	ps := make([]Partition, 0, len(kvs))
	// Partitions are created in one transaction from 0 up, so the
	// indexes are dense; stop at a gap rather than misindex.
	for i, pkv := range kvs {
		if pkv == nil {
			break
		}
		if old != nil && i < len(old.Partitions) && old.Partitions[i].Version == pkv.ModRevision {
			ps = append(ps, old.Partitions[i])
			continue
		}
		p, err := parsePartition(int32(i), pkv)
		if err != nil {
			break
		}
		ps = append(ps, p)
	}
	if len(ps) > 0 {
		t.Partitions = ps
	}
	return t
}
