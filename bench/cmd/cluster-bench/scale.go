package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/bench/internal/procstat"
)

// scaleChunk is the most partitions one CreateTopics or CreatePartitions
// request of the scale case adds to one topic.
const scaleChunk = 5000

// tp is a topic partition.
type tp struct {
	topic string
	p     int32
}

// scaleTopics names the topics of n partitions, per partitions each (all
// of them in one topic when per is 0).
func scaleTopics(n, per int) (names []string, parts int32) {
	if per <= 0 || per >= n {
		return []string{fmt.Sprintf("scale-%d", n)}, int32(n)
	}
	for i := 0; i < n/per; i++ {
		names = append(names, fmt.Sprintf("scale-%d-%05d", n, i))
	}
	return names, int32(per)
}

// ledWithFullISR returns leader → partitions once every partition of
// topics has a leader and a full ISR of 3, else nil.
func ledWithFullISR(ctx context.Context, t *target, topics []string, parts int32) map[int32][]tp {
	md, err := metadataNow(ctx, t.cl, topics)
	if err != nil {
		return nil
	}
	led := map[int32][]tp{}
	for _, name := range topics {
		ps, ok := md[name]
		if !ok || len(ps) != int(parts) {
			return nil
		}
		for _, p := range ps {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return nil
			}
			led[p.Leader] = append(led[p.Leader], tp{name, p.Partition})
		}
	}
	return led
}

// metadataNow asks a broker for the partitions of topics (by topic and
// partition; a topic with an error is left out). It sends Metadata
// itself: kadm's Metadata answers from franz-go's cached metadata while it
// is younger than metadata.min.age (5 s) and its leaders still listed, so
// a failover timed with it could read up to 5 s late (the scale figures
// of docs/benchmarks.md before this change were).
func metadataNow(ctx context.Context, cl *kgo.Client, topics []string) (map[string]map[int32]kmsg.MetadataResponseTopicPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	md := map[string]map[int32]kmsg.MetadataResponseTopicPartition{}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		ps := map[int32]kmsg.MetadataResponseTopicPartition{}
		for _, p := range t.Partitions {
			ps[p.Partition] = p
		}
		md[*t.Topic] = ps
	}
	return md, nil
}

// resources describes each broker's process (RSS, open files, memory
// mappings, threads) and, for Gregor, its embedded etcd's database file.
func resources(t *target) string {
	var parts []string
	for i, pid := range t.c.pids() {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		threads := 0
		if ts, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err == nil {
			threads = len(ts)
		}
		parts = append(parts, fmt.Sprintf("broker %d: RSS %d MiB, %d fds, %d mappings, %d threads", i+1,
			procstat.RSSKB(pid)/1024, len(fds), strings.Count(string(maps), "\n"), threads))
	}
	if g, ok := t.c.(*gregorCluster); ok {
		var dbs []string
		for _, n := range g.nodes {
			var size int64
			filepath.WalkDir(filepath.Join(n.dir, "__etcd"), func(p string, e fs.DirEntry, err error) error {
				if err == nil && !e.IsDir() && e.Name() == "db" {
					if fi, err := e.Info(); err == nil {
						size += fi.Size()
					}
				}
				return nil
			})
			dbs = append(dbs, fmt.Sprintf("%.1f", float64(size)/(1<<20)))
		}
		parts = append(parts, "etcd db "+strings.Join(dbs, " / ")+" MiB")
	}
	return strings.Join(parts, "; ")
}

