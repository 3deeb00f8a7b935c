package link

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncHost is the controller, leading every partition of its topics; its
// logs may be read from any goroutine.
type syncHost struct {
	parts map[string]int32
	mu    sync.Mutex
	logs  map[tp]*flowLog
}

func (h *syncHost) Controller() bool { return true }
func (h *syncHost) Partitions(topic string) (int32, bool) {
	n, ok := h.parts[topic]
	return n, ok
}
func (h *syncHost) TopicConfigs(string) map[string]string                               { return nil }
func (h *syncHost) CreateTopic(context.Context, string, int32, map[string]string) error { return nil }
func (h *syncHost) CreatePartitions(context.Context, string, int32) error               { return nil }
func (h *syncHost) AlterTopicConfigs(context.Context, string, map[string]string, []string) error {
	return nil
}
func (h *syncHost) Lead(topic string, p int32) Log { return h.log(tp{topic, p}) }
func (h *syncHost) log(k tp) *flowLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.logs[k] == nil {
		h.logs[k] = &flowLog{}
	}
	return h.logs[k]
}
func (h *syncHost) HighWatermarks(context.Context, string, int32) (map[int32]int64, error) {
	return nil, nil
}
func (h *syncHost) StableOffsets(context.Context, string, int32) (map[int32]int64, error) {
	return nil, nil
}
func (h *syncHost) CommittedOffsets(context.Context, string) (map[string]map[int32]int64, error) {
	return nil, nil
}
func (h *syncHost) CommitOffsets(context.Context, string, map[string]map[int32]int64) error {
	return nil
}
func (h *syncHost) CreateACLs(context.Context, []kmsg.CreateACLsRequestCreation) error { return nil }
func (h *syncHost) PeerLinkStatus(context.Context, string) ([]*NodeStatus, []string)   { return nil, nil }

// flowLog is a mirror log whose end the test's fake fetch moves.
type flowLog struct{ leo atomic.Int64 }

func (l *flowLog) LogStartOffset() int64                        { return 0 }
func (l *flowLog) LogEndOffset() int64                          { return l.leo.Load() }
func (l *flowLog) AppendMirrored([]byte) error                  { return nil }
func (l *flowLog) RestartAt(int64) error                        { return nil }
func (l *flowLog) AdvanceLogStart(int64) error                  { return nil }
func (l *flowLog) AbortOpenTransactions() ([]AbortedTxn, error) { return nil, nil }

// hungBroker is a source broker that takes connections and reads
// requests but never answers one (SIGSTOPped, say); requests counts the
// reads.
func hungBroker(t *testing.T) (addr string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	requests = &atomic.Int64{}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						requests.Add(1)
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), requests
}

