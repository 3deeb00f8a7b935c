package compat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer groups (issue 3) with real clients: franz-go (eager and
// cooperative assignors, a member killed without leaving, stop and resume),
// sarama ConsumerGroup, segmentio/kafka-go Reader, kcat -G, and kadm's group
// administration.
//
// Most tests set group.initial.rebalance.delay.ms=0 so that rebalances are
// fast; TestGroups_FranzGoThreeMembers also runs with the default (3 s) to
// show what a real deployment sees.

// noDelay turns off the initial rebalance delay of new groups.
const noDelay = "group.initial.rebalance.delay.ms=0"

// tally records which member received each record value.
type tally struct {
	mu sync.Mutex
	by map[string][]string // value → members, in order of receipt
}

func newTally() *tally { return &tally{by: map[string][]string{}} }

func (ty *tally) add(member string, values ...string) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	for _, v := range values {
		ty.by[v] = append(ty.by[v], member)
	}
}

func (ty *tally) addRecords(member string, rs []*kgo.Record) {
	values := make([]string, len(rs))
	for i, r := range rs {
		values[i] = string(r.Value)
	}
	ty.add(member, values...)
}

// distinct returns the number of distinct values received.
func (ty *tally) distinct() int {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	return len(ty.by)
}

// perMember returns how many records each member received.
func (ty *tally) perMember() map[string]int {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	n := map[string]int{}
	for _, ms := range ty.by {
		for _, m := range ms {
			n[m]++
		}
	}
	return n
}

// waitDistinct waits until n distinct values have been received.
func (ty *tally) waitDistinct(t *testing.T, ctx context.Context, n int, what string) {
	t.Helper()
	for ty.distinct() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: received %d of %d records before the deadline", what, ty.distinct(), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkExactlyOnce requires that every value in want was received exactly
// once and that nothing else was received.
func (ty *tally) checkExactlyOnce(t *testing.T, what string, want []string) {
	t.Helper()
	ty.mu.Lock()
	defer ty.mu.Unlock()
	wantSet := make(map[string]bool, len(want))
	for _, v := range want {
		wantSet[v] = true
	}
	var missing, dup, extra []string
	for _, v := range want {
		switch ms := ty.by[v]; {
		case len(ms) == 0:
			missing = append(missing, v)
		case len(ms) > 1:
			dup = append(dup, fmt.Sprintf("%s×%d%v", v, len(ms), ms))
		}
	}
	for v := range ty.by {
		if !wantSet[v] {
			extra = append(extra, v)
		}
	}
	slices.Sort(extra)
	if len(missing)+len(dup)+len(extra) > 0 {
		t.Errorf("%s: of %d records, %d missing %v, %d duplicated %v, %d unexpected %v", what, len(want),
			len(missing), firstN(missing, 5), len(dup), firstN(dup, 5), len(extra), firstN(extra, 5))
	}
}

func firstN[S ~[]E, E any](s S, n int) S { return s[:min(len(s), n)] }

// newSpreader returns a producer that spreads records round-robin over the
// partitions, so every partition of a small test topic gets some.
func newSpreader(t *testing.T, b *broker) *kgo.Client {
	return newClient(t, b, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
}

// produceValues produces n records with values prefix-00000… and returns the
// values.
func produceValues(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, n int) []string {
	t.Helper()
	rs := make([]*kgo.Record, n)
	values := make([]string, n)
	for i := range n {
		values[i] = fmt.Sprintf("%s-%05d", prefix, i)
		rs[i] = &kgo.Record{Topic: topic, Value: []byte(values[i])}
	}
	produceAll(t, ctx, cl, rs)
	return values
}

// groupWatch follows which partitions each kgo member owns, from the
// assignment callbacks (cooperative: increments; eager: all of it).
type groupWatch struct {
	mu         sync.Mutex
	owned      map[string]map[int32]bool // member name → partitions
	lastChange time.Time
}

func newGroupWatch() *groupWatch { return &groupWatch{owned: map[string]map[int32]bool{}} }

func (w *groupWatch) opts(name string) []kgo.Opt {
	change := func(m map[string][]int32, own bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.owned[name] == nil {
			w.owned[name] = map[int32]bool{}
		}
		for _, ps := range m {
			for _, p := range ps {
				if own {
					w.owned[name][p] = true
				} else {
					delete(w.owned[name], p)
				}
			}
		}
		w.lastChange = time.Now()
	}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, false) }),
	}
}

// snapshot returns each member's sorted partitions.
func (w *groupWatch) snapshot() map[string][]int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := map[string][]int32{}
	for m, ps := range w.owned {
		s[m] = slices.Sorted(maps.Keys(ps))
	}
	return s
}

