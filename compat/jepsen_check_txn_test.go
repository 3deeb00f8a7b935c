package compat

// The Jepsen checker's second half: committed group offsets, transactions
// and leader epochs. Pure functions over jHistory, like jepsen_check_test.go;
// jepsen_check_unit_test.go feeds them hand-made bad histories.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// jCommit is one partition of one OffsetCommit a group member sent: the next
// offset to consume after the records it processed.
type jCommit struct {
	Member     int
	MemberID   string // the request's member id (franz-go also sends it as the commit's metadata)
	Generation int32  // the request's generation (-1 if unknown)
	Partition  int32
	Offset     int64
	Sent       time.Time
	Done       time.Time
	// Acked: the coordinator answered this partition without error. An
	// unacknowledged commit may or may not have been applied.
	Acked     bool
	ErrorCode int16 // the partition's error code, if answered
}

// jOffsetObs is one OffsetFetch answer for a partition of the group: its
// committed offset (-1: none) and when the request was sent and answered.
type jOffsetObs struct {
	Partition      int32
	Offset         int64
	Metadata       string // the commit's metadata: the committing member's id (franz-go)
	Sent, Received time.Time
}

// jGroupHistory is what the committing consumer group did.
type jGroupHistory struct {
	Processed []jRecord       // every record a member processed (before committing past it)
	Commits   []jCommit       // every partition of every commit attempt
	Fetches   []jOffsetObs    // OffsetFetch answers during and after the run, in any order
	Final     map[int32]int64 // committed offsets after the run (-1: none); nil: no group ran
	// Resumed is, per partition whose final committed offset is below the
	// final log's end, the first offset a fresh member of the group was
	// given.
	Resumed map[int32]int64
}

// Transaction outcomes as the producer saw them.
const (
	txnCommitted = "committed" // EndTxn(commit) acknowledged
	txnUnknown   = "unknown"   // EndTxn(commit) sent, not acknowledged
	txnAborted   = "aborted"   // aborted by the producer (by choice or after a failed produce), or never asked to commit
)

// jTxn is one transaction: the values it wrote (to two partitions) and how
// it ended.
type jTxn struct {
	ID      string
	Records []jRecord // Partition and Value; offsets unknown
	Outcome string
	Begin   time.Time
	End     time.Time
}

// jTxnHistory is what the transactional producers wrote and what
// read_committed consumers read from their topic.
type jTxnHistory struct {
	Txns  []jTxn
	Reads []jRecord // the live read_committed consumer
	Final []jRecord // a fresh read_committed consumer, from the start past every transaction
}

// Violation kinds of the group, transaction and epoch checks.
const (
	vCommitBack        = "commit-back"         // OffsetFetch answered a smaller offset than an earlier answer
	vCommitLost        = "commit-lost"         // OffsetFetch, sent after a commit was acknowledged, answered less
	vCommitPhantom     = "commit-phantom"      // final committed offset nobody tried to commit last
	vCommitPastEnd     = "commit-past-end"     // committed offset beyond the final log's end
	vUnprocessed       = "unprocessed"         // below the final committed offset, but no member processed it
	vProcessedLost     = "processed-lost"      // a member processed a record the final log does not hold there
	vResumeWrong       = "resume-wrong"        // a fresh member did not resume at the final committed offset
	vTxnLost           = "txn-lost"            // an acknowledged commit not entirely visible to read_committed
	vTxnPartial        = "txn-partial"         // an unacknowledged commit partly visible
	vTxnAbortedVisible = "txn-aborted-visible" // an aborted record visible to read_committed
	vTxnDuplicated     = "txn-duplicated"      // a transactional record visible twice
	vTxnPhantom        = "txn-phantom"         // a visible record no transaction wrote
	vTxnReadThenLost   = "txn-read-then-lost"  // read_committed read a record the final read does not hold there
	vEpochTwoBatches   = "epoch-two-batches"   // one leaderEpoch with two different records at one offset
	vEpochRewritten    = "epoch-rewritten"     // one offset read back with two leaderEpochs
	vEpochBack         = "epoch-back"          // a leaderEpoch smaller than one at a lower offset
)

