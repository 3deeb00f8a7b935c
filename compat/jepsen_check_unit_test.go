package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// cleanHistory is a correct run: two partitions of three records each, all
// acknowledged, read live, and high watermarks that only grow, with a leader
// change on partition 0 (node 1, epoch 1 → node 2, epoch 2).
func cleanHistory() jHistory {
	h := jHistory{Start: t0, Attempted: map[string]bool{}, FinalEnd: map[int32]int64{0: 3, 1: 3}}
	for p := int32(0); p < 2; p++ {
		for o := int64(0); o < 3; o++ {
			v := fmt.Sprintf("v%d-%d", p, o)
			h.Attempted[v] = true
			h.Acks = append(h.Acks, jAck{p, o, v, at(int(100*o + 10*int64(p)))})
			h.Reads = append(h.Reads, jRecord{p, o, v, 0})
			h.Final = append(h.Final, jRecord{p, o, v, 0})
		}
	}
	h.HWs = []jHW{
		{Node: 1, Partition: 0, LeaderEpoch: 1, HW: 1, Sent: at(50), Received: at(55)},
		{Node: 1, Partition: 0, LeaderEpoch: 1, HW: 2, Sent: at(150), Received: at(155)},
		{Node: 2, Partition: 0, LeaderEpoch: 2, HW: 2, Sent: at(250), Received: at(255)},
		{Node: 2, Partition: 0, LeaderEpoch: 2, HW: 3, Sent: at(350), Received: at(355)},
		{Node: 3, Partition: 1, LeaderEpoch: 1, HW: 3, Sent: at(350), Received: at(355)},
	}
	// Every node's Metadata names the same leader per epoch; node 3 still
	// names the deposed node 1 (epoch 1) after the change, which is no
	// second leader.
	h.Leaders = []jLeader{
		{Via: 1, Partition: 0, LeaderEpoch: 1, Leader: 1, At: at(50)},
		{Via: 3, Partition: 0, LeaderEpoch: 1, Leader: 1, At: at(50)},
		{Via: 2, Partition: 0, LeaderEpoch: 2, Leader: 2, At: at(250)},
		{Via: 3, Partition: 0, LeaderEpoch: 1, Leader: 1, At: at(260)},
		{Via: 3, Partition: 0, LeaderEpoch: 2, Leader: 2, At: at(300)},
		{Via: 1, Partition: 1, LeaderEpoch: 1, Leader: 3, At: at(50)},
	}
	h.Written = []jWritten{{At: at(200), Node: 2, Partition: 0}}
	h.Kills = []jKill{{At: at(120), Node: 1, Partitions: []int32{0}, Label: "leader"}}
	return h
}

func checkOnly(t *testing.T, h jHistory, want map[string]int) jResult {
	t.Helper()
	r := jepsenCheck(h, time.Second)
	for k, n := range want {
		if r.Counts[k] != n {
			t.Errorf("%s: got %d violations, want %d\n%s", k, r.Counts[k], n, r.Summary())
		}
	}
	for k, n := range r.Counts {
		if _, ok := want[k]; !ok && n > 0 {
			t.Errorf("unexpected %d %s violations\n%s", n, k, r.Summary())
		}
	}
	return r
}

func TestChecker_CleanHistoryPasses(t *testing.T) {
	r := checkOnly(t, cleanHistory(), nil)
	if !r.OK() {
		t.Fatalf("clean history flagged:\n%s", r.Summary())
	}
	if len(r.Failovers) != 1 || !r.Failovers[0].Found || r.Failovers[0].D != 80*time.Millisecond || r.Failovers[0].NewLeader != 2 {
		t.Errorf("failovers = %+v, want one of 80ms to node 2", r.Failovers)
	}
	if !strings.Contains(r.Summary(), "lost=0") || !strings.Contains(r.Summary(), "two-leaders=0") {
		t.Errorf("summary lacks lost=0 or two-leaders=0:\n%s", r.Summary())
	}
	if r.LeaderEpochs != 3 {
		t.Errorf("LeaderEpochs = %d, want 3 (partition 0 epochs 1 and 2, partition 1 epoch 1)", r.LeaderEpochs)
	}
}

