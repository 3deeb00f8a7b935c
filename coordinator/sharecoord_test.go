package coordinator

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestShareStateRecordsGolden(t *testing.T) {
	k := ShareStateKey{Group: "g", TopicID: uuidT, Partition: 3}
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"ShareSnapshotKey", EncodeShareStateKey(ShareSnapshotRecord, k), "0000 0001 67 " + uuidTHex + " 00000003"},
		{"ShareUpdateKey", EncodeShareStateKey(ShareUpdateRecord, k), "0001 0001 67 " + uuidTHex + " 00000003"},
		{"ShareSnapshotValue", (&ShareSnapshot{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: -1, StartOffset: 10,
			DeliveryCompleteCount: -1, CreateTimestamp: 0x100, WriteTimestamp: 0x200,
			StateBatches: []ShareStateBatch{{FirstOffset: 10, LastOffset: 12, DeliveryState: shareStateAcknowledged, DeliveryCount: 1}}}).Encode(),
			"0000 00000001 00000002 ffffffff 000000000000000a 0000000000000100 0000000000000200" +
				" 02 000000000000000a 000000000000000c 02 0001 00 00"},
		{"ShareSnapshotValue with DeliveryCompleteCount", (&ShareSnapshot{DeliveryCompleteCount: 3, StateBatches: []ShareStateBatch{}}).Encode(),
			"0000 00000000 00000000 00000000 0000000000000000 0000000000000000 0000000000000000 01 01 00 04 00000003"},
		{"ShareUpdateValue", (&ShareUpdate{SnapshotEpoch: 4, LeaderEpoch: 5, StartOffset: -1, DeliveryCompleteCount: -1,
			StateBatches: []ShareStateBatch{{FirstOffset: 7, LastOffset: 7, DeliveryState: shareStateArchived, DeliveryCount: 5}}}).Encode(),
			"0000 00000004 00000005 ffffffffffffffff 02 0000000000000007 0000000000000007 04 0005 00 00"},
	} {
		if want := unhex(t, tc.want); !bytes.Equal(tc.got, want) {
			t.Errorf("%s:\n got %x\nwant %x", tc.name, tc.got, want)
		}
	}
}

func TestShareStateRecordsRoundTrip(t *testing.T) {
	k := ShareStateKey{Group: "group", TopicID: uuidT, Partition: 7}
	for _, typ := range []int16{ShareSnapshotRecord, ShareUpdateRecord} {
		gt, gk, err := DecodeShareStateKey(EncodeShareStateKey(typ, k))
		if err != nil || gt != typ || gk != k {
			t.Errorf("key %d: %d %+v %v", typ, gt, gk, err)
		}
	}
	if _, _, err := DecodeShareStateKey(EncodeShareStateKey(2, k)); err == nil {
		t.Error("key type 2 decoded")
	}
	ss := ShareSnapshot{SnapshotEpoch: 3, StateEpoch: 1, LeaderEpoch: 2, StartOffset: 5, DeliveryCompleteCount: 1,
		CreateTimestamp: 11, WriteTimestamp: 12, StateBatches: []ShareStateBatch{{5, 6, 0, 2}, {7, 7, 4, 5}}}
	if got, err := DecodeShareSnapshot(ss.Encode()); err != nil || !reflect.DeepEqual(got, ss) {
		t.Errorf("ShareSnapshot: %+v, %v", got, err)
	}
	su := ShareUpdate{SnapshotEpoch: 3, LeaderEpoch: 2, StartOffset: -1, DeliveryCompleteCount: -1, StateBatches: []ShareStateBatch{{8, 9, 2, 1}}}
	if got, err := DecodeShareUpdate(su.Encode()); err != nil || !reflect.DeepEqual(got, su) {
		t.Errorf("ShareUpdate: %+v, %v", got, err)
	}
	// Truncations never panic and always fail.
	for _, full := range [][]byte{ss.Encode(), su.Encode()} {
		for i := range full {
			_, e1 := DecodeShareSnapshot(full[:i])
			_, e2 := DecodeShareUpdate(full[:i])
			if e1 == nil && e2 == nil {
				t.Errorf("%x truncated to %d bytes decoded", full, i)
			}
		}
	}
}