// checkGroup adds the committing consumer group's violations:
//
//   - committed offsets never go back: for OffsetFetch answers a and b of a
//     partition with a answered before b was sent, b >= a (commit-back);
//   - no acknowledged commit is lost: every answer sent after a commit of
//     offset o was acknowledged is >= o (commit-lost);
//   - the final committed offset is the largest acknowledged one, or that of
//     a later commit whose outcome is unknown (commit-phantom), and no
//     larger than the final log's end (commit-past-end);
//   - every record in the final log below the final committed offset was
//     processed by some member (unprocessed), and every record a member
//     processed is in the final log there (processed-lost);
//   - a fresh member resumes exactly at the final committed offset
//     (resume-wrong).
func checkGroup(r *jResult, h jHistory, final map[jPos]string) {
	g := h.Group
	if g.Final == nil {
		return
	}
	r.Commits, r.OffsetFetches, r.Processed = len(g.Commits), len(g.Fetches), len(g.Processed)
	fetches := map[int32][]jOffsetObs{}
	for _, o := range g.Fetches {
		fetches[o.Partition] = append(fetches[o.Partition], o)
	}
	commits := map[int32][]jCommit{}
	for _, c := range g.Commits {
		commits[c.Partition] = append(commits[c.Partition], c)
	}
	for _, p := range sortedKeys(fetches) {
		obs := fetches[p]
		byRecv := slices.Clone(obs)
		slices.SortStableFunc(byRecv, func(a, b jOffsetObs) int { return a.Received.Compare(b.Received) })
		bySent := slices.Clone(obs)
		slices.SortStableFunc(bySent, func(a, b jOffsetObs) int { return a.Sent.Compare(b.Sent) })
		i := 0
		var best jOffsetObs
		found := false
		for _, b := range bySent {
			for ; i < len(byRecv) && byRecv[i].Received.Before(b.Sent); i++ {
				if !found || byRecv[i].Offset > best.Offset {
					best, found = byRecv[i], true
				}
			}
			if found && b.Offset < best.Offset {
				r.add(vCommitBack, "partition %d: OffsetFetch answered %d (metadata %q) at %s, then %d (metadata %q) to a request sent at %s (commits of %d: %s; commits of %d: %s)",
					p, best.Offset, best.Metadata, r.rel(best.Received), b.Offset, b.Metadata, r.rel(b.Sent),
					best.Offset, r.commitsOf(commits[p], best.Offset), b.Offset, r.commitsOf(commits[p], b.Offset))
			}
		}
		// Acknowledged commits against later answers.
		acked := slices.DeleteFunc(slices.Clone(commits[p]), func(c jCommit) bool { return !c.Acked })
		slices.SortStableFunc(acked, func(a, b jCommit) int { return a.Done.Compare(b.Done) })
		i = 0
		var top jCommit
		found = false
		for _, b := range bySent {
			for ; i < len(acked) && acked[i].Done.Before(b.Sent); i++ {
				if !found || acked[i].Offset > top.Offset {
					top, found = acked[i], true
				}
			}
			if found && b.Offset < top.Offset {
				r.add(vCommitLost, "partition %d: member %d's commit of %d acknowledged at %s; OffsetFetch sent at %s answered %d",
					p, top.Member, top.Offset, r.rel(top.Done), r.rel(b.Sent), b.Offset)
			}
		}
	}

	for _, p := range sortedKeys(g.Final) {
		f := g.Final[p]
		var maxAcked int64 = -1
		var lastAcked time.Time
		for _, c := range commits[p] {
			if c.Acked && c.Offset > maxAcked {
				maxAcked, lastAcked = c.Offset, c.Done
			}
		}
		switch {
		case f < maxAcked:
			r.add(vCommitLost, "partition %d: final committed offset %d, below the acknowledged commit of %d at %s", p, f, maxAcked, r.rel(lastAcked))
		case f > maxAcked:
			// Only a commit not known to have failed may explain it.
			explained := false
			for _, c := range commits[p] {
				if !c.Acked && c.Offset == f {
					explained = true
				}
			}
			if !explained {
				r.add(vCommitPhantom, "partition %d: final committed offset %d; the largest acknowledged commit was %d and no unacknowledged commit was of %d",
					p, f, maxAcked, f)
			}
		}
		end, ok := h.FinalEnd[p]
		if ok && f > end {
			r.add(vCommitPastEnd, "partition %d: committed offset %d beyond the final log's end %d", p, f, end)
		}
		want := max(f, 0) // nothing committed: from the start
		if res, ok := g.Resumed[p]; ok && res != want {
			r.add(vResumeWrong, "partition %d: a fresh member resumed at %d, the committed offset is %d", p, res, f)
		} else if end, hasEnd := h.FinalEnd[p]; !ok && hasEnd && want < end {
			r.add(vResumeWrong, "partition %d: a fresh member was given nothing, the committed offset %d is below the end %d", p, f, end)
		}
	}

	processed := map[jPos]bool{}
	for _, rec := range g.Processed {
		pos := jPos{rec.Partition, rec.Offset}
		processed[pos] = true
		if v, ok := final[pos]; !ok || v != rec.Value {
			r.add(vProcessedLost, "a member processed %q at %d/%d; the final log has %q there (present %v)", rec.Value, rec.Partition, rec.Offset, v, ok)
		}
	}
	for _, p := range sortedKeys(g.Final) {
		missing, first := 0, int64(-1)
		for o := int64(0); o < g.Final[p]; o++ {
			if _, inLog := final[jPos{p, o}]; inLog && !processed[jPos{p, o}] {
				if first < 0 {
					first = o
				}
				missing++
			}
		}
		if missing > 0 {
			r.add(vUnprocessed, "partition %d: %d records below the committed offset %d never processed by a member (first %d)", p, missing, g.Final[p], first)
		}
	}
}