func TestChecker_LostAckDetected(t *testing.T) {
	h := cleanHistory()
	// Partition 1 ends at offset 2: the acknowledged v1-2 is gone.
	h.Final = h.Final[:5]
	h.FinalEnd[1] = 2
	h.Reads = h.Reads[:5]
	h.HWs = h.HWs[:4]
	checkOnly(t, h, map[string]int{vLost: 1})
}

func TestChecker_MovedAckDetected(t *testing.T) {
	h := cleanHistory()
	// v0-1 and v0-2 swapped places in the final log.
	h.Final[1].Value, h.Final[2].Value = h.Final[2].Value, h.Final[1].Value
	h.Reads = nil
	checkOnly(t, h, map[string]int{vMoved: 2})
}

func TestChecker_DuplicateDetected(t *testing.T) {
	h := cleanHistory()
	// A retried batch appended twice: v1-2 again at offset 3.
	h.Final = append(h.Final, jRecord{1, 3, "v1-2", 0})
	h.FinalEnd[1] = 4
	checkOnly(t, h, map[string]int{vDuplicated: 1})
}

func TestChecker_ConflictingAcksDetected(t *testing.T) {
	h := cleanHistory()
	// Two leaders acknowledged offset 2 of partition 0 with different values.
	h.Attempted["zombie"] = true
	h.Acks = append(h.Acks, jAck{0, 2, "zombie", at(260)})
	checkOnly(t, h, map[string]int{vConflictingAcks: 1, vLost: 1})
}

func TestChecker_ReadThenLostDetected(t *testing.T) {
	h := cleanHistory()
	// The consumer read an unacknowledged record past the final end from a
	// leader that later lost it, and another that was replaced: in the same
	// leaderEpoch, so two leaders wrote that epoch.
	h.Attempted["gone"] = true
	h.Attempted["old"] = true
	h.Reads = append(h.Reads, jRecord{1, 3, "gone", 0}, jRecord{0, 2, "old", 0})
	checkOnly(t, h, map[string]int{vReadThenLost: 2, vEpochTwoBatches: 1})
}

func TestChecker_HWBackDetected(t *testing.T) {
	h := cleanHistory()
	// The new leader (epoch 2) reports 1 after the old one reported 2.
	h.HWs[2].HW = 1
	checkOnly(t, h, map[string]int{vHWBack: 1})
}

func TestChecker_HWBackWithinOneLeaderDetected(t *testing.T) {
	h := cleanHistory()
	h.HWs = append(h.HWs, jHW{Node: 3, Partition: 1, LeaderEpoch: 1, HW: 2, Sent: at(400), Received: at(401)})
	checkOnly(t, h, map[string]int{vHWBack: 1})
}

func TestChecker_HWStaleZombieOrOverlapNotFlagged(t *testing.T) {
	h := cleanHistory()
	// A deposed leader (older epoch) answering late with its stale value,
	// and a request that overlapped the larger answer: neither is a
	// regression.
	h.HWs = append(h.HWs,
		jHW{Node: 1, Partition: 0, LeaderEpoch: 1, HW: 2, Sent: at(400), Received: at(401)},
		jHW{Node: 2, Partition: 0, LeaderEpoch: 2, HW: 2, Sent: at(349), Received: at(360)},
	)
	checkOnly(t, h, nil)
}

func TestChecker_HWAboveFinalDetected(t *testing.T) {
	h := cleanHistory()
	// A leader reported 5 committed records; the final log has 3.
	h.HWs = append(h.HWs, jHW{Node: 3, Partition: 1, LeaderEpoch: 1, HW: 5, Sent: at(400), Received: at(401)})
	checkOnly(t, h, map[string]int{vHWAboveFinal: 1})
}

func TestChecker_GapDetected(t *testing.T) {
	h := cleanHistory()
	// Offset 1 of partition 0 is missing below the high watermark; its
	// acknowledged value and the live read are gone with it.
	h.Final = append(h.Final[:1:1], h.Final[2:]...)
	checkOnly(t, h, map[string]int{vGap: 1, vLost: 1, vReadThenLost: 1})
}

