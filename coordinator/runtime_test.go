package coordinator

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// keyIn returns a key of partition p among n.
func keyIn(t *testing.T, p, n int32) string {
	t.Helper()
	for i := range 1000 {
		if k := fmt.Sprintf("key-%d", i); PartitionFor(k, n) == p {
			return k
		}
	}
	t.Fatalf("no key of partition %d", p)
	return ""
}

// TestRuntime_LoadStates walks a partition through the runtime's load
// states and checks what a request for one of its keys gets in each.
func TestRuntime_LoadStates(t *testing.T) {
	var rt coordinatorRuntime
	rt.initRuntime("__test", newMemLog(), 4, nil)
	key := keyIn(t, 2, 4)
	code := func() int16 { return rt.keyCode(key) }

	if got := code(); got != kerr.NotCoordinator.Code {
		t.Fatalf("before a load: %d, want NOT_COORDINATOR", got)
	}
	var during int16
	var activated, after bool
	err := rt.loadPartition(2, func() error {
		during = code() // the replay runs without the lock
		return nil
	}, func() (func(), error) {
		activated = true
		return func() { after = true }, nil
	})
	if err != nil || !activated || !after {
		t.Fatalf("load: err %v, activated %v, after %v", err, activated, after)
	}
	if during != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("while loading: %d, want COORDINATOR_LOAD_IN_PROGRESS", during)
	}
	if got := code(); got != 0 {
		t.Fatalf("loaded: %d, want 0", got)
	}
	if got := rt.LoadedPartitions(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("LoadedPartitions = %v, want [2]", got)
	}
	if err := rt.loadPartition(2, func() error { t.Fatal("a loaded partition replayed again"); return nil }, nil); err != nil {
		t.Fatal(err)
	}

	dropped := false
	rt.unloadPartition(2, func() { dropped = true })
	if !dropped || code() != kerr.NotCoordinator.Code {
		t.Fatalf("unload: dropped %v, code %d", dropped, code())
	}

	// A failed replay forgets the partition and installs nothing.
	boom := errors.New("boom")
	err = rt.loadPartition(2, func() error { return boom }, func() (func(), error) {
		t.Fatal("activated after a failed replay")
		return nil, nil
	})
	if !errors.Is(err, boom) || code() != kerr.NotCoordinator.Code {
		t.Fatalf("failed replay: err %v, code %d", err, code())
	}
	// So does a failed activation.
	err = rt.loadPartition(2, func() error { return nil }, func() (func(), error) { return nil, boom })
	if !errors.Is(err, boom) || code() != kerr.NotCoordinator.Code {
		t.Fatalf("failed activation: err %v, code %d", err, code())
	}

	// An unload during the replay wins: nothing is installed.
	err = rt.loadPartition(2, func() error {
		rt.unloadPartition(2, func() {})
		return nil
	}, func() (func(), error) {
		t.Fatal("activated after an unload")
		return nil, nil
	})
	if err != nil || code() != kerr.NotCoordinator.Code {
		t.Fatalf("unloaded while loading: err %v, code %d", err, code())
	}

	if err := rt.close(func() {}); err != nil {
		t.Fatal(err)
	}
	if got := code(); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("closed: %d, want COORDINATOR_NOT_AVAILABLE", got)
	}
	if err := rt.close(func() { t.Fatal("stopped twice") }); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v, want ErrClosed", err)
	}
}

// TestRuntime_NoLogServesEverything: without an internal topic every key
// is served and loads do nothing.
func TestRuntime_NoLogServesEverything(t *testing.T) {
	var rt coordinatorRuntime
	rt.initRuntime("__test", nil, 4, nil)
	if got := rt.keyCode("any"); got != 0 {
		t.Fatalf("keyCode = %d, want 0", got)
	}
	if err := rt.loadPartition(1, func() error { t.Fatal("replayed without a log"); return nil }, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRuntime_WriteHoldsTheCheckpoint: a batch in flight keeps logNext
// where it was and the checkpoint from being written; done moves logNext
// only when told the batch is committed and held.
func TestRuntime_WriteHoldsTheCheckpoint(t *testing.T) {
	var rt coordinatorRuntime
	log := newMemLog()
	rt.initRuntime("__test", log, 1, nil)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	next, _, done, err := rt.writeLocked(0, rt.appendRecords([]LogRecord{{Key: []byte("k")}}))
	if err != nil || next != 1 {
		t.Fatalf("writeLocked: next %d, err %v", next, err)
	}
	if rt.inflight[0] != 1 || rt.logNext[0] != 0 {
		t.Fatalf("in flight: inflight %d, logNext %d", rt.inflight[0], rt.logNext[0])
	}
	done(false)
	if rt.inflight[0] != 0 || rt.logNext[0] != 0 {
		t.Fatalf("lost batch: inflight %d, logNext %d", rt.inflight[0], rt.logNext[0])
	}
	_, _, done, _ = rt.writeLocked(0, rt.appendRecords([]LogRecord{{Key: []byte("k")}}))
	done(true)
	if rt.logNext[0] != 2 {
		t.Fatalf("committed batch: logNext %d, want 2", rt.logNext[0])
	}
	if got := rt.commitErrLocked("k", errors.New("leader moved")); got != kerr.NotCoordinator {
		t.Fatalf("commitErrLocked of a failed wait = %v", got)
	}
}
