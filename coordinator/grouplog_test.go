package coordinator

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is a GroupLog in memory: every append is committed at once,
// unless hold is set, when wait blocks until release.
type memLog struct {
	mu      sync.Mutex
	parts   map[int32][]LogRecord
	replays []int64 // the from of every Replay
}

func newMemLog() *memLog { return &memLog{parts: map[int32][]LogRecord{}} }

func (l *memLog) Append(p int32, recs []LogRecord) (int64, func() error, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[p] = append(l.parts[p], recs...)
	return int64(len(l.parts[p])), func() error { return nil }, nil
}

func (l *memLog) AppendTxn(p int32, producerID int64, producerEpoch int16, recs []LogRecord) (int64, func() error, error) {
	batch := make([]LogRecord, len(recs))
	for i, r := range recs {
		batch[i] = LogRecord{Key: r.Key, Value: r.Value, Transactional: true, ProducerID: producerID, ProducerEpoch: producerEpoch}
	}
	return l.Append(p, batch)
}

func (l *memLog) AppendMarker(p int32, producerID int64, producerEpoch int16, commit bool) (int64, func() error, error) {
	return l.Append(p, []LogRecord{{Transactional: true, Control: true, Commit: commit, ProducerID: producerID, ProducerEpoch: producerEpoch}})
}

func (l *memLog) Replay(p int32, from int64, fn func(int64, LogRecord) error) (int64, error) {
	l.mu.Lock()
	recs := slices.Clone(l.parts[p])
	l.replays = append(l.replays, from)
	l.mu.Unlock()
	for i := from; i < int64(len(recs)); i++ {
		if err := fn(i, recs[i]); err != nil {
			return i, err
		}
	}
	return max(int64(len(recs)), from), nil
}

func openLogged(t *testing.T, dir string, log GroupLog) *Coordinator {
	t.Helper()
	c, err := Open(Config{Dir: dir, Log: log, LogPartitions: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func simpleCommit(t *testing.T, c *Coordinator, group, topic string, parts map[int32]int64) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range sortedKeys(parts) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, parts[p], 5
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	var code int16
	for _, t := range c.OffsetCommit(req).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				code = p.ErrorCode
			}
		}
	}
	return code
}

func TestPartitionForJavaHashCode(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want int32
	}{
		{"", 0},
		{"test", 3556498 % 50},    // "test".hashCode() = 3556498
		{"hello", 99162322 % 50},  // "hello".hashCode() = 99162322
		{"polygenelubricants", 0}, // hashCode() = Integer.MIN_VALUE; Utils.abs → 0
		{"console-consumer-1", PartitionFor("console-consumer-1", 50)},
		{"\U0001F600", int32((31*0xD83D + 0xDE00) % 50)}, // a surrogate pair: two UTF-16 units
		{"é", 0xE9 % 50},
	} {
		if got := PartitionFor(tc.id, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
	// A negative hashCode: "zzzzzzzz".hashCode() = -1439800832... computed
	// here in int32 arithmetic; abs then mod.
	var h int32
	for _, r := range "zzzzzzzzzz" {
		h = 31*h + r
	}
	if h >= 0 {
		t.Fatalf("expected a negative hash, got %d", h)
	}
	if got, want := PartitionFor("zzzzzzzzzz", 50), (-h)%50; got != want {
		t.Errorf("PartitionFor(zzzzzzzzzz) = %d, want %d", got, want)
	}
}

// TestGroupLogCommitsAreKafkaRecords: commits go to the group's partition
// in Kafka's formats, and another coordinator (another broker's data dir)
// that loads the partition serves the same offsets; requests for a
// partition that is not loaded answer NOT_COORDINATOR.
func TestGroupLogCommitsAreKafkaRecords(t *testing.T) {
	log := newMemLog()
	c := openLogged(t, t.TempDir(), log)
	p := PartitionFor("g1", 50)
	if code := simpleCommit(t, c, "g1", "orders", map[int32]int64{0: 5}); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit before load: code %d, want NOT_COORDINATOR", code)
	}
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if code := simpleCommit(t, c, "g1", "orders", map[int32]int64{0: 5, 1: 6}); code != 0 {
		t.Fatal(code)
	}
	if code := simpleCommit(t, c, "g1", "orders", map[int32]int64{0: 9}); code != 0 {
		t.Fatal(code)
	}
	recs := log.parts[p]
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	var k kmsg.OffsetCommitKey
	var v kmsg.OffsetCommitValue
	if err := k.ReadFrom(recs[2].Key); err != nil {
		t.Fatal(err)
	}
	if err := v.ReadFrom(recs[2].Value); err != nil {
		t.Fatal(err)
	}
	if k.Group != "g1" || k.Topic != "orders" || k.Partition != 0 || v.Offset != 9 || v.LeaderEpoch != 5 {
		t.Fatalf("record = %+v %+v", k, v)
	}

	other := openLogged(t, t.TempDir(), log)
	if err := other.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if got := other.Committed("g1"); got["orders"][0] != 9 || got["orders"][1] != 6 {
		t.Fatalf("other coordinator: %v", got)
	}
	c.UnloadPartition(p)
	if code := c.GroupError("g1"); code != kerr.NotCoordinator.Code {
		t.Fatalf("after unload: %d", code)
	}
	if got := c.Committed("g1"); got != nil {
		t.Fatalf("unloaded group still in memory: %v", got)
	}
}

