package compat

// The Jepsen checker: pure functions over the histories TestClusterJepsen
// records. Nothing here talks to a broker; jepsen_check_unit_test.go feeds it
// synthetic histories with each kind of violation.

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// jAck is a record the cluster acknowledged (acks=all): the producer's
// promise returned no error with this partition and offset.
type jAck struct {
	Partition int32
	Offset    int64
	Value     string
	At        time.Time // when the promise ran
}

// jRecord is a record read from a partition.
type jRecord struct {
	Partition int32
	Offset    int64
	Value     string
	Epoch     int32 // the batch's PartitionLeaderEpoch as read back (-1: unknown)
}

// jHW is one high watermark observation: ListOffsets (latest,
// read_uncommitted) answered without error by Node, which therefore acted as
// the partition's leader, with the leaderEpoch it reported (-1 if none).
type jHW struct {
	Node           int32
	Partition      int32
	LeaderEpoch    int32
	HW             int64
	Sent, Received time.Time
}

// jLeader is one partition's leader as one node's Metadata named it: node
// Via answered that Leader leads Partition in LeaderEpoch (first seen At).
type jLeader struct {
	Via         int32
	Partition   int32
	LeaderEpoch int32
	Leader      int32
	At          time.Time
}

// jWritten is one batch a broker acknowledged as leader (franz-go's
// OnProduceBatchWritten hook): which node accepted writes for a partition
// and when.
type jWritten struct {
	At        time.Time
	Node      int32
	Partition int32
}

// jKill is a kill -9 of Node, which led Partitions at that moment.
type jKill struct {
	At         time.Time
	Node       int32
	Partitions []int32
	Label      string
}

// jWindow is a span of time; as an input, one in which no write may be
// acknowledged (two of three brokers down).
type jWindow struct {
	From, To time.Time
	Label    string
}

// jHistory is everything a Jepsen run observed.
type jHistory struct {
	Start     time.Time
	Attempted map[string]bool // every value a producer tried to write; nil skips the phantom check
	Acks      []jAck
	Reads     []jRecord // every record the live consumer read, in any order
	HWs       []jHW
	// Leaders are the distinct leaders the nodes' Metadata named, per
	// partition and leaderEpoch.
	Leaders []jLeader
	Written []jWritten
	Kills   []jKill
	// Unavailable lists windows in which no acknowledgement may happen.
	Unavailable []jWindow
	// Final is every partition read from the start by a fresh consumer after
	// healing, up to FinalEnd (the partition's high watermark then).
	Final    []jRecord
	FinalEnd map[int32]int64
	// Group is the committing consumer group's history (of the same topic).
	Group jGroupHistory
	// Txn is the transactional producers' history (their own topic).
	Txn jTxnHistory
}

// Violation kinds.
const (
	vLost             = "lost"              // acknowledged value absent from the final log
	vMoved            = "moved"             // acknowledged value present, but not at its acknowledged offset
	vDuplicated       = "duplicated"        // a value present more than once in the final log
	vConflictingAcks  = "conflicting-acks"  // one offset acknowledged with two values
	vReadThenLost     = "read-then-lost"    // the live consumer read a record the final log does not hold there
	vHWBack           = "hw-back"           // a high watermark went backwards
	vHWAboveFinal     = "hw-above-final"    // a reported high watermark beyond the final log's end
	vGap              = "gap"               // an offset below the final high watermark missing from the final log
	vPhantom          = "phantom"           // a value in the final log nobody wrote
	vAckedUnavailable = "acked-unavailable" // a write acknowledged while it must fail
	vTwoLeaders       = "two-leaders"       // two brokers leading one partition in one leaderEpoch
)

// jViolation is one broken property.
type jViolation struct {
	Kind   string
	Detail string
}

// jFailover is the time from the kill -9 of a partition's leader to the
// first batch a new leader acknowledged for that partition.
type jFailover struct {
	Kill      jKill
	Partition int32
	NewLeader int32 // -1 if only a plain ack was seen (no hook event)
	D         time.Duration
	Found     bool
}

// jResult is the checker's verdict.
type jResult struct {
	Counts     map[string]int // violations per kind
	Violations []jViolation   // the first few of each kind
	Acked      int
	Attempted  int
	Read       int
	Final      int
	// Gaps are windows longer than the checker's threshold in which no
	// write was acknowledged on any partition.
	Gaps      []jWindow
	Failovers []jFailover
	// Group, transaction and epoch figures.
	Commits, OffsetFetches, Processed          int
	Txns, TxnCommitted, TxnAborted, TxnUnknown int
	EpochObservations                          int
	// LeaderEpochs is how many (partition, leaderEpoch) pairs had a
	// leader observed.
	LeaderEpochs int
	start        time.Time
}

