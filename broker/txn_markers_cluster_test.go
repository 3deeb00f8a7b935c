package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A transaction marker counts as written only once it is on the ISR, as
// Kafka appends markers with acks=all. Here the leader of the
// transaction's partition appends the COMMIT marker while its followers
// cannot fetch, and dies: a follower, in the ISR all along, leads without
// the marker. The coordinator (another broker) must not have taken the
// leader's append for the marker, so that it writes it again to the new
// leader and the committed records become readable; had it completed the
// transaction, they would stay behind the last stable offset for good, or
// share the fate of the producer's next transaction (the Jepsen checker's
// txn-lost). While the marker is on the leader alone, read_committed
// readers there do not see the transaction either.
func TestWriteTxnMarkers_MarkerOnlyTheLeaderHasIsNotTakenForWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, stop := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{
			"transaction.state.log.num.partitions": "1",
			"offsets.topic.num.partitions":         "1",
			// The followers stay in the ISR while they cannot fetch.
			"replica.lag.time.max.ms": "120000",
		}
	})
	ctx := testCtx(t)
	const txnID, topic = "marker-txn", "m"
	txn := newClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic),
		kgo.TransactionalID(txnID), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, _, err := txn.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	coord, code := brokers[0].txnCoordinator(txnID)
	if code != 0 {
		t.Fatalf("coordinator of %q: %v", txnID, kerr.ErrorForCode(code))
	}
	// m-0 is led by a broker other than the coordinator.
	var replicas []int32
	for i := range int32(3) {
		if id := (coord.id+i)%3 + 1; id != coord.id {
			replicas = append(replicas, id)
		}
	}
	replicas = append(replicas, coord.id)
	leader := brokers[replicas[0]-1]
	createAssigned(t, newClient(t, addrs[0]), brokers, topic, replicas)
	part := func() *partition { return partitionOf(leader, topic) }

	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	want := []string{"committed-a", "committed-b"}
	for _, v := range want {
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	log := part().log
	if hw := log.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after two acks=all records, want 2", hw)
	}
	// From here the followers' fetches from the leader hang, and end with
	// their connection (never answered, even as the leader stops).
	var faults []int
	for _, f := range replicas[1:] {
		id, err := leader.InjectFault(Fault{APIKey: int16(kmsg.Fetch), ClientID: fmt.Sprintf("gregor-replica-%d", f), Latency: 5 * time.Minute, DropConnection: true})
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, id)
	}
	waitFor(t, 30*time.Second, "both followers' next fetch held", func() bool {
		held := 0
		for _, st := range leader.Faults() {
			if slices.Contains(faults, st.ID) && st.Hits > 0 {
				held++
			}
		}
		return held == len(faults)
	})

	ended := make(chan error, 1)
	go func() { ended <- txn.EndTransaction(ctx, kgo.TryCommit) }()
	waitFor(t, 30*time.Second, "the COMMIT marker in the leader's log", func() bool { return log.LogEndOffset() == 3 })
	if lso, hw := log.LastStableOffset(), log.HighWatermark(); lso != 0 || hw != 2 {
		t.Fatalf("leader with the marker on no follower: last stable offset %d, high watermark %d; want 0 2", lso, hw)
	}
	select {
	case err := <-ended:
		t.Fatalf("EndTxn answered (%v) with the marker on the leader alone", err)
	default:
	}

	stop[replicas[0]-1]()
	if err := <-ended; err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	var live []string
	for _, id := range replicas[1:] {
		live = append(live, addrs[id-1])
	}
	adm := kadm.NewClient(newClient(t, live[0], kgo.SeedBrokers(live...)))
	waitFor(t, 30*time.Second, fmt.Sprintf("a new leader of %s-0", topic), func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		p := md.Topics[topic].Partitions[0]
		return p.Err == nil && p.Leader >= 0 && p.Leader != replicas[0]
	})
	cons := newClient(t, live[0], kgo.SeedBrokers(live...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(got) < len(want) {
		fs := cons.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("read_committed from the new leader: %v, want %v (the commit was acknowledged; its marker was lost with the old leader)", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed %v, want %v", got, want)
	}
}
