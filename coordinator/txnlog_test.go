package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func openTxnLogged(t *testing.T, cfg TxnConfig, log GroupLog) *TxnCoordinator {
	t.Helper()
	cfg.Log, cfg.LogPartitions = log, 50
	c, err := OpenTxn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type decodedTxn struct {
	id    string
	state kmsg.TransactionState
	pid   int64
	epoch int16
	parts map[string][]int32
	tomb  bool
}

// decodeTxnLog decodes partition p of a memLog with kmsg.
func decodeTxnLog(t *testing.T, l *memLog, p int32) []decodedTxn {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []decodedTxn
	for _, r := range l.parts[p] {
		var k kmsg.TxnMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			t.Fatalf("key: %v", err)
		}
		d := decodedTxn{id: k.TransactionalID, tomb: r.Value == nil}
		if r.Value != nil {
			var v kmsg.TxnMetadataValue
			if err := v.ReadFrom(r.Value); err != nil {
				t.Fatalf("value: %v", err)
			}
			d.state, d.pid, d.epoch = v.State, v.ProducerID, v.ProducerEpoch
			for _, tp := range v.Topics {
				if d.parts == nil {
					d.parts = map[string][]int32{}
				}
				d.parts[tp.Topic] = tp.Partitions
			}
		}
		out = append(out, d)
	}
	return out
}

// TestTxnLogTransitionsAreKafkaRecords: every transition of a transaction
// is a TxnMetadata record in the id's partition, in Kafka's state numbers;
// before the partition is loaded the id answers NOT_COORDINATOR.
func TestTxnLogTransitionsAreKafkaRecords(t *testing.T) {
	log := newMemLog()
	c := openTxnLogged(t, testTxnConfig(t.TempDir()), log)
	id := "tx-a"
	p := PartitionFor(id, 50)
	if code := c.TxnError(id); code != kerr.NotCoordinator.Code {
		t.Fatalf("before load: %v", kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &id, 60000
	if r := c.InitProducerID(context.Background(), req); r.ErrorCode == 0 {
		t.Fatalf("InitProducerId before load succeeded")
	}
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	pid, epoch := initTxn(t, c, id)
	if code := addTxnPartition(c, id, pid, epoch, "t", 3); code != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(c, id, pid, epoch, true); code != 0 {
		t.Fatalf("end: %v", kerr.ErrorForCode(code))
	}
	got := decodeTxnLog(t, log, p)
	want := []kmsg.TransactionState{kmsg.TransactionStateEmpty, kmsg.TransactionStateOngoing, kmsg.TransactionStatePrepareCommit, kmsg.TransactionStateCompleteCommit}
	if len(got) != len(want) {
		t.Fatalf("records %+v, want states %v", got, want)
	}
	for i, d := range got {
		if d.id != id || d.state != want[i] || d.pid != pid || d.epoch != epoch {
			t.Fatalf("record %d = %+v, want %v of %d/%d", i, d, want[i], pid, epoch)
		}
	}
	if ps := got[1].parts["t"]; len(ps) != 1 || ps[0] != 3 {
		t.Fatalf("Ongoing partitions %v", got[1].parts)
	}
	for q, recs := range log.parts {
		if q != p && len(recs) > 0 {
			t.Fatalf("records in partition %d", q)
		}
	}
}

// TestTxnLogMoveCompletesPrepared: a transaction left in PrepareCommit by a
// coordinator that lost its partition is completed by the next one, from
// the log alone, which then fences the old producer epoch.
func TestTxnLogMoveCompletesPrepared(t *testing.T) {
	log := newMemLog()
	id := "tx-move"
	p := PartitionFor(id, 50)
	cfgA := testTxnConfig(t.TempDir())
	cfgA.WriteMarkers = func(context.Context, string, int64, int16, bool, bool, map[string][]int32) error {
		return errors.New("partition leader unreachable")
	}
	a := openTxnLogged(t, cfgA, log)
	if err := a.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	pid, epoch := initTxn(t, a, id)
	if code := addTxnPartition(a, id, pid, epoch, "t", 0); code != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(code))
	}
	endTxn(a, id, pid, epoch, true) // markers fail: stays PrepareCommit
	if m, _ := a.stateOf(id); m.state != txnPrepareCommit {
		t.Fatalf("A: state %v", m.state)
	}
	a.UnloadPartition(p)
	if code := a.TxnError(id); code != kerr.NotCoordinator.Code {
		t.Fatalf("A after unload: %v", kerr.ErrorForCode(code))
	}
	if code := addTxnPartition(a, id, pid, epoch, "t", 1); code == 0 {
		t.Fatal("A still serves the id after unload")
	}

	var mu sync.Mutex
	var markers []string
	cfgB := testTxnConfig(t.TempDir())
	cfgB.WriteMarkers = func(_ context.Context, _ string, mpid int64, mepoch int16, commit, _ bool, parts map[string][]int32) error {
		mu.Lock()
		defer mu.Unlock()
		if mpid == pid && mepoch == epoch && commit && len(parts["t"]) == 1 {
			markers = append(markers, "commit t-0")
		}
		return nil
	}
	b := openTxnLogged(t, cfgB, log)
	if err := b.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(markers) != 1 {
		t.Fatalf("markers after load: %v", markers)
	}
	mu.Unlock()
	if m, ok := b.stateOf(id); !ok || m.state != txnCompleteCommit || m.producerID != pid || m.epoch != epoch {
		t.Fatalf("B: %+v", m)
	}
	// A new producer instance bumps the epoch; the old one is fenced.
	npid, nepoch := initTxn(t, b, id)
	if npid != pid || nepoch != epoch+1 {
		t.Fatalf("InitProducerId at B: %d/%d, want %d/%d", npid, nepoch, pid, epoch+1)
	}
	if code := addTxnPartition(b, id, pid, epoch, "t", 0); code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch at B: %v", kerr.ErrorForCode(code))
	}
	last := decodeTxnLog(t, log, p)
	if d := last[len(last)-1]; d.state != kmsg.TransactionStateEmpty || d.epoch != nepoch {
		t.Fatalf("last record %+v", d)
	}
}