// balancedLocked reports whether members split partitions [0, n) evenly
// between them with no partition owned twice. Lock should be held.
func (w *groupWatch) balancedLocked(members []string, n int) bool {
	seen := map[int32]bool{}
	for _, m := range members {
		if len(w.owned[m]) != n/len(members) {
			return false
		}
		for p := range w.owned[m] {
			if seen[p] || p < 0 || int(p) >= n {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == n
}

// waitBalanced waits until members split n partitions evenly and returns
// when that assignment was reached (the last callback).
func (w *groupWatch) waitBalanced(t *testing.T, ctx context.Context, members []string, n int) time.Time {
	t.Helper()
	for {
		w.mu.Lock()
		ok, at := w.balancedLocked(members, n), w.lastChange
		w.mu.Unlock()
		if ok {
			return at
		}
		select {
		case <-ctx.Done():
			t.Fatalf("members %v never split %d partitions evenly; last seen %v", members, n, w.snapshot())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// rounds counts the Fetch and Heartbeat responses a client has read: the
// events in which a redelivery or a rebalance would have to show up.
type rounds struct{ fetches, heartbeats atomic.Int64 }

// OnBrokerRead implements kgo.HookBrokerRead.
func (r *rounds) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch key {
	case int16(kmsg.Fetch):
		r.fetches.Add(1)
	case int16(kmsg.Heartbeat):
		r.heartbeats.Add(1)
	}
}

// groupMember is one kgo consumer-group member: a goroutine polls with
// rebalances blocked, records what it receives and commits it before
// allowing the next rebalance, so nothing it received is redelivered.
type groupMember struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	rounds *rounds

	mu   sync.Mutex
	errs []error
}

// startMember creates a member named name (also its client id) of group
// consuming topic from the start; addr is one seed or a comma-separated list.
func startMember(t *testing.T, addr, name, group, topic string, w *groupWatch, got *tally, extra ...kgo.Opt) *groupMember {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(addr, ",")...),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.RetryTimeout(15 * time.Second),
		// Short long polls, so that waitFetches sees rounds quickly
		// once everything has been consumed.
		kgo.FetchMaxWait(250 * time.Millisecond),
	}
	if w != nil {
		opts = append(opts, w.opts(name)...)
	}
	r := new(rounds)
	opts = append(opts, kgo.WithHooks(r))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{name: name, cl: cl, cancel: cancel, done: make(chan struct{}), rounds: r}
	go m.run(ctx, got)
	t.Cleanup(m.close)
	return m
}

func (m *groupMember) run(ctx context.Context, got *tally) {
	defer close(m.done)
	for {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			m.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			m.fail(fmt.Errorf("fetch %s[%d]: %w", topic, p, err))
		})
		if rs := fs.Records(); len(rs) > 0 {
			got.addRecords(m.name, rs)
			// Not ctx: a member being stopped still commits what it
			// has handed out.
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := m.cl.CommitUncommittedOffsets(cctx); err != nil {
				m.fail(fmt.Errorf("commit after %d records: %w", len(rs), err))
			}
			cancel()
		}
		m.cl.AllowRebalance()
	}
}

func (m *groupMember) fail(err error) {
	m.mu.Lock()
	m.errs = append(m.errs, err)
	m.mu.Unlock()
}

// stop ends the poll loop without leaving the group.
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
}

// close stops the loop and closes the client, which leaves the group.
func (m *groupMember) close() {
	m.stop()
	m.cl.Close()
}

// check fails the test with the errors the member saw.
func (m *groupMember) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range firstN(m.errs, 5) {
		t.Errorf("member %s: %v", m.name, err)
	}
	if len(m.errs) > 5 {
		t.Errorf("member %s: %d more errors", m.name, len(m.errs)-5)
	}
}