func TestChecker_PhantomDetected(t *testing.T) {
	h := cleanHistory()
	h.Final = append(h.Final, jRecord{0, 3, "never-written", 0})
	h.FinalEnd[0] = 4
	checkOnly(t, h, map[string]int{vPhantom: 1})
}

func TestChecker_AckedWhileUnavailableDetected(t *testing.T) {
	h := cleanHistory()
	// Two brokers down from 150 to 250 ms: the acks at 200 and 210 ms are a
	// violation; nothing in [260, 290] is acknowledged, which is fine.
	h.Unavailable = []jWindow{{From: at(150), To: at(250), Label: "two down"}, {From: at(260), To: at(290), Label: "quiet"}}
	r := checkOnly(t, h, map[string]int{vAckedUnavailable: 1})
	if !strings.Contains(r.Violations[0].Detail, "two down") {
		t.Errorf("violation does not name the window: %+v", r.Violations[0])
	}
}

func TestChecker_UnavailabilityGapsAndFailoverFallback(t *testing.T) {
	h := cleanHistory()
	h.Acks = append(h.Acks, jAck{0, 3, "late", at(5300)})
	h.Attempted["late"] = true
	h.Final = append(h.Final, jRecord{0, 3, "late", 0})
	h.FinalEnd[0] = 4
	h.Written = nil // no hook events: failover from the first ack after the kill
	r := checkOnly(t, h, nil)
	if len(r.Gaps) != 1 || r.Gaps[0].From != at(210) || r.Gaps[0].To != at(5300) {
		t.Errorf("gaps = %+v, want one from 210ms to 5300ms", r.Gaps)
	}
	if len(r.Failovers) != 1 || !r.Failovers[0].Found || r.Failovers[0].D != 80*time.Millisecond || r.Failovers[0].NewLeader != -1 {
		t.Errorf("failovers = %+v, want 80ms (ack at 200ms after the kill at 120ms)", r.Failovers)
	}
}

func TestChecker_TwoLeadersAnsweringListOffsetsDetected(t *testing.T) {
	h := cleanHistory()
	// Node 1, deposed in epoch 1, answers ListOffsets as leader in epoch 2,
	// node 2's epoch, with a high watermark it never went back from.
	h.HWs = append(h.HWs, jHW{Node: 1, Partition: 0, LeaderEpoch: 2, HW: 3, Sent: at(400), Received: at(401)})
	r := checkOnly(t, h, map[string]int{vTwoLeaders: 1})
	if d := r.Violations[0].Detail; !strings.Contains(d, "partition 0 leaderEpoch 2: broker 2") || !strings.Contains(d, "broker 1 (answered ListOffsets") {
		t.Errorf("violation does not name both brokers: %s", d)
	}
}

func TestChecker_TwoLeadersInMetadataDetected(t *testing.T) {
	h := cleanHistory()
	// Node 3's Metadata names itself leader of partition 0 in epoch 2,
	// which node 2 led (by its ListOffsets answers and its own Metadata).
	h.Leaders = append(h.Leaders, jLeader{Via: 3, Partition: 0, LeaderEpoch: 2, Leader: 3, At: at(320)})
	r := checkOnly(t, h, map[string]int{vTwoLeaders: 1})
	if d := r.Violations[0].Detail; !strings.Contains(d, "broker 3 (named leader by node 3's Metadata") {
		t.Errorf("violation does not say where the second leader was seen: %s", d)
	}
}

func TestChecker_TwoLeadersOncePerPartitionEpoch(t *testing.T) {
	h := cleanHistory()
	h.HWs = nil // Metadata alone: partition 1 epoch 4 named 1, 2 and 3, many times; partition 0 epoch 7 named 1 and 2
	for i := 0; i < 30; i++ {
		h.Leaders = append(h.Leaders, jLeader{Via: int32(i%3 + 1), Partition: 1, LeaderEpoch: 4, Leader: int32(i%3 + 1), At: at(400 + i)})
	}
	h.Leaders = append(h.Leaders,
		jLeader{Via: 1, Partition: 0, LeaderEpoch: 7, Leader: 1, At: at(500)},
		jLeader{Via: 2, Partition: 0, LeaderEpoch: 7, Leader: 2, At: at(500)},
		jLeader{Via: 2, Partition: 0, LeaderEpoch: -1, Leader: 2, At: at(500)}, // no epoch: not compared
		jLeader{Via: 1, Partition: 0, LeaderEpoch: -1, Leader: 1, At: at(500)},
	)
	checkOnly(t, h, map[string]int{vTwoLeaders: 2})
}