// OK reports whether no property was broken.
func (r jResult) OK() bool { return len(r.Violations) == 0 }

const maxViolationsPerKind = 10

func (r *jResult) add(kind, format string, args ...any) {
	r.Counts[kind]++
	if r.Counts[kind] <= maxViolationsPerKind {
		r.Violations = append(r.Violations, jViolation{kind, fmt.Sprintf(format, args...)})
	}
}

type jPos struct {
	Partition int32
	Offset    int64
}

// jepsenCheck checks h:
//
//   - every acknowledged value is in the final log exactly once, at the
//     partition and offset it was acknowledged with (lost, moved,
//     duplicated), and no offset was acknowledged with two values;
//   - no value appears twice in the final log, offsets are contiguous from 0
//     to the final high watermark, and every value was written by a producer;
//   - every record the live consumer read is in the final log at the same
//     offset with the same value;
//   - high watermarks never go back: for two observations a and b of one
//     partition where a's answer arrived before b's request was sent and a's
//     leaderEpoch is not newer than b's, b.HW >= a.HW. A deposed leader that
//     has not learned it yet answers with its old, smaller epoch, so its
//     stale value is not compared with its successor's; but a new leader
//     (larger epoch) answering with less than its predecessor reported is a
//     regression (Kafka answers OFFSET_NOT_AVAILABLE until it has caught up,
//     KIP-207). And no leader may have reported a high watermark beyond the
//     final log's end: that data was committed;
//   - no write was acknowledged inside an Unavailable window;
//   - never two leaders: per partition and leaderEpoch, every broker that
//     answered ListOffsets as leader (h.HWs) and every leader a node's
//     Metadata named (h.Leaders) is one and the same broker.
//
// gapThreshold sets which pauses between acknowledgements are reported as
// unavailability windows (reported, not violations).
func jepsenCheck(h jHistory, gapThreshold time.Duration) jResult {
	r := jResult{Counts: map[string]int{}, Acked: len(h.Acks), Attempted: len(h.Attempted), Read: len(h.Reads), Final: len(h.Final), start: h.Start}

	// The final log, both ways.
	final := map[jPos]string{}
	where := map[string][]jPos{}
	for _, rec := range h.Final {
		p := jPos{rec.Partition, rec.Offset}
		if v, dup := final[p]; dup && v != rec.Value {
			r.add(vDuplicated, "final read returned %d/%d twice with different values %q and %q", p.Partition, p.Offset, v, rec.Value)
			continue
		} else if dup {
			continue // the same record delivered twice by the reader is not the log's fault
		}
		final[p] = rec.Value
		where[rec.Value] = append(where[rec.Value], p)
	}
	values := make([]string, 0, len(where))
	for v := range where {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		if ps := where[v]; len(ps) > 1 {
			r.add(vDuplicated, "%q is in the final log %d times: %v", v, len(ps), ps)
		}
		if h.Attempted != nil && !h.Attempted[v] {
			r.add(vPhantom, "%q at %v was never written by a producer", v, where[v])
		}
	}

	// Offsets contiguous from 0 to the final end of each partition.
	parts := map[int32]bool{}
	for p := range h.FinalEnd {
		parts[p] = true
	}
	for p := range final {
		parts[p.Partition] = true
	}
	for _, p := range sortedKeys(parts) {
		end := h.FinalEnd[p]
		missing := 0
		first := int64(-1)
		for o := int64(0); o < end; o++ {
			if _, ok := final[jPos{p, o}]; !ok {
				if first < 0 {
					first = o
				}
				missing++
			}
		}
		if missing > 0 {
			r.add(vGap, "partition %d: %d offsets below the final high watermark %d missing from the final log (first %d)", p, missing, end, first)
		}
	}

	// Acknowledged records.
	ackedAt := map[jPos]jAck{}
	for _, a := range h.Acks {
		p := jPos{a.Partition, a.Offset}
		if prev, ok := ackedAt[p]; ok && prev.Value != a.Value {
			r.add(vConflictingAcks, "%d/%d acknowledged with %q at %s and with %q at %s (two leaders?)",
				p.Partition, p.Offset, prev.Value, r.rel(prev.At), a.Value, r.rel(a.At))
		} else if !ok {
			ackedAt[p] = a
		}
		got, present := final[p]
		switch {
		case present && got == a.Value:
		case len(where[a.Value]) > 0:
			r.add(vMoved, "%q acknowledged at %d/%d (%s), final log has it at %v and %q there", a.Value, a.Partition, a.Offset, r.rel(a.At), where[a.Value], got)
		default:
			r.add(vLost, "%q acknowledged at %d/%d (%s) is not in the final log (offset holds %q, present %v)", a.Value, a.Partition, a.Offset, r.rel(a.At), got, present)
		}
	}

	// Records the live consumer read.
	seenRead := map[jRecord]bool{}
	for _, rd := range h.Reads {
		if seenRead[rd] {
			continue
		}
		seenRead[rd] = true
		if got, ok := final[jPos{rd.Partition, rd.Offset}]; !ok || got != rd.Value {
			r.add(vReadThenLost, "consumer read %q at %d/%d; final log has %q there (present %v)", rd.Value, rd.Partition, rd.Offset, got, ok)
		}
	}

	checkHWs(&r, h)
	checkLeaders(&r, h)
	checkGroup(&r, h, final)
	checkTxns(&r, h)
	checkEpochs(&r, "topic", h.Reads, h.Final, h.Group.Processed)
	checkEpochs(&r, "transactional topic", h.Txn.Reads, h.Txn.Final)

	// Acknowledgements inside windows where writes must fail.
	for _, w := range h.Unavailable {
		n := 0
		var firstAck jAck
		for _, a := range h.Acks {
			if !a.At.Before(w.From) && !a.At.After(w.To) {
				if n == 0 {
					firstAck = a
				}
				n++
			}
		}
		if n > 0 {
			r.add(vAckedUnavailable, "%s [%s, %s]: %d writes acknowledged, first %q at %d/%d at %s",
				w.Label, r.rel(w.From), r.rel(w.To), n, firstAck.Value, firstAck.Partition, firstAck.Offset, r.rel(firstAck.At))
		}
	}

	r.Gaps = ackGaps(h.Acks, gapThreshold)
	r.Failovers = failovers(h)
	return r
}

