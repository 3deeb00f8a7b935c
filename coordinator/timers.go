package coordinator

import (
	"log/slog"
	"sync"
	"time"
)

// Timer is a scheduled call made by Config.AfterFunc. Stop prevents the call
// if it has not started yet and reports whether it did so.
type Timer interface {
	Stop() bool
}

// clockDefaults fills the fields Config and TxnConfig share when they are
// nil: the wall clock (time.Now, time.AfterFunc) and a logger that discards.
func clockDefaults(now *func() time.Time, afterFunc *func(time.Duration, func()) Timer, logger **slog.Logger) {
	if *now == nil {
		*now = time.Now
	}
	if *afterFunc == nil {
		*afterFunc = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
}

// timerSlot holds at most one scheduled callback. Rescheduling or cancelling
// bumps seq, so a callback that already fired but waits for the lock sees it
// is stale and does nothing.
type timerSlot struct {
	t   Timer
	seq uint64
}

// timers arms the timerSlots of a coordinator (Coordinator, TxnCoordinator)
// so that their callbacks run under the coordinator's lock and never after
// it closed.
type timers struct {
	mu        *sync.Mutex // the coordinator's lock
	closed    *bool       // the coordinator's closed flag, guarded by mu
	afterFunc func(d time.Duration, f func()) Timer
	seq       uint64
}

func newTimers(mu *sync.Mutex, closed *bool, afterFunc func(d time.Duration, f func()) Timer) timers {
	return timers{mu: mu, closed: closed, afterFunc: afterFunc}
}

// scheduleLocked (re)arms s to run f under the lock after d, unless s is
// cancelled or rescheduled or the coordinator closed meanwhile. f may return
// a function to run after the lock is released (marker writes).
//
// Lock should be held.
func (ts *timers) scheduleLocked(s *timerSlot, d time.Duration, f func() func()) {
	ts.cancelLocked(s)
	ts.seq++
	seq := ts.seq
	s.seq = seq
	s.t = ts.afterFunc(d, func() {
		if after := ts.fire(s, seq, f); after != nil {
			after()
		}
	})
}

// fire runs f under the lock if s still holds the callback numbered seq.
func (ts *timers) fire(s *timerSlot, seq uint64, f func() func()) func() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if *ts.closed || s.seq != seq {
		return nil
	}
	s.t, s.seq = nil, 0
	return f()
}

// pendingLocked reports whether s holds a callback not yet run.
//
// Lock should be held.
func (ts *timers) pendingLocked(s *timerSlot) bool { return s.seq != 0 }

// cancelLocked disarms s.
//
// Lock should be held.
func (ts *timers) cancelLocked(s *timerSlot) {
	if s.t != nil {
		s.t.Stop()
	}
	s.t, s.seq = nil, 0
}
