package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduce compares plain (idempotent) and transactional produce
// through franz-go against an in-process broker, 100-byte records to one
// partition; transactions commit every 1,000 records. Run with
// `go test -run '^$' -bench Produce -benchtime 200000x ./broker`.
func BenchmarkProduce(b *testing.B) {
	value := make([]byte, 100)
	for _, mode := range []string{"plain", "transactional"} {
		b.Run(mode, func(b *testing.B) {
			br, addr := startBroker(b, "", nil)
			if _, err := br.createTopic("bench", 1, nil); err != nil {
				b.Fatal(err)
			}
			opts := []kgo.Opt{kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(time.Millisecond)}
			if mode == "transactional" {
				opts = append(opts, kgo.TransactionalID("bench-"+strconv.Itoa(b.N)))
			}
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			const perTxn = 1000
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				n := min(perTxn, b.N-done)
				if mode == "transactional" {
					if err := cl.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < n; i++ {
					cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							b.Error(err)
						}
					})
				}
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if mode == "transactional" {
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						b.Fatal(err)
					}
				}
				done += n
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}