// waitRounds waits until every member's client has read n more responses
// of the kind count picks (Fetch or Heartbeat) than when it was called.
func waitRounds(t *testing.T, ctx context.Context, ms []*groupMember, what string, n int64, count func(*rounds) *atomic.Int64) {
	t.Helper()
	from := make([]int64, len(ms))
	for i, m := range ms {
		from[i] = count(m.rounds).Load()
	}
	for i, m := range ms {
		for count(m.rounds).Load() < from[i]+n {
			select {
			case <-ctx.Done():
				t.Fatalf("member %s read %d of %d %s responses before the deadline", m.name, count(m.rounds).Load()-from[i], n, what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// waitFetches waits until every member has read three more Fetch
// responses. kgo sends a Fetch only once the records of the previous one
// have been polled, so whatever the broker served before the call,
// duplicates included, has reached the members' tallies by then (the
// records of the third are the only ones that may still be on their way).
func waitFetches(t *testing.T, ctx context.Context, ms []*groupMember) {
	t.Helper()
	waitRounds(t, ctx, ms, "Fetch", 3, func(r *rounds) *atomic.Int64 { return &r.fetches })
}

// describeGroup describes one group and fails on any error.
func describeGroup(t *testing.T, ctx context.Context, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d, ok := ds[group]
	if !ok || d.Err != nil {
		t.Fatalf("DescribeGroups %s: %+v", group, d)
	}
	return d
}

// assignedByClient maps each described member's client id to its sorted
// assigned partitions of topic.
func assignedByClient(d kadm.DescribedGroup, topic string) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range d.Members {
		var ps []int32
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, at := range a.Topics {
				if at.Topic == topic {
					ps = append(ps, at.Partitions...)
				}
			}
		}
		slices.Sort(ps)
		out[m.ClientID] = ps
	}
	return out
}

// waitGroupState polls DescribeGroups until the group is in state with
// members members.
func waitGroupState(t *testing.T, ctx context.Context, adm *kadm.Client, group, state string, members int) kadm.DescribedGroup {
	t.Helper()
	var d kadm.DescribedGroup
	for {
		d = describeGroup(t, ctx, adm, group)
		if d.State == state && len(d.Members) == members {
			return d
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s: state %s with %d members, want %s with %d", group, d.State, len(d.Members), state, members)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitCommittedAtEnd polls until group's committed offset of every
// partition of topic equals the partition's end offset.
func waitCommittedAtEnd(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) {
	t.Helper()
	var last string
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || ends.Error() != nil {
			t.Fatalf("ListEndOffsets %s: %v %v", topic, err, ends.Error())
		}
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil || offs.Error() != nil {
			t.Fatalf("FetchOffsets %s: %v %v", group, err, offs.Error())
		}
		atEnd := true
		last = ""
		ends.Each(func(e kadm.ListedOffset) {
			o, ok := offs.Lookup(topic, e.Partition)
			if !ok || o.At != e.Offset {
				atEnd = false
				last += fmt.Sprintf(" [%d] committed %d end %d", e.Partition, o.At, e.Offset)
			}
		})
		if atEnd {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never committed the end of %s:%s", group, topic, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkCommittedAtEnd requires group's committed offset of every partition
// of topic to equal the partition's end offset.
func checkCommittedAtEnd(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("ListEndOffsets %s: %v %v", topic, err, ends.Error())
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil || offs.Error() != nil {
		t.Fatalf("FetchOffsets %s: %v %v", group, err, offs.Error())
	}
	ends.Each(func(e kadm.ListedOffset) {
		o, ok := offs.Lookup(topic, e.Partition)
		if !ok {
			t.Errorf("group %s: no committed offset for %s[%d] (end %d)", group, topic, e.Partition, e.Offset)
		} else if o.At != e.Offset {
			t.Errorf("group %s: committed %s[%d] = %d, want the end offset %d", group, topic, e.Partition, o.At, e.Offset)
		}
	})
}

// TestGroups_FranzGoThreeMembers runs a 3-member franz-go group over a
// 6-partition topic, with the default initial rebalance delay and without:
// the members split the partitions 2/2/2, receive every record exactly once
// between them (including records produced while they rebalance), commit,
// leave, and a restarted group resumes with no redelivery. The time from the
// members' start to the balanced assignment is logged both times.
func TestGroups_FranzGoThreeMembers(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"DefaultDelay", nil},
		{"NoDelay", []string{noDelay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBroker(t, tc.sets...)
			ctx := testCtx(t, 60*time.Second)
			adm := newAdmin(t, b)
			prod := newSpreader(t, b)
			topic, group := topicName(t, ""), topicName(t, "group")
			createTopic(t, ctx, adm, topic, 6, nil)
			names := []string{"m0", "m1", "m2"}

			first := produceValues(t, ctx, prod, topic, "before", 300)
			w, got := newGroupWatch(), newTally()
			start := time.Now()
			var ms []*groupMember
			for _, n := range names {
				ms = append(ms, startMember(t, b.bootstrap(), n, group, topic, w, got))
			}
			stableAt := w.waitBalanced(t, ctx, names, 6)
			t.Logf("%s: 3 members split 6 partitions 2/2/2 %v after they started (assignment %v)",
				tc.name, stableAt.Sub(start).Round(time.Millisecond), w.snapshot())
			d := waitGroupState(t, ctx, adm, group, "Stable", 3)
			t.Logf("%s: DescribeGroups says Stable %v after start", tc.name, time.Since(start).Round(time.Millisecond))
			if d.ProtocolType != "consumer" || d.Protocol != "cooperative-sticky" {
				t.Errorf("DescribeGroups: protocol type %q protocol %q, want consumer / cooperative-sticky", d.ProtocolType, d.Protocol)
			}
			if got, want := assignedByClient(d, topic), w.snapshot(); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("DescribeGroups assignment %v, members' own view %v", got, want)
			}

			second := produceValues(t, ctx, prod, topic, "during", 300)
			all := append(slices.Clone(first), second...)
			got.waitDistinct(t, ctx, len(all), "first run")
			waitFetches(t, ctx, ms) // a duplicate would have arrived by then
			got.checkExactlyOnce(t, "first run", all)
			t.Logf("%s: records per member %v", tc.name, got.perMember())
			for _, m := range ms {
				m.close()
				m.check(t)
			}
			waitGroupState(t, ctx, adm, group, "Empty", 0)
			checkCommittedAtEnd(t, ctx, adm, group, topic)

			third := produceValues(t, ctx, prod, topic, "after", 150)
			w2, got2 := newGroupWatch(), newTally()
			start = time.Now()
			ms = ms[:0]
			for _, n := range names {
				ms = append(ms, startMember(t, b.bootstrap(), n, group, topic, w2, got2))
			}
			got2.waitDistinct(t, ctx, len(third), "restarted group")
			stableAt = w2.waitBalanced(t, ctx, names, 6)
			t.Logf("%s: restarted group balanced %v after start", tc.name, stableAt.Sub(start).Round(time.Millisecond))
			waitFetches(t, ctx, ms)
			got2.checkExactlyOnce(t, "restarted group (no redelivery)", third)
			for _, m := range ms {
				m.close()
				m.check(t)
			}
			checkCommittedAtEnd(t, ctx, adm, group, topic)
		})
	}
}

// killableDialer dials real TCP connections until kill, which resets every
// connection it made (SO_LINGER 0) and refuses new ones: to the broker the
// member is gone without a LeaveGroup, as if its process died.
type killableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("member killed")
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}

// TestGroups_FranzGoKilledMember kills one of three members (its connections
// reset, no LeaveGroup) and checks that the broker expires it after its 6 s
// session timeout, that its partitions move to the two survivors, and that
// the survivors receive every record produced after the kill exactly once
// (the dead member committed everything it received).
func TestGroups_FranzGoKilledMember(t *testing.T) {
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 45*time.Second)
	adm := newAdmin(t, b)
	prod := newSpreader(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 6, nil)
	const session = 6 * time.Second
	timing := []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(time.Second)}

	first := produceValues(t, ctx, prod, topic, "before", 120)
	w, got := newGroupWatch(), newTally()
	m0 := startMember(t, b.bootstrap(), "m0", group, topic, w, got, timing...)
	m1 := startMember(t, b.bootstrap(), "m1", group, topic, w, got, timing...)
	dialer := &killableDialer{}
	victimOpts := append(slices.Clone(timing), kgo.Dialer(dialer.dial), kgo.RetryTimeout(2*time.Second))
	victim := startMember(t, b.bootstrap(), "victim", group, topic, w, got, victimOpts...)
	w.waitBalanced(t, ctx, []string{"m0", "m1", "victim"}, 6)
	got.waitDistinct(t, ctx, len(first), "before the kill")
	victimParts := w.snapshot()["victim"]

	// The victim's loop stops between polls (everything it received is
	// committed), then its connections die. Its client is not closed
	// before the end of the test, so it never sends LeaveGroup.
	victim.stop()
	killedAt := time.Now()
	dialer.kill()
	second := produceValues(t, ctx, prod, topic, "after", 120)

	movedAt := w.waitBalanced(t, ctx, []string{"m0", "m1"}, 6)
	moved := movedAt.Sub(killedAt)
	t.Logf("victim's partitions %v moved to the survivors %v after the kill (session timeout %v); assignment %v",
		victimParts, moved.Round(time.Millisecond), session, w.snapshot())
	if moved < session-1500*time.Millisecond {
		t.Errorf("partitions moved %v after the kill, before the %v session timeout could expire", moved, session)
	}
	d := waitGroupState(t, ctx, adm, group, "Stable", 2)
	for _, m := range d.Members {
		if m.ClientID == "victim" {
			t.Errorf("DescribeGroups still lists the killed member %s", m.MemberID)
		}
	}
	got.waitDistinct(t, ctx, len(first)+len(second), "after the kill")
	waitFetches(t, ctx, []*groupMember{m0, m1})
	got.checkExactlyOnce(t, "all records", append(slices.Clone(first), second...))
	for _, m := range []*groupMember{m0, m1} {
		m.close()
		m.check(t)
	}
	checkCommittedAtEnd(t, ctx, adm, group, topic)
}

// TestGroups_FranzGoAssignors checks that the eager range assignor and the
// cooperative-sticky one (kgo's default) converge with three members and
// again after one leaves, without rebalancing in a loop; cooperative-sticky
// must also keep the survivors' partitions where they were.
func TestGroups_FranzGoAssignors(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			b := newBroker(t, noDelay)
			ctx := testCtx(t, 30*time.Second)
			adm := newAdmin(t, b)
			topic, group := topicName(t, ""), topicName(t, "group")
			createTopic(t, ctx, adm, topic, 6, nil)
			values := produceValues(t, ctx, newSpreader(t, b), topic, "v", 60)

			w, got := newGroupWatch(), newTally()
			names := []string{"a", "b", "c"}
			var ms []*groupMember
			for _, n := range names {
				ms = append(ms, startMember(t, b.bootstrap(), n, group, topic, w, got,
					kgo.Balancers(tc.balancer), kgo.HeartbeatInterval(time.Second)))
			}
			w.waitBalanced(t, ctx, names, 6)
			d := waitGroupState(t, ctx, adm, group, "Stable", 3)
			if d.Protocol != tc.protocol {
				t.Errorf("DescribeGroups protocol %q, want %q", d.Protocol, tc.protocol)
			}
			before := w.snapshot()
			if tc.protocol == "range" {
				for n, ps := range before {
					if len(ps) == 2 && ps[1] != ps[0]+1 {
						t.Errorf("range gave %s partitions %v, want two adjacent ones", n, ps)
					}
				}
			}
			checkNoRebalanceLoop(t, ctx, ms)
			got.waitDistinct(t, ctx, len(values), "three members")

			ms[2].close()
			w.waitBalanced(t, ctx, names[:2], 6)
			waitGroupState(t, ctx, adm, group, "Stable", 2)
			after := w.snapshot()
			t.Logf("%s: three members %v, after c left %v", tc.protocol, before, after)
			if tc.protocol == "cooperative-sticky" {
				for _, n := range names[:2] {
					for _, p := range before[n] {
						if !slices.Contains(after[n], p) {
							t.Errorf("cooperative-sticky moved partition %d away from %s when c left: %v → %v", p, n, before, after)
						}
					}
				}
			}
			checkNoRebalanceLoop(t, ctx, ms[:2])
			got.checkExactlyOnce(t, tc.protocol, values)
			for _, m := range ms {
				m.check(t)
			}
		})
	}
}