// syncRunner is a runner of link mig (topics pattern topics, sync every
// 50ms) on the controller h, its source's bootstrap server at source, its
// source's metadata and fetches answered by the stand-ins given. It runs
// until the test ends.
func syncRunner(t *testing.T, h *syncHost, source, topics string, mirrors []string,
	metadata func(context.Context) (map[string]*sourceTopic, error),
	fetch func(context.Context, int32, []*mpart, map[string]*sourceTopic) error, tune func(*runner)) *runner {
	t.Helper()
	ctx := context.Background()
	s := memStore(t)
	l := &Link{Name: "mig", Source: []string{source}, Topics: topics, SyncIntervalMs: 50}
	if err := s.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, m := range mirrors {
		if err := s.PutMirror(ctx, &Mirror{Link: "mig", Topic: m, State: Mirroring}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := newRunner(NewManager(Config{NodeID: 1, Store: s, Host: h, Poll: 50 * time.Millisecond}), l)
	if err != nil {
		t.Fatal(err)
	}
	r.readMetadata, r.fetch = metadata, fetch
	if tune != nil {
		tune(r)
	}
	go r.run()
	t.Cleanup(r.close)
	return r
}

// A sync whose source requests never answer (the source broker it asks
// is stopped) does not hold the fetching back: the mirror keeps up with
// the source while the sync waits. Before, the sync ran in the fetching's
// goroutine, first: nothing was fetched until the client gave the
// request up (tens of seconds), and again every sync interval.
func TestRunner_HungSyncDoesNotDelayFetching(t *testing.T) {
	addr, requests := hungBroker(t)
	h := &syncHost{parts: map[string]int32{"t": 2}, logs: map[tp]*flowLog{}}
	// The source: t's two partitions on broker 1 (whose fetches answer,
	// unlike every request of the sync's client), their end moving on.
	var srcEnd atomic.Int64
	metadata := func(context.Context) (map[string]*sourceTopic, error) {
		return map[string]*sourceTopic{"t": {leaders: []int32{1, 1}}}, nil
	}
	fetch := func(ctx context.Context, _ int32, parts []*mpart, _ map[string]*sourceTopic) error {
		end := srcEnd.Load()
		if parts[0].log.LogEndOffset() >= end {
			// Nothing new: the source waits for records, as a Fetch's
			// MaxWait does.
			tm := time.NewTimer(5 * time.Millisecond)
			defer tm.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tm.C:
			}
		}
		for _, mp := range parts {
			mp.log.(*flowLog).leo.Store(end)
		}
		return nil
	}
	syncRunner(t, h, addr, "t", []string{"t"}, metadata, fetch, nil)
	// The source takes records, again and again; the mirror follows
	// each time, within seconds.
	for end := int64(100); end <= 500; end += 100 {
		srcEnd.Store(end)
		if err := checkFor(5*time.Second, func() bool {
			return h.log(tp{"t", 0}).LogEndOffset() == end && h.log(tp{"t", 1}).LogEndOffset() == end
		}); err != nil {
			t.Fatalf("the mirror ends at %d and %d, the source at %d: the hung sync held the fetching back",
				h.log(tp{"t", 0}).LogEndOffset(), h.log(tp{"t", 1}).LogEndOffset(), end)
		}
	}
	if requests.Load() == 0 {
		t.Fatal("the sync asked the hung source broker nothing: the test proves nothing")
	}
}

// A fetch that never answers (the source leader stopped) does not hold
// the sync back: a mirror whose source topic is gone is marked so after
// sourceGoneSyncs syncs, while the fetch of another topic still hangs.
// Every source request of the sync is bounded: the sync's client reaches
// no broker at all, and each sync ends anyway.
func TestRunner_HungFetchDoesNotDelaySync(t *testing.T) {
	h := &syncHost{parts: map[string]int32{"t": 1, "gone": 1}, logs: map[tp]*flowLog{}}
	metadata := func(context.Context) (map[string]*sourceTopic, error) {
		return map[string]*sourceTopic{"t": {leaders: []int32{1}}}, nil
	}
	var fetching atomic.Int64
	fetch := func(ctx context.Context, _ int32, _ []*mpart, _ map[string]*sourceTopic) error {
		fetching.Add(1)
		<-ctx.Done() // never answers
		return ctx.Err()
	}
	addr, _ := hungBroker(t)
	r := syncRunner(t, h, addr, "t|gone", []string{"t", "gone"}, metadata, fetch, func(r *runner) {
		r.roundWait = time.Hour // a round waits for its hung fetch
		r.sourceTimeout = 50 * time.Millisecond
	})
	store := r.m.cfg.Store
	if err := checkFor(time.Minute, func() bool {
		mt := store.State().Mirrors["gone"]
		return mt != nil && mt.SourceDeletedMs != 0 && fetching.Load() > 0
	}); err != nil {
		t.Fatalf("the source topic of gone never noted deleted while t's fetch hung (fetches out: %d)", fetching.Load())
	}
	r.mu.Lock()
	syncErr := r.syncErr
	r.mu.Unlock()
	if syncErr == "" {
		t.Fatal("the sync's requests to a source that never answers left no error")
	}
}

// checkFor calls f every 5ms until it reports true, for d at most.
func checkFor(d time.Duration, f func() bool) error {
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	for end := time.Now().Add(d); !f(); <-tk.C {
		if time.Now().After(end) {
			return errors.New("timed out")
		}
	}
	return nil
}

// A link's status gathers every broker's share: the partition another
// broker leads is shown as fetched there, with its error and the
// source's end that broker saw; that broker's fetching error, and the
// syncing broker's, are the link's, each prefixed with its node; a broker
// that could not be asked is named.
func TestStatus_GathersEveryBroker(t *testing.T) {
	ctx := context.Background()
	s := memStore(t)
	if err := s.Create(ctx, &Link{Name: "mig", Source: []string{"127.0.0.1:1"}, Topics: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMirror(ctx, &Mirror{Link: "mig", Topic: "t", State: Mirroring}); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{parts: map[string]int32{"t": 2}, logs: map[tp]*fakeLog{},
		peers: []*NodeStatus{
			{Node: 2, FetchError: "fetching from the source: source broker 7: EOF", Metrics: RunnerCounters{Bytes: 10},
				Partitions: []NodePartition{{Topic: "t", Partition: 1, SourceEnd: 40, MirrorEnd: 30, Error: "appending to t-1: disk full"}}},
			{Node: 3, Syncs: true, SyncError: "syncing topics: metadata of the source: i/o timeout", Metrics: RunnerCounters{Bytes: 5}},
		},
		unreached: []string{"node 4: broker 4 is not live"},
	}
	m := NewManager(Config{NodeID: 1, Store: s, Host: h})
	st, err := m.Status(ctx, "mig")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node 2: fetching from the source: source broker 7: EOF", "node 2: appending to t-1: disk full", "node 3: syncing topics"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("status error %q lacks %q", st.Error, want)
		}
	}
	if len(st.Nodes) != 3 || st.Nodes[0].Node != 1 || st.Metrics.Bytes != 15 || len(st.Unreached) != 1 {
		t.Fatalf("nodes %+v, metrics %+v, unreached %q", st.Nodes, st.Metrics, st.Unreached)
	}
	if len(st.Mirrors) != 1 || len(st.Mirrors[0].Partitions) != 2 {
		t.Fatalf("mirrors %+v", st.Mirrors)
	}
	p0, p1 := st.Mirrors[0].Partitions[0], st.Mirrors[0].Partitions[1]
	if p0.Node != -1 || p0.Error != "" {
		t.Errorf("t-0, fetched by no broker asked: %+v", p0)
	}
	if p1.Node != 2 || p1.Error != "appending to t-1: disk full" || p1.SourceEnd != 40 {
		t.Errorf("t-1, fetched by node 2: %+v", p1)
	}
}
