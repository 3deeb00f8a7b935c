package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkCreateTopics_100x10 is one CreateTopics request of 100 topics of
// 10 partitions each, as bench/cmd/scale-bench sends them, over a real
// connection to a broker holding every topic the earlier iterations made.
//
//	go test -run '^$' -bench CreateTopics_100x10 -benchtime 20x ./broker
func BenchmarkCreateTopics_100x10(b *testing.B) {
	_, addr := startBroker(b, "", nil)
	cl := newClient(b, addr)
	ctx := testCtx(b)
	b.ResetTimer()
	for i := range b.N {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 60000
		for j := range 100 {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("bench-%05d-%03d", i, j), 10, 1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 {
				b.Fatalf("%s: error %d", t.Topic, t.ErrorCode)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*1000), "µs/partition")
}