// TestGroupLogReloadReplaysTail: a reload replays from the view's
// checkpoint, and picks up what another leader appended meanwhile.
func TestGroupLogReloadReplaysTail(t *testing.T) {
	log := newMemLog()
	dirA := t.TempDir()
	a := openLogged(t, dirA, log)
	p := PartitionFor("g2", 50)
	a.LoadPartition(p)
	for i := int64(1); i <= 3; i++ {
		if code := simpleCommit(t, a, "g2", "t", map[int32]int64{0: i}); code != 0 {
			t.Fatal(code)
		}
	}
	a.UnloadPartition(p)

	b := openLogged(t, t.TempDir(), log) // the next leader
	b.LoadPartition(p)
	if code := simpleCommit(t, b, "g2", "t", map[int32]int64{0: 4, 1: 1}); code != 0 {
		t.Fatal(code)
	}
	b.UnloadPartition(p)

	log.replays = nil
	a.LoadPartition(p)
	if !slices.Equal(log.replays, []int64{3}) {
		t.Fatalf("replays from %v, want [3] (the tail after a's checkpoint)", log.replays)
	}
	if got := a.Committed("g2"); got["t"][0] != 4 || got["t"][1] != 1 {
		t.Fatalf("after reload: %v", got)
	}
}

// TestGroupLogTombstones: DeleteGroups and OffsetDelete write tombstones; a
// coordinator loading the log does not see the deleted state.
func TestGroupLogTombstones(t *testing.T) {
	log := newMemLog()
	c := openLogged(t, t.TempDir(), log)
	for i := range int32(50) {
		c.LoadPartition(i)
	}
	simpleCommit(t, c, "gone", "t", map[int32]int64{0: 1, 1: 2})
	simpleCommit(t, c, "kept", "t", map[int32]int64{0: 3})
	simpleCommit(t, c, "kept", "u", map[int32]int64{0: 4})
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"gone"}
	if r := c.DeleteGroups(del); r.Groups[0].ErrorCode != 0 {
		t.Fatal(r.Groups[0].ErrorCode)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "kept"
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "u"
	ot.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, ot)
	if r := c.OffsetDelete(od); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	pg := PartitionFor("gone", 50)
	last := log.parts[pg][len(log.parts[pg])-1]
	var gk kmsg.GroupMetadataKey
	if gk.ReadFrom(last.Key) != nil || gk.Version != 2 || gk.Group != "gone" || last.Value != nil {
		t.Fatalf("last record of gone's partition is not its group tombstone: %+v", gk)
	}

	other := openLogged(t, t.TempDir(), log)
	for i := range int32(50) {
		other.LoadPartition(i)
	}
	if got := other.Committed("gone"); got != nil {
		t.Fatalf("deleted group: %v", got)
	}
	if got := other.Committed("kept"); len(got) != 1 || got["t"][0] != 3 {
		t.Fatalf("kept: %v", got)
	}
}

// TestGroupLogMigratesLegacyGroupsDB: a groups.db written before
// __consumer_offsets existed (testdata/legacy, made by the previous
// release) keeps every committed offset, and its offsets are written to
// the log, so that another broker loading the partitions has them too; on
// a single node and in a cluster (whose loads rebuild the view).
func TestGroupLogMigratesLegacyGroupsDB(t *testing.T) {
	for _, replicated := range []bool{false, true} {
		t.Run(fmt.Sprintf("replicated=%v", replicated), func(t *testing.T) { testMigratesLegacyGroupsDB(t, replicated) })
	}
}

func testMigratesLegacyGroupsDB(t *testing.T, replicated bool) {
	openLogged := func(t *testing.T, dir string, log GroupLog) *Coordinator {
		if replicated {
			return openReplicated(t, dir, log)
		}
		return openLogged(t, dir, log)
	}
	dir := t.TempDir()
	src, err := os.Open(filepath.Join("testdata", "legacy", "groups.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(filepath.Join(dir, "groups.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()

	want := map[string]map[string]map[int32]int64{
		"legacy-a": {"orders": {0: 10, 1: 42, 2: 12}, "payments": {0: 100}},
		"legacy-b": {"orders": {0: 7, 1: 8}},
	}
	check := func(c *Coordinator, who string) {
		t.Helper()
		for g, w := range want {
			got := c.Committed(g)
			if len(got) != len(w) {
				t.Fatalf("%s: %s = %v, want %v", who, g, got, w)
			}
			for topic, ps := range w {
				if !mapsEqual(got[topic], ps) {
					t.Fatalf("%s: %s = %v, want %v", who, g, got, w)
				}
			}
		}
	}
	log := newMemLog()
	c := openLogged(t, dir, log)
	for i := range int32(50) {
		if err := c.LoadPartition(i); err != nil {
			t.Fatal(err)
		}
	}
	check(c, "upgraded broker")
	// The metadata survives too.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version, f.Group = 7, "legacy-a"
	if r := c.OffsetFetch(f); len(r.Topics) != 2 || *r.Topics[0].Partitions[0].Metadata != "md-orders" || r.Topics[0].Partitions[0].LeaderEpoch != 3 {
		t.Fatalf("fetch: %+v", r.Topics)
	}
	n := 0
	for _, recs := range log.parts {
		n += len(recs)
	}
	if n != 6 {
		t.Fatalf("%d records migrated, want 6", n)
	}
	// A second load migrates nothing again.
	for i := range int32(50) {
		c.UnloadPartition(i)
		c.LoadPartition(i)
	}
	m := 0
	for _, recs := range log.parts {
		m += len(recs)
	}
	if m != n {
		t.Fatalf("reload appended %d more records", m-n)
	}
	check(c, "reloaded")

	other := openLogged(t, t.TempDir(), log)
	for i := range int32(50) {
		other.LoadPartition(i)
	}
	check(other, "another broker")
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
