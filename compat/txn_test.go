package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions (issue 4) with real clients: a franz-go GroupTransactSession
// consume-transform-produce loop through a broker crash and an ETL restart,
// sarama's transactional producer, kcat and franz-go read_committed
// consumers, fencing of a zombie producer, ListOffsets by isolation level,
// and kadm's transaction administration.

// Record batch attribute bits (Kafka's RecordBatch.attributes).
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// tcpProxy forwards connections from a fixed loopback address to the
// broker's current address. A broker that advertises the proxy (through
// GREGOR_ADVERTISE) can be restarted on a new port under clients that keep
// running, as they would against a broker restarted in place.
type tcpProxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
}

// newProxy listens on 127.0.0.1:0; it is closed, with every connection, at
// cleanup.
func newProxy(t *testing.T) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for c := range p.conns {
			c.Close()
		}
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// setTarget sends new connections to addr.
func (p *tcpProxy) setTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// track adds cs to the open connections.
func (p *tcpProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *tcpProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *tcpProxy) serve(client net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	server, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done // either side gone: close both
	p.untrack(client, server)
	<-done
}

// newTxnClient returns a kgo client with a transactional id that produces to
// topic with manual partitioning.
func newTxnClient(t *testing.T, b *broker, txnID, topic string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, b, append([]kgo.Opt{
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(20 * time.Second),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, extra...)...)
}

// txnProduce runs one transaction on cl producing values to partition and
// ending it with commit (true) or abort.
func txnProduce(t *testing.T, ctx context.Context, cl *kgo.Client, partition int32, commit bool, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	txnAppend(t, ctx, cl, partition, values...)
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("EndTransaction(commit=%v) after %v: %v", commit, values, err)
	}
}

