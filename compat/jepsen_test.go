package compat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Jepsen run parameters.
const (
	jepsenPartitions   = 4
	jepsenProducers    = 3
	jepsenProduceEvery = 5 * time.Millisecond   // per producer
	jepsenHWEvery      = 100 * time.Millisecond // monitor poll per node
	jepsenFaultHold    = 6 * time.Second        // how long a SIGSTOP, a cut or two dead brokers last
	jepsenAckGrace     = 2 * time.Second        // acks decided before a kill may still arrive this late
	jepsenRecovery     = 90 * time.Second       // healed cluster back to full ISR everywhere
	jepsenProgress     = 50                     // acks required between faults (liveness)
	jepsenGapThreshold = time.Second            // reported unavailability windows
)

// TestClusterJepsen runs several idempotent acks=all producers, a live
// consumer and a high-watermark monitor against a three-node cluster (RF=3,
// min.insync.replicas=2, four partitions), with a committing consumer group
// of three members on the same topic (manual commits after processing,
// OffsetFetch polled) and two transactional producers on a second topic
// (two records to each of two partitions per transaction, one in five
// aborted) read live with read_committed, while a nemesis, cycle after
// cycle, kill -9s the group coordinator and then a transaction coordinator,
// kills two brokers at once, SIGSTOPs a broker, kill -9s the controller,
// cuts a broker's links, kill -9s a partition leader and cuts a leader's
// etcd peer links (its clients still reach it), then heals and
// waits for full recovery and for new acknowledged records, commits and
// transactions. After the last cycle it reads every partition from the
// start, reads the group's committed offsets and has a fresh member resume
// from them, and reads the transactional topic with read_committed; then it
// checks the histories with jepsenCheck (jepsen_check_test.go,
// jepsen_check_txn_test.go): every acknowledged record exactly once at its
// acknowledged offset, no duplicates, high watermarks never back, nothing a
// consumer read later gone, no write acknowledged while two brokers were
// down; committed offsets never back and no acknowledged commit lost,
// everything below them processed, the fresh member resuming exactly there;
// every acknowledged transaction visible entirely, an unacknowledged one
// entirely or not at all, no aborted record visible; and per leaderEpoch at
// most one record at an offset, epochs never decreasing with offsets. The
// summary (counts, unavailability windows, failover times) is logged.
//
// GREGOR_JEPSEN_CYCLES sets the cycles (default 2; `make jepsen` runs 20).
// GREGOR_JEPSEN_SEED fixes the nemesis's random choices. GREGOR_JEPSEN_NODES=1
// runs the same workload against one single-node broker (RF=1; kill, stop
// and cut only), which exercises the harness and the checker without a
// cluster. GREGOR_CLUSTER_LOGDIR=dir keeps the nodes' whole logs under dir.
// GREGOR_KEEP_FAILED=dir copies the nodes' logs and data directories there
// when the test fails. GREGOR_JEPSEN_TRANSACTION_VERSION=2 finalizes
// transaction.version 2 first, so the transactional producers bump their
// epoch at every end (KIP-890 part 2).
func TestClusterJepsen(t *testing.T) {
	nodes := envInt("GREGOR_JEPSEN_NODES", 3)
	if nodes != 1 && nodes != 3 {
		t.Fatalf("GREGOR_JEPSEN_NODES=%d: 1 or 3", nodes)
	}
	seed := uint64(envInt("GREGOR_JEPSEN_SEED", int(time.Now().UnixNano()%1e9)))
	runJepsen(t, nodes, envInt("GREGOR_JEPSEN_CYCLES", 2), seed)
}

// jepsenRun is one run's cluster, workload and history.
type jepsenRun struct {
	t     *testing.T
	c     *cluster
	topic string
	parts int32 // topic's partitions
	rf    int
	rng   *rand.Rand

	seed     uint64
	group    string   // the committing consumer group (of topic)
	txnTopic string   // the transactional producers' topic
	txnIDs   []string // their transactional ids
	// writeTo are the brokers the producers write to (the transactional
	// ones' end markers too); nil: the cluster's. A cluster link's test
	// writes to its source and reads the mirror in c.
	writeTo []string
	// keyed gives every idempotent record a key and a header.
	keyed bool

	mu          sync.Mutex
	h           jHistory
	hwRuns      map[jNodePart]jHWRun // each node's latest high watermark observations (monitor)
	leaderSeen  map[jLeaderKey]bool  // the h.Leaders recorded (leaderMonitor)
	lastWritten []jWritten           // per partition of topic, the latest batch acknowledged (scale run)
	produceErrs int
	commitErrs  int // partitions of commits not acknowledged
	txnResets   int // transactional clients replaced after an error
}