func TestChecker_FailoverOfManyPartitionsSummarised(t *testing.T) {
	h := cleanHistory()
	// Node 1 led partitions 0..99 besides; each is written by node 2 p ms
	// after the kill, partition 99 never.
	k := jKill{At: at(1000), Node: 1, Label: "busiest leader"}
	for p := int32(0); p < 100; p++ {
		k.Partitions = append(k.Partitions, p)
		if p < 99 {
			h.Written = append(h.Written, jWritten{At: at(1000 + 10 + int(p)), Node: 2, Partition: p}, jWritten{At: at(900), Node: 1, Partition: p})
		}
	}
	h.Kills = append(h.Kills, k)
	r := checkOnly(t, h, nil)
	if len(r.Failovers) != 101 || r.Failovers[100].Found || !r.Failovers[99].Found || r.Failovers[99].D != 108*time.Millisecond {
		t.Fatalf("failovers: %d, last two %+v %+v", len(r.Failovers), r.Failovers[99], r.Failovers[100])
	}
	sum := r.Summary()
	if !strings.Contains(sum, "kill node 1 (busiest leader), 100 partitions: min 0.01s median 0.06s p99 0.11s max 0.11s; 1 with no acknowledged write afterwards") {
		t.Errorf("summary lacks the kill's quantiles:\n%s", sum)
	}
	if strings.Count(sum, "\n") > 20 {
		t.Errorf("summary lists the partitions one by one:\n%s", sum)
	}
}

// groupHistory adds to cleanHistory a committing group that processed every
// record of both partitions and committed up to their ends, watched by
// OffsetFetch, and transactions of every outcome read with read_committed;
// partition 0's records carry leaderEpochs 1, 1, 2 (the leader change),
// partition 1's epoch 1.
func groupHistory() jHistory {
	h := cleanHistory()
	epochs := map[jPos]int32{{0, 0}: 1, {0, 1}: 1, {0, 2}: 2, {1, 0}: 1, {1, 1}: 1, {1, 2}: 1}
	for _, rs := range [][]jRecord{h.Reads, h.Final} {
		for i := range rs {
			rs[i].Epoch = epochs[jPos{rs[i].Partition, rs[i].Offset}]
		}
	}
	h.Group = jGroupHistory{
		Processed: slices.Clone(h.Final),
		Commits: []jCommit{
			{Member: 1, Partition: 0, Offset: 2, Sent: at(190), Done: at(200), Acked: true},
			{Member: 1, Partition: 1, Offset: 3, Sent: at(290), Done: at(300), Acked: true},
			{Member: 2, Partition: 0, Offset: 3, Sent: at(390), Done: at(400), Acked: true},
		},
		Fetches: []jOffsetObs{
			{Partition: 1, Offset: -1, Sent: at(100), Received: at(110)},
			{Partition: 0, Offset: 2, Sent: at(250), Received: at(260)},
			{Partition: 1, Offset: 3, Sent: at(350), Received: at(360)},
			{Partition: 0, Offset: 3, Sent: at(450), Received: at(460)},
		},
		Final:   map[int32]int64{0: 3, 1: 3},
		Resumed: map[int32]int64{},
	}
	h.Txn = jTxnHistory{
		Txns: []jTxn{
			{ID: "t1", Records: []jRecord{{0, -1, "a1", -1}, {1, -1, "a2", -1}}, Outcome: txnCommitted, End: at(100)},
			{ID: "t2", Records: []jRecord{{0, -1, "b1", -1}, {1, -1, "b2", -1}}, Outcome: txnAborted, End: at(200)},
			{ID: "t3", Records: []jRecord{{0, -1, "c1", -1}, {1, -1, "c2", -1}}, Outcome: txnUnknown, End: at(300)},
			{ID: "t4", Records: []jRecord{{0, -1, "d1", -1}, {1, -1, "d2", -1}}, Outcome: txnUnknown, End: at(400)},
		},
		// Offsets 1 and 2 hold b's records and the abort marker; t4 was
		// aborted by its coordinator.
		Reads: []jRecord{{0, 0, "a1", 1}, {1, 0, "a2", 1}},
		Final: []jRecord{{0, 0, "a1", 1}, {1, 0, "a2", 1}, {0, 3, "c1", 2}, {1, 3, "c2", 1}},
	}
	return h
}

