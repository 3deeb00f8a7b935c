package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCrash_KillNineWhileSegmentFilesEvicted kills the real binary with
// SIGKILL while its segment files are being closed and reopened all the
// time (storage/filecache.go), restarts it on the same data directory and
// checks that recovery kept every acknowledged record.
//
// The broker keeps at most log.dir.max.open.files=1 segment file open (the
// smallest bound: 0 is the default) for 64 partitions, each rolling a
// segment every segment.ms=200 while written: an append to a partition
// whose active segment was closed (and fsynced first, being dirty) reopens
// it. Idempotent acks=all producers write distinct values, each naming its
// partition, to every partition. Meanwhile one reader goes through every
// partition from offset 0 again and again in small fetches, reopening
// sealed segments and mapping their indexes again; another follows the log
// end; a prober fetches single batches at random acknowledged offsets,
// which looks them up in the index of a segment most likely closed since
// its last use. Once the cycle has enough acknowledgements, reads and
// probes, plus a random number of further acknowledgements, the broker is
// killed and started again, and every partition is read from 0:
//
//   - offsets are dense from 0 to the log end offset, no value appears
//     twice, every value is the exact bytes of its name and in the
//     partition it names;
//   - every acknowledged record is at the offset it was acknowledged with;
//     so is every record a reader saw before the kill (a process crash
//     keeps the page cache: README, "Durability: what survives what");
//   - log end offsets are past every acknowledged offset and never go back;
//   - until the kill the broker answered no request with an error code, and
//     it logged no error and no offset-index entry that did not match its
//     segment (a read then scans the segment from its start).
//
// It also counts the broker's open .log files (/proc/PID/fd): once no
// client is left, at most the bound. Under load, files pinned by a Fetch
// being sent (one per partition it answers for) or an append exceed it by
// design, so there the peak is only logged. And it reads
// gregor_log_dir_segment_file_opens_total before each kill: the opens must
// outnumber the segment files on disk, i.e. files were closed and reopened.
//
// GREGOR_CRASH_CYCLES sets the number of cycles (default 3, 7-18 s on two
// cores; `make crash` runs 25), as for TestCrash_KillNineKeepsAcknowledgedData.
func TestCrash_KillNineWhileSegmentFilesEvicted(t *testing.T) {
	singleNodeOnly(t, "kill -9 cycles of one process, whose open files it counts")
	if _, err := openFilesUnder(os.Getpid(), "/", ".log"); errors.Is(err, errors.ErrUnsupported) {
		if os.Getenv("GREGOR_CI") == "1" {
			t.Fatal("counting a process's open files needs /proc (Linux); CI must not skip this test")
		}
		t.Skip("counting a process's open files needs /proc (Linux)")
	}
	const (
		partitions = 64
		maxOpen    = 1
		writers    = 4
		minReads   = 3000 // by each reader, per cycle, before the kill
		minProbes  = 300  // by the prober, likewise
	)
	cycles := 3
	if v, err := strconv.Atoi(os.Getenv("GREGOR_CRASH_CYCLES")); err == nil && v > 0 {
		cycles = v
	}
	// The admin listener, for /metrics (GREGOR_HTTP is --http's default).
	t.Setenv("GREGOR_HTTP", "127.0.0.1:0")
	b := newBroker(t, fmt.Sprintf("log.dir.max.open.files=%d", maxOpen))
	ctx := testCtx(t, time.Duration(cycles)*30*time.Second+time.Minute)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, partitions, map[string]*string{"segment.ms": kadm.StringPtr("200")})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))

	var mu sync.Mutex
	acked := map[pOff]valueID{}           // acknowledged: where → what
	read := map[pOff]valueID{}            // seen by a reader before a kill
	maxAcked := make([]int64, partitions) // highest acknowledged offset, -1: none
	for p := range maxAcked {
		maxAcked[p] = -1
	}
	ends := make([]int64, partitions) // log end offsets after the last restart
	var fileOpens, segments int64
	var peakFiles int

	// check records what a reader got at k: the exact value of a name of
	// that partition, the acknowledged one if k was acknowledged.
	check := func(cycle int, who string, r *kgo.Record) {
		k := pOff{r.Partition, r.Offset}
		id, ok := parseValue(r.Value, r.Partition)
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			t.Errorf("cycle %d: %s read %q at %d/%d: not a value of that partition", cycle, who, r.Value, k.p, k.o)
			return
		}
		if want, ok := acked[k]; ok && want != id {
			t.Errorf("cycle %d: %s read %v at %d/%d, acknowledged there: %v", cycle, who, id, k.p, k.o, want)
		}
		read[k] = id
	}

	// brokerRefused fails the test on an error code from the broker: until
	// the kill every request is answered, and an answer is never an error
	// (the client's own errors after the kill, connection refused and
	// the like, are not kerr errors).
	var refusals int
	brokerRefused := func(cycle int, who string, err error) {
		if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
			mu.Lock()
			refusals++
			n := refusals
			mu.Unlock()
			if n <= 5 {
				t.Errorf("cycle %d: %s: the broker answered %v", cycle, who, err)
			}
		}
	}

	for cycle := 0; cycle < cycles; cycle++ {
		runCtx, stop := context.WithCancel(ctx)
		progress := make(chan struct{}, 1)
		poke := func() {
			select {
			case progress <- struct{}{}:
			default:
			}
		}
		var wg sync.WaitGroup
		var cycleAcked, oldReads, tailReads, probes int
		for w := 0; w < writers; w++ {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1024),
				kgo.RecordRetries(3), kgo.RetryTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cl.Close()
				for i := 0; runCtx.Err() == nil; i++ {
					id := valueID{int32(cycle), int32(w), int32(i)}
					p := int32((i*writers + w) % partitions)
					cl.Produce(runCtx, &kgo.Record{Topic: topic, Partition: p, Value: id.value(p)}, func(r *kgo.Record, err error) {
						if err != nil {
							brokerRefused(cycle, "produce", err)
							return
						}
						mu.Lock()
						acked[pOff{r.Partition, r.Offset}] = id
						maxAcked[r.Partition] = max(maxAcked[r.Partition], r.Offset)
						cycleAcked++
						mu.Unlock()
						poke()
					})
				}
			}()
		}
		// The old reader: passes over every partition from offset 0 to the
		// offsets acknowledged when the pass began, 16 KiB a partition a
		// fetch.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				mu.Lock()
				upTo := append([]int64(nil), maxAcked...)
				mu.Unlock()
				rc, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), consumeFrom(topic, make([]int64, partitions)),
					kgo.FetchMaxPartitionBytes(16<<10), kgo.FetchMaxWait(50*time.Millisecond), kgo.RetryTimeout(2*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				next := make([]int64, partitions)
				for done := false; !done && runCtx.Err() == nil; {
					fs := rc.PollFetches(runCtx)
					fs.EachError(func(_ string, _ int32, err error) { brokerRefused(cycle, "old reader", err) })
					fs.EachRecord(func(r *kgo.Record) {
						check(cycle, "old reader", r)
						next[r.Partition] = r.Offset + 1
						mu.Lock()
						oldReads++
						mu.Unlock()
					})
					poke()
					done = true
					for p := range partitions {
						if next[p] <= upTo[p] {
							done = false
						}
					}
				}
				rc.Close()
			}
		}()
		// The tail reader: from the log end offsets at the restart on.
		tail, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), consumeFrom(topic, ends),
			kgo.FetchMaxWait(50*time.Millisecond), kgo.RetryTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tail.Close()
			for runCtx.Err() == nil {
				fs := tail.PollFetches(runCtx)
				fs.EachError(func(_ string, _ int32, err error) { brokerRefused(cycle, "tail reader", err) })
				fs.EachRecord(func(r *kgo.Record) {
					check(cycle, "tail reader", r)
					mu.Lock()
					tailReads++
					mu.Unlock()
				})
				poke()
			}
		}()
		// The prober: fetches one batch at a random offset of a random
		// partition below the acknowledged ones, which looks the offset up
		// in the index of a segment most likely closed since it was used.
		mdClient := newClient(t, b)
		md := metadata(t, ctx, mdClient, topic)
		mdClient.Close()
		topicID, leader := md.Topics[0].TopicID, md.Topics[0].Partitions[0].Leader
		seed := rng.Uint64()
		prober, err := kgo.NewClient(kgo.SeedBrokers(b.seedList()...), kgo.RetryTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer prober.Close()
			prng := rand.New(rand.NewPCG(seed, 13))
			for runCtx.Err() == nil {
				p := int32(prng.IntN(partitions))
				mu.Lock()
				top := maxAcked[p]
				mu.Unlock()
				if top < 0 {
					continue
				}
				o := prng.Int64N(top + 1)
				req := kmsg.NewPtrFetchRequest()
				req.MaxBytes, req.MaxWaitMillis = 1, 0
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = topic, topicID
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, o, 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp, err := req.RequestWith(runCtx, prober.Broker(int(leader)))
				if err != nil {
					continue // killed
				}
				got := &resp.Topics[0].Partitions[0]
				if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
					brokerRefused(cycle, "prober", err)
					continue
				}
				fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: o, Topic: topic, Partition: p}, got, kgo.DefaultDecompressor(), nil)
				if fp.Err != nil || len(fp.Records) == 0 || fp.Records[0].Offset != o {
					first := int64(-1)
					if len(fp.Records) > 0 {
						first = fp.Records[0].Offset
					}
					t.Errorf("cycle %d: fetch at %d/%d (acknowledged up to %d): %v, %d records, first at %d", cycle, p, o, top, fp.Err, len(fp.Records), first)
					continue
				}
				check(cycle, "prober", fp.Records[0])
				mu.Lock()
				probes++
				mu.Unlock()
				poke()
			}
		}()
		// The open .log files, sampled.
		pid := b.cmd.Process.Pid
		var peak int
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for runCtx.Err() == nil {
				if n, err := openFilesUnder(pid, b.dataDir, ".log"); err == nil {
					mu.Lock()
					peak = max(peak, n)
					mu.Unlock()
				}
				select {
				case <-tick.C:
				case <-runCtx.Done():
				}
			}
		}()

		// Kill once both readers have read minReads records and a random
		// number of acknowledgements more have come after that.
		killAt := -1
		for {
			mu.Lock()
			if killAt < 0 && cycleAcked >= minReads && oldReads >= minReads && tailReads >= minReads && probes >= minProbes {
				killAt = cycleAcked + rng.IntN(10000)
			}
			ready := killAt >= 0 && cycleAcked >= killAt
			mu.Unlock()
			if ready {
				break
			}
			select {
			case <-progress:
			case <-ctx.Done():
				mu.Lock()
				a, o, r := cycleAcked, oldReads, tailReads
				mu.Unlock()
				t.Fatalf("cycle %d: %d acknowledged, %d and %d read when the test's time ran out", cycle, a, o, r)
			}
		}
		opens := int64(scrapeMetric(t, b, "gregor_log_dir_segment_file_opens_total"))
		b.kill()
		stop()
		wg.Wait()
		fileOpens += opens
		mu.Lock()
		if refusals > 0 {
			n := refusals
			mu.Unlock()
			t.Fatalf("cycle %d: %d error answers from the broker before the kill", cycle, n)
		}
		peakFiles = max(peakFiles, peak)
		t.Logf("cycle %d: killed after %d acknowledged, %d read from offset 0, %d read at the end, %d probed; %d segment file opens; at most %d .log files open",
			cycle, cycleAcked, oldReads, tailReads, probes, opens, peak)
		wantAcked := make(map[pOff]valueID, len(acked))
		for k, v := range acked {
			wantAcked[k] = v
		}
		wantRead := make(map[pOff]valueID, len(read))
		for k, v := range read {
			wantRead[k] = v
		}
		wantEnds := append([]int64(nil), maxAcked...)
		mu.Unlock()

		b.start(t)
		ends = verifyEvicted(t, ctx, b, topic, cycle, partitions, wantAcked, wantRead, wantEnds, ends)
		segments = countFiles(t, b.dataDir, topic, ".log")
		// Nothing failed quietly: the broker logged no error, and no
		// reopened segment's mapped index sent a read to the wrong batch
		// (reads then scan from the start of the segment and only warn).
		b.logMu.Lock()
		for _, l := range b.logs {
			if strings.Contains(l, "level=ERROR") || strings.Contains(l, "offset index entry does not match the log") {
				t.Errorf("cycle %d: broker logged %s", cycle, l)
			}
		}
		b.logMu.Unlock()
		if t.Failed() {
			t.FailNow()
		}
		// No client left: once the last response is sent, at most the
		// bound stays open.
		pid = b.cmd.Process.Pid
		for deadline := time.Now().Add(5 * time.Second); ; {
			n, err := openFilesUnder(pid, b.dataDir, ".log")
			if err != nil {
				t.Fatal(err)
			}
			if n <= maxOpen {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cycle %d: %d .log files open with no client for 5 s, bound %d", cycle, n, maxOpen)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("%d kill -9 cycles: %d records acknowledged, %d offsets read during the load, all present; %d segments on disk, %d segment file opens (so at least %d reopens), at most %d .log files open at once (bound %d)",
		cycles, len(acked), len(read), segments, fileOpens, fileOpens-segments, peakFiles, maxOpen)
	if fileOpens <= segments {
		t.Errorf("%d segment file opens for %d segments: no file was closed and reopened", fileOpens, segments)
	}
}

