package link

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// A source broker that fails (kill -9) holds back only the partitions it
// leads: those of the other source brokers are fetched every round, not
// once per backoff of the whole link; the failing broker is asked again
// only after its own backoff, which doubles, and a round left with only
// its partitions waits instead of spinning; its error stays in the status
// until the source elects other leaders, whose partitions are then fetched
// from them at once, the error gone.
func TestFetchRound_FailingSourceBrokerHoldsOnlyItsPartitions(t *testing.T) {
	ctx := context.Background()
	s := memStore(t)
	l := &Link{Name: "mig", Source: []string{"127.0.0.1:1"}, Topics: "t"}
	if err := s.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMirror(ctx, &Mirror{Link: "mig", Topic: "t", State: Mirroring}); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{parts: map[string]int32{"t": 2}, logs: map[tp]*fakeLog{}}
	m := NewManager(Config{NodeID: 1, Store: s, Host: h})
	r, err := newRunner(m, l)
	if err != nil {
		t.Fatal(err)
	}
	defer r.cl.Close()

	// The source: t-0 led by broker 1, t-1 by broker 2; broker 1 dead.
	var mu sync.Mutex
	leaders := []int32{1, 2}
	dead := map[int32]bool{1: true}
	calls := map[int32]int{}
	metadataReads := 0
	r.readMetadata = func(context.Context) (map[string]*sourceTopic, error) {
		mu.Lock()
		defer mu.Unlock()
		metadataReads++
		return map[string]*sourceTopic{"t": {leaders: append([]int32(nil), leaders...)}}, nil
	}
	r.fetch = func(_ context.Context, leader int32, parts []*mpart, _ map[string]*sourceTopic) error {
		mu.Lock()
		defer mu.Unlock()
		calls[leader] += len(parts)
		if dead[leader] {
			return errors.New("dial tcp: connection refused")
		}
		return nil
	}
	count := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return calls[1], calls[2]
	}
	status := func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.lastErr
	}

	work := r.assign()
	if len(work) != 2 {
		t.Fatalf("%d partitions to fetch, want 2", len(work))
	}
	if wait := r.fetchRound(ctx, work); wait != 0 {
		t.Fatalf("broker 2 answered, yet the next round waits %v", wait)
	}
	if st := status(); !strings.Contains(st, "source broker 1: dial tcp: connection refused") {
		t.Fatalf("status error %q, want broker 1's", st)
	}
	if d := r.down[1]; d == nil || d.wait != minBackoff || time.Until(d.until) > minBackoff {
		t.Fatalf("broker 1's backoff %+v, want %v", d, minBackoff)
	}
	// Rounds while its backoff lasts (made long, so that no round
	// outlives it on a busy machine): broker 2's partition every time,
	// broker 1's never.
	r.down[1].until = time.Now().Add(time.Hour)
	for range 20 {
		if wait := r.fetchRound(ctx, r.assign()); wait != 0 {
			t.Fatalf("broker 2 answered, yet the next round waits %v", wait)
		}
	}
	if b1, b2 := count(); b1 != 1 || b2 != 21 {
		t.Fatalf("21 rounds fetched broker 1 %d times and broker 2 %d times; want 1 and 21", b1, b2)
	}
	if st := status(); !strings.Contains(st, "source broker 1") {
		t.Fatalf("status error %q while broker 1's partition is held back, want broker 1's", st)
	}
	// Only broker 1's partition left (t-1 promoted, say): the round waits
	// out the backoff instead of spinning.
	var t0 []*mpart
	for _, mp := range work {
		if mp.partition == 0 {
			t0 = append(t0, mp)
		}
	}
	if wait := r.fetchRound(ctx, t0); wait != maxBackoff {
		t.Fatalf("a round of only the failing broker's partition waits %v, want %v (the longest)", wait, maxBackoff)
	}
	if b1, _ := count(); b1 != 1 {
		t.Fatalf("broker 1 asked %d times within its backoff", b1)
	}
	// The backoff ends: asked again, it fails again, and waits twice as
	// long; with every broker failing, the round waits too.
	r.down[1].until = time.Now()
	if wait := r.fetchRound(ctx, t0); wait <= 0 || wait > 2*minBackoff {
		t.Fatalf("after the second failure the round waits %v, want (0, %v]", wait, 2*minBackoff)
	}
	if b1, _ := count(); b1 != 2 || r.down[1].wait != 2*minBackoff {
		t.Fatalf("broker 1 asked %d times, backoff %v; want 2 and %v", b1, r.down[1].wait, 2*minBackoff)
	}
	// The source elects broker 2 for t-0; the metadata is read again
	// (every downMetadataEvery while a broker fails) and t-0 is fetched
	// from broker 2 at once, in spite of broker 1's backoff.
	mu.Lock()
	leaders[0] = 2
	reads := metadataReads
	mu.Unlock()
	r.mu.Lock()
	r.srcAt = r.srcAt.Add(-downMetadataEvery)
	r.mu.Unlock()
	if wait := r.fetchRound(ctx, r.assign()); wait != 0 {
		t.Fatalf("after the election the round waits %v", wait)
	}
	mu.Lock()
	reread := metadataReads > reads
	mu.Unlock()
	if b1, b2 := count(); !reread || b1 != 2 || b2 != 23 {
		t.Fatalf("after the election: metadata read again %v, broker 1 asked %d times, broker 2 %d; want true, 2, 23", reread, b1, b2)
	}
	if st := status(); st != "" || len(r.down) != 0 {
		t.Fatalf("every partition fetched, yet the status says %q and %d brokers are held back", st, len(r.down))
	}
}
