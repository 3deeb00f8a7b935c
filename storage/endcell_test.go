package storage

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEndCell_ReadersSeeWholeStates stores states whose fields agree (pos
// is 7×hw, seg alternates with hw's parity) from two writers while readers
// load them: a reader never sees fields of two different states, and hw
// never goes back for one reader. Run it with -race too.
func TestEndCell_ReadersSeeWholeStates(t *testing.T) {
	var c endCell
	segs := [2]*segment{{base: 0}, {base: 1}}
	c.Store(endState{hw: 0, seg: segs[0], pos: 0})
	const n = 20000
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(-1)
			for !stop.Load() {
				st := c.Load()
				if st.pos != 7*st.hw || st.seg != segs[st.hw%2] {
					t.Errorf("torn state: hw %d pos %d seg %d", st.hw, st.pos, st.seg.base)
					return
				}
				if st.hw < last {
					t.Errorf("hw went back from %d to %d", last, st.hw)
					return
				}
				last = st.hw
			}
		}()
	}
	var mu sync.Mutex // writers are serialised, as by Log.mu
	next := int64(1)
	var writers sync.WaitGroup
	for range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range n / 2 {
				mu.Lock()
				c.Store(endState{hw: next, seg: segs[next%2], pos: 7 * next})
				next++
				mu.Unlock()
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	wg.Wait()
	if st := c.Load(); st.hw != n || st.pos != 7*n {
		t.Fatalf("last state %+v, want hw %d", st, n)
	}
}

// TestLog_HighWatermarkPositionAgreesUnderAppends appends equal batches to
// one segment while readers load the published end: its position is
// always the end of the batch below its high watermark.
func TestLog_HighWatermarkPositionAgreesUnderAppends(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	batch := simpleBatch(1, 50, 1)
	size := int64(len(batch))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				st := l.end.Load()
				if st.pos != st.hw*size || st.seg == nil {
					t.Errorf("high watermark %d at position %d, want %d", st.hw, st.pos, st.hw*size)
					return
				}
			}
		}()
	}
	for range 2000 {
		mustAppend(t, l, batch)
	}
	stop.Store(true)
	wg.Wait()
	if hw := l.HighWatermark(); hw != 2000 {
		t.Fatalf("high watermark %d, want 2000", hw)
	}
}