// checkNoRebalanceLoop requires every member's generation to stay put over
// three heartbeats of every member. A rebalance is announced in a heartbeat
// response, after which the member rejoins (a new generation) before it
// heartbeats again, so one announced in the first two would be seen.
func checkNoRebalanceLoop(t *testing.T, ctx context.Context, ms []*groupMember) {
	t.Helper()
	gens := make([]int32, len(ms))
	for i, m := range ms {
		_, gens[i] = m.cl.GroupMetadata()
	}
	waitRounds(t, ctx, ms, "Heartbeat", 3, func(r *rounds) *atomic.Int64 { return &r.heartbeats })
	for i, m := range ms {
		if _, g := m.cl.GroupMetadata(); g != gens[i] {
			t.Errorf("member %s: generation went from %d to %d while the group should have been stable", m.name, gens[i], g)
		}
	}
}

// TestGroups_FranzGoStaticMembers restarts each of two static members
// (group.instance.id; kgo sends no LeaveGroup for them) in turn: the new
// client gets the old one's partitions back without a rebalance (the other
// member's generation does not move), and a heartbeat from the replaced
// member id is refused with FENCED_INSTANCE_ID.
func TestGroups_FranzGoStaticMembers(t *testing.T) {
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 30*time.Second)
	adm := newAdmin(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 4, nil)
	w := newGroupWatch()
	start := func(name string) *groupMember {
		return startMember(t, b.bootstrap(), name, group, topic, w, newTally(),
			kgo.InstanceID("instance-"+name), kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second))
	}
	names := []string{"s0", "s1"}
	ms := []*groupMember{start("s0"), start("s1")}
	w.waitBalanced(t, ctx, names, 4)
	waitGroupState(t, ctx, adm, group, "Stable", 2)
	before := w.snapshot()

	for i, name := range names {
		other := ms[1-i]
		_, otherGen := other.cl.GroupMetadata()
		oldID, oldGen := ms[i].cl.GroupMetadata()
		ms[i].close()
		ms[i] = start(name)
		w.waitBalanced(t, ctx, names, 4)
		if after := w.snapshot(); !slices.Equal(after[name], before[name]) {
			t.Errorf("restarted static member %s got %v, had %v", name, after[name], before[name])
		}
		newID, newGen := ms[i].cl.GroupMetadata()
		if newID == oldID {
			t.Errorf("restarted static member %s kept member id %s, want a new one", name, oldID)
		}
		if _, g := other.cl.GroupMetadata(); g != otherGen || newGen != oldGen {
			t.Errorf("restarting static member %s: generations %d → %d (restarted) and %d → %d (other), want no rebalance",
				name, oldGen, newGen, otherGen, g)
		}
		d := waitGroupState(t, ctx, adm, group, "Stable", 2)
		for _, m := range d.Members {
			if m.InstanceID == nil || *m.InstanceID != "instance-"+m.ClientID {
				t.Errorf("DescribeGroups member %s (client %s): instance id %v", m.MemberID, m.ClientID, m.InstanceID)
			}
		}

		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = group, oldGen, oldID
		hb.InstanceID = kmsg.StringPtr("instance-" + name)
		resp, err := hb.RequestWith(ctx, newClient(t, b))
		if err != nil {
			t.Fatalf("Heartbeat: %v", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.FencedInstanceID) {
			t.Errorf("Heartbeat from the replaced member %s of instance-%s: %v, want FENCED_INSTANCE_ID", oldID, name, err)
		}
	}
	checkNoRebalanceLoop(t, ctx, ms)
}