// jNodePart is one node's view of one partition.
type jNodePart struct{ node, partition int32 }

// jHWRun is a node's run of identical answers (leaderEpoch and high
// watermark) for a partition; last is the index in h.HWs of its latest
// observation once there are two (the first stays where it was), else -1.
type jHWRun struct {
	epoch int32
	hw    int64
	last  int
}

// jLeaderKey identifies a jLeader without its time.
type jLeaderKey struct{ via, partition, epoch, leader int32 }

// OnProduceBatchWritten records which broker acknowledged a batch.
func (r *jepsenRun) OnProduceBatchWritten(meta kgo.BrokerMetadata, topic string, partition int32, _ kgo.ProduceBatchMetrics) {
	now := time.Now()
	w := jWritten{At: now, Node: meta.NodeID, Partition: partition}
	r.mu.Lock()
	r.h.Written = append(r.h.Written, w)
	if topic == r.topic && int(partition) < len(r.lastWritten) {
		r.lastWritten[partition] = w
	}
	r.mu.Unlock()
}

func runJepsen(t *testing.T, nodes, cycles int, seed uint64) {
	t.Logf("jepsen: %d nodes, %d cycles, seed %d (GREGOR_JEPSEN_SEED)", nodes, cycles, seed)
	var opts []clusterOpt
	rf, minISR := 3, 2
	if nodes == 1 {
		opts = append(opts, withSingleNode())
		rf, minISR = 1, 1
	}
	c := startCluster(t, nodes, opts...)
	r := &jepsenRun{t: t, c: c, topic: topicName(t, ""), parts: jepsenPartitions, rf: rf, rng: rand.New(rand.NewPCG(seed, 10)), seed: seed}
	r.txnTopic, r.group = topicName(t, "txn"), topicName(t, "group")
	for i := 0; i < jepsenTxnProducers; i++ {
		r.txnIDs = append(r.txnIDs, fmt.Sprintf("%s-%d", topicName(t, "txnid"), i))
	}
	r.h.Start = time.Now()
	r.h.Attempted = map[string]bool{}
	ctx := testCtx(t, time.Duration(cycles)*3*time.Minute+5*time.Minute)

	minISRs := fmt.Sprint(minISR)
	for _, topic := range []string{r.topic, r.txnTopic} {
		if resp, err := c.Admin().CreateTopic(ctx, jepsenPartitions, int16(rf), map[string]*string{"min.insync.replicas": &minISRs}, topic); err != nil {
			t.Fatalf("CreateTopic %s RF=%d: %v (%s)", topic, rf, err, resp.ErrMessage)
		}
	}
	r.waitRecovered()
	if tv := envInt("GREGOR_JEPSEN_TRANSACTION_VERSION", -1); tv >= 0 {
		// Finalized before the transactional clients start, so they
		// use it (franz-go: KIP-890 part 2 from version 2).
		uf := kmsg.NewPtrUpdateFeaturesRequest()
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "transaction.version", int16(tv), 1
		uf.FeatureUpdates = append(uf.FeatureUpdates, fu)
		if resp, err := uf.RequestWith(ctx, c.Client()); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("finalize transaction.version %d: %v %+v", tv, err, resp)
		}
		t.Logf("jepsen: transaction.version %d finalized (GREGOR_JEPSEN_TRANSACTION_VERSION)", tv)
	}

	work, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < jepsenProducers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.produce(work, i) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.consume(work, r.topic, kgo.ReadUncommitted(), &r.h.Reads) }()
	for i := 0; i < jepsenTxnProducers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.txnProduce(work, i) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); r.consume(work, r.txnTopic, kgo.ReadCommitted(), &r.h.Txn.Reads) }()
	go func() { defer wg.Done(); r.offsetMonitor(work) }()
	// The group stops first, so that records remain past its committed
	// offsets for a fresh member to resume at.
	groupWork, stopGroup := context.WithCancel(work)
	var groupWG sync.WaitGroup
	for i := 0; i < jepsenGroupMembers; i++ {
		groupWG.Add(1)
		go func() { defer groupWG.Done(); r.groupMember(groupWork, i) }()
	}
	defer func() { stopGroup(); groupWG.Wait() }()
	for _, nd := range c.Nodes() {
		wg.Add(2)
		go func() { defer wg.Done(); r.monitor(work, nd, jepsenHWEvery) }()
		go func() { defer wg.Done(); r.leaderMonitor(work, nd, jepsenHWEvery) }()
	}
	defer func() { stopWork(); wg.Wait() }()

	ops := []func(){r.killCoordinators, r.killTwo, r.pause, r.killController, r.cut, r.killLeader, r.cutEtcd}
	if nodes == 1 {
		ops = []func(){r.killLeader, r.pause, r.cut}
	}
	for cycle := 0; cycle < cycles; cycle++ {
		r.waitProgress(fmt.Sprintf("before cycle %d", cycle), true)
		time.Sleep(time.Duration(r.rng.IntN(1500)) * time.Millisecond) // strike at a random moment
		ops[cycle%len(ops)]()
		c.HealAll()
		r.waitRecovered()
	}
	r.waitProgress("after the last cycle", true)
	stopGroup()
	groupWG.Wait()
	r.waitProgress("past the group's last commits", false) // records the fresh member must resume to
	stopWork()
	wg.Wait()

	r.finalRead(ctx)
	r.finalGroup(ctx)
	r.finalTxnRead(ctx)
	r.mu.Lock()
	h := r.h
	errs, commitErrs, txnResets := r.produceErrs, r.commitErrs, r.txnResets
	r.mu.Unlock()
	res := jepsenCheck(h, jepsenGapThreshold)
	noEpoch := 0
	for _, o := range h.HWs {
		if o.LeaderEpoch < 0 {
			noEpoch++
		}
	}
	t.Logf("%s(produce errors: %d, HW observations: %d of which %d without a leaderEpoch, batches acknowledged: %d, commit partitions unacknowledged: %d, transactional clients replaced: %d, group committed %v of ends %v, fresh member resumed at %v)",
		res.Summary(), errs, len(h.HWs), noEpoch, len(h.Written), commitErrs, txnResets, h.Group.Final, h.FinalEnd, h.Group.Resumed)
	if !res.OK() {
		t.Fatalf("jepsen: %d properties broken (seed %d); see the VIOLATION lines above", len(res.Violations), seed)
	}
	if res.Acked == 0 || res.TxnCommitted == 0 || res.Commits == 0 {
		t.Fatalf("jepsen: nothing acknowledged (%d records, %d transactions committed, %d commits)", res.Acked, res.TxnCommitted, res.Commits)
	}
}