// checkHWs adds hw-back and hw-above-final violations.
func checkHWs(r *jResult, h jHistory) {
	byPart := map[int32][]jHW{}
	for _, o := range h.HWs {
		byPart[o.Partition] = append(byPart[o.Partition], o)
	}
	for _, p := range sortedKeys(byPart) {
		obs := byPart[p]
		maxHW := obs[0]
		for _, o := range obs {
			if o.HW > maxHW.HW {
				maxHW = o
			}
		}
		if end, ok := h.FinalEnd[p]; ok && maxHW.HW > end {
			r.add(vHWAboveFinal, "partition %d: node %d (epoch %d) reported high watermark %d at %s, final log ends at %d",
				p, maxHW.Node, maxHW.LeaderEpoch, maxHW.HW, r.rel(maxHW.Received), end)
		}
		// Sweep the observations in order of sending; fold in every
		// observation answered before that, keeping the largest high
		// watermark per leaderEpoch.
		byRecv := slices.Clone(obs)
		slices.SortStableFunc(byRecv, func(a, b jHW) int { return a.Received.Compare(b.Received) })
		bySent := slices.Clone(obs)
		slices.SortStableFunc(bySent, func(a, b jHW) int { return a.Sent.Compare(b.Sent) })
		best := map[int32]jHW{} // leaderEpoch → observation with the largest HW
		i := 0
		for _, b := range bySent {
			for ; i < len(byRecv) && byRecv[i].Received.Before(b.Sent); i++ {
				a := byRecv[i]
				if cur, ok := best[a.LeaderEpoch]; !ok || a.HW > cur.HW {
					best[a.LeaderEpoch] = a
				}
			}
			var worst jHW
			found := false
			for e, a := range best {
				if e <= b.LeaderEpoch && a.HW > b.HW && (!found || a.HW > worst.HW) {
					worst, found = a, true
				}
			}
			if found {
				r.add(vHWBack, "partition %d: high watermark %d from node %d (epoch %d) at %s, then %d from node %d (epoch %d) at %s",
					p, worst.HW, worst.Node, worst.LeaderEpoch, r.rel(worst.Received), b.HW, b.Node, b.LeaderEpoch, r.rel(b.Sent))
			}
		}
	}
}

