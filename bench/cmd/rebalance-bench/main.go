// Command rebalance-bench measures how long a consumer group of 8 members
// on a 64-partition topic takes to reach a stable assignment after a 9th
// member joins, with three franz-go rebalance protocols (issue #14):
//
//	go build -o /tmp/gregor ./cmd/gregor
//	cd bench && go run ./cmd/rebalance-bench -bin /tmp/gregor -n 5
//	cd bench && go run ./cmd/rebalance-bench -bin /tmp/gregor -n 5 -hb 500ms
//
// The protocols: classic eager (kgo.RangeBalancer: every member gives up
// all its partitions, then all are assigned again), classic cooperative
// (kgo.CooperativeStickyBalancer: two rounds, the first revokes only what
// moves) and KIP-848 (kgo.ServerSideBalancer: ConsumerGroupHeartbeat, the
// broker's uniform assignor, revocations and assignments reach each member
// on its own heartbeats).
//
// Each run makes a fresh group, starts 8 members, waits until they own the
// 64 partitions 8 each, waits a random part of one heartbeat interval (the
// members heartbeat in step once the group settled; a real joiner comes at
// any point of their interval), then starts the 9th and measures from just before
// its client is created to the moment the members' owned partitions, as
// their OnPartitionsAssigned / OnPartitionsRevoked / OnPartitionsLost
// callbacks left them, are again disjoint, cover all 64 and are 7 or 8 per
// member. Nothing is produced; the members only manage the group. Runs go
// protocol by protocol within each run number, so a change in the
// machine's load falls on all three alike.
//
// -hb 0 (the default) keeps every default heartbeat interval: kgo's 3 s
// for the classic protocol and the broker's
// group.consumer.heartbeat.interval.ms of 5 s for KIP-848. -hb D sets both
// to D. One broker (started from -bin on 127.0.0.1:0 with a temporary data
// directory and group.initial.rebalance.delay.ms=0) serves every run.
//
// It prints each run's time and, per protocol, the median and range.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	partitions = 64
	members    = 8
	runTimeout = time.Minute
)

type protocol struct {
	name string
	opt  kgo.Opt
	hb   time.Duration // the default heartbeat interval
}

var protocols = []protocol{
	{"classic eager (RangeBalancer)", kgo.Balancers(kgo.RangeBalancer()), 3 * time.Second},
	{"classic cooperative (CooperativeStickyBalancer)", kgo.Balancers(kgo.CooperativeStickyBalancer()), 3 * time.Second},
	{"KIP-848 (ServerSideBalancer)", kgo.ServerSideBalancer(), 5 * time.Second},
}

func main() {
	bin := flag.String("bin", "", "the gregor binary")
	n := flag.Int("n", 5, "runs per protocol")
	only := flag.String("only", "", "run only the protocols whose name contains this")
	hb := flag.Duration("hb", 0, "heartbeat interval of both protocols (0: the defaults, 3s classic, 5s KIP-848)")
	flag.Parse()
	log.SetFlags(0)
	if *bin == "" {
		log.Fatal("-bin is needed")
	}
	sets := []string{"group.initial.rebalance.delay.ms=0"}
	if *hb > 0 {
		sets = append(sets, fmt.Sprintf("group.consumer.heartbeat.interval.ms=%d", hb.Milliseconds()),
			// Kafka's bounds, moved as Kafka needs them moved.
			fmt.Sprintf("group.consumer.min.heartbeat.interval.ms=%d", min(hb.Milliseconds(), 5000)),
			fmt.Sprintf("group.consumer.max.heartbeat.interval.ms=%d", max(hb.Milliseconds(), 15000)))
	}
	addr, stop, err := startBroker(*bin, sets)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, partitions, 1, nil, "rebalance"); err != nil {
		log.Fatal(err)
	}
	cancel()
	adm.Close()

	times := make([][]time.Duration, len(protocols))
	for run := range *n {
		for i, p := range protocols {
			if !strings.Contains(p.name, *only) {
				continue
			}
			d, err := measure(addr, fmt.Sprintf("g-%d-%d", i, run), p, *hb)
			if err != nil {
				log.Fatalf("%s, run %d: %v", p.name, run+1, err)
			}
			times[i] = append(times[i], d)
			fmt.Printf("run %d %-48s %8.0f ms\n", run+1, p.name, ms(d))
		}
	}
	hbs := "defaults (classic 3s, KIP-848 5s)"
	if *hb > 0 {
		hbs = hb.String()
	}
	fmt.Printf("\n%d members + 1 joining, %d partitions, heartbeat %s; %d runs: median (min–max)\n", members, partitions, hbs, *n)
	for i, p := range protocols {
		if len(times[i]) == 0 {
			continue
		}
		ds := slices.Clone(times[i])
		slices.Sort(ds)
		fmt.Printf("  %-48s %8.0f ms (%.0f–%.0f)\n", p.name, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]))
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// owners tracks which partitions each member owns, as its callbacks say.
type owners struct {
	mu      sync.Mutex
	owned   []map[int32]bool
	changed chan struct{} // signalled after every callback
}

