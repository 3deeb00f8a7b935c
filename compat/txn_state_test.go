package compat

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterTxnCoordinatorFailover: a transactional producer commits and
// aborts transactions on a three-node cluster; the transaction coordinator
// (the leader of the id's __transaction_state partition) is killed -9
// mid-stream; the producer goes on with the new coordinator, and a
// read_committed consumer sees every committed transaction's records
// exactly once and none of the aborted ones.
func TestClusterTxnCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3)
	c.WaitBrokers(3)
	ctx := testCtx(t, 4*time.Minute)
	topic := topicName(t, "")
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		c.WaitLeader(topic, p)
	}
	txnID := "txn-failover-" + topic
	newProducer := func() *kgo.Client {
		return c.Client(kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(20*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	prod := newProducer()

	const txns, perTxn, killAfter = 30, 6, 12
	committed := map[string]bool{} // value → committed for sure
	aborted := map[string]bool{}   // value → aborted for sure
	unknown := map[int][]string{}  // transaction → values, outcome unknown (atomic either way)
	var killed time.Time
	var coord int32 = -1
	var failover time.Duration
	for i := 0; i < txns; i++ {
		if i == killAfter {
			coord = findTxnCoordinator(t, ctx, c, txnID)
			t.Logf("transactional id %s: coordinator %d; kill -9", txnID, coord)
			killed = time.Now()
			c.Node(coord).Kill()
			c.Node(coord).Cut()
		}
		commit := i%4 != 3 || i == txns-1
		var vals []string
		err := func() error {
			if err := prod.BeginTransaction(); err != nil {
				return err
			}
			var recs []*kgo.Record
			for j := 0; j < perTxn; j++ {
				v := fmt.Sprintf("t%d-r%d", i, j)
				vals = append(vals, v)
				recs = append(recs, &kgo.Record{Value: []byte(v)})
			}
			if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return err
			}
			end := kgo.TryAbort
			if commit {
				end = kgo.TryCommit
			}
			return prod.EndTransaction(ctx, end)
		}()
		if err != nil {
			t.Logf("transaction %d: %v; a new producer takes over", i, err)
			unknown[i] = vals
			prod.Close()
			prod = newProducer()
			continue
		}
		if !killed.IsZero() && failover == 0 {
			failover = time.Since(killed)
			t.Logf("transaction coordinator failover: first EndTxn succeeded %v after kill -9 of %d", failover, coord)
		}
		for _, v := range vals {
			if commit {
				committed[v] = true
			} else {
				aborted[v] = true
			}
		}
	}
	prod.Close()
	if failover == 0 {
		t.Fatal("no transaction ended after the kill")
	}
	if newCoord := findTxnCoordinator(t, ctx, c, txnID); newCoord == coord {
		t.Errorf("the coordinator is still the killed broker %d", coord)
	}

	cons := c.Client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]int{}
	missing := func() int {
		n := 0
		for v := range committed {
			if seen[v] == 0 {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer misses %d committed records", missing())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s read %d times", v, n)
		}
		if aborted[v] {
			t.Errorf("record %s of an aborted transaction was read", v)
		}
	}
	for i, vals := range unknown {
		n := 0
		for _, v := range vals {
			if seen[v] > 0 {
				n++
			}
		}
		if n != 0 && n != len(vals) {
			t.Errorf("transaction %d (outcome unknown) is partly visible: %d of %d records", i, n, len(vals))
		}
	}
	t.Logf("%d committed and %d aborted records, %d transactions of unknown outcome", len(committed), len(aborted), len(unknown))
}

// findTxnCoordinator asks the cluster which broker coordinates txnID.
func findTxnCoordinator(t *testing.T, ctx context.Context, c *cluster, txnID string) int32 {
	t.Helper()
	var node int32
	if err := waitUntil(60*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = txnID, 1
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		kresp, err := req.RequestWith(fctx, c.Client())
		if err != nil {
			return err
		}
		if kresp.ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator: error %d", kresp.ErrorCode)
		}
		node = kresp.NodeID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return node
}

// TestTransactionStateTopicDecodes: a transaction's transitions are Kafka
// TxnMetadata records in __transaction_state (internal, 50 partitions), in
// the id's partition, decodable with kmsg: Empty after InitProducerId,
// Ongoing with the transaction's partitions, PrepareCommit, CompleteCommit.
func TestTransactionStateTopicDecodes(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	txnID := "decode-" + topic
	prod := newClient(t, b, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	md := metadata(t, ctx, newClient(t, b), "__transaction_state")
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || !md.Topics[0].IsInternal || len(md.Topics[0].Partitions) != 50 {
		t.Fatalf("__transaction_state in Metadata: %+v", md.Topics)
	}
	cl := newClient(t, b, kgo.ConsumeTopics("__transaction_state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	want := []kmsg.TransactionState{kmsg.TransactionStateEmpty, kmsg.TransactionStateOngoing, kmsg.TransactionStatePrepareCommit, kmsg.TransactionStateCompleteCommit}
	var got []kmsg.TransactionState
	var pids []int64
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("decoded %v before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var k kmsg.TxnMetadataKey
			if err := k.ReadFrom(r.Key); err != nil {
				t.Fatalf("key: %v", err)
			}
			if k.TransactionalID != txnID {
				return
			}
			var v kmsg.TxnMetadataValue
			if err := v.ReadFrom(r.Value); err != nil {
				t.Fatalf("value: %v", err)
			}
			got = append(got, v.State)
			pids = append(pids, v.ProducerID)
			if v.State == kmsg.TransactionStateOngoing && (len(v.Topics) != 1 || v.Topics[0].Topic != topic || !slices.Equal(v.Topics[0].Partitions, []int32{0})) {
				t.Errorf("Ongoing record topics %+v", v.Topics)
			}
		})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	if pids[0] < 0 || len(slices.Compact(slices.Clone(pids))) != 1 {
		t.Fatalf("producer ids %v", pids)
	}
}
