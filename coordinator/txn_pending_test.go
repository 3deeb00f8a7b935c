package coordinator

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heldLog is a memLog whose appends to a held partition are in the log at
// once but commit only when the test releases them, with the given error.
type heldLog struct {
	*memLog
	held   chan int32 // receives the partition of each held append
	holdMu sync.Mutex
	hold   map[int32]chan error
}

func newHeldLog() *heldLog {
	return &heldLog{memLog: newMemLog(), held: make(chan int32, 16), hold: map[int32]chan error{}}
}

func (l *heldLog) lock()   { l.holdMu.Lock() }
func (l *heldLog) unlock() { l.holdMu.Unlock() }

// holdNext makes the appends to p wait for release(p, err).
func (l *heldLog) holdNext(p int32) {
	l.lock()
	defer l.unlock()
	l.hold[p] = make(chan error, 1)
}

func (l *heldLog) release(p int32, err error) {
	l.lock()
	ch := l.hold[p]
	delete(l.hold, p)
	l.unlock()
	ch <- err
}

func (l *heldLog) Append(p int32, recs []LogRecord) (int64, func() error, error) {
	next, wait, err := l.memLog.Append(p, recs)
	return l.holdAppend(p, next, wait, err)
}

func (l *heldLog) AppendTxn(p int32, producerID int64, producerEpoch int16, recs []LogRecord) (int64, func() error, error) {
	next, wait, err := l.memLog.AppendTxn(p, producerID, producerEpoch, recs)
	return l.holdAppend(p, next, wait, err)
}

func (l *heldLog) AppendMarker(p int32, producerID int64, producerEpoch int16, commit bool) (int64, func() error, error) {
	next, wait, err := l.memLog.AppendMarker(p, producerID, producerEpoch, commit)
	return l.holdAppend(p, next, wait, err)
}

// holdAppend makes an append's wait block until release if p is held.
func (l *heldLog) holdAppend(p int32, next int64, wait func() error, err error) (int64, func() error, error) {
	if err != nil {
		return next, wait, err
	}
	l.lock()
	ch := l.hold[p]
	l.unlock()
	if ch == nil {
		return next, wait, nil
	}
	l.held <- p
	return next, func() error { return <-ch }, nil
}

// twoIDsInTwoPartitions returns two transactional ids of different
// __transaction_state partitions (of 50).
func twoIDsInTwoPartitions() (string, string) {
	a := "tx-pending-a"
	for _, b := range []string{"tx-pending-b", "tx-pending-c", "tx-pending-d"} {
		if PartitionFor(a, 50) != PartitionFor(b, 50) {
			return a, b
		}
	}
	panic("no two partitions")
}

// TestTxnPendingTransitionAnswersConcurrentTransactions: while a transition
// of one transactional id replicates, the coordinator's lock is free: a
// second request for the same id answers CONCURRENT_TRANSACTIONS (Kafka's
// pendingState), a whole transaction of another id completes, and the
// first request is answered with its state installed once the record
// commits.
func TestTxnPendingTransitionAnswersConcurrentTransactions(t *testing.T) {
	log := newHeldLog()
	c := openTxnLogged(t, testTxnConfig(t.TempDir()), log)
	a, b := twoIDsInTwoPartitions()
	pa, pb := PartitionFor(a, 50), PartitionFor(b, 50)
	for _, p := range []int32{pa, pb} {
		if err := c.LoadPartition(p); err != nil {
			t.Fatal(err)
		}
	}
	pidA, epochA := initTxn(t, c, a)
	pidB, epochB := initTxn(t, c, b)

	log.holdNext(pa)
	first := make(chan int16)
	go func() { first <- addTxnPartition(c, a, pidA, epochA, "t", 0) }()
	if p := <-log.held; p != pa {
		t.Fatalf("held append to partition %d, want %d", p, pa)
	}

	// The same id: every kind of request is turned away.
	if code := addTxnPartition(c, a, pidA, epochA, "t", 1); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("second AddPartitionsToTxn for %s: %v", a, kerr.ErrorForCode(code))
	}
	if code := endTxn(c, a, pidA, epochA, true); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("EndTxn for %s: %v", a, kerr.ErrorForCode(code))
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &a, 60000
	if r := c.InitProducerID(context.Background(), init); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("InitProducerId for %s: %v", a, kerr.ErrorForCode(r.ErrorCode))
	}
	if code := c.CheckProduce(pidA, epochA, "t", 1, true); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("implicit add for %s: %v", a, kerr.ErrorForCode(code))
	}
	// Another id proceeds through a whole transaction.
	if code := addTxnPartition(c, b, pidB, epochB, "t", 2); code != 0 {
		t.Fatalf("AddPartitionsToTxn for %s: %v", b, kerr.ErrorForCode(code))
	}
	if code := endTxn(c, b, pidB, epochB, true); code != 0 {
		t.Fatalf("EndTxn for %s: %v", b, kerr.ErrorForCode(code))
	}
	if m, _ := c.stateOf(b); m.state != txnCompleteCommit {
		t.Fatalf("%s is %v, want CompleteCommit", b, m.state)
	}
	// The held id's state is still the old one.
	if m, _ := c.stateOf(a); m.state != txnEmpty || len(m.partitions) != 0 {
		t.Fatalf("%s before its record commits: %v %v", a, m.state, m.partitions)
	}

	log.release(pa, nil)
	if code := <-first; code != 0 {
		t.Fatalf("first AddPartitionsToTxn for %s: %v", a, kerr.ErrorForCode(code))
	}
	m, _ := c.stateOf(a)
	if _, ok := m.partitions[topicPartition{"t", 0}]; m.state != txnOngoing || !ok || len(m.partitions) != 1 {
		t.Fatalf("%s after commit: %v %v", a, m.state, m.partitions)
	}
	// Now the id is free again.
	if code := addTxnPartition(c, a, pidA, epochA, "t", 1); code != 0 {
		t.Fatalf("AddPartitionsToTxn for %s after commit: %v", a, kerr.ErrorForCode(code))
	}
}

