package link

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeHost leads every partition of its topics; it counts Lead calls.
type fakeHost struct {
	parts map[string]int32
	logs  map[tp]*fakeLog
	leads int
	// peers and unreached are PeerLinkStatus's answer.
	peers     []*NodeStatus
	unreached []string
}

func (h *fakeHost) Controller() bool { return false }
func (h *fakeHost) Partitions(topic string) (int32, bool) {
	n, ok := h.parts[topic]
	return n, ok
}
func (h *fakeHost) TopicConfigs(string) map[string]string                               { return nil }
func (h *fakeHost) CreateTopic(context.Context, string, int32, map[string]string) error { return nil }
func (h *fakeHost) CreatePartitions(context.Context, string, int32) error               { return nil }
func (h *fakeHost) AlterTopicConfigs(context.Context, string, map[string]string, []string) error {
	return nil
}
func (h *fakeHost) Lead(topic string, p int32) Log {
	h.leads++
	k := tp{topic, p}
	if h.logs[k] == nil {
		h.logs[k] = &fakeLog{}
	}
	return h.logs[k]
}
func (h *fakeHost) HighWatermarks(context.Context, string, int32) (map[int32]int64, error) {
	return nil, nil
}
func (h *fakeHost) StableOffsets(context.Context, string, int32) (map[int32]int64, error) {
	return nil, nil
}
func (h *fakeHost) CommittedOffsets(context.Context, string) (map[string]map[int32]int64, error) {
	return nil, nil
}
func (h *fakeHost) CommitOffsets(context.Context, string, map[string]map[int32]int64) error {
	return nil
}
func (h *fakeHost) CreateACLs(context.Context, []kmsg.CreateACLsRequestCreation) error { return nil }
func (h *fakeHost) PeerLinkStatus(context.Context, string) ([]*NodeStatus, []string) {
	return h.peers, h.unreached
}

type fakeLog struct {
	leo     int64
	aborted int
}

func (l *fakeLog) LogStartOffset() int64       { return 0 }
func (l *fakeLog) LogEndOffset() int64         { return l.leo }
func (l *fakeLog) AppendMirrored([]byte) error { return nil }
func (l *fakeLog) RestartAt(int64) error       { return nil }
func (l *fakeLog) AdvanceLogStart(int64) error { return nil }
func (l *fakeLog) AbortOpenTransactions() ([]AbortedTxn, error) {
	l.aborted++
	return nil, nil
}

// A fetch round asks the broker whether it leads each mirror partition
// only after a poke or a change of the links' records, not every round;
// a promoting partition stops being fetched at its target, where its open
// transactions are aborted.
func TestAssign_ScansOnlyAfterAChange(t *testing.T) {
	ctx := context.Background()
	s := memStore(t)
	l := &Link{Name: "mig", Source: []string{"127.0.0.1:1"}, Topics: "t.*"}
	if err := s.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"t1", "t2"} {
		if err := s.PutMirror(ctx, &Mirror{Link: "mig", Topic: topic, State: Mirroring}); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHost{parts: map[string]int32{"t1": 50, "t2": 50}, logs: map[tp]*fakeLog{}}
	m := NewManager(Config{NodeID: 1, Store: s, Host: h})
	r, err := newRunner(m, l)
	if err != nil {
		t.Fatal(err)
	}
	defer r.cl.Close()
	if got := len(r.assign()); got != 100 || h.leads != 100 {
		t.Fatalf("first round: %d partitions, %d Lead calls", got, h.leads)
	}
	for range 10 {
		if got := len(r.assign()); got != 100 {
			t.Fatalf("a later round: %d partitions", got)
		}
	}
	if h.leads != 100 {
		t.Fatalf("10 more rounds without a change asked Lead %d times in all, want 100", h.leads)
	}
	r.poke() // leadership changed
	r.assign()
	if h.leads != 200 {
		t.Fatalf("after a poke: %d Lead calls, want 200", h.leads)
	}
	// t1 promoting: partition 0 has reached its target of 5, the others
	// not theirs of 10.
	targets := map[int32]int64{0: 5}
	for p := int32(1); p < 50; p++ {
		targets[p] = 10
	}
	if err := s.PutMirror(ctx, &Mirror{Link: "mig", Topic: "t1", State: Promoting, Targets: targets}); err != nil {
		t.Fatal(err)
	}
	h.logs[tp{"t1", 0}].leo = 5
	if got := len(r.assign()); got != 99 || h.leads != 300 {
		t.Fatalf("promoting: %d partitions, %d Lead calls (want 99, 300)", got, h.leads)
	}
	if a := h.logs[tp{"t1", 0}].aborted; a != 1 {
		t.Fatalf("open transactions of t1-0 aborted %d times, want 1", a)
	}
	if a := h.logs[tp{"t1", 1}].aborted; a != 0 {
		t.Fatalf("t1-1, below its target, aborted %d times", a)
	}
}

// Mirrored producer ids raise the floor a block ahead: the source's next
// producers, with ids just above, cost no write of the store.
func TestReserve_ABlockAhead(t *testing.T) {
	ctx := context.Background()
	s := memStore(t)
	l := &Link{Name: "mig", Source: []string{"127.0.0.1:1"}, Topics: "t"}
	if err := s.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{NodeID: 1, Store: s, Host: &fakeHost{}})
	r, err := newRunner(m, l)
	if err != nil {
		t.Fatal(err)
	}
	defer r.cl.Close()
	rev := s.Revision()
	for _, pid := range []int64{5, 6, 7, 900, 1005} {
		r.reserve(ctx, pid)
	}
	if writes := s.Revision() - rev; writes != 1 || s.State().ProducerIDFloor != 1005 {
		t.Fatalf("pids 5-1005: %d writes, floor %d; want 1, 1005", writes, s.State().ProducerIDFloor)
	}
	r.reserve(ctx, 1006)
	if writes := s.Revision() - rev; writes != 2 || s.State().ProducerIDFloor != 2006 {
		t.Fatalf("pid 1006: %d writes, floor %d; want 2, 2006", writes, s.State().ProducerIDFloor)
	}
}
