package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The tests run etcd without fsync: they test no crash of the machine.
func init() { unsafeNoFsync = true }

func TestDecide(t *testing.T) {
	live := func(ids ...int32) map[int32]int64 {
		m := map[int32]int64{}
		for _, id := range ids {
			m[id] = int64(100 + id)
		}
		return m
	}
	base := Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 9, LeaderBrokerEpoch: 101}
	with := func(f func(*Partition)) Partition { p := base; f(&p); return p }
	for _, tc := range []struct {
		name    string
		p       Partition
		live    map[int32]int64
		unclean bool
		want    Partition
		changed bool
	}{
		{"all live", base, live(1, 2, 3), false, base, false},
		{"follower dies", base, live(1, 3), false,
			with(func(p *Partition) { p.ISR = []int32{1, 3}; p.PartitionEpoch = 10 }), true},
		{"leader dies", base, live(2, 3), false,
			with(func(p *Partition) {
				p.Leader, p.ISR, p.LeaderEpoch, p.PartitionEpoch, p.LeaderBrokerEpoch = 2, []int32{2, 3}, 6, 10, 102
			}), true},
		{"leader restarted", base, map[int32]int64{1: 500, 2: 102, 3: 103}, false,
			with(func(p *Partition) { p.LeaderEpoch, p.PartitionEpoch, p.LeaderBrokerEpoch = 6, 10, 500 }), true},
		{"last ISR member dies", with(func(p *Partition) { p.ISR = []int32{1} }), live(2, 3), false,
			with(func(p *Partition) {
				p.Leader, p.ISR, p.LeaderEpoch, p.PartitionEpoch, p.LeaderBrokerEpoch = -1, []int32{1}, 6, 10, 0
			}), true},
		{"leaderless stays", with(func(p *Partition) { p.Leader, p.ISR, p.LeaderBrokerEpoch = -1, []int32{1}, 0 }), live(2, 3), false,
			with(func(p *Partition) { p.Leader, p.ISR, p.LeaderBrokerEpoch = -1, []int32{1}, 0 }), false},
		{"leaderless ISR member returns", with(func(p *Partition) { p.Leader, p.ISR, p.LeaderBrokerEpoch = -1, []int32{1}, 0 }), live(1, 2), false,
			with(func(p *Partition) {
				p.Leader, p.ISR, p.LeaderEpoch, p.PartitionEpoch, p.LeaderBrokerEpoch = 1, []int32{1}, 6, 10, 101
			}), true},
		{"unclean", with(func(p *Partition) { p.Leader, p.ISR, p.LeaderBrokerEpoch = -1, []int32{1}, 0 }), live(3), true,
			with(func(p *Partition) {
				p.Leader, p.ISR, p.LeaderEpoch, p.PartitionEpoch, p.LeaderBrokerEpoch = 3, []int32{3}, 6, 10, 103
			}), true},
	} {
		got, changed := decide(tc.p, tc.live, tc.unclean)
		if changed != tc.changed || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %+v changed=%v, want %+v changed=%v", tc.name, got, changed, tc.want, tc.changed)
		}
	}
}

func TestAssignReplicas_RackAwareAndSpread(t *testing.T) {
	live := map[int32]Broker{}
	for id := int32(1); id <= 6; id++ {
		live[id] = Broker{ID: id, Rack: fmt.Sprintf("rack-%d", id%3)}
	}
	for range 20 { // random start and shift
		lists := assignReplicas(live, 0, 12, 3)
		leaders := map[int32]int{}
		for p, rs := range lists {
			racks := map[string]bool{}
			for _, r := range rs {
				racks[live[r].Rack] = true
			}
			if len(rs) != 3 || len(racks) != 3 {
				t.Fatalf("partition %d: replicas %v not on 3 racks", p, rs)
			}
			leaders[rs[0]]++
		}
		for id := int32(1); id <= 6; id++ {
			if leaders[id] != 2 {
				t.Fatalf("leaders not spread: %v (%v)", leaders, lists)
			}
		}
	}
	// Fewer racks than replicas: every rack used, then any broker.
	live = map[int32]Broker{1: {ID: 1, Rack: "a"}, 2: {ID: 2, Rack: "a"}, 3: {ID: 3, Rack: "b"}}
	for _, rs := range assignReplicas(live, 0, 6, 3) {
		if s := slices.Sorted(slices.Values(rs)); !slices.Equal(s, []int32{1, 2, 3}) {
			t.Fatalf("replicas %v", rs)
		}
	}
}

