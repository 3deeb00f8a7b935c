package compat

import (
	"fmt"
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
			h.Reads = append(h.Reads, jRecord{p, o, v})
			h.Final = append(h.Final, jRecord{p, o, v})
		}
	}
	h.HWs = []jHW{
		{Node: 1, Partition: 0, LeaderEpoch: 1, HW: 1, Sent: at(50), Received: at(55)},
		{Node: 1, Partition: 0, LeaderEpoch: 1, HW: 2, Sent: at(150), Received: at(155)},
		{Node: 2, Partition: 0, LeaderEpoch: 2, HW: 2, Sent: at(250), Received: at(255)},
		{Node: 2, Partition: 0, LeaderEpoch: 2, HW: 3, Sent: at(350), Received: at(355)},
		{Node: 3, Partition: 1, LeaderEpoch: 1, HW: 3, Sent: at(350), Received: at(355)},
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
	if !strings.Contains(r.Summary(), "lost=0") {
		t.Errorf("summary lacks lost=0:\n%s", r.Summary())
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
	h.Final = append(h.Final, jRecord{1, 3, "v1-2"})
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
	// leader that later lost it, and another that was replaced.
	h.Attempted["gone"] = true
	h.Attempted["old"] = true
	h.Reads = append(h.Reads, jRecord{1, 3, "gone"}, jRecord{0, 2, "old"})
	checkOnly(t, h, map[string]int{vReadThenLost: 2})
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
	h.Final = append(h.Final, jRecord{0, 3, "never-written"})
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
	h.Final = append(h.Final, jRecord{0, 3, "late"})
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
