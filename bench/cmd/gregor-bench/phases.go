package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// row is one throughput configuration.
type row struct {
	size  int // record value bytes
	parts int32
}

func (r row) topic() string { return fmt.Sprintf("tput-%d-%d", r.size, r.parts) }

func (r row) label() string {
	s := fmt.Sprintf("%d B", r.size)
	if r.size == 1024 {
		s = "1 KiB"
	}
	return fmt.Sprintf("%s × %dp", s, r.parts)
}

// rows are the throughput configurations every run measures.
var rows = []row{{100, 1}, {100, 8}, {1024, 1}, {1024, 8}}

// createTopic creates topic with parts partitions and replication factor 1.
func createTopic(ctx context.Context, addr, topic string, parts int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, parts, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	}
	return nil
}

// produced is the outcome of a produce phase.
type produced struct {
	acked int           // records acknowledged, including the warm-up record
	took  time.Duration // first Produce call to the last acknowledgement
	cut   bool          // stopped at the time cap before n records
}

// noCompression: franz-go compresses with snappy by default, which would
// turn MB/s into a measure of the compressor and the value's entropy.
var noCompression = kgo.ProducerBatchCompression(kgo.NoCompression())

// value returns size incompressible bytes.
func value(size int) []byte {
	v := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 6))
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	return v
}

// bound limits a produce phase.
type bound struct {
	maxFor     time.Duration // stop issuing records after this
	flushFor   time.Duration // then wait at most this for acknowledgements
	idempotent bool
}

// produceN produces n records of size bytes to topic with franz-go's
// defaults (acks=all, idempotent unless b says not, linger 10ms, 1 MB
// batches) but without compression. It stops issuing records after b.maxFor
// and gives the outstanding ones b.flushFor to be acknowledged, so that a
// slow target yields a rate over a bounded time instead of hanging the
// benchmark.
func produceN(ctx context.Context, addr, topic string, n, size int, b bound) (produced, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), noCompression}
	if !b.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return produced{}, err
	}
	defer cl.Close()
	val := value(size)
	// Load metadata and the producer id outside the timed section.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil {
		return produced{}, fmt.Errorf("warm-up produce: %w", err)
	}
	var (
		acked    atomic.Int64
		lastAck  atomic.Int64 // ns since start
		stopped  atomic.Bool
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			if !stopped.Load() {
				errOnce.Do(func() { firstErr = err })
			}
			return
		}
		acked.Add(1)
		lastAck.Store(int64(time.Since(start)))
	}
	res := produced{}
	for i := 0; i < n-1 && ctx.Err() == nil; i++ {
		if i%1024 == 0 && time.Since(start) > b.maxFor {
			res.cut = true
			break
		}
		cl.Produce(ctx, &kgo.Record{Value: val}, promise)
	}
	fctx, cancel := context.WithTimeout(ctx, b.flushFor)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		res.cut = true
	}
	stopped.Store(true)
	errOnce.Do(func() {})
	if firstErr != nil {
		return produced{}, firstErr
	}
	res.acked = int(acked.Load()) + 1
	res.took = time.Duration(lastAck.Load())
	if res.acked < 2 || res.took <= 0 {
		return produced{}, fmt.Errorf("no record acknowledged within %v", b.maxFor+b.flushFor)
	}
	return res, ctx.Err()
}

// consumeN reads topic from the start of every partition until n records
// have arrived and returns the time from client creation to the nth record.
func consumeN(ctx context.Context, addr, topic string, n int) (time.Duration, int64, error) {
	start := time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	var got int
	var bytes int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("consumed %d of %d: %w", got, n, ctx.Err())
		}
		if err := fetchErr(fs); err != nil {
			return 0, 0, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	return time.Since(start), bytes, nil
}

// fetchErr returns the first non-retryable error of fs.
func fetchErr(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(t string, p int32, e error) {
		if err == nil && !errors.Is(e, context.DeadlineExceeded) {
			err = fmt.Errorf("fetch %s[%d]: %w", t, p, e)
		}
	})
	return err
}

// latencies are produce-ack and end-to-end latencies of a fixed-rate run.
type latencies struct {
	ack, e2e []time.Duration
}

