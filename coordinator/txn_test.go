package coordinator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	bolt "go.etcd.io/bbolt"
)

func testTxnConfig(dir string) TxnConfig {
	var pid atomic.Int64
	return TxnConfig{
		Dir:                dir,
		AllocateProducerID: func() (int64, error) { return pid.Add(1), nil },
		WriteMarkers: func(context.Context, string, int64, int16, bool, bool, map[string][]int32) error {
			return nil
		},
	}
}

func initTxn(t *testing.T, c *TxnCoordinator, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = 60000
	r := c.InitProducerID(context.Background(), req)
	if r.ErrorCode != 0 {
		t.Fatalf("init %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
	}
	return r.ProducerID, r.ProducerEpoch
}

func addTxnPartition(c *TxnCoordinator, id string, pid int64, epoch int16, topic string, p int32) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{p}}}
	return c.AddPartitionsToTxn(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func endTxn(c *TxnCoordinator, id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 4
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return c.EndTxn(context.Background(), req).ErrorCode
}

func TestOpenTxn_RequiresAllocatorAndMarkerWriter(t *testing.T) {
	cfg := testTxnConfig(t.TempDir())
	cfg.WriteMarkers = nil
	if _, err := OpenTxn(cfg); !errors.Is(err, ErrTxnConfig) {
		t.Fatalf("OpenTxn without WriteMarkers: %v", err)
	}
}

func TestOpenTxn_CorruptRecord(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, txnDBFileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTxns)
		if err != nil {
			return err
		}
		return b.Put([]byte("a"), []byte(`{"v":1,"state":"Dead"}`))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenTxn(testTxnConfig(dir))
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Bucket != "txns" {
		t.Fatalf("OpenTxn of a corrupt record: %v", err)
	}
}

func TestTxnCoordinator_ClosedAnswersCoordinatorNotAvailable(t *testing.T) {
	c, err := OpenTxn(testTxnConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	pid, epoch := initTxn(t, c, "a")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if code := addTxnPartition(c, "a", pid, epoch, "t", 0); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("add after close: %v", kerr.ErrorForCode(code))
	}
	if code := c.CheckProduce(pid, epoch, "t", 0, true); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("produce after close: %v", kerr.ErrorForCode(code))
	}
}