// saramaMember is a handler of a sarama ConsumerGroup that records each
// session's claims and every value it consumes.
type saramaMember struct {
	name string
	got  *tally

	mu     sync.Mutex
	claims []map[string][]int32 // per session, in order
}

func (h *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	c := map[string][]int32{}
	for topic, ps := range s.Claims() {
		c[topic] = slices.Sorted(slices.Values(ps))
	}
	h.mu.Lock()
	h.claims = append(h.claims, c)
	h.mu.Unlock()
	return nil
}

func (h *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.got.add(h.name, string(msg.Value))
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// sessionClaims returns the claims of every session so far.
func (h *saramaMember) sessionClaims() []map[string][]int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.claims)
}

// lastClaims returns the partitions of topic claimed in the latest session.
func (h *saramaMember) lastClaims(topic string) []int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.claims) == 0 {
		return nil
	}
	return h.claims[len(h.claims)-1][topic]
}

// runSarama runs a sarama ConsumerGroup member until ctx ends, then closes
// it; done is closed when it has. addr is one seed or a comma-separated list.
func runSarama(t *testing.T, ctx context.Context, addr, group, topic string, h *saramaMember) (done chan error) {
	t.Helper()
	cfg := saramaConfig()
	cfg.ClientID = h.name
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cg, err := sarama.NewConsumerGroup(strings.Split(addr, ","), group, cfg)
	if err != nil {
		t.Fatalf("sarama NewConsumerGroup %s: %v", h.name, err)
	}
	done = make(chan error, 1)
	go func() {
		var errs []error
		go func() {
			for err := range cg.Errors() {
				h.mu.Lock()
				errs = append(errs, err)
				h.mu.Unlock()
			}
		}()
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				h.mu.Lock()
				errs = append(errs, fmt.Errorf("Consume: %w", err))
				h.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}
		cerr := cg.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		done <- errors.Join(append(errs, cerr)...)
	}()
	return done
}