func TestChecker_GroupAndTxnCleanHistoryPasses(t *testing.T) {
	r := checkOnly(t, groupHistory(), nil)
	if r.Commits != 3 || r.OffsetFetches != 4 || r.Processed != 6 || r.Txns != 4 || r.TxnCommitted != 1 || r.TxnAborted != 1 || r.TxnUnknown != 2 {
		t.Errorf("figures: %+v", r)
	}
	if r.EpochObservations != 6+6+6+2+4 {
		t.Errorf("epoch observations = %d, want 24", r.EpochObservations)
	}
}

func TestChecker_CommitBackDetected(t *testing.T) {
	h := groupHistory()
	// An unacknowledged commit of 3 became visible at 240 ms, then the
	// offset fell back to 2 (answers at 248 and 260 ms); no acknowledged
	// commit was above 2 then.
	h.Group.Commits = append(h.Group.Commits, jCommit{Member: 1, Partition: 0, Offset: 3, Sent: at(210), Done: at(220)})
	h.Group.Fetches = append(h.Group.Fetches,
		jOffsetObs{Partition: 0, Offset: 3, Sent: at(230), Received: at(240)},
		jOffsetObs{Partition: 0, Offset: 2, Sent: at(245), Received: at(248)})
	checkOnly(t, h, map[string]int{vCommitBack: 2})
}

func TestChecker_CommitLostDetected(t *testing.T) {
	h := groupHistory()
	// Member 2's commit of 3 was acknowledged at 400 ms; OffsetFetch at
	// 450 ms still answers 2.
	h.Group.Fetches[3].Offset = 2
	checkOnly(t, h, map[string]int{vCommitLost: 1})
}

func TestChecker_FinalCommitLostDetected(t *testing.T) {
	h := groupHistory()
	// After the run partition 0 is back at 2 (the failover lost the commit
	// of 3); the fresh member resumed there, consistently.
	h.Group.Final[0] = 2
	h.Group.Resumed[0] = 2
	checkOnly(t, h, map[string]int{vCommitLost: 1})
}

func TestChecker_CommitPhantomDetected(t *testing.T) {
	h := groupHistory()
	// Partition 1 was committed to 2 only, yet the final offset is 3.
	h.Group.Commits[1].Offset = 2
	h.Group.Fetches[2].Offset = 2
	checkOnly(t, h, map[string]int{vCommitPhantom: 1})
	// An unacknowledged commit of 3 (a timeout) explains it.
	h.Group.Commits = append(h.Group.Commits, jCommit{Member: 1, Partition: 1, Offset: 3, Sent: at(500), Done: at(510)})
	checkOnly(t, h, nil)
}

func TestChecker_CommitPastEndDetected(t *testing.T) {
	h := groupHistory()
	h.Group.Commits = append(h.Group.Commits, jCommit{Member: 1, Partition: 1, Offset: 5, Sent: at(500), Done: at(510), Acked: true})
	h.Group.Final[1] = 5
	checkOnly(t, h, map[string]int{vCommitPastEnd: 1})
}

func TestChecker_UnprocessedDetected(t *testing.T) {
	h := groupHistory()
	// Nobody processed 0/1, yet the group committed past it.
	h.Group.Processed = slices.Delete(h.Group.Processed, 1, 2)
	checkOnly(t, h, map[string]int{vUnprocessed: 1})
}

func TestChecker_ProcessedLostDetected(t *testing.T) {
	h := groupHistory()
	h.Group.Processed = append(h.Group.Processed, jRecord{1, 1, "elsewhere", -1})
	checkOnly(t, h, map[string]int{vProcessedLost: 1})
}