// testCluster is n Nodes in this process, each with its own etcd member on
// a loopback port.
type testCluster struct {
	t      *testing.T
	voters []Voter
	dir    string
	mu     sync.Mutex
	nodes  map[int32]*Node
}

func freePorts(t *testing.T, n int) []int32 {
	var ls []net.Listener
	var ports []int32
	// Below the kernel's ephemeral range, in this package's band (see
	// broker's freeTCPPorts): a port found free in the ephemeral range can
	// become another process's outgoing connection's local port before the
	// member binds it.
	for attempt := 0; len(ports) < n; attempt++ {
		if attempt > 10000 {
			t.Fatal("no free loopback port in 25000-28999")
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 25000+rand.IntN(4000)))
		if err != nil {
			continue // taken: try another
		}
		ls = append(ls, l)
		ports = append(ports, int32(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func testLogger() *slog.Logger {
	lvl := slog.LevelError
	if testing.Verbose() {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

func newTestCluster(t *testing.T, n int) *testCluster {
	c := &testCluster{t: t, dir: t.TempDir(), nodes: map[int32]*Node{}}
	for i, p := range freePorts(t, n) {
		c.voters = append(c.voters, Voter{NodeID: int32(i + 1), Host: "127.0.0.1", Port: p})
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, nd := range c.nodes {
			nd.Close()
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.start(int32(i + 1))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *testCluster) start(id int32) (*Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nd, err := Start(ctx, Config{
		NodeID: id, Voters: c.voters, DataDir: filepath.Join(c.dir, fmt.Sprint("node-", id)),
		Host: "127.0.0.1", Port: 9000 + id, Rack: fmt.Sprint("rack-", id),
		ClusterID: fmt.Sprint("cluster-from-", id), Logger: testLogger().With("test", c.t.Name()),
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nodes[id] = nd
	c.mu.Unlock()
	return nd, nil
}

func (c *testCluster) restart(id int32) *Node {
	c.t.Helper()
	nd, err := c.start(id)
	if err != nil {
		c.t.Fatalf("restart node %d: %v", id, err)
	}
	return nd
}

func (c *testCluster) node(id int32) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// stop closes (or, with crash, kills) node id and forgets it.
func (c *testCluster) stop(id int32, crash bool) {
	c.mu.Lock()
	nd := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if crash {
		nd.kill()
	} else {
		nd.Close()
	}
}

func (c *testCluster) live() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ns []*Node
	for _, nd := range c.nodes {
		ns = append(ns, nd)
	}
	return ns
}

// waitAll waits until cond holds on every live node's metadata.
func (c *testCluster) waitAll(what string, cond func(*Metadata) bool) *Metadata {
	c.t.Helper()
	var m *Metadata
	for _, nd := range c.live() {
		m = waitMeta(c.t, nd, what, cond)
	}
	return m
}

func waitMeta(t *testing.T, nd *Node, what string, cond func(*Metadata) bool) *Metadata {
	t.Helper()
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	for {
		m, ch := nd.Subscribe()
		if m != nil && cond(m) {
			return m
		}
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("node %d: timed out waiting for %s; metadata at rev %d: brokers %v controller %d topics %v",
				nd.cfg.NodeID, what, m.Revision, m.BrokerIDs(), m.ControllerID, dumpTopics(m))
		}
	}
}

func dumpTopics(m *Metadata) string {
	s := ""
	for name, t := range m.Topics {
		for _, p := range t.Partitions {
			s += fmt.Sprintf("[%s-%d leader %d epoch %d/%d isr %v] ", name, p.Index, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.ISR)
		}
	}
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestCluster runs the scenarios on one three-node cluster in sequence, so
// that the members start once.
func TestCluster(t *testing.T) {
	c := newTestCluster(t, 3)
	n1 := c.node(1)

	t.Run("Bootstrap", func(t *testing.T) {
		m := c.waitAll("3 brokers and a controller", func(m *Metadata) bool {
			return len(m.Brokers) == 3 && m.ControllerID > 0
		})
		id := n1.ClusterID()
		for _, nd := range c.live() {
			if nd.ClusterID() != id || nd.Metadata().ClusterID != id {
				t.Fatalf("cluster ids differ: %q vs %q", nd.ClusterID(), id)
			}
		}
		if b := m.Brokers[2]; b.Host != "127.0.0.1" || b.Port != 9002 || b.Rack != "rack-2" || b.Epoch == 0 {
			t.Fatalf("broker 2: %+v", b)
		}
		if n1.Fenced() {
			t.Fatal("fenced right after start")
		}
	})

	t.Run("CreateTopic", func(t *testing.T) {
		top, err := c.node(2).CreateTopic(ctx(t), "orders", 3, 3, nil, map[string]string{"cleanup.policy": "compact"})
		if err != nil {
			t.Fatal(err)
		}
		m := c.waitAll("orders on every node", func(m *Metadata) bool {
			tt := m.Topics["orders"]
			return tt != nil && len(tt.Partitions) == 3
		})
		got := m.Topics["orders"]
		if got.ID != top.ID || got.ID == ([16]byte{}) || got.Configs["cleanup.policy"] != "compact" {
			t.Fatalf("topic %+v, created %+v", got, top)
		}
		leaders := map[int32]bool{}
		for _, p := range got.Partitions {
			if len(p.Replicas) != 3 || !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 {
				t.Fatalf("partition %+v", p)
			}
			leaders[p.Leader] = true
		}
		if len(leaders) != 3 {
			t.Fatalf("leaders not spread: %s", dumpTopics(m))
		}
		if _, err := n1.CreateTopic(ctx(t), "orders", 1, 1, nil, nil); !errors.Is(err, ErrTopicExists) {
			t.Fatalf("duplicate: %v", err)
		}
		if _, err := n1.CreateTopic(ctx(t), "wide", 1, 4, nil, nil); !errors.Is(err, ErrInvalidReplicationFactor) {
			t.Fatalf("rf 4: %v", err)
		}
		if _, err := n1.CreateTopic(ctx(t), "bad", 0, 0, map[int32][]int32{0: {1, 9}}, nil); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Fatalf("broker 9: %v", err)
		}
		if _, err := n1.CreateTopic(ctx(t), "manual", 0, 0, map[int32][]int32{0: {3, 1}, 1: {2}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := n1.CreatePartitions(ctx(t), "manual", 3, nil); err != nil {
			t.Fatal(err)
		}
		if err := n1.SetTopicConfigs(ctx(t), "manual", map[string]string{"retention.ms": "1000"}); err != nil {
			t.Fatal(err)
		}
		m = c.waitAll("manual with 3 partitions and config", func(m *Metadata) bool {
			tt := m.Topics["manual"]
			return tt != nil && len(tt.Partitions) == 3 && tt.Configs["retention.ms"] == "1000"
		})
		if ps := m.Topics["manual"].Partitions; !slices.Equal(ps[0].Replicas, []int32{3, 1}) || ps[0].Leader != 3 || len(ps[2].Replicas) != 2 {
			t.Fatalf("manual: %s", dumpTopics(m))
		}
		if err := n1.CreatePartitions(ctx(t), "manual", 2, nil); !errors.Is(err, ErrInvalidPartitions) {
			t.Fatalf("shrink: %v", err)
		}
		if err := c.node(3).DeleteTopic(ctx(t), "manual"); err != nil {
			t.Fatal(err)
		}
		c.waitAll("manual deleted", func(m *Metadata) bool { return m.Topics["manual"] == nil })
		if err := n1.DeleteTopic(ctx(t), "manual"); !errors.Is(err, ErrUnknownTopicOrPartition) {
			t.Fatalf("delete again: %v", err)
		}
	})

	t.Run("ProducerIDBlocks", func(t *testing.T) {
		seen := map[int64]bool{}
		for _, nd := range c.live() {
			first, size, err := nd.AllocateProducerIDBlock(ctx(t), -1)
			if err != nil || size != ProducerIDBlockSize || first%size != 0 || seen[first] {
				t.Fatalf("block %d+%d err %v (seen %v)", first, size, err, seen)
			}
			seen[first] = true
		}
		// A floor (a cluster link's mirrored producer ids) moves the
		// next block past it.
		first, _, err := n1.AllocateProducerIDBlock(ctx(t), 123456)
		if err != nil || first != 123457 {
			t.Fatalf("block above 123456: first %d, err %v", first, err)
		}
		if first, _, err = n1.AllocateProducerIDBlock(ctx(t), 5); err != nil || first != 123457+ProducerIDBlockSize {
			t.Fatalf("block after it: first %d, err %v", first, err)
		}
	})

	t.Run("AlterPartition", func(t *testing.T) {
		p, _ := n1.Metadata().Partition("orders", 0)
		leader := c.node(p.Leader)
		follower := c.node(p.Replicas[1])
		shrunk := []int32{p.Leader, p.Replicas[2]}
		np, err := leader.AlterPartition(ctx(t), "orders", 0, p.LeaderEpoch, p.PartitionEpoch, shrunk)
		if err != nil || np.PartitionEpoch != p.PartitionEpoch+1 || np.LeaderEpoch != p.LeaderEpoch || len(np.ISR) != 2 {
			t.Fatalf("shrink: %+v %v", np, err)
		}
		// The same request again is now stale.
		if _, err := leader.AlterPartition(ctx(t), "orders", 0, p.LeaderEpoch, p.PartitionEpoch, shrunk); !errors.Is(err, ErrInvalidUpdateVersion) {
			t.Fatalf("stale partition epoch: %v", err)
		}
		if _, err := leader.AlterPartition(ctx(t), "orders", 0, p.LeaderEpoch-1, np.PartitionEpoch, p.Replicas); !errors.Is(err, ErrFencedLeaderEpoch) {
			t.Fatalf("stale leader epoch: %v", err)
		}
		if _, err := follower.AlterPartition(ctx(t), "orders", 0, np.LeaderEpoch, np.PartitionEpoch, p.Replicas); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("from a follower: %v", err)
		}
		if _, err := leader.AlterPartition(ctx(t), "orders", 0, np.LeaderEpoch, np.PartitionEpoch, []int32{p.Replicas[1]}); !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("ISR without the leader: %v", err)
		}
		back, err := leader.AlterPartition(ctx(t), "orders", 0, np.LeaderEpoch, np.PartitionEpoch, p.Replicas)
		if err != nil || !slices.Equal(back.ISR, p.Replicas) || back.PartitionEpoch != p.PartitionEpoch+2 {
			t.Fatalf("expand: %+v %v", back, err)
		}
		c.waitAll("ISR expanded", func(m *Metadata) bool {
			q, _ := m.Partition("orders", 0)
			return q.PartitionEpoch == back.PartitionEpoch
		})
	})

	t.Run("StaleControllerRejected", func(t *testing.T) {
		m := n1.Metadata()
		ctrl := c.node(m.ControllerID)
		resp, err := ctrl.cli.Get(ctx(t), keyController, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil || len(resp.Kvs) == 0 {
			t.Fatal(resp, err)
		}
		elKey, elRev := string(resp.Kvs[0].Key), resp.Kvs[0].CreateRevision
		// A snapshot in which broker 2 is gone asks for changes.
		stale := *m
		stale.Brokers = map[int32]Broker{1: m.Brokers[1], 3: m.Brokers[3]}
		// 1. A controller whose election key is not the current one.
		oldGuard := clientv3.Compare(clientv3.CreateRevision(elKey), "=", elRev-1)
		if lost, _ := ctrl.reconcile(ctx(t), oldGuard, keyController+"gone", &stale); !lost {
			t.Fatal("a controller with an old election revision was not told it lost")
		}
		// 2. The current controller, but the partitions changed since the
		// snapshot: bump partition 1's epoch first.
		p1, _ := m.Partition("orders", 1)
		if _, err := c.node(p1.Leader).AlterPartition(ctx(t), "orders", 1, p1.LeaderEpoch, p1.PartitionEpoch, p1.Replicas[:1]); err != nil {
			t.Fatal(err)
		}
		guard := clientv3.Compare(clientv3.CreateRevision(elKey), "=", elRev)
		staleP1 := stale
		staleP1.Topics = map[string]*Topic{"orders": {Name: "orders", Partitions: []Partition{p1}}}
		if lost, _ := ctrl.reconcile(ctx(t), guard, elKey, &staleP1); lost {
			t.Fatal("current controller told it lost")
		}
		cur, err := ctrl.readPartition(ctx(t), "orders", 1)
		if err != nil || cur.PartitionEpoch != p1.PartitionEpoch+1 || !slices.Equal(cur.ISR, p1.Replicas[:1]) {
			t.Fatalf("the stale write went through: %+v %v", cur, err)
		}
		// Restore the full ISR for the scenarios below.
		if _, err := c.node(p1.Leader).AlterPartition(ctx(t), "orders", 1, cur.LeaderEpoch, cur.PartitionEpoch, p1.Replicas); err != nil {
			t.Fatal(err)
		}
		for id := range m.Brokers {
			if p, _ := ctrl.readPartition(ctx(t), "orders", 0); !slices.Contains(p.ISR, id) {
				t.Fatalf("broker %d left the ISR of orders-0: %+v", id, p)
			}
		}
	})

	// failover stops the leader of orders-0 and waits for the controller to
	// elect the next ISR member in assignment order.
	failover := func(t *testing.T, crash bool) {
		m0 := c.waitAll("orders-0 with a full ISR", func(m *Metadata) bool {
			p, _ := m.Partition("orders", 0)
			return len(p.ISR) == 3 && len(m.Brokers) == 3
		})
		before, _ := m0.Partition("orders", 0)
		dead := before.Leader
		want := before.Replicas[0]
		if want == dead {
			want = before.Replicas[1]
		}
		survivor := c.node(want)
		deadNode := c.node(dead)
		wasEtcdLeader := uint64(deadNode.etcd.Server.MemberID()) == deadNode.etcd.Server.Lead()
		wasController := m0.ControllerID == dead
		start := time.Now()
		stopped := make(chan struct{})
		go func() { c.stop(dead, crash); close(stopped) }()
		m := waitMeta(t, survivor, "a new leader", func(m *Metadata) bool {
			p, _ := m.Partition("orders", 0)
			return p.Leader != dead && p.Leader >= 0
		})
		took := time.Since(start)
		<-stopped
		defer func() {
			c.restart(dead)
			c.waitAll("restarted broker registered", func(m *Metadata) bool { _, ok := m.Brokers[dead]; return ok })
		}()
		p, _ := m.Partition("orders", 0)
		t.Logf("crash=%v: leader %d → %d (epoch %d → %d) in %v; the dead node was etcd leader: %v, controller: %v",
			crash, dead, p.Leader, before.LeaderEpoch, p.LeaderEpoch, took, wasEtcdLeader, wasController)
		if p.Leader != want || p.LeaderEpoch != before.LeaderEpoch+1 || slices.Contains(p.ISR, dead) || len(p.ISR) != 2 {
			t.Fatalf("after failover: %+v (want leader %d)", p, want)
		}
		if crash && took > 6*time.Second {
			t.Fatalf("failover took %v", took)
		}
	}
	// rejoinISR puts every live replica back in the ISR, as leaders do once
	// followers have caught up.
	rejoinISR := func(t *testing.T) {
		m := c.live()[0].Metadata()
		// Bring it back into the ISR, as its leader would once it caught up.
		for _, name := range []string{"orders"} {
			for i := range m.Topics[name].Partitions {
				q, _ := c.live()[0].readPartition(ctx(t), name, int32(i))
				if len(q.ISR) != len(q.Replicas) {
					if _, err := c.node(q.Leader).AlterPartition(ctx(t), name, int32(i), q.LeaderEpoch, q.PartitionEpoch, q.Replicas); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	t.Run("CloseLeader", func(t *testing.T) { failover(t, false); rejoinISR(t) })
	t.Run("KillLeader", func(t *testing.T) { failover(t, true); rejoinISR(t) })

	t.Run("ElectPreferred", func(t *testing.T) {
		tp := TopicPartition{Topic: "orders", Partition: 0}
		waitMeta(t, c.node(1), "ISR back", func(m *Metadata) bool { p, _ := m.Partition("orders", 0); return len(p.ISR) == 3 })
		p, _ := c.node(1).Metadata().Partition("orders", 0)
		res := c.node(1).ElectLeaders(ctx(t), true, []TopicPartition{tp, {Topic: "nope", Partition: 0}})
		if p.Leader == p.Replicas[0] {
			if !errors.Is(res[tp], ErrElectionNotNeeded) {
				t.Fatalf("%v", res)
			}
		} else if res[tp] != nil {
			t.Fatalf("%v", res)
		}
		if !errors.Is(res[TopicPartition{Topic: "nope", Partition: 0}], ErrUnknownTopicOrPartition) {
			t.Fatalf("%v", res)
		}
		c.waitAll("preferred leader", func(m *Metadata) bool { q, _ := m.Partition("orders", 0); return q.Leader == p.Replicas[0] })
	})

	t.Run("LeaderlessUntilLastISRMemberReturns", func(t *testing.T) {
		// Read from etcd: node 1's mirror may not have seen the ISR
		// changes rejoinISR just wrote, and a change conditioned on a
		// stale partition epoch is refused (INVALID_UPDATE_VERSION).
		p, err := c.node(1).readPartition(ctx(t), "orders", 2)
		if err != nil {
			t.Fatal(err)
		}
		last := p.Leader
		np, err := c.node(last).AlterPartition(ctx(t), "orders", 2, p.LeaderEpoch, p.PartitionEpoch, []int32{last})
		if err != nil {
			t.Fatal(err)
		}
		c.stop(last, false)
		m := c.waitAll("orders-2 leaderless", func(m *Metadata) bool { q, _ := m.Partition("orders", 2); return q.Leader == -1 })
		q, _ := m.Partition("orders", 2)
		if !slices.Equal(q.ISR, []int32{last}) || q.LeaderEpoch != np.LeaderEpoch+1 || q.PartitionEpoch != np.PartitionEpoch+1 {
			t.Fatalf("leaderless state %+v", q)
		}
		c.restart(last)
		m = c.waitAll("orders-2 led again", func(m *Metadata) bool { q, _ := m.Partition("orders", 2); return q.Leader >= 0 })
		q2, _ := m.Partition("orders", 2)
		if q2.Leader != last || q2.LeaderEpoch != q.LeaderEpoch+1 || !slices.Equal(q2.ISR, []int32{last}) {
			t.Fatalf("re-elected state %+v", q2)
		}
	})

	// A stopped broker stays registered, fenced, until unregistered; a
	// live one cannot be; an id never seen is not registered.
	t.Run("UnregisterBroker", func(t *testing.T) {
		n1 := c.node(1)
		if err := n1.UnregisterBroker(ctx(t), 2); !errors.Is(err, ErrBrokerAlive) {
			t.Fatalf("unregister live broker 2: %v", err)
		}
		if err := n1.UnregisterBroker(ctx(t), 42); !errors.Is(err, ErrBrokerNotRegistered) {
			t.Fatalf("unregister 42: %v", err)
		}
		if f, err := n1.FencedBrokers(ctx(t)); err != nil || len(f) != 0 {
			t.Fatalf("fenced brokers with all live: %v %v", f, err)
		}
		c.stop(3, false)
		c.waitAll("broker 3 gone", func(m *Metadata) bool { _, ok := m.Brokers[3]; return !ok })
		f, err := n1.FencedBrokers(ctx(t))
		if err != nil || len(f) != 1 || f[0].ID != 3 || f[0].Port != 9003 || f[0].Rack != "rack-3" {
			t.Fatalf("fenced brokers after stopping 3: %+v %v", f, err)
		}
		if err := n1.UnregisterBroker(ctx(t), 3); err != nil {
			t.Fatalf("unregister stopped broker 3: %v", err)
		}
		if f, err := n1.FencedBrokers(ctx(t)); err != nil || len(f) != 0 {
			t.Fatalf("fenced brokers after unregistering 3: %v %v", f, err)
		}
		if err := n1.UnregisterBroker(ctx(t), 3); !errors.Is(err, ErrBrokerNotRegistered) {
			t.Fatalf("unregister 3 again: %v", err)
		}
		c.restart(3)
		c.waitAll("broker 3 back", func(m *Metadata) bool { _, ok := m.Brokers[3]; return ok })
		if err := n1.UnregisterBroker(ctx(t), 3); !errors.Is(err, ErrBrokerAlive) {
			t.Fatalf("unregister restarted broker 3: %v", err)
		}
	})

	t.Run("FencedWithoutQuorum", func(t *testing.T) {
		survivor := c.node(1)
		if survivor.Fenced() {
			t.Fatal("fenced before losing quorum")
		}
		c.stop(2, true)
		// Quorum is lost once the second member has stopped.
		c.node(3).etcd.Server.HardStop()
		start := time.Now()
		c.stop(3, true)
		poll := time.NewTicker(20 * time.Millisecond)
		defer poll.Stop()
		for !survivor.Fenced() {
			if time.Since(start) > 10*time.Second {
				t.Fatal("not fenced 10 s after losing quorum")
			}
			<-poll.C
		}
		took := time.Since(start)
		t.Logf("fenced %v after losing quorum", took)
		// A raft leader that lost its quorum keeps acknowledging renewals
		// until it steps down, up to two election timeouts (2 x 500 ms).
		ttl := time.Duration(survivor.ttl) * time.Second
		if bound := ttl - survivor.fenceMargin() + time.Second + 200*time.Millisecond; took > bound {
			t.Fatalf("fenced only after %v (bound %v)", took, bound)
		}
		if _, err := survivor.AlterPartition(ctx(t), "orders", 0, 0, 0, nil); !errors.Is(err, ErrFenced) {
			t.Fatalf("AlterPartition while fenced: %v", err)
		}
	})
}

// A voter with PeerListen binds its etcd peer listener there and
// advertises its voter address, which stays unbound (a proxy would listen
// there); without PeerListen it binds the voter address as before.
func TestStart_PeerListenBindsElsewhere(t *testing.T) {
	ports := freePorts(t, 2)
	v := Voter{NodeID: 1, Host: "127.0.0.1", Port: ports[0]}
	bind := fmt.Sprintf("127.0.0.1:%d", ports[1])
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nd, err := Start(c, Config{
		NodeID: 1, Voters: []Voter{v}, PeerListen: bind, DataDir: t.TempDir(),
		Host: "127.0.0.1", Port: 9001, Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	if len(nd.etcd.Peers) != 1 || nd.etcd.Peers[0].Addr().String() != bind {
		t.Fatalf("peer listeners %v, want one on %s", nd.etcd.Peers, bind)
	}
	var advertised []string
	for _, m := range nd.etcd.Server.Cluster().Members() {
		advertised = append(advertised, m.PeerURLs...)
	}
	if !slices.Equal(advertised, []string{v.PeerURL()}) {
		t.Fatalf("advertised peer URLs %v, want %s", advertised, v.PeerURL())
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(v.Host, fmt.Sprint(v.Port)))
	if err != nil {
		t.Fatalf("the voter address is bound although PeerListen is set: %v", err)
	}
	ln.Close()

	for _, bad := range []string{"127.0.0.1", "no-port"} {
		_, err := Start(c, Config{NodeID: 1, Voters: []Voter{v}, PeerListen: bad, DataDir: t.TempDir(), Logger: testLogger()})
		if err == nil {
			t.Errorf("PeerListen %q accepted", bad)
		}
	}
}
