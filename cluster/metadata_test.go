package cluster

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// TestState_IncrementalSnapshotsMatchAFullLoad: after every batch of
// random writes and deletes (topics, partitions, brokers, the controller,
// collection records, malformed values), the watcher's incremental
// snapshot equals the snapshot of a fresh load of the same keys, and it
// shares every topic no event touched with the snapshot before.
func TestState_IncrementalSnapshotsMatchAFullLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := map[string]*mvccpb.KeyValue{}
	rev := int64(1)
	kv := func(key string, value []byte) *mvccpb.KeyValue {
		rev++
		return &mvccpb.KeyValue{Key: []byte(key), Value: value, ModRevision: rev, CreateRevision: rev}
	}
	load := func() []*mvccpb.KeyValue {
		var kvs []*mvccpb.KeyValue
		for _, v := range keys {
			kvs = append(kvs, v)
		}
		return kvs
	}
	for i := range 6 {
		name := "t" + strconv.Itoa(i)
		keys[topicKey(name)] = kv(topicKey(name), topicToJSON([16]byte{byte(i + 1)}, map[string]string{"retention.ms": "1"}))
		for p := range int32(5) {
			keys[partitionKey(name, p)] = kv(partitionKey(name, p), partitionToJSON(&Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}))
		}
	}
	keys[brokerKey(1)] = kv(brokerKey(1), []byte(`{"id":1,"host":"h","port":1}`))
	st := newState(load(), rev)
	prev := st.snapshot(rev)
	for round := range 300 {
		touched := map[string]bool{}
		for range 1 + rng.IntN(4) {
			topic := "t" + strconv.Itoa(rng.IntN(8))
			var key string
			var value []byte
			switch rng.IntN(7) {
			case 0:
				key, value = topicKey(topic), topicToJSON([16]byte{byte(rng.IntN(9))}, nil)
			case 1, 2:
				p := int32(rng.IntN(7))
				key, value = partitionKey(topic, p), partitionToJSON(&Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: int32(rng.IntN(3)), LeaderEpoch: int32(round)})
			case 3:
				id := int32(1 + rng.IntN(3))
				key, value = brokerKey(id), []byte(`{"id":`+strconv.Itoa(int(id))+`,"host":"h","port":`+strconv.Itoa(round)+`}`)
			case 4:
				key, value = keyController+strconv.Itoa(rng.IntN(3)), []byte(strconv.Itoa(rng.IntN(3)))
			case 5:
				key, value = keyPrefix+collectionNames[rng.IntN(3)]+"/r"+strconv.Itoa(rng.IntN(3)), []byte(strconv.Itoa(round))
			case 6:
				key, value = partitionKey(topic, int32(rng.IntN(7))), []byte("{malformed")
			}
			if rng.IntN(4) == 0 { // a delete instead
				if _, ok := keys[key]; ok {
					rev++
					delete(keys, key)
					st.del(key, rev)
					touched[key] = true
					continue
				}
			}
			v := kv(key, value)
			keys[key] = v
			st.put(v)
			touched[key] = true
		}
		got := st.snapshot(rev)
		want := newState(load(), rev).snapshot(rev)
		// A load starts every collection's revision at the load's; the
		// watcher's moves with each event. Compare the records.
		for name, rs := range got.Collections {
			if !maps.EqualFunc(rs.Records, want.Collections[name].Records, bytes.Equal) {
				t.Fatalf("round %d: collection %s: %v, a fresh load has %v", round, name, rs.Records, want.Collections[name].Records)
			}
		}
		g := *got // got is the mirror's, shared with the next snapshot
		g.Collections, want.Collections = nil, nil
		if !reflect.DeepEqual(&g, want) {
			t.Fatalf("round %d: the incremental snapshot differs from a fresh load:\n%+v\n%+v", round, got, want)
		}
		for name, tp := range got.Topics {
			changed := touched[topicKey(name)]
			for k := range touched {
				if len(k) > len(partitionsPrefix(name)) && k[:len(partitionsPrefix(name))] == partitionsPrefix(name) {
					changed = true
				}
			}
			if !changed && prev.Topics[name] != nil && prev.Topics[name] != tp {
				t.Fatalf("round %d: topic %s, untouched, was made anew", round, name)
			}
		}
		prev = got
	}
}

// BenchmarkState_Snapshot30000: the watcher's snapshot of 300 topics × 100
// partitions after one partition's leader changed ("one") and after a
// load ("full", what every watch event cost before snapshots were made
// incrementally).
func BenchmarkState_Snapshot30000(b *testing.B) {
	var kvs []*mvccpb.KeyValue
	rev := int64(1)
	for t := range 300 {
		name := "topic-" + strconv.Itoa(t)
		kvs = append(kvs, &mvccpb.KeyValue{Key: []byte(topicKey(name)), Value: topicToJSON([16]byte{1, byte(t)}, nil), ModRevision: rev})
		for p := range int32(100) {
			v := partitionToJSON(&Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 7, LeaderBrokerEpoch: 12345})
			kvs = append(kvs, &mvccpb.KeyValue{Key: []byte(partitionKey(name, p)), Value: v, ModRevision: rev})
		}
	}
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			newState(kvs, rev).snapshot(rev)
		}
	})
	b.Run("one", func(b *testing.B) {
		st := newState(kvs, rev)
		st.snapshot(rev)
		b.ReportAllocs()
		for b.Loop() {
			rev++
			v := partitionToJSON(&Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 4, PartitionEpoch: 8})
			st.put(&mvccpb.KeyValue{Key: []byte(partitionKey("topic-7", 42)), Value: v, ModRevision: rev})
			st.snapshot(rev)
		}
	})
}