// commitsOf describes the commit attempts of offset o.
func (r jResult) commitsOf(cs []jCommit, o int64) string {
	var out []string
	for _, c := range cs {
		if c.Offset == o {
			out = append(out, fmt.Sprintf("member %d (%s) generation %d sent %s answered %s acknowledged %v (error %d)",
				c.Member, c.MemberID, c.Generation, r.rel(c.Sent), r.rel(c.Done), c.Acked, c.ErrorCode))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// checkTxns adds the transactions' violations: read_committed sees every
// acknowledged commit entirely (txn-lost), an unacknowledged commit entirely
// or not at all (txn-partial), no aborted record (txn-aborted-visible, in
// the final read or the live one), no record twice (txn-duplicated), nothing
// no transaction wrote (txn-phantom), and nothing read live that the final
// read does not hold at the same offset (txn-read-then-lost).
func checkTxns(r *jResult, h jHistory) {
	x := h.Txn
	if len(x.Txns) == 0 && len(x.Final) == 0 {
		return
	}
	r.Txns = len(x.Txns)
	owner := map[string]int{} // value → index in x.Txns
	for i, t := range x.Txns {
		for _, rec := range t.Records {
			owner[rec.Value] = i
		}
		switch t.Outcome {
		case txnCommitted:
			r.TxnCommitted++
		case txnAborted:
			r.TxnAborted++
		default:
			r.TxnUnknown++
		}
	}
	final := map[jPos]string{}
	where := map[string][]jPos{}
	for _, rec := range x.Final {
		p := jPos{rec.Partition, rec.Offset}
		if v, dup := final[p]; dup {
			if v != rec.Value {
				r.add(vTxnDuplicated, "final read_committed read returned %d/%d twice with %q and %q", p.Partition, p.Offset, v, rec.Value)
			}
			continue
		}
		final[p] = rec.Value
		where[rec.Value] = append(where[rec.Value], p)
	}
	values := make([]string, 0, len(where))
	for v := range where {
		values = append(values, v)
	}
	slices.Sort(values)
	for _, v := range values {
		ps := where[v]
		if len(ps) > 1 {
			r.add(vTxnDuplicated, "%q visible %d times: %v", v, len(ps), ps)
		}
		i, ok := owner[v]
		switch {
		case !ok:
			r.add(vTxnPhantom, "%q at %v written by no transaction", v, ps)
		case ps[0].Partition != partitionOf(x.Txns[i], v):
			r.add(vTxnPhantom, "%q of %s visible in partition %d, written to %d", v, x.Txns[i].ID, ps[0].Partition, partitionOf(x.Txns[i], v))
		}
	}
	for _, t := range x.Txns {
		n := 0
		for _, rec := range t.Records {
			if len(where[rec.Value]) > 0 {
				n++
			}
		}
		switch {
		case t.Outcome == txnCommitted && n < len(t.Records):
			r.add(vTxnLost, "%s: commit acknowledged at %s, %d of its %d records visible", t.ID, r.rel(t.End), n, len(t.Records))
		case t.Outcome == txnUnknown && n > 0 && n < len(t.Records):
			r.add(vTxnPartial, "%s: commit unacknowledged (%s), %d of its %d records visible", t.ID, r.rel(t.End), n, len(t.Records))
		case t.Outcome == txnAborted && n > 0:
			r.add(vTxnAbortedVisible, "%s: aborted at %s, %d of its %d records visible to read_committed", t.ID, r.rel(t.End), n, len(t.Records))
		}
	}
	seen := map[jPos]bool{}
	for _, rd := range x.Reads {
		p := jPos{rd.Partition, rd.Offset}
		if seen[p] {
			continue
		}
		seen[p] = true
		if i, ok := owner[rd.Value]; ok && x.Txns[i].Outcome == txnAborted {
			r.add(vTxnAbortedVisible, "live read_committed consumer read %q of aborted %s at %d/%d", rd.Value, x.Txns[i].ID, rd.Partition, rd.Offset)
		}
		if v, ok := final[p]; !ok || v != rd.Value {
			r.add(vTxnReadThenLost, "live read_committed consumer read %q at %d/%d; the final read has %q there (present %v)", rd.Value, rd.Partition, rd.Offset, v, ok)
		}
	}
}

func partitionOf(t jTxn, v string) int32 {
	for _, rec := range t.Records {
		if rec.Value == v {
			return rec.Partition
		}
	}
	return -1
}

// checkEpochs checks the leaderEpochs records were read back with (the
// batch's PartitionLeaderEpoch): at one offset of a partition one leader
// epoch holds one record (epoch-two-batches: two leaders for one epoch), an
// offset is never read back with two epochs (epoch-rewritten), and epochs
// never decrease as offsets grow (epoch-back). reads are every record any
// reader of one topic was given; readers see only data below the high
// watermark, which every acks=all write there was acknowledged with.
// Records without an epoch (-1) are skipped.
func checkEpochs(r *jResult, topic string, reads ...[]jRecord) {
	type key struct {
		pos   jPos
		epoch int32
	}
	byKey := map[key]string{}
	epochAt := map[jPos]int32{}
	parts := map[int32][]int64{}
	for _, rs := range reads {
		for _, rec := range rs {
			if rec.Epoch < 0 {
				continue
			}
			pos := jPos{rec.Partition, rec.Offset}
			k := key{pos, rec.Epoch}
			r.EpochObservations++
			if v, ok := byKey[k]; ok && v != rec.Value {
				r.add(vEpochTwoBatches, "%s %d/%d in leaderEpoch %d read back as %q and as %q", topic, pos.Partition, pos.Offset, rec.Epoch, v, rec.Value)
			} else if !ok {
				byKey[k] = rec.Value
			}
			if e, ok := epochAt[pos]; ok && e != rec.Epoch {
				r.add(vEpochRewritten, "%s %d/%d read back with leaderEpoch %d and %d", topic, pos.Partition, pos.Offset, e, rec.Epoch)
				if rec.Epoch > e {
					epochAt[pos] = rec.Epoch
				}
			} else if !ok {
				epochAt[pos] = rec.Epoch
				parts[pos.Partition] = append(parts[pos.Partition], pos.Offset)
			}
		}
	}
	for _, p := range sortedKeys(parts) {
		offs := parts[p]
		slices.Sort(offs)
		var maxE int32 = -1
		var maxAt int64
		for _, o := range offs {
			e := epochAt[jPos{p, o}]
			if e < maxE {
				r.add(vEpochBack, "%s partition %d: offset %d has leaderEpoch %d, offset %d before it had %d", topic, p, o, e, maxAt, maxE)
			}
			if e > maxE {
				maxE, maxAt = e, o
			}
		}
	}
}