// waitSaramaClaims waits until each member's latest session claims want[i].
func waitSaramaClaims(t *testing.T, ctx context.Context, topic string, hs []*saramaMember, want func(claims [][]int32) bool) [][]int32 {
	t.Helper()
	for {
		var cs [][]int32
		for _, h := range hs {
			cs = append(cs, h.lastClaims(topic))
		}
		if want(cs) {
			return cs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sarama claims never converged; last %v", cs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestGroups_SaramaConsumerGroup runs two sarama ConsumerGroup members over a
// 4-partition topic (range assignor): each claims two partitions; when one
// leaves, the other's claims grow to all four; every record is consumed
// exactly once and the final commits are at the end of every partition.
func TestGroups_SaramaConsumerGroup(t *testing.T) {
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 45*time.Second)
	adm := newAdmin(t, b)
	prod := newSpreader(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 4, nil)
	first := produceValues(t, ctx, prod, topic, "first", 200)

	got := newTally()
	ha, hb := &saramaMember{name: "a", got: got}, &saramaMember{name: "b", got: got}
	ctxA, stopA := context.WithCancel(ctx)
	defer stopA()
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneA := runSarama(t, ctxA, b.bootstrap(), group, topic, ha)
	doneB := runSarama(t, ctxB, b.bootstrap(), group, topic, hb)

	split := waitSaramaClaims(t, ctx, topic, []*saramaMember{ha, hb}, func(cs [][]int32) bool {
		all := append(slices.Clone(cs[0]), cs[1]...)
		slices.Sort(all)
		return len(cs[0]) == 2 && len(cs[1]) == 2 && slices.Equal(all, []int32{0, 1, 2, 3})
	})
	t.Logf("two members claim %v", split)
	got.waitDistinct(t, ctx, len(first), "two members")
	if n := got.perMember(); n["a"] == 0 || n["b"] == 0 {
		t.Errorf("records per member %v, want both to consume", n)
	}

	stopB()
	if err := <-doneB; err != nil {
		t.Errorf("member b: %v", err)
	}
	waitSaramaClaims(t, ctx, topic, []*saramaMember{ha}, func(cs [][]int32) bool {
		return slices.Equal(cs[0], []int32{0, 1, 2, 3})
	})
	ha.mu.Lock()
	t.Logf("after b left: a's claims per session %v", ha.claims)
	ha.mu.Unlock()
	second := produceValues(t, ctx, prod, topic, "second", 200)
	got.waitDistinct(t, ctx, len(first)+len(second), "after b left")
	// a tallies a record before marking it, and consumes each partition in
	// offset order: once its commits reach the end of every partition, any
	// redelivery (from b's last commits) has been tallied.
	sessions := len(ha.sessionClaims())
	waitCommittedAtEnd(t, ctx, adm, group, topic)
	got.checkExactlyOnce(t, "sarama group", append(slices.Clone(first), second...))
	if n := len(ha.sessionClaims()); n != sessions {
		t.Errorf("member a started %d more sessions after its claims converged", n-sessions)
	}

	stopA()
	if err := <-doneA; err != nil {
		t.Errorf("member a: %v", err)
	}
	waitGroupState(t, ctx, adm, group, "Empty", 0)
	checkCommittedAtEnd(t, ctx, adm, group, topic)
}

// TestGroups_KafkaGoReader reads half of a 3-partition topic with a
// segmentio/kafka-go Reader in a group, committing what it read, closes it,
// and checks that a second Reader of the same group reads exactly the other
// half.
func TestGroups_KafkaGoReader(t *testing.T) {
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 45*time.Second)
	adm := newAdmin(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 3, nil)
	values := produceValues(t, ctx, newSpreader(t, b), topic, "v", 90)

	var logMu sync.Mutex
	var logs []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kafka-go error log:\n%s", strings.Join(logs, "\n"))
		}
	})
	logger := kafkago.LoggerFunc(func(format string, args ...any) {
		logMu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		logMu.Unlock()
	})
	got := newTally()
	read := func(name string, n int) {
		r := kafkago.NewReader(kafkago.ReaderConfig{
			Brokers:           b.seedList(),
			GroupID:           group,
			Topic:             topic,
			StartOffset:       kafkago.FirstOffset,
			MaxWait:           200 * time.Millisecond,
			HeartbeatInterval: time.Second,
			SessionTimeout:    6 * time.Second,
			RebalanceTimeout:  10 * time.Second,
			CommitInterval:    0, // synchronous commits
			ErrorLogger:       logger,
		})
		start := time.Now()
		for i := range n {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			m, err := r.FetchMessage(rctx)
			cancel()
			if err != nil {
				r.Close()
				t.Fatalf("reader %s: FetchMessage %d of %d: %v", name, i+1, n, err)
			}
			got.add(name, string(m.Value))
			if err := r.CommitMessages(ctx, m); err != nil {
				r.Close()
				t.Fatalf("reader %s: CommitMessages %s[%d]@%d: %v", name, m.Topic, m.Partition, m.Offset, err)
			}
		}
		t.Logf("reader %s: %d messages in %v", name, n, time.Since(start).Round(time.Millisecond))
		if err := r.Close(); err != nil {
			t.Errorf("reader %s: Close: %v", name, err)
		}
	}
	read("first", 45)
	read("second", 45)
	got.checkExactlyOnce(t, "two readers", values)
	if n := got.perMember(); n["first"] != 45 || n["second"] != 45 {
		t.Errorf("records per reader %v, want 45 each", n)
	}
	checkCommittedAtEnd(t, ctx, adm, group, topic)
}