// checkLeaders adds two-leaders violations. A leaderEpoch is granted to one
// broker (the controller bumps it with every election), so whatever claims
// or names a leader for a partition in one epoch must name the same broker:
// a node answering ListOffsets without error (as leader, with its
// leaderEpoch) and every node's Metadata. A deposed leader still answering
// in its old epoch is no violation (its epoch is the old one; a write it
// acknowledged after its successor took over would show as lost data);
// two brokers with the same epoch are. One violation per partition epoch.
func checkLeaders(r *jResult, h jHistory) {
	type key struct{ partition, epoch int32 }
	type claim struct {
		leader int32
		how    string
		at     time.Time
	}
	first := map[key]claim{}
	flagged := map[key]bool{}
	note := func(k key, c claim) {
		f, ok := first[k]
		switch {
		case !ok:
			first[k] = c
		case f.leader != c.leader && !flagged[k]:
			flagged[k] = true
			r.add(vTwoLeaders, "partition %d leaderEpoch %d: broker %d (%s at %s) and broker %d (%s at %s)",
				k.partition, k.epoch, f.leader, f.how, r.rel(f.at), c.leader, c.how, r.rel(c.at))
		}
	}
	for _, o := range h.HWs {
		if o.LeaderEpoch >= 0 {
			note(key{o.Partition, o.LeaderEpoch}, claim{o.Node, "answered ListOffsets as leader", o.Received})
		}
	}
	for _, l := range h.Leaders {
		if l.Leader >= 0 && l.LeaderEpoch >= 0 {
			note(key{l.Partition, l.LeaderEpoch}, claim{l.Leader, fmt.Sprintf("named leader by node %d's Metadata", l.Via), l.At})
		}
	}
	r.LeaderEpochs = len(first)
}

// ackGaps returns the spans longer than threshold in which no write was
// acknowledged, between the first and the last acknowledgement.
func ackGaps(acks []jAck, threshold time.Duration) []jWindow {
	if len(acks) < 2 || threshold <= 0 {
		return nil
	}
	ts := make([]time.Time, len(acks))
	for i, a := range acks {
		ts[i] = a.At
	}
	slices.SortFunc(ts, time.Time.Compare)
	var out []jWindow
	for i := 1; i < len(ts); i++ {
		if ts[i].Sub(ts[i-1]) > threshold {
			out = append(out, jWindow{From: ts[i-1], To: ts[i]})
		}
	}
	return out
}

// failovers measures, per kill and per partition the killed node led, the
// time to the first batch another node acknowledged for the partition
// (falling back to the first acknowledged record when no hook events were
// recorded).
func failovers(h jHistory) []jFailover {
	written := map[int32][]jWritten{}
	for _, w := range h.Written {
		written[w.Partition] = append(written[w.Partition], w)
	}
	acked := map[int32][]time.Time{}
	if len(h.Written) == 0 {
		for _, a := range h.Acks {
			acked[a.Partition] = append(acked[a.Partition], a.At)
		}
	}
	var out []jFailover
	for _, k := range h.Kills {
		for _, p := range k.Partitions {
			f := jFailover{Kill: k, Partition: p, NewLeader: -1}
			for _, w := range written[p] {
				if w.Node != k.Node && w.At.After(k.At) && (!f.Found || w.At.Sub(k.At) < f.D) {
					f.D, f.NewLeader, f.Found = w.At.Sub(k.At), w.Node, true
				}
			}
			for _, at := range acked[p] {
				if at.After(k.At) && (!f.Found || at.Sub(k.At) < f.D) {
					f.D, f.Found = at.Sub(k.At), true
				}
			}
			out = append(out, f)
		}
	}
	return out
}

func (r jResult) rel(t time.Time) string {
	if r.start.IsZero() || t.IsZero() {
		return t.Format("15:04:05.000")
	}
	return fmt.Sprintf("t+%.3fs", t.Sub(r.start).Seconds())
}