// fixedRate produces 100 B records to a fresh one-partition topic at rate
// records/s for d with linger 0 and consumes them in the same process. It
// records, per record, the time from Produce to its acknowledgement and the
// time from Produce to its arrival at the consumer. The first warm records
// are not recorded.
func fixedRate(ctx context.Context, addr, topic string, rate int, d time.Duration, warm int) (latencies, error) {
	if err := createTopic(ctx, addr, topic, 1); err != nil {
		return latencies{}, err
	}
	total := warm + int(float64(rate)*d.Seconds())
	base := time.Now()
	ack := make([]time.Duration, total)
	e2e := make([]time.Duration, total)

	cons, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return latencies{}, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0),
		noCompression,
	)
	if err != nil {
		return latencies{}, err
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 100)}).FirstErr(); err != nil {
		return latencies{}, fmt.Errorf("warm-up produce: %w", err)
	}

	consDone := make(chan error, 1)
	go func() {
		seen := 0
		for seen < total+1 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				consDone <- fmt.Errorf("consumer: %d of %d records: %w", seen, total+1, ctx.Err())
				return
			}
			if err := fetchErr(fs); err != nil {
				consDone <- err
				return
			}
			now := time.Since(base)
			fs.EachRecord(func(r *kgo.Record) {
				seen++
				if len(r.Value) < 16 {
					return
				}
				seq := binary.BigEndian.Uint64(r.Value)
				sent := time.Duration(binary.BigEndian.Uint64(r.Value[8:]))
				if seq > 0 && int(seq) <= total {
					e2e[seq-1] = now - sent
				}
			})
		}
		consDone <- nil
	}()

	var mu sync.Mutex
	var perr error
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		if w := time.Until(start.Add(time.Duration(i) * interval)); w > 0 {
			time.Sleep(w)
		}
		v := make([]byte, 100)
		sent := time.Since(base)
		binary.BigEndian.PutUint64(v, uint64(i+1))
		binary.BigEndian.PutUint64(v[8:], uint64(sent))
		idx := i
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			at := time.Since(base)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && perr == nil {
				perr = err
			}
			ack[idx] = at - sent
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return latencies{}, err
	}
	if err := <-consDone; err != nil {
		return latencies{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	if perr != nil {
		return latencies{}, perr
	}
	return latencies{ack: ack[warm:], e2e: e2e[warm:]}, nil
}

// groupResult is what the consumer-group phase measures.
type groupResult struct {
	stable time.Duration // client creation to a balanced assignment
	drain  time.Duration // resume to the last record
	n      int
}

// groupDrain starts members consumers in one fresh group on topic (with
// parts partitions holding n records), paused, and measures the time until
// every member holds parts/members partitions; then resumes them and
// measures the time to consume all n records.
func groupDrain(ctx context.Context, addr, topic string, parts int32, members, n int, heartbeat time.Duration) (groupResult, error) {
	type member struct {
		cl    *kgo.Client
		owned map[int32]bool
	}
	var (
		mu       sync.Mutex
		ms       = make([]*member, members)
		stableAt time.Time
		stablec  = make(chan struct{})
		got      atomic.Int64
		done     = make(chan struct{})
		doneOnce sync.Once
	)
	checkLocked := func() {
		if !stableAt.IsZero() {
			return
		}
		seen := map[int32]bool{}
		for _, m := range ms {
			if m == nil || len(m.owned) != int(parts)/members {
				return
			}
			for p := range m.owned {
				seen[p] = true
			}
		}
		if len(seen) == int(parts) {
			stableAt = time.Now()
			close(stablec)
		}
	}
	group := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	start := time.Now()
	for i := range ms {
		m := &member{owned: map[int32]bool{}}
		mu.Lock()
		ms[i] = m
		mu.Unlock()
		update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range a[topic] {
					if add {
						m.owned[p] = true
					} else {
						delete(m.owned, p)
					}
				}
				checkLocked()
			}
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(addr),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(),
			kgo.HeartbeatInterval(heartbeat),
			kgo.OnPartitionsAssigned(update(true)),
			kgo.OnPartitionsRevoked(update(false)),
			kgo.OnPartitionsLost(update(false)),
		)
		if err != nil {
			return groupResult{}, err
		}
		cl.PauseFetchTopics(topic)
		m.cl = cl
	}
	defer func() {
		// Leaving the group is bounded: a close that hangs must not hang
		// the benchmark.
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Add(1)
			go func() { defer wg.Done(); m.cl.Close() }()
		}
		waitTimeout(&wg, 10*time.Second)
	}()

	select {
	case <-stablec:
	case <-ctx.Done():
		return groupResult{}, fmt.Errorf("group never balanced: %w", ctx.Err())
	}
	mu.Lock()
	res := groupResult{stable: stableAt.Sub(start), n: n}
	mu.Unlock()

	resumed := time.Now()
	errc := make(chan error, members)
	for _, m := range ms {
		m.cl.ResumeFetchTopics(topic)
		go func() {
			for {
				fs := m.cl.PollFetches(ctx)
				if ctx.Err() != nil {
					errc <- ctx.Err()
					return
				}
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				if err := fetchErr(fs); err != nil {
					errc <- err
					return
				}
				if got.Add(int64(fs.NumRecords())) >= int64(n) {
					doneOnce.Do(func() {
						res.drain = time.Since(resumed)
						close(done)
					})
					errc <- nil
					return
				}
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
		return groupResult{}, fmt.Errorf("group drained %d of %d: %w", got.Load(), n, ctx.Err())
	}
	return res, nil
}

// waitTimeout waits for wg or d, whichever comes first.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
	case <-time.After(d):
	}
}