// produce writes unique values with an idempotent acks=all client until ctx
// ends, recording every attempt and every acknowledgement.
func (r *jepsenRun) produce(ctx context.Context, id int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.writeSeeds()...), kgo.DefaultProduceTopic(r.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(10*time.Second), kgo.RetryTimeout(10*time.Second),
		kgo.MaxBufferedRecords(2000), kgo.WithHooks(r))
	if err != nil {
		r.t.Error(err)
		return
	}
	defer cl.Close()
	tick := time.NewTicker(jepsenProduceEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v := fmt.Sprintf("p%d-%d", id, i)
		r.mu.Lock()
		r.h.Attempted[v] = true
		r.mu.Unlock()
		rec := kgo.StringRecord(v)
		if r.keyed {
			rec.Key = fmt.Appendf(nil, "k%d", i%101) // over every partition
			rec.Headers = []kgo.RecordHeader{{Key: "producer", Value: fmt.Appendf(nil, "%d", id)}, {Key: "n", Value: fmt.Appendf(nil, "%d", i)}}
		}
		cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			now := time.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.produceErrs++
				return
			}
			r.h.Acks = append(r.h.Acks, jAck{Partition: rec.Partition, Offset: rec.Offset, Value: string(rec.Value), At: now})
		})
	}
}

// writeSeeds are the brokers the producers write to.
func (r *jepsenRun) writeSeeds() []string {
	if r.writeTo != nil {
		return r.writeTo
	}
	return r.c.Seeds()
}