// kcatGroup runs `kcat -G group topic` printing value lines, with extra
// arguments (such as -c N or -e).
func kcatGroup(t *testing.T, addr, group, topic string, extra ...string) []string {
	t.Helper()
	args := append([]string{"-b", addr, "-G", group, "-X", "auto.offset.reset=earliest", "-f", "%s\n", "-q"}, extra...)
	out := kcat(t, "", append(args, topic)...)
	return strings.Fields(out)
}

// TestGroups_KcatResume consumes part of a topic with `kcat -G` (librdkafka's
// balanced consumer, offsets committed on close) and checks that re-runs
// resume from the commit: together they read every record exactly once.
func TestGroups_KcatResume(t *testing.T) {
	kcatPath(t)
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 2, nil)
	values := produceValues(t, ctx, newSpreader(t, b), topic, "v", 30)

	got := newTally()
	first := kcatGroup(t, b.bootstrap(), group, topic, "-c", "12")
	got.add("first", first...)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil || offs.Error() != nil {
		t.Fatalf("FetchOffsets after the first kcat run: %v %v", err, offs.Error())
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != 12 {
		t.Errorf("after kcat -c 12, the group committed %d records in all (%v), want 12", committed, offs)
	}
	second := kcatGroup(t, b.bootstrap(), group, topic, "-c", "18")
	got.add("second", second...)
	got.checkExactlyOnce(t, "two kcat -G runs", values)
	if rest := kcatGroup(t, b.bootstrap(), group, topic, "-e"); len(rest) != 0 {
		t.Errorf("third kcat -G -e run read %d records, want none: %v", len(rest), firstN(rest, 5))
	}
	checkCommittedAtEnd(t, ctx, adm, group, topic)
}

