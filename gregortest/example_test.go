package gregortest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A broker with a seeded three-partition topic; a franz-go client produces
// a record and consumes it back. In a test, gregortest.Start(t, …) does the
// same and closes the broker when the test ends.
func Example() {
	b, err := gregortest.New(gregortest.Topic("orders", 3, nil))
	if err != nil {
		panic(err)
	}
	defer b.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		panic(err)
	}
	defer cl.Close()

	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte("o-1"), Value: []byte("two pizzas")}).FirstErr(); err != nil {
		panic(err)
	}
	fetches := cl.PollFetches(ctx)
	fetches.EachRecord(func(r *kgo.Record) {
		fmt.Printf("%s: %s (offset %d)\n", r.Key, r.Value, r.Offset)
	})
	// Output:
	// o-1: two pizzas (offset 0)
}