func TestChecker_ResumeWrongDetected(t *testing.T) {
	h := groupHistory()
	// Committed offset 2 of partition 1 (an unacknowledged commit of 3
	// failed), but the fresh member started at 0: the commit was lost.
	h.Group.Commits[1].Offset = 2
	h.Group.Fetches[2].Offset = 2
	h.Group.Final[1] = 2
	h.Group.Resumed[1] = 0
	checkOnly(t, h, map[string]int{vResumeWrong: 1})
	// Given nothing at all is wrong too.
	delete(h.Group.Resumed, 1)
	checkOnly(t, h, map[string]int{vResumeWrong: 1})
	h.Group.Resumed[1] = 2
	checkOnly(t, h, nil)
}

func TestChecker_TxnLostDetected(t *testing.T) {
	h := groupHistory()
	// t1's commit was acknowledged; its record in partition 1 is gone (and
	// the live consumer had read it).
	h.Txn.Final = slices.Delete(h.Txn.Final, 1, 2)
	checkOnly(t, h, map[string]int{vTxnLost: 1, vTxnReadThenLost: 1})
}

func TestChecker_TxnPartialDetected(t *testing.T) {
	h := groupHistory()
	// t3's commit went unacknowledged; only half of it is visible.
	h.Txn.Final = h.Txn.Final[:3]
	checkOnly(t, h, map[string]int{vTxnPartial: 1})
}

func TestChecker_TxnAbortedVisibleDetected(t *testing.T) {
	h := groupHistory()
	h.Txn.Final = append(h.Txn.Final, jRecord{0, 1, "b1", 1})
	checkOnly(t, h, map[string]int{vTxnAbortedVisible: 1})
	// Seen live only, and gone later: both violations.
	h = groupHistory()
	h.Txn.Reads = append(h.Txn.Reads, jRecord{1, 1, "b2", 1})
	checkOnly(t, h, map[string]int{vTxnAbortedVisible: 1, vTxnReadThenLost: 1})
}

func TestChecker_TxnDuplicatedDetected(t *testing.T) {
	h := groupHistory()
	h.Txn.Final = append(h.Txn.Final, jRecord{0, 4, "a1", 2})
	checkOnly(t, h, map[string]int{vTxnDuplicated: 1})
}

func TestChecker_TxnPhantomDetected(t *testing.T) {
	h := groupHistory()
	// A value nobody wrote, and t3's partition-0 record in partition 1.
	h.Txn.Final = append(h.Txn.Final, jRecord{0, 4, "nobody", 2})
	h.Txn.Final[2].Partition = 1
	h.Txn.Final[2].Offset = 5
	checkOnly(t, h, map[string]int{vTxnPhantom: 2})
}

func TestChecker_EpochTwoBatchesDetected(t *testing.T) {
	h := groupHistory()
	// A second leader of epoch 1 served another record at 0/1 to the
	// live consumer.
	h.Attempted["zombie"] = true
	h.Reads = append(h.Reads, jRecord{0, 1, "zombie", 1})
	checkOnly(t, h, map[string]int{vEpochTwoBatches: 1, vReadThenLost: 1})
}

func TestChecker_EpochRewrittenDetected(t *testing.T) {
	h := groupHistory()
	// The live consumer read 0/2 (same value) with epoch 1, the final read
	// with epoch 2: the batch was written again.
	h.Reads[2].Epoch = 1
	checkOnly(t, h, map[string]int{vEpochRewritten: 1})
}

func TestChecker_EpochBackDetected(t *testing.T) {
	h := groupHistory()
	// Offset 1 of partition 0 carries epoch 2, offset 2 epoch 1 (in every
	// read): an older leader's batch above a newer one's.
	for _, rs := range [][]jRecord{h.Reads, h.Final, h.Group.Processed} {
		for i := range rs {
			switch (jPos{rs[i].Partition, rs[i].Offset}) {
			case jPos{0, 1}:
				rs[i].Epoch = 2
			case jPos{0, 2}:
				rs[i].Epoch = 1
			}
		}
	}
	checkOnly(t, h, map[string]int{vEpochBack: 1})
	// The transactional topic is checked too.
	h = groupHistory()
	h.Txn.Final[2].Epoch = 0
	checkOnly(t, h, map[string]int{vEpochBack: 1})
}
