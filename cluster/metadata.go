package cluster

import (
	"encoding/hex"
	"encoding/json"
	"sort"
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

// state is the watcher's mirror of everything under /gregor/.
type state struct {
	kvs map[string]*mvccpb.KeyValue
	// colRev is each collection's revision: the revision the mirror was
	// loaded at, then that of the last event under its prefix.
	colRev map[string]int64
}

// loaded starts the collections' revisions at the revision of a load.
func (s *state) loaded(rev int64) {
	s.colRev = map[string]int64{}
	for _, name := range collectionNames {
		s.colRev[name] = rev
	}
}

// changed notes an event on key at rev.
func (s *state) changed(key string, rev int64) {
	if name, _, ok := collectionOf(key); ok {
		s.colRev[name] = rev
	}
}

// snapshot parses the mirrored keys into a Metadata. Malformed values are
// skipped (nothing but this package writes under /gregor/).
func (s *state) snapshot(rev int64) *Metadata {
	m := &Metadata{Revision: rev, ControllerID: -1, Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}, Collections: map[string]metadata.RecordSet{}}
	for name, r := range s.colRev {
		m.Collections[name] = metadata.RecordSet{Revision: r}
	}
	var ctrlRev int64
	parts := map[string][]Partition{}
	for k, kv := range s.kvs {
		if name, rec, ok := collectionOf(k); ok {
			rs := m.Collections[name]
			if rs.Records == nil {
				rs.Records = map[string][]byte{}
			}
			rs.Records[rec] = kv.Value
			m.Collections[name] = rs
			continue
		}
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
		case strings.HasPrefix(k, keyTopics):
			name := k[len(keyTopics):]
			if t, err := parseTopic(name, kv); err == nil {
				m.Topics[name] = t
			}
		case strings.HasPrefix(k, keyPartitions):
			rest := k[len(keyPartitions):]
			i := strings.LastIndexByte(rest, '/')
			if i < 0 {
				continue
			}
			idx, err := strconv.ParseInt(rest[i+1:], 10, 32)
			if err != nil {
				continue
			}
			if p, err := parsePartition(int32(idx), kv); err == nil {
				parts[rest[:i]] = append(parts[rest[:i]], p)
			}
		}
	}
	for name, ps := range parts {
		t := m.Topics[name]
		if t == nil {
			continue
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].Index < ps[j].Index })
		// Partitions are created in one transaction from 0 up, so the
		// indexes are dense; stop at a gap rather than misindex.
		for i, p := range ps {
			if p.Index != int32(i) {
				ps = ps[:i]
				break
			}
		}
		t.Partitions = ps
	}
	return m
}