func (o *owners) callbacks(i int) []kgo.Opt {
	set := func(ps map[string][]int32, own bool) {
		o.mu.Lock()
		for _, parts := range ps {
			for _, p := range parts {
				if own {
					o.owned[i][p] = true
				} else {
					delete(o.owned[i], p)
				}
			}
		}
		o.mu.Unlock()
		select {
		case o.changed <- struct{}{}:
		default:
		}
	}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, false) }),
	}
}

// balanced reports whether the first k members own all partitions, each
// once, with at most one partition more on any member than on another.
func (o *owners) balanced(k int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[int32]bool{}
	lo, hi := partitions, 0
	for _, m := range o.owned[:k] {
		for p := range m {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
		lo, hi = min(lo, len(m)), max(hi, len(m))
	}
	return len(seen) == partitions && hi-lo <= 1
}

func (o *owners) wait(ctx context.Context, k int) error {
	for !o.balanced(k) {
		select {
		case <-o.changed:
		case <-ctx.Done():
			o.mu.Lock()
			defer o.mu.Unlock()
			var sizes []int
			for _, m := range o.owned[:k] {
				sizes = append(sizes, len(m))
			}
			return fmt.Errorf("%d members never balanced; owned per member %v", k, sizes)
		}
	}
	return nil
}

// measure runs one group: 8 members, then the 9th; it returns the time
// from the 9th's start to a balanced assignment of all nine.
func measure(addr, group string, p protocol, hb time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	o := &owners{changed: make(chan struct{}, 1)}
	for range members + 1 {
		o.owned = append(o.owned, map[int32]bool{})
	}
	var clients []*kgo.Client
	defer func() {
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Go(cl.Close)
		}
		wg.Wait()
	}()
	start := func(i int) error {
		opts := append([]kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.ClientID(fmt.Sprintf("m%d", i)),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics("rebalance"),
			p.opt,
		}, o.callbacks(i)...)
		if hb > 0 {
			opts = append(opts, kgo.HeartbeatInterval(hb))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
		// A group member's client runs the group in the background; a
		// poll loop keeps it as a consumer would.
		go func() {
			for {
				if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
		return nil
	}
	for i := range members {
		if err := start(i); err != nil {
			return 0, err
		}
	}
	if err := o.wait(ctx, members); err != nil {
		return 0, fmt.Errorf("before the join: %w", err)
	}
	// The members heartbeat in step after the group settled; a joiner
	// comes at a random point of their heartbeat interval, as it would.
	interval := p.hb
	if hb > 0 {
		interval = hb
	}
	time.Sleep(rand.N(interval))
	t0 := time.Now()
	if err := start(members); err != nil {
		return 0, err
	}
	if err := o.wait(ctx, members+1); err != nil {
		return 0, fmt.Errorf("after the join: %w; group: %s", err, describe(addr, group))
	}
	return time.Since(t0), nil
}

// describe returns the group as ConsumerGroupDescribe (or
// DescribeGroups) shows it, for an error message.
func describe(addr, group string) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := kadm.NewClient(cl).DescribeConsumerGroups(ctx, group)
	if err != nil {
		return err.Error()
	}
	d := ds[group]
	var b strings.Builder
	fmt.Fprintf(&b, "state %s epoch %d assignment epoch %d err %v;", d.State, d.Epoch, d.AssignmentEpoch, d.Err)
	for _, m := range d.Members {
		fmt.Fprintf(&b, " %s epoch %d assigned %d target %d;", m.ClientID, m.MemberEpoch, len(m.Assignment["rebalance"]), len(m.TargetAssignment["rebalance"]))
	}
	return b.String()
}

// startBroker starts bin on 127.0.0.1:0 with a temporary data directory
// and returns its address from the msg=listening line.
func startBroker(bin string, sets []string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "rebalance-bench-")
	if err != nil {
		return "", nil, err
	}
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dir}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	sc := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "msg=listening") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "addr="); ok {
				addr = v
			}
		}
	}
	if addr == "" {
		stop()
		return "", nil, fmt.Errorf("%s printed no msg=listening line: %v", bin, sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return addr, stop, nil
}