// Summary is the multi-line report logged at the end of a run.
func (r jResult) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "jepsen: attempted=%d acked=%d read-live=%d final=%d | lost=%d moved=%d duplicated=%d conflicting-acks=%d read-then-lost=%d hw-back=%d hw-above-final=%d gaps=%d phantoms=%d acked-while-unavailable=%d\n",
		r.Attempted, r.Acked, r.Read, r.Final, r.Counts[vLost], r.Counts[vMoved], r.Counts[vDuplicated], r.Counts[vConflictingAcks],
		r.Counts[vReadThenLost], r.Counts[vHWBack], r.Counts[vHWAboveFinal], r.Counts[vGap], r.Counts[vPhantom], r.Counts[vAckedUnavailable])
	fmt.Fprintf(&b, "group: processed=%d commits=%d offset-fetches=%d | commit-back=%d commit-lost=%d commit-phantom=%d commit-past-end=%d unprocessed=%d processed-lost=%d resume-wrong=%d\n",
		r.Processed, r.Commits, r.OffsetFetches, r.Counts[vCommitBack], r.Counts[vCommitLost], r.Counts[vCommitPhantom], r.Counts[vCommitPastEnd],
		r.Counts[vUnprocessed], r.Counts[vProcessedLost], r.Counts[vResumeWrong])
	fmt.Fprintf(&b, "transactions: %d (committed %d, aborted %d, commit unacknowledged %d) | txn-lost=%d txn-partial=%d txn-aborted-visible=%d txn-duplicated=%d txn-phantom=%d txn-read-then-lost=%d\n",
		r.Txns, r.TxnCommitted, r.TxnAborted, r.TxnUnknown, r.Counts[vTxnLost], r.Counts[vTxnPartial], r.Counts[vTxnAbortedVisible],
		r.Counts[vTxnDuplicated], r.Counts[vTxnPhantom], r.Counts[vTxnReadThenLost])
	fmt.Fprintf(&b, "leader epochs: %d records read back | epoch-two-batches=%d epoch-rewritten=%d epoch-back=%d\n",
		r.EpochObservations, r.Counts[vEpochTwoBatches], r.Counts[vEpochRewritten], r.Counts[vEpochBack])
	fmt.Fprintf(&b, "leaders: %d partition leaderEpochs observed | two-leaders=%d\n", r.LeaderEpochs, r.Counts[vTwoLeaders])
	fmt.Fprintf(&b, "unavailability windows (no write acknowledged on any partition): %d\n", len(r.Gaps))
	for _, g := range r.Gaps {
		fmt.Fprintf(&b, "  %s for %.2fs\n", r.rel(g.From), g.To.Sub(g.From).Seconds())
	}
	var ds []time.Duration
	fmt.Fprintf(&b, "failover (kill -9 of a leader → first batch acknowledged by its new leader): %d\n", len(r.Failovers))
	for i := 0; i < len(r.Failovers); {
		// One kill's partitions are adjacent; a kill of a leader of many
		// is one line of quantiles, not a line per partition.
		k := r.Failovers[i].Kill
		j := i
		for j < len(r.Failovers) && r.Failovers[j].Kill.At.Equal(k.At) && r.Failovers[j].Kill.Node == k.Node {
			j++
		}
		fs := r.Failovers[i:j]
		i = j
		if len(fs) > maxFailoverLines {
			var kd []time.Duration
			missing := 0
			for _, f := range fs {
				if f.Found {
					kd = append(kd, f.D)
				} else {
					missing++
				}
			}
			ds = append(ds, kd...)
			fmt.Fprintf(&b, "  %s kill node %d (%s), %d partitions: %s; %d with no acknowledged write afterwards\n",
				r.rel(k.At), k.Node, k.Label, len(fs), quantiles(kd), missing)
			continue
		}
		for _, f := range fs {
			if !f.Found {
				fmt.Fprintf(&b, "  %s kill node %d (%s), partition %d: no acknowledged write afterwards\n", r.rel(f.Kill.At), f.Kill.Node, f.Kill.Label, f.Partition)
				continue
			}
			ds = append(ds, f.D)
			fmt.Fprintf(&b, "  %s kill node %d (%s), partition %d: %.2fs (new leader %d)\n", r.rel(f.Kill.At), f.Kill.Node, f.Kill.Label, f.Partition, f.D.Seconds(), f.NewLeader)
		}
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		fmt.Fprintf(&b, "  failover median %.2fs max %.2fs\n", ds[len(ds)/2].Seconds(), ds[len(ds)-1].Seconds())
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "VIOLATION %s: %s\n", v.Kind, v.Detail)
	}
	return b.String()
}

// maxFailoverLines is how many partitions of one kill Summary lists one by
// one; a kill of a leader of more is summarised by quantiles.
const maxFailoverLines = 8

// quantiles describes durations as min, median, p99 and max.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	q := func(f float64) float64 { return ds[int(f*float64(len(ds)-1))].Seconds() }
	return fmt.Sprintf("min %.2fs median %.2fs p99 %.2fs max %.2fs", q(0), q(0.5), q(0.99), q(1))
}

func sortedKeys[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
