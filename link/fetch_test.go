package link

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource is a source cluster for fetchRound: topic t's partitions
// led by leaders, a Fetch answered by answer (nil: at once, no error).
type fakeSource struct {
	mu            sync.Mutex
	leaders       []int32
	calls         map[int32]int
	metadataReads int
	active        map[tp]bool // partitions a fetch is out for
	answer        func(ctx context.Context, leader int32) error
}

// fetchRunner is a runner of link mig mirroring t (two partitions, both
// led here) from src.
func fetchRunner(t *testing.T, src *fakeSource) *runner {
	t.Helper()
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
	r, err := newRunner(NewManager(Config{NodeID: 1, Store: s, Host: h}), l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	src.calls, src.active = map[int32]int{}, map[tp]bool{}
	r.readMetadata = func(context.Context) (map[string]*sourceTopic, error) {
		src.mu.Lock()
		defer src.mu.Unlock()
		src.metadataReads++
		return map[string]*sourceTopic{"t": {leaders: append([]int32(nil), src.leaders...)}}, nil
	}
	r.fetch = func(ctx context.Context, leader int32, parts []*mpart, _ map[string]*sourceTopic) error {
		src.mu.Lock()
		src.calls[leader] += len(parts)
		for _, mp := range parts {
			if src.active[mp.tp] {
				t.Errorf("%s-%d fetched twice at once", mp.topic, mp.partition)
			}
			src.active[mp.tp] = true
		}
		answer := src.answer
		src.mu.Unlock()
		var err error
		if answer != nil {
			err = answer(ctx, leader)
		}
		src.mu.Lock()
		for _, mp := range parts {
			delete(src.active, mp.tp)
		}
		src.mu.Unlock()
		return err
	}
	return r
}

func (s *fakeSource) count() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[1], s.calls[2]
}

func (r *runner) status() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetchErr
}

// A source broker that fails (kill -9) holds back only the partitions it
// leads: those of the other source brokers are fetched every round, not
// once per backoff of the whole link; the failing broker is asked again
// only after its own backoff, which doubles, and a round left with only
// its partitions waits instead of spinning; its error stays in the status
// until the source elects other leaders, whose partitions are then fetched
// from them at once, the error gone.
func TestFetchRound_FailingSourceBrokerHoldsOnlyItsPartitions(t *testing.T) {
	ctx := context.Background()
	// The source: t-0 led by broker 1, t-1 by broker 2; broker 1 dead.
	src := &fakeSource{leaders: []int32{1, 2}}
	src.answer = func(_ context.Context, leader int32) error {
		if leader == 1 {
			return errors.New("dial tcp: connection refused")
		}
		return nil
	}
	r := fetchRunner(t, src)
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		r.fetches.Wait()
	}()
	mu := &src.mu
	count, status := src.count, r.status

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
	src.leaders[0] = 2
	reads := src.metadataReads
	mu.Unlock()
	r.mu.Lock()
	r.srcAt = r.srcAt.Add(-downMetadataEvery)
	r.mu.Unlock()
	if wait := r.fetchRound(ctx, r.assign()); wait != 0 {
		t.Fatalf("after the election the round waits %v", wait)
	}
	mu.Lock()
	reread := src.metadataReads > reads
	mu.Unlock()
	if b1, b2 := count(); !reread || b1 != 2 || b2 != 23 {
		t.Fatalf("after the election: metadata read again %v, broker 1 asked %d times, broker 2 %d; want true, 2, 23", reread, b1, b2)
	}
	if st := status(); st != "" || len(r.down) != 0 {
		t.Fatalf("every partition fetched, yet the status says %q and %d brokers are held back", st, len(r.down))
	}
}

// A source broker that does not answer (stopped, its host gone: its Fetch
// hangs until it times out) holds back only the partitions it leads: a
// round waits roundWait for it, then goes on with the other brokers'
// partitions, round after round, without sending it anything more, and
// never fetches a partition twice at once. When its fetch times out, the
// status says so; when the source elects another leader for its
// partition, the fetch still out to it is cut short (not a failure of the
// broker's) and the partition fetched from the new leader.
func TestFetchRound_HungSourceBrokerHoldsOnlyItsPartitions(t *testing.T) {
	ctx := context.Background()
	src := &fakeSource{leaders: []int32{1, 2}}
	hung, release := make(chan struct{}, 1), make(chan struct{})
	src.answer = func(ctx context.Context, leader int32) error {
		if leader != 1 {
			return nil
		}
		hung <- struct{}{}
		select {
		case <-release:
			return errors.New("read tcp: i/o timeout")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r := fetchRunner(t, src)
	// Round 1 and the retry wait this long for broker 1; every other
	// round only for broker 2, which answers at once.
	r.roundWait = time.Second
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel() // the fetches still out end, with the test failed
		close(release)
		r.fetches.Wait()
	}()

	if wait := r.fetchRound(ctx, r.assign()); wait != 0 {
		t.Fatalf("the first round waits %v more", wait)
	}
	<-hung
	for range 20 {
		if wait := r.fetchRound(ctx, r.assign()); wait != 0 {
			t.Fatalf("broker 2 answered, yet the next round waits %v", wait)
		}
	}
	if b1, b2 := src.count(); b1 != 1 || b2 != 21 {
		t.Fatalf("21 rounds with broker 1 hung sent it %d fetches and broker 2 %d; want 1 and 21", b1, b2)
	}
	if st := r.status(); st != "" {
		t.Fatalf("status error %q before broker 1's fetch failed", st)
	}
	// Its fetch times out: the status says so.
	release <- struct{}{}
	if err := waitFor(time.Minute, func() bool {
		r.fetchRound(ctx, r.assign())
		return strings.Contains(r.status(), "source broker 1: read tcp: i/o timeout")
	}); err != nil {
		t.Fatalf("broker 1's failure not in the status: %q", r.status())
	}
	// Asked again after its backoff, it hangs again; the source elects
	// broker 2 for t-0 meanwhile.
	r.down[1].until = time.Now()
	r.fetchRound(ctx, r.assign())
	<-hung
	if b1, _ := src.count(); b1 != 2 {
		t.Fatalf("broker 1 sent %d fetches, want 2", b1)
	}
	src.mu.Lock()
	src.leaders[0] = 2
	src.mu.Unlock()
	r.mu.Lock()
	r.srcAt = r.srcAt.Add(-downMetadataEvery)
	r.mu.Unlock()
	if err := waitFor(time.Minute, func() bool {
		_, before := src.count()
		r.fetchRound(ctx, r.assign())
		_, after := src.count()
		return after == before+2 // t-0 and t-1 from broker 2
	}); err != nil {
		t.Fatalf("t-0 never fetched from its new leader, broker 2")
	}
	if b1, _ := src.count(); b1 != 2 {
		t.Fatalf("broker 1 sent %d fetches, want 2", b1)
	}
	if st := r.status(); st != "" || len(r.down) != 0 || len(r.inflight) != 0 {
		t.Fatalf("every partition fetched from broker 2, yet the status says %q, %d brokers held back, %d fetches out", st, len(r.down), len(r.inflight))
	}
}

// waitFor calls f until it reports true, for d at most.
func waitFor(d time.Duration, f func() bool) error {
	for end := time.Now().Add(d); ; {
		if f() {
			return nil
		}
		if time.Now().After(end) {
			return errors.New("timed out")
		}
	}
}