// A slow marker write holds up only its own transaction: the lock is not
// held while WriteMarkers runs.
func TestTxnCoordinator_MarkersWrittenWithoutLock(t *testing.T) {
	cfg := testTxnConfig(t.TempDir())
	entered, release := make(chan struct{}), make(chan struct{})
	cfg.WriteMarkers = func(_ context.Context, _ string, _ int64, _ int16, _, _ bool, parts map[string][]int32) error {
		if _, slow := parts["slow"]; slow {
			close(entered)
			<-release
		}
		return nil
	}
	c, err := OpenTxn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pa, ea := initTxn(t, c, "a")
	pb, eb := initTxn(t, c, "b")
	if code := addTxnPartition(c, "a", pa, ea, "slow", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	done := make(chan int16)
	go func() { done <- endTxn(c, "a", pa, ea, true) }()
	<-entered
	if code := addTxnPartition(c, "a", pa, ea, "t", 0); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add to a while its markers are written: %v", kerr.ErrorForCode(code))
	}
	if code := addTxnPartition(c, "b", pb, eb, "t", 0); code != 0 {
		t.Fatalf("add to b: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(c, "b", pb, eb, true); code != 0 {
		t.Fatalf("end b: %v", kerr.ErrorForCode(code))
	}
	close(release)
	if code := <-done; code != 0 {
		t.Fatalf("end a: %v", kerr.ErrorForCode(code))
	}
	if m, _ := c.stateOf("a"); m.state != txnCompleteCommit {
		t.Fatalf("a is %v", m.state)
	}
}

// Many producers run transactions with offsets at once (go test -race).
func TestTxnCoordinator_ConcurrentTransactions(t *testing.T) {
	dir := t.TempDir()
	groups, err := Open(Config{Dir: dir, InitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	cfg := testTxnConfig(dir)
	cfg.Groups = groups
	var markers atomic.Int64
	cfg.WriteMarkers = func(context.Context, string, int64, int16, bool, bool, map[string][]int32) error {
		markers.Add(1)
		return nil
	}
	c, err := OpenTxn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const producers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for i := range producers {
		id := fmt.Sprintf("p%d", i)
		pid, epoch := initTxn(t, c, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if code := c.CheckProduce(pid, epoch, "t", int32(i), false); code != kerr.InvalidTxnState.Code {
					errs <- fmt.Errorf("%s: produce before add: %v", id, kerr.ErrorForCode(code))
					return
				}
				if code := addTxnPartition(c, id, pid, epoch, "t", int32(i)); code != 0 {
					errs <- fmt.Errorf("%s: add: %v", id, kerr.ErrorForCode(code))
					return
				}
				ao := kmsg.NewPtrAddOffsetsToTxnRequest()
				ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, "g"
				if code := c.AddOffsetsToTxn(ao).ErrorCode; code != 0 {
					errs <- fmt.Errorf("%s: add offsets: %v", id, kerr.ErrorForCode(code))
					return
				}
				oc := kmsg.NewPtrTxnOffsetCommitRequest()
				oc.Version = 3
				oc.TransactionalID, oc.ProducerID, oc.ProducerEpoch, oc.Group, oc.Generation = id, pid, epoch, "g", -1
				oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: int32(i), Offset: int64(r + 1), LeaderEpoch: -1}}}}
				if code := c.TxnOffsetCommit(oc).Topics[0].Partitions[0].ErrorCode; code != 0 {
					errs <- fmt.Errorf("%s: txn offset commit: %v", id, kerr.ErrorForCode(code))
					return
				}
				if code := endTxn(c, id, pid, epoch, r%4 != 3); code != 0 {
					errs <- fmt.Errorf("%s: end: %v", id, kerr.ErrorForCode(code))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := markers.Load(); got != producers*rounds {
		t.Errorf("marker writes: %d, want %d", got, producers*rounds)
	}
	committed := groups.Committed("g")
	for i := range producers {
		// The last round (19) aborted; 18 is the last committed one.
		if got := committed["in"][int32(i)]; got != rounds-1 {
			t.Errorf("in/%d committed %d, want %d", i, got, rounds-1)
		}
	}
	if p := groups.PendingTxnOffsets("g"); p != nil {
		t.Errorf("pending offsets left: %v", p)
	}
}

// The retry of a failed marker write runs on the real clock too.
func TestTxnCoordinator_MarkerRetryRealClock(t *testing.T) {
	cfg := testTxnConfig(t.TempDir())
	cfg.MarkerRetryBackoff = 10 * time.Millisecond
	var calls atomic.Int32
	cfg.WriteMarkers = func(context.Context, string, int64, int16, bool, bool, map[string][]int32) error {
		if calls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	}
	c, err := OpenTxn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid, epoch := initTxn(t, c, "a")
	addTxnPartition(c, "a", pid, epoch, "t", 0)
	if code := endTxn(c, "a", pid, epoch, false); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m, _ := c.stateOf("a"); m.state == txnCompleteAbort {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not completed after %d marker writes", calls.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An error answer of DescribeTransactions carries producer id, epoch, timeout
// and start time 0 (Kafka's defaults); a known id in state Empty has start
// time -1.
func TestDescribeTransactions_ErrorAnswerZeroes(t *testing.T) {
	c, err := OpenTxn(testTxnConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid, epoch := initTxn(t, c, "known")
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"unknown", "", "known"}
	got := c.DescribeTransactions(req).TransactionStates
	for i, code := range []int16{kerr.TransactionalIDNotFound.Code, kerr.InvalidRequest.Code} {
		d := got[i]
		if d.ErrorCode != code || d.ProducerID != 0 || d.ProducerEpoch != 0 || d.StartTimestamp != 0 || d.TimeoutMillis != 0 || d.State != "" {
			t.Errorf("%q: %v pid %d epoch %d start %d timeout %d state %q", d.TransactionalID, kerr.ErrorForCode(d.ErrorCode), d.ProducerID, d.ProducerEpoch, d.StartTimestamp, d.TimeoutMillis, d.State)
		}
	}
	if d := got[2]; d.ErrorCode != 0 || d.ProducerID != pid || d.ProducerEpoch != epoch || d.StartTimestamp != -1 || d.State != "Empty" || d.TimeoutMillis != 60000 {
		t.Errorf("known: %+v", d)
	}
}

// TestProduceTxnError_KafkaMapping checks what a Produce gets when its
// transaction could not be verified, as Kafka 4.4's ReplicaManager answers:
// an unreachable or moving coordinator (found when a broker is killed
// under Kafka Streams with exactly_once_v2, StreamsClusterTest) is the
// retriable NOT_ENOUGH_REPLICAS saying so, not a coordinator error code
// in a Produce response nor "not part of the transaction".
func TestProduceTxnError_KafkaMapping(t *testing.T) {
	unable := "Unable to verify the partition has been added to the transaction. Underlying error: "
	for _, c := range []struct {
		code    int16
		version int16
		want    int16
		msg     string
	}{
		{0, 12, 0, ""},
		{kerr.InvalidTxnState.Code, 10, kerr.InvalidTxnState.Code, "Partition was not added to the transaction"},
		{kerr.InvalidTxnState.Code, 11, kerr.TransactionAbortable.Code, "Partition was not added to the transaction"},
		{kerr.NetworkException.Code, 12, kerr.NotEnoughReplicas.Code, unable + "NETWORK_EXCEPTION"},
		{kerr.NotCoordinator.Code, 9, kerr.NotEnoughReplicas.Code, unable + "NOT_COORDINATOR"},
		{kerr.CoordinatorLoadInProgress.Code, 12, kerr.NotEnoughReplicas.Code, unable + "COORDINATOR_LOAD_IN_PROGRESS"},
		{kerr.CoordinatorNotAvailable.Code, 11, kerr.NotEnoughReplicas.Code, unable + "COORDINATOR_NOT_AVAILABLE"},
		{kerr.ConcurrentTransactions.Code, 11, kerr.NotEnoughReplicas.Code, unable + "CONCURRENT_TRANSACTIONS"},
		{kerr.ConcurrentTransactions.Code, 12, kerr.ConcurrentTransactions.Code, kerr.ConcurrentTransactions.Description},
		{kerr.InvalidProducerEpoch.Code, 12, kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Description},
	} {
		code, msg := ProduceTxnError(c.code, c.version)
		if code != c.want || msg != c.msg {
			t.Errorf("ProduceTxnError(%v, v%d) = %v %q, want %v %q", kerr.ErrorForCode(c.code), c.version, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(c.want), c.msg)
		}
	}
}
