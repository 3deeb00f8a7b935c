package broker

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lockedBuffer is a log destination for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestProduce_FrameKeptUntilAnswered: a Produce's frame goes back to the
// pool only once its answer is written. Released frames are poisoned, so a
// read after release (the records metric in finish, an acks=all wait)
// sees garbage every time: before the fix the records counter read a
// record count of -1515870811 and the handler panicked ("counter cannot
// decrease in value"), the connection closed and the producers retried
// into duplicates. Pipelined producers, with and without idempotence and
// at acks=1 and acks=all, on one processor beside a busy goroutine: every
// record is read back once at its offset, the records and bytes metrics
// count exactly what was appended, and nothing panicked.
func TestProduce_FrameKeptUntilAnswered(t *testing.T) {
	defer protocol.PoisonReleasedFrames(protocol.PoisonReleasedFrames(true))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var logs lockedBuffer
	b, err := New(Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := b.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve()
	t.Cleanup(func() { b.Close() })
	addr := ln.String()

	stop := make(chan struct{})
	var busy sync.WaitGroup
	busy.Add(1)
	go func() { // competes with the broker for the one processor
		defer busy.Done()
		x := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := range 10000 {
				x += i
			}
			runtime.Gosched()
		}
	}()
	defer func() { close(stop); busy.Wait() }()

	const producers, perProducer = 6, 1500
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		topic := fmt.Sprintf("frames-%d", p)
		opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
			kgo.ProducerLinger(0), kgo.MaxBufferedRecords(200)}
		if p%2 == 0 {
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.MaxProduceRequestsInflightPerBroker(5))
		} else {
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		}
		cl := newClient(t, addr, opts...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pw sync.WaitGroup
			for i := range perProducer {
				pw.Add(1)
				cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%05d", topic, i)}, func(_ *kgo.Record, err error) {
					defer pw.Done()
					if err != nil {
						select {
						case errs <- fmt.Errorf("%s record %d: %w", topic, i, err):
						default:
						}
					}
				})
			}
			pw.Wait()
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if s := logs.String(); strings.Contains(s, "handler panic") || strings.Contains(s, "closing connection") {
		t.Fatalf("broker log:\n%s", s)
	}

	counters := gatherCounters(t, b)
	for p := range producers {
		topic := fmt.Sprintf("frames-%d", p)
		if got := counters["gregor_topic_records_in_total{"+topic+"}"]; got != perProducer {
			t.Errorf("%s: records_in %v, want %d", topic, got, perProducer)
		}
		if counters["gregor_topic_bytes_in_total{"+topic+"}"] <= 0 {
			t.Errorf("%s: no bytes_in", topic)
		}
		cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for n := 0; n < perProducer; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: %d records read: %v", topic, n, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if want := fmt.Sprintf("%s-%05d", topic, n); string(r.Value) != want || r.Offset != int64(n) {
					t.Fatalf("%s: offset %d holds %q, want %q at %d", topic, r.Offset, r.Value, want, n)
				}
				n++
			})
		}
	}
}

// gatherCounters returns the broker's counters by name{first label value}.
func gatherCounters(t *testing.T, b *Broker) map[string]float64 {
	t.Helper()
	mfs, err := b.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				name := mf.GetName()
				if ls := m.GetLabel(); len(ls) > 0 {
					name += "{" + ls[0].GetValue() + "}"
				}
				out[name] += c.GetValue()
			}
		}
	}
	return out
}
