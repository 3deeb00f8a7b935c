package compat

// TestClusterJepsen's second workload: a committing consumer group on the
// producers' topic and transactional producers on a topic of their own,
// with their coordinators among the nemesis's targets. The histories go to
// checkGroup, checkTxns and checkEpochs (jepsen_check_txn_test.go).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group and transaction workload parameters.
const (
	jepsenGroupMembers  = 3
	jepsenFetchEvery    = 200 * time.Millisecond // OffsetFetch monitor
	jepsenTxnProducers  = 2
	jepsenTxnEvery      = 20 * time.Millisecond // pause between one producer's transactions
	jepsenTxnAbortOneIn = 5                     // transactions aborted on purpose: one in this many
	jepsenTxnTimeout    = 10 * time.Second      // transaction.timeout.ms: dangling transactions are aborted by then
	jepsenOpTimeout     = 20 * time.Second      // one commit, produce or EndTxn
)

// groupMember consumes the topic in the group, records every record as
// processed, then commits the next offset of each partition it got with
// OffsetCommit and records the answer per partition. Rebalances wait while
// a batch is processed and committed (BlockRebalanceOnPoll), so a member
// commits only partitions it owns, and only forward.
func (r *jepsenRun) groupMember(ctx context.Context, id int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.c.Seeds()...), kgo.ConsumerGroup(r.group), kgo.ConsumeTopics(r.topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.RetryTimeout(10*time.Second),
		kgo.SessionTimeout(10*time.Second), kgo.RebalanceTimeout(15*time.Second))
	if err != nil {
		r.t.Error(err)
		return
	}
	defer cl.Close() // leaves the group
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 500)
		var recs []jRecord
		next := map[int32]kgo.EpochOffset{}
		fs.EachRecord(func(rec *kgo.Record) {
			recs = append(recs, jRecord{Partition: rec.Partition, Offset: rec.Offset, Value: string(rec.Value), Epoch: rec.LeaderEpoch})
			next[rec.Partition] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
		})
		r.mu.Lock()
		r.h.Group.Processed = append(r.h.Group.Processed, recs...)
		r.mu.Unlock()
		if len(next) > 0 {
			sent := time.Now()
			cctx, cancel := context.WithTimeout(context.Background(), jepsenOpTimeout)
			cl.CommitOffsetsSync(cctx, map[string]map[int32]kgo.EpochOffset{r.topic: next},
				func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
					done := time.Now()
					acked := map[int32]bool{}
					codes := map[int32]int16{}
					if err == nil {
						for _, t := range resp.Topics {
							for _, p := range t.Partitions {
								acked[p.Partition] = p.ErrorCode == 0
								codes[p.Partition] = p.ErrorCode
							}
						}
					}
					gen, memberID := int32(-1), ""
					if req != nil {
						gen, memberID = req.Generation, req.MemberID
					}
					r.mu.Lock()
					defer r.mu.Unlock()
					for p, eo := range next {
						r.h.Group.Commits = append(r.h.Group.Commits, jCommit{Member: id, MemberID: memberID, Generation: gen, Partition: p, Offset: eo.Offset, Sent: sent, Done: done, Acked: acked[p], ErrorCode: codes[p]})
						if !acked[p] {
							r.commitErrs++
						}
					}
				})
			cancel()
		}
		cl.AllowRebalance()
	}
}

// offsetMonitor polls the group's committed offsets (OffsetFetch, routed to
// its coordinator) and records every answer; a partition the answer omits
// has no committed offset (-1).
func (r *jepsenRun) offsetMonitor(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.c.Seeds()...), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		r.t.Error(err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(jepsenFetchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		obs, err := r.fetchOffsets(ctx, adm)
		if err != nil {
			continue
		}
		r.mu.Lock()
		r.h.Group.Fetches = append(r.h.Group.Fetches, obs...)
		r.mu.Unlock()
	}
}

// fetchOffsets asks for the group's committed offsets once, bounded by
// three seconds.
func (r *jepsenRun) fetchOffsets(ctx context.Context, adm *kadm.Client) ([]jOffsetObs, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	sent := time.Now()
	resp, err := adm.FetchOffsets(rctx, r.group)
	received := time.Now()
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, err
	}
	var obs []jOffsetObs
	for p := int32(0); p < jepsenPartitions; p++ {
		o := jOffsetObs{Partition: p, Offset: -1, Sent: sent, Received: received}
		if or, ok := resp.Lookup(r.topic, p); ok {
			if or.Err != nil {
				return nil, or.Err
			}
			o.Offset, o.Metadata = or.At, or.Metadata
		}
		obs = append(obs, o)
	}
	return obs, nil
}