// consume reads a topic from the start with the given isolation level until
// ctx ends, appending every record it is given to *dst (under r.mu).
func (r *jepsenRun) consume(ctx context.Context, topic string, iso kgo.IsolationLevel, dst *[]jRecord) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.c.Seeds()...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryTimeout(10*time.Second))
	if err != nil {
		r.t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		var recs []jRecord
		fs.EachRecord(func(rec *kgo.Record) {
			recs = append(recs, jRecord{Partition: rec.Partition, Offset: rec.Offset, Value: string(rec.Value), Epoch: rec.LeaderEpoch})
		})
		r.mu.Lock()
		*dst = append(*dst, recs...)
		r.mu.Unlock()
	}
}

// monitor polls ListOffsets (latest, read_uncommitted: the high watermark)
// for every partition on one node's own listener every `every`, past its
// proxy so that a cut node is still observed, recording every answer given
// as leader. Of a run of identical answers (same leaderEpoch and high
// watermark) from the node for a partition only the first and the latest
// are kept: the first was received before any other and the latest sent
// after any other, so checkHWs and checkLeaders find with them whatever
// they would find with the whole run (a 3,000-partition run would
// otherwise keep millions).
func (r *jepsenRun) monitor(ctx context.Context, nd *clusterNode, every time.Duration) {
	r.pollNode(ctx, nd, every, func() kmsg.Request {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = r.topic
		for p := int32(0); p < r.parts; p++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = -1 // latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}, func(resp kmsg.Response, sent, received time.Time) {
		var obs []jHW
		for _, tp := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					continue // not the leader, or not ready
				}
				obs = append(obs, jHW{Node: nd.ID(), Partition: p.Partition, LeaderEpoch: p.LeaderEpoch, HW: p.Offset, Sent: sent, Received: received})
			}
		}
		r.mu.Lock()
		if r.hwRuns == nil {
			r.hwRuns = map[jNodePart]jHWRun{}
		}
		for _, o := range obs {
			k := jNodePart{o.Node, o.Partition}
			run, ok := r.hwRuns[k]
			switch {
			case ok && run.epoch == o.LeaderEpoch && run.hw == o.HW && run.last >= 0:
				r.h.HWs[run.last] = o
			case ok && run.epoch == o.LeaderEpoch && run.hw == o.HW:
				run.last = len(r.h.HWs)
				r.h.HWs = append(r.h.HWs, o)
			default:
				run = jHWRun{epoch: o.LeaderEpoch, hw: o.HW, last: -1}
				r.h.HWs = append(r.h.HWs, o)
			}
			r.hwRuns[k] = run
		}
		r.mu.Unlock()
	})
}

// pollNode sends the request req builds to one node's own listener (past
// its proxy, so that a cut node is still observed) every `every` until ctx
// ends, and hands each answer to handle with when the request was sent and
// the answer received; a request that fails or takes over a second is
// dropped.
func (r *jepsenRun) pollNode(ctx context.Context, nd *clusterNode, every time.Duration, req func() kmsg.Request, handle func(resp kmsg.Response, sent, received time.Time)) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(nd.DirectAddr()), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		r.t.Error(err)
		return
	}
	defer cl.Close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		sent := time.Now()
		resp, err := cl.SeedBrokers()[0].Request(rctx, req())
		received := time.Now()
		cancel()
		if err == nil {
			handle(resp, sent, received)
		}
	}
}

// leaderMonitor polls Metadata for the topic on one node's own listener
// every `every`, recording each distinct (partition, leaderEpoch, leader)
// the node names (h.Leaders), for checkLeaders.
func (r *jepsenRun) leaderMonitor(ctx context.Context, nd *clusterNode, every time.Duration) {
	r.pollNode(ctx, nd, every, func() kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(r.topic)
		req.Topics = append(req.Topics, rt)
		return req
	}, func(resp kmsg.Response, _, received time.Time) {
		r.mu.Lock()
		if r.leaderSeen == nil {
			r.leaderSeen = map[jLeaderKey]bool{}
		}
		for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
			for _, p := range tp.Partitions {
				if p.Leader < 0 {
					continue
				}
				k := jLeaderKey{nd.ID(), p.Partition, p.LeaderEpoch, p.Leader}
				if !r.leaderSeen[k] {
					r.leaderSeen[k] = true
					r.h.Leaders = append(r.h.Leaders, jLeader{Via: nd.ID(), Partition: p.Partition, LeaderEpoch: p.LeaderEpoch, Leader: p.Leader, At: received})
				}
			}
		}
		r.mu.Unlock()
	})
}

