package cluster

import (
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestController_FailoverInBatches: when a broker leading a third of 600
// partitions dies, the controller decides all of them in one pass and
// writes the decisions in one transaction per reconcileBatch() partitions,
// not one per partition: every partition gets a live leader and an ISR
// without the dead broker, and the partitions' keys were written at no
// more than a few etcd revisions (one per pass and batch).
func TestController_FailoverInBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	const parts = 600
	c, m := newLedTopic(t, "many", parts)
	var victim int32
	for id := range m.Brokers {
		if id != m.ControllerID {
			victim = id
			break
		}
	}
	led := 0
	for _, p := range m.Topics["many"].Partitions {
		if p.Leader == victim {
			led++
		}
	}
	c.stop(victim, true)
	m = c.waitAll("every partition led by a live broker, the dead one out of every ISR", func(m *Metadata) bool {
		for _, p := range m.Topics["many"].Partitions {
			if p.Leader < 0 || p.Leader == victim || slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return true
	})
	revs := map[int64]int{}
	for _, p := range m.Topics["many"].Partitions {
		revs[p.Version]++
	}
	if want := parts/c.node(m.ControllerID).reconcileBatch() + 2; len(revs) > want {
		t.Fatalf("the %d partitions were written at %d revisions, want at most %d: %v", parts, len(revs), want, revs)
	}
	t.Logf("broker %d led %d of %d partitions; after its death they were written at %d revisions", victim, led, parts, len(revs))
}

// TestAlterPartitions_Batch: a leader changes the ISR of 300 partitions in
// one AlterPartitions call: they are written at a few etcd revisions (one
// per batch), each as AlterPartition would (a stale partition epoch in the
// middle of the batch is refused alone, the others land), and expanding
// them back works the same way.
func TestAlterPartitions_Batch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	const parts = 900
	c, m := newLedTopic(t, "isr", parts)
	leader := m.ControllerID
	var shrink []ISRChange
	stale := -1
	for _, p := range m.Topics["isr"].Partitions {
		if p.Leader != leader {
			continue
		}
		pe := p.PartitionEpoch
		if len(shrink) == 10 {
			stale, pe = len(shrink), pe-1
		}
		shrink = append(shrink, ISRChange{Topic: "isr", Partition: p.Index, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: pe, ISR: []int32{leader}})
	}
	res := c.node(leader).AlterPartitions(ctx(t), shrink)
	revs := map[int64]bool{}
	for i, r := range res {
		if i == stale {
			if !errors.Is(r.Err, ErrInvalidUpdateVersion) {
				t.Fatalf("the stale change: %v, want ErrInvalidUpdateVersion", r.Err)
			}
			continue
		}
		if r.Err != nil || !slices.Equal(r.Partition.ISR, []int32{leader}) || r.Partition.PartitionEpoch != shrink[i].PartitionEpoch+1 {
			t.Fatalf("change %d: %+v %v", i, r.Partition, r.Err)
		}
		revs[r.Partition.Version] = true
	}
	if max := len(shrink)/c.node(leader).reconcileBatch() + 2; len(revs) > max {
		t.Fatalf("%d changes written at %d revisions, want at most %d", len(shrink), len(revs), max)
	}
	var expand []ISRChange
	for i, r := range res {
		if i != stale {
			expand = append(expand, ISRChange{Topic: "isr", Partition: r.Partition.Index, LeaderEpoch: r.Partition.LeaderEpoch, PartitionEpoch: r.Partition.PartitionEpoch, ISR: r.Partition.Replicas})
		}
	}
	for i, r := range c.node(leader).AlterPartitions(ctx(t), expand) {
		if r.Err != nil || len(r.Partition.ISR) != 3 {
			t.Fatalf("expand %d: %+v %v", i, r.Partition, r.Err)
		}
	}
	t.Logf("%d ISR changes by broker %d written at %d revisions", len(shrink), leader, len(revs))
}