// scaleFailover creates n RF=3 partitions (in topics of -scale-topic-partitions),
// reports the brokers' resources and idle CPU, kills the broker leading the
// most and measures the time until each of its partitions has a live
// leader in Metadata and until an acks=all produce to each is
// acknowledged; then it restarts the broker and measures the time until
// every partition's ISR is full again.
func scaleFailover(ctx context.Context, t *target, n int) string {
	topics, parts := scaleTopics(n, *scaleTP)
	minISR := "2"
	start := time.Now()
	// Requests of about 1,000 partitions, with a long read timeout: at
	// 100,000 partitions the brokers answer slowly.
	acl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...), kgo.RequestTimeoutOverhead(2*time.Minute))
	if err != nil {
		fatalf("%v", err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	step := max(1, 1000/int(parts))
	for i := 0; i < len(topics); i += step {
		for try := 0; ; try++ {
			// KRaft refuses a request of more than 10,000 metadata
			// records (POLICY_VIOLATION): one big topic is created with
			// at most scaleChunk partitions and grown by CreatePartitions,
			// the same requests for both targets.
			resp, err := adm.CreateTopics(ctx, min(parts, scaleChunk), 3, map[string]*string{"min.insync.replicas": &minISR}, topics[i:min(i+step, len(topics))]...)
			if err == nil {
				err = resp.Error()
			}
			for have := min(parts, scaleChunk); err == nil && have < parts; have = min(parts, have+scaleChunk) {
				var rs kadm.CreatePartitionsResponses
				rs, err = adm.UpdatePartitions(ctx, int(min(parts, have+scaleChunk)), topics[i])
				if err == nil {
					err = rs.Error()
				}
			}
			if errors.Is(err, kerr.TopicAlreadyExists) {
				err = nil // a retry of a request that was carried out
			}
			if err == nil {
				break
			}
			var ne net.Error
			if try == 20 || !kerr.IsRetriable(err) && !errors.Is(err, kerr.InvalidReplicationFactor) && !(errors.As(err, &ne) && ne.Timeout()) {
				fatalf("%s: create topics: %v", t.name, err)
			}
			time.Sleep(500 * time.Millisecond) // a broker's registration not seen everywhere yet
		}
	}
	answered := time.Since(start)
	poll := 100 * time.Millisecond
	if n > 3000 {
		poll = time.Second
	}
	patient := &target{name: t.name, c: t.c, admin: adm, cl: acl}
	var led map[int32][]tp
	for ctx.Err() == nil {
		if led = ledWithFullISR(ctx, patient, topics, parts); led != nil {
			break
		}
		time.Sleep(poll)
	}
	created := time.Since(start)
	res := resources(t)
	cpu0 := sumCPU(t.c.pids())
	time.Sleep(10 * time.Second)
	idle := (sumCPU(t.c.pids()) - cpu0) / 10 * 100
	quorumLeader := describeQuorumLeader(ctx, t)
	var victim int32 = -1
	for id, ps := range led {
		if *scaleKill == "not-quorum-leader" && id == quorumLeader {
			continue
		}
		if victim < 0 || len(ps) > len(led[victim]) || (len(ps) == len(led[victim]) && id < victim) {
			victim = id
		}
	}
	if *scaleKill == "quorum-leader" {
		victim = quorumLeader
	}
	mine := led[victim]
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		fatalf("%v", err)
	}
	defer cl.Close()
	// The producer is warm, as a running application's is: it knows the
	// leaders and holds its connections, so that the produce row below
	// measures the cluster, not a client's first metadata of every topic.
	// A partition whose leader does not take the produce (Kafka 4.4 at
	// 10,000 partitions answered NOT_ENOUGH_REPLICAS for 666 of them for
	// a minute after Metadata showed every ISR full) is tried again, for
	// at most a minute, and then left cold.
	warm := mine
	for deadline := time.Now().Add(time.Minute); len(warm) > 0; {
		var mu sync.Mutex
		var again []tp
		var last error
		produceEach(ctx, cl, warm, "before", func(x tp, err error) {
			mu.Lock()
			again, last = append(again, x), err
			mu.Unlock()
		})
		if len(again) > 0 && time.Now().After(deadline) {
			log.Printf("%s: warm-up produce still failing after a minute for %d partitions, as %s-%d: %v; killing anyway", t.name, len(again), again[0].topic, again[0].p, last)
			break
		}
		if warm = again; len(warm) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.c.kill(victim)
	killed := time.Now()
	var ledAgain time.Duration
	fpoll := 20 * time.Millisecond
	if n > 3000 {
		fpoll = 250 * time.Millisecond
	}
	for ctx.Err() == nil && ledAgain == 0 {
		md, err := metadataNow(ctx, acl, topics)
		if err == nil {
			ok := true
			for _, x := range mine {
				if p, found := md[x.topic][x.p]; !found || p.Leader < 0 || p.Leader == victim {
					ok = false
					break
				}
			}
			if ok {
				ledAgain = time.Since(killed)
			}
		}
		if ledAgain == 0 {
			time.Sleep(fpoll)
		}
	}
	var failed atomic.Int64
	produceEach(ctx, cl, mine, "after", func(x tp, err error) {
		if failed.Add(1) <= 5 {
			log.Printf("%s: produce to %s-%d: %v", t.name, x.topic, x.p, err)
		}
	})
	writable := time.Since(killed)
	back := restartScale(ctx, t, victim, topics, parts, poll)
	return fmt.Sprintf("%s: %d partitions in %d topics: CreateTopics answered after %.1f s, every partition led with a full ISR after %.1f s; %s; idle CPU of the three %.1f%% of a core; broker %d (the quorum's leader: %v) led %d: led again after %.2f s, every one writable after %.2f s (%d produces failed); restarted, every ISR full again after %s; after that: %s",
		t.name, n, len(topics), answered.Seconds(), created.Seconds(), res, idle, victim, victim == quorumLeader, len(mine), ledAgain.Seconds(), writable.Seconds(), failed.Load(), back, resources(t))
}

// restartScale starts the killed broker again and returns how long it took
// until every partition's ISR was full again, asked of a new client each
// time (bounded by 5 minutes).
func restartScale(ctx context.Context, t *target, victim int32, topics []string, parts int32, poll time.Duration) string {
	g, ok := t.c.(*gregorCluster)
	if !ok {
		t.c.restart(ctx, victim, t)
	} else {
		g.nodes[victim-1].start()
	}
	start := time.Now()
	for time.Since(start) < 5*time.Minute && ctx.Err() == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(t.c.seeds()...))
		if err != nil {
			fatalf("%v", err)
		}
		fresh := &target{name: t.name, c: t.c, admin: kadm.NewClient(cl), cl: cl}
		done := ledWithFullISR(ctx, fresh, topics, parts) != nil
		cl.Close()
		if done {
			return fmt.Sprintf("%.1f s", time.Since(start).Seconds())
		}
		time.Sleep(poll)
	}
	return "more than 5 minutes"
}

// produceEach produces value to every partition of ps at once and waits
// for every answer; onErr is called for each failure.
func produceEach(ctx context.Context, cl *kgo.Client, ps []tp, value string, onErr func(tp, error)) {
	var wg sync.WaitGroup
	for _, x := range ps {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: x.topic, Partition: x.p, Value: []byte(value)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				onErr(x, err)
			}
		})
	}
	wg.Wait()
}