// finalGroup records the group's committed offsets after its members left,
// then joins a fresh member and records, for each partition with records
// past its committed offset, the first offset the member is given.
func (r *jepsenRun) finalGroup(ctx context.Context) {
	r.t.Helper()
	adm := kadm.NewClient(r.c.Client())
	var obs []jOffsetObs
	if err := waitUntil(jepsenRecovery, func() error {
		var err error
		obs, err = r.fetchOffsets(ctx, adm)
		return err
	}); err != nil {
		r.t.Fatalf("final OffsetFetch: %v", err)
	}
	final := map[int32]int64{}
	for _, o := range obs {
		final[o.Partition] = o.Offset
	}
	r.mu.Lock()
	end := r.h.FinalEnd
	r.h.Group.Fetches = append(r.h.Group.Fetches, obs...)
	r.h.Group.Final = final
	r.mu.Unlock()

	want := map[int32]bool{}
	for p, f := range final {
		if max(f, 0) < end[p] {
			want[p] = true
		}
	}
	resumed := map[int32]int64{}
	cl := r.c.Client(kgo.ConsumerGroup(r.group), kgo.ConsumeTopics(r.topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(10*time.Second))
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for len(resumed) < len(want) {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			break // partitions never given are reported by the checker
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if _, ok := resumed[rec.Partition]; !ok {
				resumed[rec.Partition] = rec.Offset
			}
		})
	}
	cl.Close()
	r.mu.Lock()
	r.h.Group.Resumed = resumed
	r.mu.Unlock()
}

// txnProduce runs transactions until ctx ends: each writes two records to
// each of two partitions, then commits or (one in jepsenTxnAbortOneIn, or
// after a failed produce) aborts, and records the outcome. After any error
// the client is replaced by a new one with the same transactional id, whose
// InitProducerId fences the old producer and finishes its transaction.
func (r *jepsenRun) txnProduce(ctx context.Context, id int) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(100+id)))
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(r.writeSeeds()...), kgo.DefaultProduceTopic(r.txnTopic),
			kgo.TransactionalID(r.txnIDs[id]), kgo.TransactionTimeout(jepsenTxnTimeout),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(10*time.Second), kgo.RetryTimeout(10*time.Second))
		if err != nil {
			r.t.Error(err)
		}
		return cl
	}
	cl := newClient()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	for n := 0; ctx.Err() == nil; n++ {
		a := int32((n + id) % jepsenPartitions)
		b := (a + 1) % jepsenPartitions
		txn := jTxn{ID: fmt.Sprintf("t%d-%d", id, n), Begin: time.Now()}
		var recs []*kgo.Record
		for k := 0; k < 2; k++ {
			for _, p := range []int32{a, b} {
				v := fmt.Sprintf("%s-p%d-%d", txn.ID, p, k)
				recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
				txn.Records = append(txn.Records, jRecord{Partition: p, Offset: -1, Value: v, Epoch: -1})
			}
		}
		if err := cl.BeginTransaction(); err != nil {
			// A client whose InitProducerId failed is done for.
			r.mu.Lock()
			r.txnResets++
			r.mu.Unlock()
			cl.Close()
			if cl = newClient(); cl == nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(jepsenTxnEvery):
			}
			continue
		}
		octx, cancel := context.WithTimeout(context.Background(), jepsenOpTimeout)
		perr := cl.ProduceSync(octx, recs...).FirstErr()
		commit := perr == nil && rng.IntN(jepsenTxnAbortOneIn) != 0
		err := cl.EndTransaction(octx, kgo.TransactionEndTry(commit))
		cancel()
		txn.End = time.Now()
		switch {
		case !commit:
			txn.Outcome = txnAborted
		case err == nil:
			txn.Outcome = txnCommitted
		default:
			txn.Outcome = txnUnknown
		}
		r.mu.Lock()
		r.h.Txn.Txns = append(r.h.Txn.Txns, txn)
		if perr != nil || err != nil {
			r.txnResets++
		}
		r.mu.Unlock()
		if perr != nil || err != nil {
			cl.Close()
			if cl = newClient(); cl == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(jepsenTxnEvery):
		}
	}
}