// newLedTopic starts three nodes and creates topic with parts partitions,
// RF 3, and returns once every partition has a leader and a full ISR.
func newLedTopic(t *testing.T, topic string, parts int32) (*testCluster, *Metadata) {
	c := newTestCluster(t, 3)
	m := c.waitAll("3 brokers and a controller", func(m *Metadata) bool {
		return len(m.Brokers) == 3 && m.ControllerID > 0
	})
	if _, err := c.node(m.ControllerID).CreateTopic(ctx(t), topic, parts, 3, nil, nil); err != nil {
		t.Fatal(err)
	}
	m = c.waitAll("every partition of "+topic+" led with a full ISR", func(m *Metadata) bool {
		tt := m.Topics[topic]
		if tt == nil || len(tt.Partitions) != int(parts) {
			return false
		}
		for _, p := range tt.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	return c, m
}

// TestElectLeaders_Batch: a broker leading about a third of 600 partitions
// dies, returns and rejoins every ISR; one preferred ElectLeaders naming
// every partition moves those whose first replica it is back to it, written
// at a few etcd revisions (one per batch, not one per partition), each with
// LeaderEpoch and PartitionEpoch one higher; the others answer
// ErrElectionNotNeeded, a partition named twice is elected once and an
// unknown one answers ErrUnknownTopicOrPartition.
func TestElectLeaders_Batch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	const parts = 600
	c, m := newLedTopic(t, "elect", parts)
	var victim int32
	for id := range m.Brokers {
		if id != m.ControllerID {
			victim = id
			break
		}
	}
	c.stop(victim, true)
	c.waitAll("no partition led by the dead broker or with it in its ISR", func(m *Metadata) bool {
		for _, p := range m.Topics["elect"].Partitions {
			if p.Leader < 0 || p.Leader == victim || slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return true
	})
	c.restart(victim)
	m = c.waitAll("the broker registered again", func(m *Metadata) bool { _, ok := m.Brokers[victim]; return ok })
	expand := map[int32][]ISRChange{}
	for _, p := range m.Topics["elect"].Partitions {
		expand[p.Leader] = append(expand[p.Leader], ISRChange{Topic: "elect", Partition: p.Index, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: p.Replicas})
	}
	for leader, chs := range expand {
		for i, r := range c.node(leader).AlterPartitions(ctx(t), chs) {
			if r.Err != nil {
				t.Fatalf("broker %d expanding the ISR of partition %d: %v", leader, chs[i].Partition, r.Err)
			}
		}
	}
	m = c.waitAll("every ISR full again", func(m *Metadata) bool {
		for _, p := range m.Topics["elect"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	before := slices.Clone(m.Topics["elect"].Partitions)
	tps := []TopicPartition{{Topic: "elect", Partition: 7}, {Topic: "elect", Partition: parts}, {Topic: "nope", Partition: 0}}
	for i := int32(0); i < parts; i++ {
		tps = append(tps, TopicPartition{Topic: "elect", Partition: i})
	}
	res := c.node(m.ControllerID).ElectLeaders(ctx(t), true, tps)
	for _, tp := range tps[1:3] {
		if !errors.Is(res[tp], ErrUnknownTopicOrPartition) {
			t.Fatalf("%v: %v, want ErrUnknownTopicOrPartition", tp, res[tp])
		}
	}
	moved := 0
	for _, p := range before {
		err := res[TopicPartition{Topic: "elect", Partition: p.Index}]
		switch {
		case p.Leader == p.Replicas[0] && !errors.Is(err, ErrElectionNotNeeded):
			t.Fatalf("partition %d led by its first replica: %v, want ErrElectionNotNeeded", p.Index, err)
		case p.Leader != p.Replicas[0] && err != nil:
			t.Fatalf("partition %d led by %d, first replica %d: %v", p.Index, p.Leader, p.Replicas[0], err)
		case p.Leader != p.Replicas[0]:
			moved++
		}
	}
	if moved < parts/10 {
		t.Fatalf("only %d of %d partitions were not led by their first replica", moved, parts)
	}
	m = c.waitAll("every partition led by its first replica", func(m *Metadata) bool {
		for _, p := range m.Topics["elect"].Partitions {
			if p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
	revs := map[int64]int{}
	for i, p := range m.Topics["elect"].Partitions {
		b := before[i]
		if b.Leader == b.Replicas[0] {
			if p.LeaderEpoch != b.LeaderEpoch || p.Version != b.Version {
				t.Fatalf("partition %d, not elected, changed: %+v, was %+v", p.Index, p, b)
			}
			continue
		}
		if p.LeaderEpoch != b.LeaderEpoch+1 || p.PartitionEpoch != b.PartitionEpoch+1 {
			t.Fatalf("partition %d elected: epochs %d/%d, were %d/%d (named twice: elected once)", p.Index, p.LeaderEpoch, p.PartitionEpoch, b.LeaderEpoch, b.PartitionEpoch)
		}
		revs[p.Version]++
	}
	if want := moved/c.node(m.ControllerID).reconcileBatch() + 2; len(revs) > want {
		t.Fatalf("the %d elections were written at %d revisions, want at most %d", moved, len(revs), want)
	}
	t.Logf("broker %d back: %d of %d partitions moved to their first replica at %d revisions", victim, moved, parts, len(revs))
}

// TestController_FailedBatchWrittenInHalves: the controller's snapshot says
// a broker leading a third of 600 partitions is gone, but one partition
// changed since (its leader shrank its ISR): the batch's transaction fails,
// and its halves are written in turn, down to the stale partition alone.
// Every other partition's change lands at a few revisions (about
// 2·log2(600)), where writing the batch again one partition at a time took
// 599; the stale one is not written.
func TestController_FailedBatchWrittenInHalves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	const parts = 600
	c, m := newLedTopic(t, "halves", parts)
	ctrl := c.node(m.ControllerID)
	resp, err := ctrl.cli.Get(ctx(t), keyController, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatal(resp, err)
	}
	elKey, elRev := string(resp.Kvs[0].Key), resp.Kvs[0].CreateRevision
	guard := clientv3.Compare(clientv3.CreateRevision(elKey), "=", elRev)
	var victim int32
	for id := range m.Brokers {
		if id != m.ControllerID {
			victim = id
			break
		}
	}
	stale := *m
	stale.Brokers = map[int32]Broker{}
	for id, b := range m.Brokers {
		if id != victim {
			stale.Brokers[id] = b
		}
	}
	// Partition 300 changes after the snapshot: its leader drops a
	// follower other than the victim from its ISR.
	p := m.Topics["halves"].Partitions[300]
	var isr []int32
	for _, r := range p.ISR {
		if r == p.Leader || r == victim {
			isr = append(isr, r)
		}
	}
	if _, err := c.node(p.Leader).AlterPartition(ctx(t), "halves", 300, p.LeaderEpoch, p.PartitionEpoch, isr); err != nil {
		t.Fatal(err)
	}
	before, err := ctrl.cli.Get(ctx(t), keyPartitions, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if lost, _ := ctrl.reconcile(ctx(t), guard, elKey, &stale); lost {
		t.Fatal("the controller was told it lost its election key")
	}
	after, err := ctrl.cli.Get(ctx(t), keyPartitions, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64]int{}
	for _, kv := range after.Kvs {
		tp, _ := parsePartitionKey(string(kv.Key))
		if tp.Topic != "halves" {
			continue
		}
		q, err := parsePartition(tp.Partition, kv)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Partition == 300 {
			if q.PartitionEpoch != p.PartitionEpoch+1 || slices.Contains(q.ISR, victim) != slices.Contains(isr, victim) {
				t.Fatalf("the stale partition was written: %+v", q)
			}
			continue
		}
		if q.Leader == victim || slices.Contains(q.ISR, victim) {
			t.Fatalf("partition %d not changed: %+v", tp.Partition, q)
		}
		if q.Version <= before.Header.Revision {
			t.Fatalf("partition %d written before reconcile: %+v", tp.Partition, q)
		}
		revs[q.Version]++
	}
	if len(revs) > 25 {
		t.Fatalf("%d partition changes written at %d revisions, want at most 25 (halves of the failed batch)", parts-1, len(revs))
	}
	t.Logf("%d changes, one partition stale: written at %d revisions", parts-1, len(revs))
}

// TestAlterPartitions_FailedBatchWrittenInHalves: a leader's batch of 300
// ISR shrinks in which one partition changed after it was read fails as a
// whole; its halves are written in turn, so the 299 others land at a few
// revisions and only the changed one is left to read again (it was the
// whole batch, then written one partition at a time). A batch conditioned
// on a registration that changed is not halved: every change is left to
// read again and nothing is written.
func TestAlterPartitions_FailedBatchWrittenInHalves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	const parts = 900
	c, m := newLedTopic(t, "halves", parts)
	leader := m.ControllerID
	n := c.node(leader)
	live, err := n.liveBrokers(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	epoch := live[leader].Epoch
	var changes []ISRChange
	var ws []isrWrite
	for _, p := range m.Topics["halves"].Partitions {
		if p.Leader != leader {
			continue
		}
		q, err := n.readPartition(ctx(t), "halves", p.Index)
		if err != nil {
			t.Fatal(err)
		}
		np := q
		np.ISR, np.PartitionEpoch = []int32{leader}, q.PartitionEpoch+1
		ws = append(ws, isrWrite{i: len(changes), topic: "halves", old: q, new: np})
		changes = append(changes, ISRChange{Topic: "halves", Partition: q.Index, LeaderEpoch: q.LeaderEpoch, PartitionEpoch: q.PartitionEpoch, ISR: np.ISR})
	}
	stale := len(ws) / 3
	sp := ws[stale].old
	if _, err := n.AlterPartition(ctx(t), "halves", sp.Index, sp.LeaderEpoch, sp.PartitionEpoch, []int32{leader, sp.ISR[len(sp.ISR)-1]}); err != nil {
		t.Fatal(err)
	}

	out := make([]ISRResult, len(changes))
	if todo := n.writeISRsHalving(ctx(t), epoch+1, live, changes, ws, out, nil); len(todo) != len(ws) {
		t.Fatalf("a stale registration: %d of %d changes left to read again, want all", len(todo), len(ws))
	}
	for i, r := range out {
		if r.Err != nil || r.Partition.Version != 0 {
			t.Fatalf("a stale registration: change %d has a result: %+v", i, r)
		}
	}

	todo := n.writeISRsHalving(ctx(t), epoch, live, changes, ws, out, nil)
	if len(todo) != 1 || todo[0] != stale {
		t.Fatalf("left to read again: %v, want [%d]", todo, stale)
	}
	revs := map[int64]bool{}
	for i, r := range out {
		if i == stale {
			continue
		}
		if r.Err != nil || !slices.Equal(r.Partition.ISR, []int32{leader}) {
			t.Fatalf("change %d: %+v", i, r)
		}
		revs[r.Partition.Version] = true
	}
	if len(revs) > 20 {
		t.Fatalf("%d changes written at %d revisions, want at most 20", len(ws)-1, len(revs))
	}
	t.Logf("%d changes, one stale: written at %d revisions", len(ws)-1, len(revs))
}

// An idle cluster's controller makes no pass over its partitions: it
// passes again when the metadata changes, not on a timer (it walked every
// partition twice a second before, a large part of an idle cluster's CPU
// at 90,000 partitions, issue #22). Asserting that nothing happens takes a
// window: three old ticks.
func TestController_IdleMakesNoPasses(t *testing.T) {
	c := newTestCluster(t, 3)
	m := c.waitAll("3 brokers and a controller", func(m *Metadata) bool {
		return len(m.Brokers) == 3 && m.ControllerID > 0
	})
	ctrl := c.node(m.ControllerID)
	if _, err := ctrl.CreateTopic(ctx(t), "idle", 30, 3, nil, nil); err != nil {
		t.Fatal(err)
	}
	c.waitAll("idle led with full ISRs", func(m *Metadata) bool {
		tt := m.Topics["idle"]
		if tt == nil || len(tt.Partitions) != 30 {
			return false
		}
		for _, p := range tt.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	before := ctrl.controllerPasses.Load()
	if before == 0 {
		t.Fatal("the controller made no pass at all")
	}
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		// One more is allowed: a change of metadata written just before.
		if n := ctrl.controllerPasses.Load(); n > before+1 {
			t.Fatalf("%d passes over the partitions of an idle cluster in 1.5 s", n-before)
		}
	}
	// A change of metadata still brings a pass.
	before = ctrl.controllerPasses.Load()
	if _, err := ctrl.CreateTopic(ctx(t), "more", 1, 3, nil, nil); err != nil {
		t.Fatal(err)
	}
	wait := ctx(t)
	for ctrl.controllerPasses.Load() == before {
		if wait.Err() != nil {
			t.Fatal("no pass after a metadata change")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