// rawFetchN reads partition 0 of topic from offset 0 until offset n with
// plain Fetch v12 requests (16 MiB per partition, 64 MiB per response) on
// one TCP connection, one request at a time, each response read into one
// reused buffer (as the loopback limit reads into one buffer) and counts
// the record-batch bytes returned, without decoding any record: it
// measures what the broker serves, not what a decoding client can absorb
// or how fast its allocator hands out 16 MiB buffers (kgo makes a new one
// per response, which alone cost this row a quarter of its rate).
// It returns the elapsed time and the bytes received.
func rawFetchN(ctx context.Context, addr, topic string, n int64) (time.Duration, int64, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-fetch"))
	var reqBuf []byte
	buf := make([]byte, 0, 64<<20+1<<20)
	var corr int32
	start := time.Now()
	var offset, total int64
	for offset < n {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12 // topics by name, flexible
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 64<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 16<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		corr++
		reqBuf = formatter.AppendRequest(reqBuf[:0], req, corr)
		if _, err := conn.Write(reqBuf); err != nil {
			return 0, 0, fmt.Errorf("raw fetch at %d: %w", offset, err)
		}
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return 0, 0, fmt.Errorf("raw fetch at %d: %w", offset, err)
		}
		l := int(binary.BigEndian.Uint32(size[:]))
		if l < 5 || l > cap(buf) {
			return 0, 0, fmt.Errorf("raw fetch at %d: response of %d bytes", offset, l)
		}
		buf = buf[:l]
		if _, err := io.ReadFull(conn, buf); err != nil {
			return 0, 0, fmt.Errorf("raw fetch at %d: %w", offset, err)
		}
		if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
			return 0, 0, fmt.Errorf("raw fetch at %d: correlation id %d, want %d", offset, got, corr)
		}
		// A flexible response header: correlation id, then its tagged
		// fields (none: one zero byte). The body's record batches alias buf.
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		if err := resp.ReadFrom(buf[5:]); err != nil {
			return 0, 0, fmt.Errorf("raw fetch at %d: %w", offset, err)
		}
		if resp.ErrorCode != 0 {
			return 0, 0, fmt.Errorf("raw fetch at %d: %w", offset, kerr.ErrorForCode(resp.ErrorCode))
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, 0, fmt.Errorf("raw fetch at %d: malformed response", offset)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return 0, 0, fmt.Errorf("raw fetch at %d: %w", offset, kerr.ErrorForCode(p.ErrorCode))
		}
		b := p.RecordBatches
		total += int64(len(b))
		// Advance past the complete batches (the last may be cut off).
		for len(b) >= 61 {
			length := int64(binary.BigEndian.Uint32(b[8:]))
			if int64(len(b)) < 12+length {
				break
			}
			next := int64(binary.BigEndian.Uint64(b)) + int64(binary.BigEndian.Uint32(b[23:])) + 1
			offset = max(offset, next)
			b = b[12+length:]
		}
	}
	return time.Since(start), total, nil
}