func TestCombineStateBatches(t *testing.T) {
	old := []ShareStateBatch{{0, 9, 0, 1}}
	got := combineStateBatches(old, []ShareStateBatch{{3, 4, 2, 1}, {9, 12, 4, 2}}, 2)
	want := []ShareStateBatch{{2, 2, 0, 1}, {3, 4, 2, 1}, {5, 8, 0, 1}, {9, 12, 4, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("combine: %v, want %v", got, want)
	}
	// Adjacent batches of one state and count merge; all below start go.
	got = combineStateBatches(want, []ShareStateBatch{{5, 8, 4, 2}}, 3)
	want = []ShareStateBatch{{3, 4, 2, 1}, {5, 12, 4, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("combine: %v, want %v", got, want)
	}
}

func newShareCoord(log GroupLog, every int) *ShareCoordinator {
	return NewShareCoordinator(ShareCoordinatorConfig{Log: log, LogPartitions: 5, SnapshotUpdateRecords: every,
		Now: func() time.Time { return time.UnixMilli(1000) }})
}

// TestShareCoordinatorWriteReloadRead writes states, loads the partition
// on a new coordinator (a new leader of __share_group_state) and reads
// them back, across snapshots, updates and a deletion.
func TestShareCoordinatorWriteReloadRead(t *testing.T) {
	log := newMemLog()
	c := newShareCoord(log, 3)
	k := ShareStateKey{Group: "g", TopicID: uuidT, Partition: 0}
	pi := c.PartitionOf(k)
	if code := c.Write(k, ShareWrite{}); code != kerr.NotCoordinator.Code {
		t.Fatalf("write before load: %d", code)
	}
	if err := c.LoadPartition(pi); err != nil {
		t.Fatal(err)
	}
	if _, found, code := c.Read(k, 0); found || code != 0 {
		t.Fatalf("read of nothing: %v %d", found, code)
	}
	// Records 0-9 delivered once; 0-4 acknowledged, SPSO 5.
	writes := []ShareWrite{
		{LeaderEpoch: 1, StartOffset: 0, DeliveryCompleteCount: 0, StateBatches: []ShareStateBatch{{0, 9, 0, 1}}},
		{LeaderEpoch: 1, StartOffset: 5, DeliveryCompleteCount: 0, StateBatches: []ShareStateBatch{{5, 9, 0, 1}}},
		{LeaderEpoch: 1, StartOffset: 5, DeliveryCompleteCount: 1, StateBatches: []ShareStateBatch{{7, 7, 4, 1}}},
		{LeaderEpoch: 1, StartOffset: 5, DeliveryCompleteCount: 2, StateBatches: []ShareStateBatch{{8, 8, 2, 1}}},
	}
	for i, w := range writes {
		if code := c.Write(k, w); code != 0 {
			t.Fatalf("write %d: %d", i, code)
		}
	}
	// A snapshot, two updates, then a snapshot again (every 3rd record).
	var types []int16
	for _, r := range log.parts[pi] {
		typ, _, _ := DecodeShareStateKey(r.Key)
		types = append(types, typ)
	}
	if want := []int16{0, 1, 1, 0}; !reflect.DeepEqual(types, want) {
		t.Errorf("record types %v, want %v", types, want)
	}
	want := ShareSnapshot{SnapshotEpoch: 1, LeaderEpoch: 1, StartOffset: 5, DeliveryCompleteCount: 2, CreateTimestamp: 1000, WriteTimestamp: 1000,
		StateBatches: []ShareStateBatch{{5, 6, 0, 1}, {7, 7, 4, 1}, {8, 8, 2, 1}, {9, 9, 0, 1}}}
	if got, found, code := c.Read(k, -1); code != 0 || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("read: %+v %v %d\nwant %+v", got, found, code, want)
	}
	// One more update, then a new coordinator loads the partition.
	if code := c.Write(k, ShareWrite{LeaderEpoch: 1, StartOffset: 7, DeliveryCompleteCount: 1, StateBatches: []ShareStateBatch{{5, 6, 2, 1}}}); code != 0 {
		t.Fatal(code)
	}
	k2 := ShareStateKey{Group: "g2", TopicID: uuidT, Partition: 0}
	c.UnloadPartition(pi)
	if _, _, code := c.Read(k, -1); code != kerr.NotCoordinator.Code {
		t.Errorf("read after unload: %d", code)
	}
	c2 := newShareCoord(log, 3)
	if err := c2.LoadPartition(pi); err != nil {
		t.Fatal(err)
	}
	want = ShareSnapshot{SnapshotEpoch: 1, LeaderEpoch: 1, StartOffset: 7, DeliveryCompleteCount: 1, CreateTimestamp: 1000, WriteTimestamp: 1000,
		StateBatches: []ShareStateBatch{{7, 7, 4, 1}, {8, 8, 2, 1}, {9, 9, 0, 1}}}
	if got, found, code := c2.Read(k, -1); code != 0 || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("read after reload: %+v %v %d\nwant %+v", got, found, code, want)
	}
	// A new leader's read records its epoch: the old leader is fenced.
	if got, _, code := c2.Read(k, 2); code != 0 || got.LeaderEpoch != 2 || got.SnapshotEpoch != 2 {
		t.Fatalf("read at epoch 2: %+v %d", got, code)
	}
	if code := c2.Write(k, ShareWrite{LeaderEpoch: 1, StartOffset: 10}); code != kerr.FencedLeaderEpoch.Code {
		t.Errorf("write of the old leader: %d", code)
	}
	// Initialize replaces the state; Delete removes it, across a reload.
	if code := c2.Initialize(k, 0, 3); code != 0 {
		t.Fatal(code)
	}
	if got, _, _ := c2.Read(k, -1); got.StartOffset != 3 || len(got.StateBatches) != 0 || got.StateEpoch != 1 {
		t.Errorf("after initialize: %+v", got)
	}
	if c2.PartitionOf(k2) == pi {
		if code := c2.Write(k2, ShareWrite{StartOffset: 1}); code != 0 {
			t.Fatal(code)
		}
	}
	if code := c2.Delete(k); code != 0 {
		t.Fatal(code)
	}
	c3 := newShareCoord(log, 3)
	if err := c3.LoadPartition(pi); err != nil {
		t.Fatal(err)
	}
	if _, found, code := c3.Read(k, -1); found || code != 0 {
		t.Errorf("deleted state read back: %v %d", found, code)
	}
	if c3.PartitionOf(k2) == pi {
		if got, found, _ := c3.Read(k2, -1); !found || got.StartOffset != 1 {
			t.Errorf("other key: %+v %v", got, found)
		}
	}
}

func TestShareCoordinatorKey(t *testing.T) {
	k := ShareStateKey{Group: "g", TopicID: uuidT, Partition: 12}
	if got, want := k.CoordinatorKey(), "g:AAECAwQFBgcICQoLDA0ODw:12"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
}