// TestTxnPendingTransitionFailedAppend: a transition whose record does not
// commit is rolled back and answers Kafka's mapping of the append error; a
// new id whose first record fails is not known afterwards.
func TestTxnPendingTransitionFailedAppend(t *testing.T) {
	log := newHeldLog()
	c := openTxnLogged(t, testTxnConfig(t.TempDir()), log)
	a, _ := twoIDsInTwoPartitions()
	pa := PartitionFor(a, 50)
	if err := c.LoadPartition(pa); err != nil {
		t.Fatal(err)
	}

	// A new id: NOT_LEADER_OR_FOLLOWER → NOT_COORDINATOR, and the id is
	// forgotten.
	log.holdNext(pa)
	res := make(chan *kmsg.InitProducerIDResponse)
	go func() {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &a, 60000
		res <- c.InitProducerID(context.Background(), req)
	}()
	<-log.held
	log.release(pa, kerr.NotLeaderForPartition)
	if r := <-res; r.ErrorCode != kerr.NotCoordinator.Code || r.ProducerID != -1 {
		t.Fatalf("InitProducerId with a lost append: %v pid %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID)
	}
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.TransactionalIDs = []string{a}
	if code := c.DescribeTransactions(d).TransactionStates[0].ErrorCode; code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe after a failed first append: %v", kerr.ErrorForCode(code))
	}

	// A known id: NOT_ENOUGH_REPLICAS → COORDINATOR_NOT_AVAILABLE, and the
	// state stays.
	pid, epoch := initTxn(t, c, a)
	log.holdNext(pa)
	codes := make(chan int16)
	go func() { codes <- addTxnPartition(c, a, pid, epoch, "t", 0) }()
	<-log.held
	log.release(pa, kerr.NotEnoughReplicas)
	if code := <-codes; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("AddPartitionsToTxn with too few replicas: %v", kerr.ErrorForCode(code))
	}
	if m, _ := c.stateOf(a); m.state != txnEmpty || len(m.partitions) != 0 || m.epoch != epoch {
		t.Fatalf("state after a failed append: %v %v epoch %d", m.state, m.partitions, m.epoch)
	}
	if code := addTxnPartition(c, a, pid, epoch, "t", 0); code != 0 {
		t.Fatalf("retry: %v", kerr.ErrorForCode(code))
	}
}

// TestTxnPendingTransitionUnloaded: a partition unloaded while a
// transition replicates answers NOT_COORDINATOR and installs nothing.
func TestTxnPendingTransitionUnloaded(t *testing.T) {
	log := newHeldLog()
	c := openTxnLogged(t, testTxnConfig(t.TempDir()), log)
	a, _ := twoIDsInTwoPartitions()
	pa := PartitionFor(a, 50)
	if err := c.LoadPartition(pa); err != nil {
		t.Fatal(err)
	}
	pid, epoch := initTxn(t, c, a)
	log.holdNext(pa)
	codes := make(chan int16)
	go func() { codes <- addTxnPartition(c, a, pid, epoch, "t", 0) }()
	<-log.held
	c.UnloadPartition(pa)
	log.release(pa, nil)
	if code := <-codes; code != kerr.NotCoordinator.Code {
		t.Fatalf("AddPartitionsToTxn across an unload: %v", kerr.ErrorForCode(code))
	}
	if _, ok := c.stateOf(a); ok {
		t.Fatalf("%s still served after unload", a)
	}
}
