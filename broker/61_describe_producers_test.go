package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeProducers_EveryReplicaAnswers: as in Kafka, a follower
// answers DescribeProducers from its own copy of the log (kafka-transactions
// find-hanging --broker-id asks each broker about the partitions it holds),
// and a broker with no replica of the partition answers
// NOT_LEADER_OR_FOLLOWER.
func TestDescribeProducers_EveryReplicaAnswers(t *testing.T) {
	brokers, addrs, _ := startRackCluster(t, [3]map[string]string{})
	const topic = "dp"
	cl := newClient(t, addrs[0], kgo.DefaultProduceTopic(topic))
	createAssigned(t, cl, brokers, topic, []int32{1, 2})
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(testCtx(t), kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the follower's copy holds the 3 records", func() bool {
		p := partitionOf(brokers[1], topic)
		return p != nil && p.log != nil && p.log.LogEndOffset() == 3
	})

	describe := func(addr string) kmsg.DescribeProducersResponseTopicPartition {
		t.Helper()
		c := dialRaw(t, addr)
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		c.send(1, req)
		resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
		c.recv(1, resp)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeProducers to %s answered %+v", addr, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	leader, follower := describe(addrs[0]), describe(addrs[1])
	for name, p := range map[string]kmsg.DescribeProducersResponseTopicPartition{"leader": leader, "follower": follower} {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil || len(p.ActiveProducers) != 1 {
			t.Fatalf("%s: %v, producers %+v; want one producer", name, err, p.ActiveProducers)
		}
		if ap := p.ActiveProducers[0]; ap.LastSequence != 2 || ap.CurrentTxnStartOffset != -1 {
			t.Errorf("%s: producer %+v, want last sequence 2 and no open transaction", name, ap)
		}
	}
	if l, f := leader.ActiveProducers[0], follower.ActiveProducers[0]; l.ProducerID != f.ProducerID || l.ProducerEpoch != f.ProducerEpoch || l.LastTimestamp != f.LastTimestamp {
		t.Errorf("the follower's producer %+v differs from the leader's %+v", f, l)
	}
	if p := describe(addrs[2]); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("a broker without a replica: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(p.ErrorCode))
	}
}

// TestDescribeProducers_CoordinatorEpoch: as Kafka answers, an idempotent
// producer that never ended a transaction in the partition has
// coordinator epoch -1; a transactional one, after its commit marker, the
// epoch its coordinator wrote the marker with (0 on a new broker).
func TestDescribeProducers_CoordinatorEpoch(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	const topic = "dp-epoch"
	idem := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err := idem.ProduceSync(testCtx(t), kgo.StringRecord("i")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.TransactionalID("dp-epoch-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(testCtx(t), kgo.StringRecord("t")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(testCtx(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), idem)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.ActiveProducers) != 2 {
		t.Fatalf("%v, producers %+v; want two", kerr.ErrorForCode(p.ErrorCode), p.ActiveProducers)
	}
	txnID, _, err := txn.ProducerID(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var idemEpoch, txnEpoch int32 = -2, -2
	for _, ap := range p.ActiveProducers {
		if ap.CurrentTxnStartOffset != -1 {
			t.Errorf("producer %d: open transaction at %d", ap.ProducerID, ap.CurrentTxnStartOffset)
		}
		if ap.ProducerID == txnID {
			txnEpoch = ap.CoordinatorEpoch
		} else {
			idemEpoch = ap.CoordinatorEpoch
		}
	}
	if idemEpoch != -1 || txnEpoch != 0 {
		t.Fatalf("coordinator epochs: idempotent %d, transactional %d; want -1 and 0", idemEpoch, txnEpoch)
	}
}