// TestTxnLogMigratesTxnsDB: ids in a txns.db written before the log are
// appended to it when their partition is loaded, and keep their producer;
// on a single node and in a cluster (whose loads rebuild the view).
func TestTxnLogMigratesTxnsDB(t *testing.T) {
	for _, replicated := range []bool{false, true} {
		t.Run(fmt.Sprintf("replicated=%v", replicated), func(t *testing.T) { testTxnMigratesTxnsDB(t, replicated) })
	}
}

func testTxnMigratesTxnsDB(t *testing.T, replicated bool) {
	dir := t.TempDir()
	cfg := testTxnConfig(dir)
	old, err := OpenTxn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := "legacy"
	pid, epoch := initTxn(t, old, id)
	old.Close()
	cfg.LogReplicated = replicated

	log := newMemLog()
	c := openTxnLogged(t, cfg, log)
	if !c.HasUnloggedState() {
		t.Fatal("HasUnloggedState = false")
	}
	p := PartitionFor(id, 50)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	recs := decodeTxnLog(t, log, p)
	if len(recs) != 1 || recs[0].id != id || recs[0].pid != pid || recs[0].epoch != epoch || recs[0].state != kmsg.TransactionStateEmpty {
		t.Fatalf("migrated records %+v", recs)
	}
	if c.HasUnloggedState() {
		t.Fatal("HasUnloggedState after migration")
	}
	npid, nepoch := initTxn(t, c, id)
	if npid != pid || nepoch != epoch+1 {
		t.Fatalf("after migration: %d/%d, want %d/%d", npid, nepoch, pid, epoch+1)
	}
	// A reload replays only what the view lacks and finds the same state.
	c.UnloadPartition(p)
	if err := c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if m, ok := c.stateOf(id); !ok || m.epoch != nepoch {
		t.Fatalf("after reload: %+v", m)
	}
}