// txnAppend produces values to partition inside cl's open transaction.
func txnAppend(t *testing.T, ctx context.Context, cl *kgo.Client, partition int32, values ...string) {
	t.Helper()
	var rs []*kgo.Record
	for _, v := range values {
		rs = append(rs, &kgo.Record{Partition: partition, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("transactional produce of %v: %v", values, err)
	}
}

// seq returns prefix-0 … prefix-(n-1).
func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// readAll consumes topic from the start at the given isolation level until
// it has want records, then polls for settle more and returns everything.
func readAll(t *testing.T, ctx context.Context, b *broker, topic string, committed bool, want int, settle time.Duration) []*kgo.Record {
	t.Helper()
	level := kgo.ReadUncommitted()
	if committed {
		level = kgo.ReadCommitted()
	}
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	return consumeN(t, ctx, cl, want, settle)
}

// valuesOf returns the records' values, sorted (a control record, which no
// client should hand out, shows as CONTROL@offset).
func valuesOf(rs []*kgo.Record) []string {
	var vs []string
	for _, r := range rs {
		if r.Attrs.IsControl() {
			vs = append(vs, "CONTROL@"+fmt.Sprint(r.Offset))
			continue
		}
		vs = append(vs, string(r.Value))
	}
	slices.Sort(vs)
	return vs
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// fetchCommitted issues one read_committed Fetch of a partition from offset 0.
func fetchCommitted(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	id := topicID(t, ctx, cl, topic)
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 8 << 20
	req.SessionEpoch = -1
	req.IsolationLevel = 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.PartitionMaxBytes = 4 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := direct[*kmsg.FetchResponse](ctx, cl, req)
	if err != nil {
		t.Fatalf("read_committed Fetch %s[%d]: %v", topic, partition, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("read_committed Fetch %s[%d]: %+v", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// listOffsetsIsolated issues ListOffsets latest for one partition at an
// isolation level (0 read_uncommitted, 1 read_committed).
func listOffsetsIsolated(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = -1
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := direct[*kmsg.ListOffsetsResponse](ctx, cl, req)
	if err != nil {
		t.Fatalf("ListOffsets %s[%d] isolation %d: %v", topic, partition, isolation, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %s[%d]: %+v", topic, partition, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("ListOffsets %s[%d] isolation %d v%d: %v", topic, partition, isolation, req.Version, err)
	}
	return p.Offset
}

// etl is a consume-transform-produce service: workers, each a
// GroupTransactSession with its own transactional id in one group, copy
// every record of in to the same partition of out (value prefixed "out:")
// in transactions that also commit the consumed offsets.
type etl struct {
	addr, group, in, out string

	stopping   atomic.Bool
	generation atomic.Int64 // bumped to make every worker restart its session
	committed  atomic.Int64 // records in transactions that End reported committed
	sessions   atomic.Int64
	aborted    atomic.Int64 // transactions ended with an abort or an error

	// Once holdAt records are committed, the next transaction to have
	// produced its records closes held and waits for release before it
	// ends: the test crashes the broker in between.
	holdAt   int64
	holdOnce sync.Once
	held     chan struct{}
	release  chan struct{}

	// Once crashAt records are committed, the next worker to have
	// produced a transaction's records dies before ending it: its
	// connections are reset, its client abandoned, the generation bumped
	// (the other workers restart their sessions cleanly) and crashed
	// closed; the worker then starts a new session with the same
	// transactional id.
	crashAt   int64
	crashOnce sync.Once
	crashed   chan struct{}

	mu   sync.Mutex
	errs []string // what went wrong, in order, for the log
	wg   sync.WaitGroup
}

// maybeHold holds the caller's open transaction if it is the first past
// holdAt.
func (e *etl) maybeHold(worker, records int) bool {
	if e.held == nil || e.committed.Load() < e.holdAt {
		return false
	}
	took := false
	e.holdOnce.Do(func() {
		took = true
		e.note("worker %d: holding an open transaction of %d records", worker, records)
		close(e.held)
		<-e.release
	})
	return took
}

func (e *etl) note(format string, args ...any) {
	e.mu.Lock()
	e.errs = append(e.errs, fmt.Sprintf(time.Now().Format("15:04:05.000 ")+format, args...))
	e.mu.Unlock()
}

func (e *etl) start(workers int) {
	for i := range workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for !e.stopping.Load() {
				e.session(i)
			}
		}()
	}
}

// stop waits for the workers to finish their current transaction and close.
func (e *etl) stop() {
	e.stopping.Store(true)
	e.wg.Wait()
}

// session runs one GroupTransactSession until an error, a restart or stop.
func (e *etl) session(worker int) {
	gen := e.generation.Load()
	dialer := &killableDialer{}
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(e.addr),
		kgo.Dialer(dialer.dial),
		kgo.ClientID(fmt.Sprintf("etl-%d", worker)),
		kgo.TransactionalID(fmt.Sprintf("%s-etl-%d", e.group, worker)),
		kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup(e.group),
		kgo.ConsumeTopics(e.in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		e.note("worker %d: NewGroupTransactSession: %v", worker, err)
		time.Sleep(100 * time.Millisecond)
		return
	}
	e.sessions.Add(1)
	// Like the Java client's initTransactions, fence a predecessor with
	// this transactional id (and abort its open transaction) now: kgo
	// would otherwise wait for the first transaction, and the dead
	// worker's transaction would hold the last stable offset back until
	// its timeout.
	ictx, icancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, _, err = s.Client().ProducerID(ictx)
	icancel()
	if err != nil {
		e.note("worker %d: ProducerID: %v", worker, err)
	}
	abandoned := false
	defer func() {
		if abandoned {
			go s.Close() // retries against dead connections; nobody waits
		} else {
			s.Close()
		}
	}()
	for !e.stopping.Load() && e.generation.Load() == gen {
		pctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := s.PollRecords(pctx, 40)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				e.note("worker %d: fetch %s[%d]: %v", worker, topic, p, err)
			}
		})
		rs := fs.Records()
		if len(rs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			e.note("worker %d: Begin: %v", worker, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var produceErr atomic.Value
		for _, r := range rs {
			out := &kgo.Record{Topic: e.out, Partition: r.Partition, Key: r.Key, Value: append([]byte("out:"), r.Value...)}
			s.Produce(ctx, out, func(_ *kgo.Record, err error) {
				if err != nil {
					produceErr.CompareAndSwap(nil, err)
				}
			})
		}
		try := kgo.TryCommit
		if err := s.Client().Flush(ctx); err != nil || produceErr.Load() != nil {
			e.note("worker %d: produce: flush %v, first error %v", worker, err, produceErr.Load())
			try = kgo.TryAbort
		}
		if e.crashed != nil && e.committed.Load() >= e.crashAt {
			e.crashOnce.Do(func() {
				dialer.kill()
				abandoned = true
				e.generation.Add(1)
				e.note("worker %d: died with an open transaction of %d records", worker, len(rs))
				close(e.crashed)
			})
			if abandoned {
				cancel()
				return
			}
		}
		held := e.maybeHold(worker, len(rs))
		committed, err := s.End(ctx, try)
		cancel()
		if held {
			e.note("worker %d: the held transaction ended after the crash: committed %v, error %v", worker, committed, err)
		}
		if committed {
			e.committed.Add(int64(len(rs)))
		} else {
			e.aborted.Add(1)
		}
		if err != nil {
			e.note("worker %d: End (%d records): %v", worker, len(rs), err)
			return // no End error is retryable: start a new session
		}
	}
}

// waitETL waits for cond, failing with the ETL's notes if ctx ends first.
func waitETL(t *testing.T, ctx context.Context, e *etl, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			e.mu.Lock()
			notes := strings.Join(e.errs, "\n")
			e.mu.Unlock()
			t.Fatalf("ETL: %s never happened (committed %d records, %d sessions, %d aborted); notes:\n%s",
				what, e.committed.Load(), e.sessions.Load(), e.aborted.Load(), notes)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestTxn_GroupTransactSessionCrash runs a two-worker consume-transform-
// produce ETL (franz-go GroupTransactSession, offsets committed in each
// transaction) over 3000 records, SIGKILLs the broker a third of the way
// through while a transaction is open (its records written, its offsets
// not yet committed; the workers keep running: the broker advertises a
// proxy that follows it to its new port); two thirds of the way through,
// one worker dies with a transaction open (connections reset, no
// LeaveGroup, no EndTxn) and is replaced by a new session with the same
// transactional id, while the other restarts cleanly. Once the group's
// offsets reach the end of the input, a read_committed consumer must find
// every input record in the output exactly once, in input order per
// partition.
func TestTxn_GroupTransactSessionCrash(t *testing.T) {
	proxy := newProxy(t)
	t.Setenv("GREGOR_ADVERTISE", proxy.addr())
	b := newBroker(t, noDelay)
	proxy.setTarget(b.addr)
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, b)
	in, out, group := topicName(t, "in"), topicName(t, "out"), topicName(t, "group")
	createTopic(t, ctx, adm, in, 3, nil)
	createTopic(t, ctx, adm, out, 3, nil)
	const n = 3000
	inputs := produceValues(t, ctx, newSpreader(t, b), in, "in", n)

	e := &etl{addr: proxy.addr(), group: group, in: in, out: out,
		holdAt: n / 3, held: make(chan struct{}), release: make(chan struct{}), crashAt: 2 * n / 3, crashed: make(chan struct{})}
	start := time.Now()
	e.start(2)
	defer e.stop()
	defer func() {
		select {
		case <-e.release:
		default:
			close(e.release)
		}
	}()

	select {
	case <-e.held:
	case <-ctx.Done():
		t.Fatalf("no transaction reached the crash point (%d records committed)", e.committed.Load())
	}
	t.Logf("SIGKILL with a transaction open and %d records committed, %v after the start", e.committed.Load(), time.Since(start).Round(time.Millisecond))
	b.crashRestart(t)
	proxy.setTarget(b.addr)
	close(e.release)

	waitETL(t, ctx, e, "a worker dying two thirds of the way through", func() bool {
		select {
		case <-e.crashed:
			return true
		default:
			return false
		}
	})
	t.Logf("a worker died mid-transaction, the other restarting, %d records committed, %v after the start", e.committed.Load(), time.Since(start).Round(time.Millisecond))

	// Done when the group has committed the end of every input partition.
	adm = newAdmin(t, b)
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil || ends.Error() != nil {
		t.Fatalf("ListEndOffsets %s: %v %v", in, err, ends.Error())
	}
	caughtUp := func() bool {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil || offs.Error() != nil {
			return false
		}
		done := true
		ends.Each(func(l kadm.ListedOffset) {
			if o, ok := offs.Lookup(in, l.Partition); !ok || o.At != l.Offset {
				done = false
			}
		})
		return done
	}
	waitETL(t, ctx, e, "group offsets at the end of the input", caughtUp)
	t.Logf("ETL done after %v: %d sessions, %d transactions aborted or failed",
		time.Since(start).Round(time.Millisecond), e.sessions.Load(), e.aborted.Load())
	e.stop()
	t.Logf("ETL stopped after %v", time.Since(start).Round(time.Millisecond))
	// Nothing is left open: every transaction was committed or aborted.
	raw := newClient(t, b)
	for p := range int32(3) {
		if lso, hwm := listOffsetsIsolated(t, ctx, raw, out, p, 1), listOffsetsIsolated(t, ctx, raw, out, p, 0); lso != hwm {
			ds, _ := adm.DescribeTransactions(ctx, group+"-etl-0", group+"-etl-1")
			t.Errorf("%s[%d]: last stable offset %d below the high watermark %d after the ETL stopped; transactions %+v", out, p, lso, hwm, ds)
		}
	}
	e.mu.Lock()
	for _, s := range e.errs {
		t.Log("ETL: " + s)
	}
	e.mu.Unlock()

	rs := readAll(t, ctx, b, out, true, n, time.Second)
	got := newTally()
	got.addRecords("out", rs)
	want := make([]string, n)
	for i, v := range inputs {
		want[i] = "out:" + v
	}
	got.checkExactlyOnce(t, "read_committed output", want)
	// The transactions the broker aborted (the dead worker's, at least)
	// are in the log: the workers did write more than n records.
	ru := newClient(t, b, kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	written := 0
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := ru.PollFetches(pctx)
		cancel()
		if fs.NumRecords() == 0 {
			break
		}
		written += fs.NumRecords()
	}
	t.Logf("output: %d records committed, %d written in all", len(rs), written)
	if written < n+40 {
		t.Errorf("read_uncommitted output has %d records; want at least %d: the dead worker's open transaction wrote 40", written, n+40)
	}
	// Per partition, the output follows the input's order.
	last := map[int32]string{}
	for _, r := range rs {
		v := string(r.Value)
		if v <= last[r.Partition] {
			t.Errorf("output %s[%d]@%d = %q after %q: out of input order", out, r.Partition, r.Offset, v, last[r.Partition])
			break
		}
		last[r.Partition] = v
	}
}

// saramaTxnConfig is a transactional sarama producer configuration.
func saramaTxnConfig(version sarama.KafkaVersion, txnID string) *sarama.Config {
	cfg := saramaConfig()
	cfg.Version = version
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = txnID
	cfg.Producer.Transaction.Timeout = 20 * time.Second
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

// TestTxn_SaramaCommitAbort commits, aborts and commits three sarama
// transactions over two partitions (at the oldest Kafka version sarama needs
// for transactions, 2.5, and the newest Gregor claims), then checks that a
// read_committed franz-go consumer sees only the committed records, that a
// read_uncommitted one sees all of them and no control record, that the
// commit/abort markers hold the expected offsets, and that a raw
// read_committed Fetch lists the aborted transaction.
func TestTxn_SaramaCommitAbort(t *testing.T) {
	for _, version := range []sarama.KafkaVersion{sarama.V2_5_0_0, saramaVersion} {
		t.Run("V"+version.String(), func(t *testing.T) {
			b := newBroker(t)
			ctx := testCtx(t, 30*time.Second)
			adm := newAdmin(t, b)
			topic := topicName(t, "")
			createTopic(t, ctx, adm, topic, 2, nil)

			prod, err := sarama.NewSyncProducer(b.seedList(), saramaTxnConfig(version, topic+"-txn"))
			if err != nil {
				t.Fatalf("sarama NewSyncProducer: %v", err)
			}
			defer prod.Close()
			txn := func(name string, commit bool) []string {
				t.Helper()
				if err := prod.BeginTxn(); err != nil {
					t.Fatalf("%s: BeginTxn: %v", name, err)
				}
				var msgs []*sarama.ProducerMessage
				var values []string
				for i := range 6 {
					v := fmt.Sprintf("%s-%d", name, i)
					values = append(values, v)
					msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Value: sarama.StringEncoder(v)})
				}
				if err := prod.SendMessages(msgs); err != nil {
					t.Fatalf("%s: SendMessages: %v", name, err)
				}
				if commit {
					err = prod.CommitTxn()
				} else {
					err = prod.AbortTxn()
				}
				if err != nil {
					t.Fatalf("%s: end (commit=%v): %v", name, commit, err)
				}
				return values
			}
			first := txn("committed1", true)
			aborted := txn("aborted", false)
			last := txn("committed2", true)
			committed := append(slices.Clone(first), last...)
			all := append(slices.Clone(committed), aborted...)

			rc := readAll(t, ctx, b, topic, true, len(committed), 500*time.Millisecond)
			if got := valuesOf(rc); !slices.Equal(got, sortedCopy(committed)) {
				t.Errorf("read_committed consumer got %v, want %v", got, sortedCopy(committed))
			}
			ru := readAll(t, ctx, b, topic, false, len(all), 500*time.Millisecond)
			if got := valuesOf(ru); !slices.Equal(got, sortedCopy(all)) {
				t.Errorf("read_uncommitted consumer got %v, want %v", got, sortedCopy(all))
			}
			// Each partition: 3 records then a marker, three times.
			wantOffsets := []int64{0, 1, 2, 4, 5, 6, 8, 9, 10}
			for p := range int32(2) {
				var offs []int64
				for _, r := range ru {
					if r.Partition == p {
						offs = append(offs, r.Offset)
					}
				}
				slices.Sort(offs)
				if !slices.Equal(offs, wantOffsets) {
					t.Errorf("partition %d: read_uncommitted offsets %v, want %v (markers at 3, 7, 11)", p, offs, wantOffsets)
				}
			}

			cl := newClient(t, b)
			fp := fetchCommitted(t, ctx, cl, topic, 0)
			if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
				t.Fatalf("read_committed Fetch: %v", err)
			}
			if fp.HighWatermark != 12 || fp.LastStableOffset != 12 {
				t.Errorf("read_committed Fetch: high watermark %d, last stable offset %d, want 12 and 12", fp.HighWatermark, fp.LastStableOffset)
			}
			if len(fp.AbortedTransactions) != 1 || fp.AbortedTransactions[0].FirstOffset != 4 {
				t.Errorf("read_committed Fetch: aborted transactions %+v, want one starting at offset 4", fp.AbortedTransactions)
			}
			// Sarama splits the data into batches as it likes; the
			// broker's part is the markers and the flags.
			var markers []int64
			for _, batch := range parseBatches(t, fp.RecordBatches) {
				if batch.Attributes&attrTransactional == 0 {
					t.Errorf("partition 0: batch at %d lacks the transactional flag (attributes %#x)", batch.FirstOffset, batch.Attributes)
				}
				if len(fp.AbortedTransactions) == 1 && batch.ProducerID != fp.AbortedTransactions[0].ProducerID {
					t.Errorf("partition 0: batch at %d has producer %d, the aborted transaction %d", batch.FirstOffset, batch.ProducerID, fp.AbortedTransactions[0].ProducerID)
				}
				if batch.Attributes&attrControl != 0 {
					markers = append(markers, batch.FirstOffset)
				}
			}
			if want := []int64{3, 7, 11}; !slices.Equal(markers, want) {
				t.Errorf("partition 0: control batches at %v, want %v", markers, want)
			}
		})
	}
}

// TestTxn_KcatReadCommitted checks kcat (librdkafka) at both isolation
// levels: read_committed skips an aborted transaction and stops at the last
// stable offset while a transaction is open; read_uncommitted reads it all.
func TestTxn_KcatReadCommitted(t *testing.T) {
	kcatPath(t)
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newTxnClient(t, b, topic+"-txn", topic)
	c1, ab, c2, open := seq("committed1", 4), seq("aborted", 4), seq("committed2", 4), seq("open", 4)
	txnProduce(t, ctx, cl, 0, true, c1...)
	txnProduce(t, ctx, cl, 0, false, ab...)
	txnProduce(t, ctx, cl, 0, true, c2...)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnAppend(t, ctx, cl, 0, open...)

	read := func(isolation string) []string {
		t.Helper()
		out := kcat(t, "", "-C", "-b", b.bootstrap(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n", "-X", "isolation.level="+isolation)
		return sortedCopy(strings.Fields(out))
	}
	committed := append(slices.Clone(c1), c2...)
	if got, want := read("read_committed"), sortedCopy(committed); !slices.Equal(got, want) {
		t.Errorf("kcat read_committed with a transaction open: %v, want %v", got, want)
	}
	if got, want := read("read_uncommitted"), sortedCopy(slices.Concat(c1, ab, c2, open)); !slices.Equal(got, want) {
		t.Errorf("kcat read_uncommitted with a transaction open: %v, want %v", got, want)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing the open transaction: %v", err)
	}
	if got, want := read("read_committed"), sortedCopy(slices.Concat(c1, c2, open)); !slices.Equal(got, want) {
		t.Errorf("kcat read_committed after the commit: %v, want %v", got, want)
	}
}

// TestTxn_ZombieFenced checks that a producer whose transactional id was
// re-initialised by another client (its successor, with a higher epoch) is
// fenced and its data never becomes visible to read_committed, in the two
// ways a zombie meets the fence: ending its transaction (EndTxn with the old
// epoch: PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH before Kafka 2.7), and
// producing (INVALID_PRODUCER_EPOCH). After a fenced produce, kgo marks its
// producer id failed and answers the commit itself with
// OPERATION_NOT_ATTEMPTED, without asking the broker.
func TestTxn_ZombieFenced(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 2, nil)
	txnID := topic + "-txn"
	fenced := func(err error) bool {
		return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
	}
	// begin opens a transaction on a new client with txnID and appends
	// value to partition 0; it returns the client's producer id and epoch.
	begin := func(name, value string) (*kgo.Client, int64, int16) {
		t.Helper()
		cl := newTxnClient(t, b, txnID, topic, kgo.RecordRetries(2))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		txnAppend(t, ctx, cl, 0, value)
		id, epoch, err := cl.ProducerID(ctx)
		if err != nil {
			t.Fatalf("%s: ProducerID: %v", name, err)
		}
		return cl, id, epoch
	}

	// 1. The zombie tries to commit after its successor initialised.
	zombie, id1, epoch1 := begin("zombie", "zombie")
	successor, id2, epoch2 := begin("successor", "successor")
	t.Logf("zombie producer %d epoch %d; successor %d epoch %d", id1, epoch1, id2, epoch2)
	if id2 == id1 && epoch2 <= epoch1 {
		t.Errorf("successor has producer %d epoch %d, want an epoch above the zombie's %d", id2, epoch2, epoch1)
	}
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	t.Logf("zombie commit: %v", err)
	if !fenced(err) {
		t.Errorf("zombie EndTransaction(commit): %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if err := successor.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("successor commit: %v", err)
	}

	// 2. The successor, in a new transaction, is fenced in turn and
	// tries to produce: to a partition already in its transaction, and
	// to one that is not.
	if err := successor.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnAppend(t, ctx, successor, 0, "successor-open")
	third, id3, epoch3 := begin("third", "third")
	t.Logf("third producer %d epoch %d", id3, epoch3)
	for _, p := range []int32{0, 1} {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := successor.ProduceSync(pctx, &kgo.Record{Partition: p, Value: []byte("successor-fenced")}).FirstErr()
		cancel()
		t.Logf("fenced produce to partition %d: %v", p, err)
		if !fenced(err) && !(p == 1 && errors.Is(err, kerr.OperationNotAttempted)) {
			t.Errorf("fenced produce to partition %d: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", p, err)
		}
	}
	err = successor.EndTransaction(ctx, kgo.TryCommit)
	t.Logf("commit after a fenced produce: %v", err)
	if !fenced(err) && !errors.Is(err, kerr.OperationNotAttempted) {
		t.Errorf("EndTransaction(commit) after a fenced produce: %v, want a fencing error or kgo's OPERATION_NOT_ATTEMPTED", err)
	}
	if err := third.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("third commit: %v", err)
	}

	if got, want := valuesOf(readAll(t, ctx, b, topic, true, 2, 500*time.Millisecond)), []string{"successor", "third"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %v, want %v", got, want)
	}
	if got, want := valuesOf(readAll(t, ctx, b, topic, false, 4, 500*time.Millisecond)), []string{"successor", "successor-open", "third", "zombie"}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: %v, want %v (the fenced produces rejected)", got, want)
	}
}

// TestTxn_ListOffsetsIsolation checks ListOffsets latest at both isolation
// levels (raw requests and kadm): with a transaction open, read_committed
// stops at the last stable offset, the transaction's first offset, even
// when non-transactional records follow it, while read_uncommitted reaches
// the high watermark; after the commit both are at the high watermark.
func TestTxn_ListOffsetsIsolation(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	adm := newAdmin(t, b)
	createTopic(t, ctx, adm, topic, 1, nil)
	cl := newTxnClient(t, b, topic+"-txn", topic)
	plain := newClient(t, b, kgo.DefaultProduceTopic(topic))

	txnProduce(t, ctx, cl, 0, true, seq("committed", 5)...) // 0-4, marker at 5
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnAppend(t, ctx, cl, 0, seq("open", 3)...) // 6-8
	// 9-10: not transactional, after the open transaction.
	produceAll(t, ctx, plain, []*kgo.Record{{Value: []byte("plain-0")}, {Value: []byte("plain-1")}})

	check := func(stage string, wantHWM, wantLSO int64) {
		t.Helper()
		raw := newClient(t, b)
		if got := listOffsetsIsolated(t, ctx, raw, topic, 0, 0); got != wantHWM {
			t.Errorf("%s: ListOffsets read_uncommitted latest = %d, want the high watermark %d", stage, got, wantHWM)
		}
		if got := listOffsetsIsolated(t, ctx, raw, topic, 0, 1); got != wantLSO {
			t.Errorf("%s: ListOffsets read_committed latest = %d, want the last stable offset %d", stage, got, wantLSO)
		}
		end, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || end.Error() != nil {
			t.Fatalf("%s: kadm ListEndOffsets: %v %v", stage, err, end.Error())
		}
		if o, _ := end.Lookup(topic, 0); o.Offset != wantHWM {
			t.Errorf("%s: kadm ListEndOffsets = %d, want %d", stage, o.Offset, wantHWM)
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil || lso.Error() != nil {
			t.Fatalf("%s: kadm ListCommittedOffsets: %v %v", stage, err, lso.Error())
		}
		if o, _ := lso.Lookup(topic, 0); o.Offset != wantLSO {
			t.Errorf("%s: kadm ListCommittedOffsets = %d, want %d", stage, o.Offset, wantLSO)
		}
	}
	check("transaction open", 11, 6)
	if got, want := valuesOf(readAll(t, ctx, b, topic, true, 5, 500*time.Millisecond)), seq("committed", 5); !slices.Equal(got, want) {
		t.Errorf("read_committed with the transaction open: %v, want %v", got, want)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	check("after commit", 12, 12)
	want := sortedCopy(slices.Concat(seq("committed", 5), seq("open", 3), []string{"plain-0", "plain-1"}))
	if got := valuesOf(readAll(t, ctx, b, topic, true, 10, 300*time.Millisecond)); !slices.Equal(got, want) {
		t.Errorf("read_committed after the commit: %v, want %v", got, want)
	}
}

// TestTxn_AdminDescribe checks DescribeTransactions, ListTransactions (with
// state filters) and DescribeProducers through kadm, during a transaction
// and after its commit.
func TestTxn_AdminDescribe(t *testing.T) {
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	adm := newAdmin(t, b)
	createTopic(t, ctx, adm, topic, 2, nil)
	txnID := topic + "-txn"
	cl := newTxnClient(t, b, txnID, topic)
	txnProduce(t, ctx, cl, 1, true, "first") // partition 1: 0, marker 1
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnAppend(t, ctx, cl, 0, seq("a", 3)...) // partition 0: 0-2
	txnAppend(t, ctx, cl, 1, seq("b", 2)...) // partition 1: 2-3
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	describe := func(stage string) kadm.DescribedTransaction {
		t.Helper()
		ds, err := adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			t.Fatalf("%s: DescribeTransactions: %v", stage, err)
		}
		d, ok := ds[txnID]
		if !ok || d.Err != nil {
			t.Fatalf("%s: DescribeTransactions %s: %+v", stage, txnID, d)
		}
		return d
	}
	listed := func(states ...string) bool {
		t.Helper()
		ls, err := adm.ListTransactions(ctx, nil, states)
		if err != nil {
			t.Fatalf("ListTransactions %v: %v", states, err)
		}
		l, ok := ls[txnID]
		if ok && l.ProducerID != pid {
			t.Errorf("ListTransactions %v: producer %d, want %d", states, l.ProducerID, pid)
		}
		return ok
	}

	d := describe("ongoing")
	t.Logf("ongoing: %+v", d)
	if d.State != "Ongoing" || d.ProducerID != pid || d.ProducerEpoch != epoch || d.TimeoutMillis != 20000 || d.StartTimestamp <= 0 {
		t.Errorf("DescribeTransactions while open: state %s producer %d/%d timeout %d start %d; want Ongoing %d/%d 20000 and a start time",
			d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, d.StartTimestamp, pid, epoch)
	}
	if ps := d.Topics[topic]; len(ps) != 2 {
		t.Errorf("DescribeTransactions while open: partitions %v, want %s 0 and 1", d.Topics, topic)
	}
	if !listed() || !listed("Ongoing") || listed("CompleteCommit", "Empty") {
		t.Errorf("ListTransactions while open: unfiltered %v, Ongoing %v, CompleteCommit/Empty %v; want true true false",
			listed(), listed("Ongoing"), listed("CompleteCommit", "Empty"))
	}

	producers := func(stage string, wantStart map[int32]int64) {
		t.Helper()
		ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
		if err != nil {
			t.Fatalf("%s: DescribeProducers: %v", stage, err)
		}
		for p, start := range wantStart {
			dp := ds[topic].Partitions[p]
			if dp.Err != nil {
				t.Errorf("%s: DescribeProducers %s[%d]: %v", stage, topic, p, dp.Err)
				continue
			}
			pr, ok := dp.ActiveProducers[pid]
			if !ok {
				t.Errorf("%s: DescribeProducers %s[%d]: producer %d missing from %+v", stage, topic, p, pid, dp.ActiveProducers)
				continue
			}
			if pr.CurrentTxnStartOffset != start || pr.LastTimestamp <= 0 {
				t.Errorf("%s: DescribeProducers %s[%d]: %+v; want current transaction start %d and a timestamp", stage, topic, p, pr, start)
			}
		}
	}
	producers("ongoing", map[int32]int64{0: 0, 1: 2})

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	d = describe("committed")
	t.Logf("committed: %+v", d)
	if d.State != "CompleteCommit" || d.ProducerID != pid || len(d.Topics) != 0 {
		t.Errorf("DescribeTransactions after commit: state %s producer %d partitions %v; want CompleteCommit %d none", d.State, d.ProducerID, d.Topics, pid)
	}
	if listed("Ongoing") || !listed("CompleteCommit") {
		t.Errorf("ListTransactions after commit: Ongoing %v, CompleteCommit %v; want false true", listed("Ongoing"), listed("CompleteCommit"))
	}
	producers("committed", map[int32]int64{0: -1, 1: -1})
}

// TestTxn_TimeoutAborts checks transaction.timeout.ms: a producer that goes
// silent with a transaction open is aborted by the coordinator (the last
// stable offset moves past it without the client doing anything, and its
// records stay invisible to read_committed), its late commit fails, and a
// timeout above transaction.max.timeout.ms is refused with
// INVALID_TRANSACTION_TIMEOUT.
func TestTxn_TimeoutAborts(t *testing.T) {
	b := newBroker(t, "transaction.abort.timed.out.transaction.cleanup.interval.ms=100", "transaction.max.timeout.ms=5000")
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)

	tooLong := newTxnClient(t, b, topic+"-too-long", topic, kgo.TransactionTimeout(10*time.Second))
	err := tooLong.BeginTransaction() // kgo initialises the producer id here
	if err == nil {
		err = tooLong.ProduceSync(ctx, &kgo.Record{Value: []byte("never")}).FirstErr()
	}
	if !errors.Is(err, kerr.InvalidTransactionTimeout) {
		t.Errorf("transaction with a 10s timeout (max 5s): %v, want INVALID_TRANSACTION_TIMEOUT", err)
	}

	cl := newTxnClient(t, b, topic+"-txn", topic, kgo.TransactionTimeout(time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnAppend(t, ctx, cl, 0, "silent-0", "silent-1")
	opened := time.Now()
	raw := newClient(t, b)
	if lso := listOffsetsIsolated(t, ctx, raw, topic, 0, 1); lso != 0 {
		t.Fatalf("last stable offset with the transaction open: %d, want 0", lso)
	}
	for listOffsetsIsolated(t, ctx, raw, topic, 0, 1) == 0 {
		if time.Since(opened) > 10*time.Second {
			t.Fatalf("the coordinator did not abort a transaction silent for %v (timeout 1s)", time.Since(opened).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("silent transaction aborted %v after its records were written (timeout 1s)", time.Since(opened).Round(time.Millisecond))
	if lso, hwm := listOffsetsIsolated(t, ctx, raw, topic, 0, 1), listOffsetsIsolated(t, ctx, raw, topic, 0, 0); lso != 3 || hwm != 3 {
		t.Errorf("after the abort: last stable offset %d, high watermark %d; want 3 and 3 (two records and a marker)", lso, hwm)
	}
	err = cl.EndTransaction(ctx, kgo.TryCommit)
	t.Logf("late commit: %v", err)
	if err == nil {
		t.Errorf("commit of a transaction the coordinator aborted succeeded")
	}
	if got := valuesOf(readAll(t, ctx, b, topic, true, 0, 500*time.Millisecond)); len(got) != 0 {
		t.Errorf("read_committed after the timeout: %v, want nothing", got)
	}
}