// finalTxnRead writes an end marker (non-transactional, idempotent) to
// every partition of the transactional topic, then reads the topic with
// read_committed from the start until every marker is seen: the markers lie
// past every transaction, and read_committed reaches them only once every
// transaction before them was committed or aborted.
func (r *jepsenRun) finalTxnRead(ctx context.Context) {
	r.t.Helper()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(r.writeSeeds()...), kgo.DefaultProduceTopic(r.txnTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(10*time.Second), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	defer pcl.Close()
	markers := map[string]bool{}
	for p := int32(0); p < jepsenPartitions; p++ {
		for i := 0; ; i++ {
			// Every attempt has its own value: one whose outcome is
			// unknown may be in the log or not, like a transaction.
			v := fmt.Sprintf("end-p%d-%d", p, i)
			err := pcl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr()
			outcome := txnCommitted
			if err != nil {
				outcome = txnUnknown
			}
			r.mu.Lock()
			r.h.Txn.Txns = append(r.h.Txn.Txns, jTxn{ID: "end marker " + v, Records: []jRecord{{Partition: p, Offset: -1, Value: v, Epoch: -1}}, Outcome: outcome})
			r.mu.Unlock()
			if err == nil {
				markers[v] = true
				break
			}
			if i > 20 || ctx.Err() != nil {
				r.t.Fatalf("end marker for %s/%d: %v", r.txnTopic, p, err)
			}
		}
	}
	cl := r.c.Client(kgo.ConsumeTopics(r.txnTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	var final []jRecord
	rctx, cancel := context.WithTimeout(ctx, jepsenTxnTimeout+2*time.Minute)
	defer cancel()
	for seen := 0; seen < len(markers); {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			r.t.Fatalf("final read_committed read of %s: %d of %d end markers seen in time", r.txnTopic, seen, len(markers))
		}
		fs.EachRecord(func(rec *kgo.Record) {
			final = append(final, jRecord{Partition: rec.Partition, Offset: rec.Offset, Value: string(rec.Value), Epoch: rec.LeaderEpoch})
			if markers[string(rec.Value)] {
				seen++
			}
		})
	}
	cl.Close()
	r.mu.Lock()
	r.h.Txn.Final = final
	r.mu.Unlock()
}

// coordinator returns the node FindCoordinator names for a group (typ 0) or
// transactional id (typ 1), asking each node in turn.
func (r *jepsenRun) coordinator(key string, typ int8) (int32, error) {
	var last error
	for _, nd := range r.c.Nodes() {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType, req.CoordinatorKeys = key, typ, []string{key}
		resp, err := requestTo(nd.Addr(), req)
		if err != nil {
			last = fmt.Errorf("node %d: %w", nd.ID(), err)
			continue
		}
		fc := resp.(*kmsg.FindCoordinatorResponse)
		code, node := fc.ErrorCode, fc.NodeID
		if len(fc.Coordinators) > 0 {
			code, node = fc.Coordinators[0].ErrorCode, fc.Coordinators[0].NodeID
		}
		if err := kerr.ErrorForCode(code); err != nil {
			last = fmt.Errorf("node %d: %w", nd.ID(), err)
			continue
		}
		return node, nil
	}
	return -1, last
}

// killCoordinator kill -9s the coordinator of key, waits until
// FindCoordinator names another node (in a cluster) and every partition
// the node led has a new leader, and restarts it.
func (r *jepsenRun) killCoordinator(key string, typ int8, label string) {
	r.t.Helper()
	var node int32
	if err := waitUntil(jepsenRecovery, func() error {
		var err error
		node, err = r.coordinator(key, typ)
		return err
	}); err != nil {
		r.t.Fatalf("FindCoordinator %q: %v", key, err)
	}
	moved := func() error {
		n, err := r.coordinator(key, typ)
		if err == nil && n == node {
			return fmt.Errorf("still the killed node %d", node)
		}
		return err
	}
	r.killAndReplace(node, r.ledBy(node), label, moved)
}

// killCoordinators kill -9s the consumer group's coordinator, then (after
// recovery) the first transactional producer's.
func (r *jepsenRun) killCoordinators() {
	r.killCoordinator(r.group, 0, "group coordinator")
	r.c.HealAll()
	r.waitRecovered()
	r.killCoordinator(r.txnIDs[0], 1, "transaction coordinator")
}