// waitRecovered waits until every node answers through its proxy, Metadata
// lists every broker, and every partition has a live leader and a full ISR.
func (r *jepsenRun) waitRecovered() {
	r.t.Helper()
	start := time.Now()
	r.c.WaitAPIVersions()
	if len(r.c.Nodes()) > 1 {
		r.c.WaitBrokers(len(r.c.Nodes()))
	}
	err := waitUntil(jepsenRecovery, func() error {
		md, err := r.c.Metadata(r.topic)
		if err != nil {
			return err
		}
		live := map[int32]bool{}
		for _, b := range md.Brokers {
			live[b.NodeID] = true
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(r.parts) {
			return fmt.Errorf("metadata: %d topics", len(md.Topics))
		}
		for _, p := range md.Topics[0].Partitions {
			if p.ErrorCode != 0 || !live[p.Leader] || len(p.ISR) != r.rf {
				return fmt.Errorf("partition %d: error %d, leader %d, ISR %v", p.Partition, p.ErrorCode, p.Leader, p.ISR)
			}
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("cluster did not recover within %v of healing: %v", jepsenRecovery, err)
	}
	r.t.Logf("recovered in %v", time.Since(start).Round(time.Millisecond))
}

// waitProgress requires new acknowledgements: the healed cluster takes
// writes again and, with groupAndTxns, the group commits again and a
// transaction commits again.
func (r *jepsenRun) waitProgress(when string, groupAndTxns bool) {
	r.t.Helper()
	acks, commits, txns := r.progress()
	if err := waitUntil(jepsenRecovery, func() error {
		a, c, x := r.progress()
		if a-acks < jepsenProgress || groupAndTxns && (c == commits || x == txns) {
			return fmt.Errorf("%d new acknowledgements, %d new acknowledged commits, %d new committed transactions", a-acks, c-commits, x-txns)
		}
		return nil
	}); err != nil {
		r.t.Fatalf("%s: no progress within %v: %v", when, jepsenRecovery, err)
	}
}

// progress counts acknowledged records, commits and transactions.
func (r *jepsenRun) progress() (acks, commits, txns int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.h.Group.Commits {
		if c.Acked {
			commits++
		}
	}
	for _, x := range r.h.Txn.Txns {
		if x.Outcome == txnCommitted {
			txns++
		}
	}
	return len(r.h.Acks), commits, txns
}

// randomLeader returns the leader of a random partition and every partition
// it leads.
func (r *jepsenRun) randomLeader() (int32, []int32) {
	r.t.Helper()
	p := int32(r.rng.IntN(int(r.parts)))
	leader := r.c.WaitLeader(r.topic, p)
	return leader, r.ledBy(leader)
}

func (r *jepsenRun) ledBy(node int32) []int32 {
	leaders, err := r.c.Leaders(r.topic)
	if err != nil {
		r.t.Fatalf("metadata: %v", err)
	}
	var ps []int32
	for p, l := range leaders {
		if l == node {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// killAndReplace kill -9s a node, waits until another leader holds each
// partition it led and every moved condition holds (in a cluster), and
// restarts it.
func (r *jepsenRun) killAndReplace(node int32, led []int32, label string, moved ...func() error) {
	r.t.Helper()
	nd := r.c.Node(node)
	k := jKill{At: time.Now(), Node: node, Label: label}
	if len(r.c.Nodes()) > 1 {
		k.Partitions = led // with one node there is no new leader to time
	}
	nd.Kill()
	r.mu.Lock()
	r.h.Kills = append(r.h.Kills, k)
	r.mu.Unlock()
	r.t.Logf("nemesis: kill -9 node %d (%s), leader of %v", node, label, led)
	if len(r.c.Nodes()) > 1 {
		for _, p := range led {
			err := waitUntil(jepsenRecovery, func() error {
				l, err := r.c.Leader(r.topic, p)
				if err == nil && l == node {
					return fmt.Errorf("still led by the killed node %d", node)
				}
				return err
			})
			if err != nil {
				r.t.Errorf("partition %d: no new leader within %v of killing node %d: %v", p, jepsenRecovery, node, err)
			}
		}
		for _, f := range moved {
			if err := waitUntil(jepsenRecovery, f); err != nil {
				r.t.Errorf("%s: not replaced within %v of killing node %d: %v", label, jepsenRecovery, node, err)
			}
		}
	}
	nd.Restart()
}

func (r *jepsenRun) killLeader() {
	node, led := r.randomLeader()
	r.killAndReplace(node, led, "partition leader")
}

func (r *jepsenRun) killController() {
	var ctrl int32
	if err := waitUntil(jepsenRecovery, func() error {
		var err error
		ctrl, err = r.c.Controller()
		return err
	}); err != nil {
		r.t.Fatalf("DescribeCluster: no controller: %v", err)
	}
	r.killAndReplace(ctrl, r.ledBy(ctrl), "controller")
}

// killTwo kill -9s two brokers at once: with RF=3 and min.insync.replicas=2
// writes must fail until they are back (recorded as an Unavailable window,
// from jepsenAckGrace after the kill to the restart).
func (r *jepsenRun) killTwo() {
	r.t.Helper()
	perm := r.rng.Perm(len(r.c.Nodes()))
	a, b := r.c.Nodes()[perm[0]], r.c.Nodes()[perm[1]]
	at := time.Now()
	a.Kill()
	b.Kill()
	r.t.Logf("nemesis: kill -9 nodes %d and %d", a.ID(), b.ID())
	time.Sleep(jepsenFaultHold)
	r.mu.Lock()
	r.h.Kills = append(r.h.Kills, jKill{At: at, Node: a.ID(), Label: "two at once"}, jKill{At: at, Node: b.ID(), Label: "two at once"})
	r.h.Unavailable = append(r.h.Unavailable, jWindow{From: at.Add(jepsenAckGrace), To: time.Now(), Label: fmt.Sprintf("nodes %d and %d down", a.ID(), b.ID())})
	r.mu.Unlock()
	a.Restart()
	b.Restart()
}

// pause SIGSTOPs the leader of a random partition for jepsenFaultHold.
func (r *jepsenRun) pause() {
	node, led := r.randomLeader()
	r.t.Logf("nemesis: SIGSTOP node %d, leader of %v, for %v", node, led, jepsenFaultHold)
	nd := r.c.Node(node)
	nd.Stop()
	time.Sleep(jepsenFaultHold)
	nd.Cont()
}

// cut disables the proxy of the leader of a random partition for
// jepsenFaultHold: clients and replicas cannot reach it.
func (r *jepsenRun) cut() {
	node, led := r.randomLeader()
	r.t.Logf("nemesis: cut node %d, leader of %v, for %v", node, led, jepsenFaultHold)
	nd := r.c.Node(node)
	nd.Cut()
	time.Sleep(jepsenFaultHold)
	nd.Heal()
}

// cutEtcd cuts the etcd peer links of the leader of a random partition
// for jepsenFaultHold (longer than the session timeout), its Kafka
// listener still reachable: it must fence itself before a new leader is
// elected, and its partitions move.
func (r *jepsenRun) cutEtcd() {
	node, led := r.randomLeader()
	r.t.Logf("nemesis: cut node %d from etcd, leader of %v, for %v", node, led, jepsenFaultHold)
	nd := r.c.Node(node)
	nd.CutEtcd()
	time.Sleep(jepsenFaultHold)
	nd.Heal()
}

// finalRead reads every partition from the start to its end offset (the
// high watermark) with a fresh client.
func (r *jepsenRun) finalRead(ctx context.Context) {
	r.t.Helper()
	cl := r.c.Client(kgo.ConsumeTopics(r.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	// A leader elected in the last cycle answers OFFSET_NOT_AVAILABLE until
	// its high watermark has caught up with its epoch (KIP-207): retry.
	end := map[int32]int64{}
	if err := waitUntil(jepsenRecovery, func() error {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, r.topic)
		if err != nil {
			return err
		}
		if err := ends.Error(); err != nil {
			return err
		}
		ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
		return nil
	}); err != nil {
		r.t.Fatalf("final ListEndOffsets: %v", err)
	}
	next := map[int32]int64{}
	done := func() bool {
		for p, e := range end {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	var final []jRecord
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			r.t.Fatalf("final read: reached %v of the end offsets %v in time", next, end)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < end[rec.Partition] {
				final = append(final, jRecord{Partition: rec.Partition, Offset: rec.Offset, Value: string(rec.Value), Epoch: rec.LeaderEpoch})
			}
			if rec.Offset+1 > next[rec.Partition] {
				next[rec.Partition] = rec.Offset + 1
			}
		})
	}
	r.mu.Lock()
	r.h.Final, r.h.FinalEnd = final, end
	r.mu.Unlock()
}
