package coordinator

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testConfig(dir string, clock *manualClock) Config {
	return Config{Dir: dir, Now: clock.Now, AfterFunc: clock.AfterFunc, InitialRebalanceDelay: -1}
}

func joinReq(group, member string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = member
	r.SessionTimeoutMillis = 10000
	r.RebalanceTimeoutMillis = 30000
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMetadata([]string{"t"}, "")}}
	return r
}

// joinAndSync runs one member through a complete first rebalance with the
// manual clock and returns its member id and generation.
func joinAndSync(t *testing.T, c *Coordinator, clock *manualClock, group string) (string, int32) {
	t.Helper()
	r := c.JoinGroup(context.Background(), joinReq(group, ""), "cli", "/h")
	if r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	id := r.MemberID
	done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { done <- c.JoinGroup(context.Background(), joinReq(group, id), "cli", "/h") }()
	waitParked(t, c, 1)
	clock.Advance(0)
	var jr *kmsg.JoinGroupResponse
	select {
	case jr = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("join did not complete")
	}
	if jr.ErrorCode != 0 || jr.LeaderID != id {
		t.Fatalf("join: %v leader %q", kerr.ErrorForCode(jr.ErrorCode), jr.LeaderID)
	}
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = group, id, jr.Generation
	sr.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: id, MemberAssignment: []byte("assignment")}}
	if resp := c.SyncGroup(context.Background(), sr); resp.ErrorCode != 0 || string(resp.MemberAssignment) != "assignment" {
		t.Fatalf("sync: %v %q", kerr.ErrorForCode(resp.ErrorCode), resp.MemberAssignment)
	}
	return id, jr.Generation
}

func waitParked(t *testing.T, c *Coordinator, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.parkedCalls() != n {
		if time.Now().After(deadline) {
			t.Fatalf("parked calls: %d, want %d", c.parkedCalls(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func commit(t *testing.T, c *Coordinator, group, member string, gen int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.OffsetCommit(req)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
}

func describeOne(c *Coordinator, group string) kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	return c.DescribeGroups(req).Groups[0]
}

func TestCoordinator_RestartRestoresGroupsAndOffsets(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "close"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			clock := newManualClock()
			c, err := Open(testConfig(dir, clock))
			if err != nil {
				t.Fatal(err)
			}
			id, gen := joinAndSync(t, c, clock, "g")
			commit(t, c, "g", id, gen, 42)

			reopenDir := dir
			if crash {
				// What kill -9 leaves: the file as of the last
				// acknowledged write, without Close.
				reopenDir = t.TempDir()
				copyFile(t, filepath.Join(dir, dbFileName), filepath.Join(reopenDir, dbFileName))
				defer c.Close()
			} else if err := c.Close(); err != nil {
				t.Fatal(err)
			}

			c2, err := Open(testConfig(reopenDir, clock))
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			if got := c2.Committed("g")["t"][0]; got != 42 {
				t.Fatalf("committed offset after reopen: %d, want 42", got)
			}
			d := describeOne(c2, "g")
			if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 1 || d.Members[0].MemberID != id || string(d.Members[0].MemberAssignment) != "assignment" {
				t.Fatalf("restored group: %+v", d)
			}
			// The restored member keeps working in its generation.
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.MemberID, hb.Generation = "g", id, gen
			if r := c2.Heartbeat(hb); r.ErrorCode != 0 {
				t.Fatalf("heartbeat after reopen: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			commit(t, c2, "g", id, gen, 43)
			// Without heartbeats it expires and the group empties.
			clock.Advance(11 * time.Second)
			if d := describeOne(c2, "g"); d.State != "Empty" {
				t.Fatalf("state after session expiry: %s", d.State)
			}
			if got := c2.Committed("g")["t"][0]; got != 43 {
				t.Fatalf("committed offset: %d, want 43", got)
			}
		})
	}
}

func TestCoordinator_JoinUnblocksWhenContextEnds(t *testing.T) {
	clock := newManualClock()
	c, err := Open(testConfig(t.TempDir(), clock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.JoinGroup(context.Background(), joinReq("g", ""), "cli", "/h")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { done <- c.JoinGroup(ctx, joinReq("g", r.MemberID), "cli", "/h") }()
	waitParked(t, c, 1)
	cancel()
	select {
	case jr := <-done:
		if jr.ErrorCode != kerr.RebalanceInProgress.Code {
			t.Fatalf("cancelled join: %v", kerr.ErrorForCode(jr.ErrorCode))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("join did not return after its context ended")
	}
	if n := c.parkedCalls(); n != 0 {
		t.Fatalf("parked calls after cancel: %d", n)
	}
}

func TestCoordinator_CloseAnswersParkedCalls(t *testing.T) {
	clock := newManualClock()
	c, err := Open(testConfig(t.TempDir(), clock))
	if err != nil {
		t.Fatal(err)
	}
	r := c.JoinGroup(context.Background(), joinReq("g", ""), "cli", "/h")
	done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { done <- c.JoinGroup(context.Background(), joinReq("g", r.MemberID), "cli", "/h") }()
	waitParked(t, c, 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case jr := <-done:
		if jr.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("join after close: %v", kerr.ErrorForCode(jr.ErrorCode))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a JoinGroup blocked")
	}
	if err := c.Close(); err != ErrClosed {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCoordinator_RealClockGroup runs several members through join and sync
// concurrently on the real clock (for the race detector).
func TestCoordinator_RealClockGroup(t *testing.T) {
	c, err := Open(Config{Dir: t.TempDir(), InitialRebalanceDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	assignments := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.JoinGroup(ctx, joinReq("g", ""), "cli", "/h")
			id := r.MemberID
			var s *kmsg.SyncGroupResponse
			// Like a client: rejoin while a later member's arrival
			// restarts the rebalance.
			for attempt := 0; ; attempt++ {
				if attempt == 20 || ctx.Err() != nil {
					t.Errorf("no stable assignment after %d attempts", attempt)
					return
				}
				r = c.JoinGroup(ctx, joinReq("g", id), "cli", "/h")
				if r.ErrorCode != 0 {
					t.Errorf("join: %v", kerr.ErrorForCode(r.ErrorCode))
					return
				}
				sr := kmsg.NewPtrSyncGroupRequest()
				sr.Group, sr.MemberID, sr.Generation = "g", id, r.Generation
				if r.LeaderID == id {
					for _, m := range r.Members {
						sr.GroupAssignment = append(sr.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.MemberID, MemberAssignment: []byte(m.MemberID)})
					}
				}
				s = c.SyncGroup(ctx, sr)
				if s.ErrorCode == kerr.RebalanceInProgress.Code || s.ErrorCode == kerr.IllegalGeneration.Code {
					continue
				}
				if s.ErrorCode != 0 {
					t.Errorf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
					return
				}
				break
			}
			assignments[i] = string(s.MemberAssignment)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, a := range assignments {
		if a == "" || seen[a] {
			t.Fatalf("assignments: %q", assignments)
		}
		seen[a] = true
	}
	if t.Failed() {
		return
	}
	if d := describeOne(c, "g"); d.State != "Stable" || len(d.Members) != n {
		t.Fatalf("group: %s with %d members", d.State, len(d.Members))
	}
}