// pOff is a partition and an offset.
type pOff struct {
	p int32
	o int64
}

// valueID names record i of writer w in cycle c.
type valueID struct{ c, w, i int32 }

// value is the record's value in partition p: its name and partition,
// repeated to 128 bytes.
func (id valueID) value(p int32) []byte {
	s := fmt.Sprintf("c%d.w%d.%d@p%d|", id.c, id.w, id.i, p)
	return []byte(strings.Repeat(s, 128/len(s)+1)[:128])
}

var valueRE = regexp.MustCompile(`^c(\d+)\.w(\d+)\.(\d+)@p(\d+)\|`)

// parseValue returns the name of v, a value of partition p; false if v is
// not exactly the value of a name in p.
func parseValue(v []byte, p int32) (valueID, bool) {
	m := valueRE.FindSubmatch(v)
	if m == nil {
		return valueID{}, false
	}
	var n [4]int32
	for j := range n {
		x, err := strconv.ParseInt(string(m[j+1]), 10, 32)
		if err != nil {
			return valueID{}, false
		}
		n[j] = int32(x)
	}
	id := valueID{n[0], n[1], n[2]}
	return id, n[3] == p && bytes.Equal(v, id.value(p))
}

// consumeFrom consumes every partition of topic from offsets[p].
func consumeFrom(topic string, offsets []int64) kgo.Opt {
	from := map[int32]kgo.Offset{}
	for p, o := range offsets {
		from[int32(p)] = kgo.NewOffset().At(o)
	}
	return kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})
}