// TestGroups_KadmAdmin checks kadm's view of groups: Lag and DescribeGroups
// of an active member with explicit commits, FetchOffsets, ListGroups with
// and without state filters, DeleteGroups refused (NON_EMPTY_GROUP) while
// the group has a member and accepted once it is empty, and a simple
// (generation-less) commit into a group with no members.
func TestGroups_KadmAdmin(t *testing.T) {
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 30*time.Second)
	adm := newAdmin(t, b)
	topic := topicName(t, "")
	active, idle := topicName(t, "active"), topicName(t, "idle")
	createTopic(t, ctx, adm, topic, 3, nil)

	prod := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ends := map[int32]int64{0: 10, 1: 20, 2: 30}
	var rs []*kgo.Record
	for p, n := range ends {
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	produceAll(t, ctx, prod, rs)

	w := newGroupWatch()
	m := startMember(t, b.bootstrap(), "solo", active, topic, w, newTally())
	w.waitBalanced(t, ctx, []string{"solo"}, 3)
	m.stop() // stays in the group; its commits below are explicit
	commits := map[int32]int64{0: 10, 1: 15, 2: 5}
	toCommit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range commits {
		toCommit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	// Per-partition errors show in the lag check below.
	m.cl.CommitOffsetsSync(ctx, toCommit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			t.Errorf("member commit: %v", err)
		}
	})

	// An idle group: a simple commit (no member, generation -1) creates
	// it in state Empty.
	idleOffs := kadm.Offsets{}
	idleOffs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, idle, idleOffs); err != nil || r.Error() != nil {
		t.Fatalf("simple CommitOffsets into %s: %v %v", idle, err, r.Error())
	}

	checkLag := func(stage string, wantMember bool) {
		t.Helper()
		lags, err := adm.Lag(ctx, active)
		if err != nil {
			t.Fatalf("%s: Lag: %v", stage, err)
		}
		l := lags[active]
		if l.Error() != nil {
			t.Fatalf("%s: Lag %s: %v", stage, active, l.Error())
		}
		for p, end := range ends {
			pl, ok := l.Lag.Lookup(topic, p)
			switch {
			case !ok:
				t.Errorf("%s: no lag for %s[%d]", stage, topic, p)
			case pl.Err != nil:
				t.Errorf("%s: lag %s[%d]: %v", stage, topic, p, pl.Err)
			case pl.Commit.At != commits[p] || pl.End.Offset != end || pl.Lag != end-commits[p]:
				t.Errorf("%s: lag %s[%d]: commit %d end %d lag %d, want %d %d %d", stage, topic, p,
					pl.Commit.At, pl.End.Offset, pl.Lag, commits[p], end, end-commits[p])
			case wantMember != !pl.IsEmpty():
				t.Errorf("%s: lag %s[%d]: member %v, want a member: %v", stage, topic, p, pl.Member, wantMember)
			}
		}
		if total := l.Lag.Total(); total != 0+5+25 {
			t.Errorf("%s: total lag %d, want 30", stage, total)
		}
	}
	checkLag("active", true)

	d := describeGroup(t, ctx, adm, active)
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "cooperative-sticky" || len(d.Members) != 1 {
		t.Errorf("DescribeGroups %s: state %q type %q protocol %q, %d members; want Stable consumer cooperative-sticky 1",
			active, d.State, d.ProtocolType, d.Protocol, len(d.Members))
	} else {
		mem := d.Members[0]
		memberID, _ := m.cl.GroupMetadata()
		if mem.MemberID != memberID || mem.ClientID != "solo" || mem.ClientHost == "" {
			t.Errorf("DescribeGroups member %q client %q host %q, want %q solo and a host", mem.MemberID, mem.ClientID, mem.ClientHost, memberID)
		}
		if a := assignedByClient(d, topic)["solo"]; !slices.Equal(a, []int32{0, 1, 2}) {
			t.Errorf("DescribeGroups assignment %v, want [0 1 2]", a)
		}
		if j, ok := mem.Join.AsConsumer(); !ok || !slices.Equal(j.Topics, []string{topic}) {
			t.Errorf("DescribeGroups join metadata %+v, want topics [%s]", j, topic)
		}
	}

	listed := func(states ...string) []string {
		t.Helper()
		ls, err := adm.ListGroups(ctx, states...)
		if err != nil {
			t.Fatalf("ListGroups %v: %v", states, err)
		}
		var names []string
		for _, g := range ls.Sorted() {
			if g.Group == active || g.Group == idle {
				names = append(names, g.Group+"="+g.State)
			}
		}
		return names
	}
	sorted := func(s ...string) []string { sort.Strings(s); return s }
	if got, want := listed(), sorted(active+"=Stable", idle+"=Empty"); !slices.Equal(got, want) {
		t.Errorf("ListGroups: %v, want %v", got, want)
	}
	if got, want := listed("Stable"), []string{active + "=Stable"}; !slices.Equal(got, want) {
		t.Errorf("ListGroups Stable: %v, want %v", got, want)
	}
	if got, want := listed("Empty"), []string{idle + "=Empty"}; !slices.Equal(got, want) {
		t.Errorf("ListGroups Empty: %v, want %v", got, want)
	}
	if got := listed("PreparingRebalance", "Dead"); len(got) != 0 {
		t.Errorf("ListGroups PreparingRebalance,Dead: %v, want none", got)
	}

	del, err := adm.DeleteGroups(ctx, active)
	if err != nil {
		t.Fatalf("DeleteGroups %s: %v", active, err)
	}
	if err := del[active].Err; !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("DeleteGroups of a group with a member: %v, want NON_EMPTY_GROUP", err)
	}

	m.close()
	waitGroupState(t, ctx, adm, active, "Empty", 0)
	checkLag("empty", false)
	if got, want := listed("Empty"), sorted(active+"=Empty", idle+"=Empty"); !slices.Equal(got, want) {
		t.Errorf("ListGroups Empty after the member left: %v, want %v", got, want)
	}
	del, err = adm.DeleteGroups(ctx, active, idle)
	if err != nil || del.Error() != nil {
		t.Fatalf("DeleteGroups of empty groups: %v %v", err, del.Error())
	}
	if got := listed(); len(got) != 0 {
		t.Errorf("ListGroups after DeleteGroups: %v, want neither group", got)
	}
	offs, err := adm.FetchOffsets(ctx, active)
	if err != nil || offs.Error() != nil {
		t.Fatalf("FetchOffsets of a deleted group: %v %v", err, offs.Error())
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			t.Errorf("deleted group %s still has a committed offset %s[%d] = %d", active, o.Topic, o.Partition, o.At)
		}
	})
}