// verifyEvicted reads every partition of the restarted broker from 0 to
// its log end offset and checks it (see
// TestCrash_KillNineWhileSegmentFilesEvicted); it returns the log end
// offsets.
func verifyEvicted(t *testing.T, ctx context.Context, b *broker, topic string, cycle, partitions int, acked, read map[pOff]valueID, maxAcked, prevEnds []int64) []int64 {
	t.Helper()
	cl := newClient(t, b)
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]int64, partitions)
	var total int64
	for p := range partitions {
		o, ok := listed.Lookup(topic, int32(p))
		if !ok || o.Err != nil {
			t.Fatalf("cycle %d: no end offset for partition %d: %v", cycle, p, o.Err)
		}
		ends[p] = o.Offset
		if ends[p] <= maxAcked[p] {
			t.Errorf("cycle %d: partition %d ends at %d, offset %d was acknowledged", cycle, p, ends[p], maxAcked[p])
		}
		if ends[p] < prevEnds[p] {
			t.Errorf("cycle %d: partition %d end went back from %d to %d", cycle, p, prevEnds[p], ends[p])
		}
		total += ends[p]
	}
	if t.Failed() {
		t.FailNow()
	}
	consumer := newClient(t, b, consumeFrom(topic, make([]int64, partitions)), kgo.FetchMaxWait(100*time.Millisecond))
	defer consumer.Close()
	next := make([]int64, partitions)
	seen := map[valueID]pOff{}
	for n := int64(0); n < total; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("cycle %d: consume: %v", cycle, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			k := pOff{r.Partition, r.Offset}
			if r.Offset != next[r.Partition] {
				t.Fatalf("cycle %d: partition %d offset %d, want %d (gap or reorder)", cycle, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			id, ok := parseValue(r.Value, r.Partition)
			if !ok {
				t.Fatalf("cycle %d: %d/%d holds %q, not a value of that partition", cycle, k.p, k.o, r.Value)
			}
			if prev, dup := seen[id]; dup {
				t.Fatalf("cycle %d: %v at %d/%d and again at %d/%d", cycle, id, prev.p, prev.o, k.p, k.o)
			}
			seen[id] = k
		})
	}
	for what, m := range map[string]map[pOff]valueID{"acknowledged": acked, "read before the kill": read} {
		bad := 0
		for k, id := range m {
			if got, ok := seen[id]; !ok || got != k {
				if bad++; bad <= 5 {
					t.Errorf("cycle %d: %v %s at %d/%d; after the restart present %v, at %d/%d", cycle, id, what, k.p, k.o, ok, got.p, got.o)
				}
			}
		}
		if bad > 0 {
			t.Fatalf("cycle %d: %d records %s lost or moved", cycle, bad, what)
		}
	}
	return ends
}

// countFiles counts the files ending in suffix in the topic's partition
// directories.
func countFiles(t *testing.T, dataDir, topic, suffix string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, topic+"-*", "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(files))
}

var adminAddrRE = regexp.MustCompile(`msg="admin http listening" addr=(\S+)`)

// scrapeMetric reads the sample named name from the admin listener of the
// broker's current run (started with GREGOR_HTTP set).
func scrapeMetric(t *testing.T, b *broker, name string) float64 {
	t.Helper()
	var addr string
	prefix := fmt.Sprintf("[run %d] ", b.runs)
	b.logMu.Lock()
	for _, l := range b.logs {
		if m := adminAddrRE.FindStringSubmatch(l); m != nil && strings.HasPrefix(l, prefix) {
			addr = m[1]
		}
	}
	b.logMu.Unlock()
	if addr == "" {
		t.Fatalf("run %d logged no admin http listening line", b.runs)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return v
		}
	}
	t.Fatalf("/metrics of run %d has no %s", b.runs, name)
	return 0
}
