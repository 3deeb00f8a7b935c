package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The topic page names the groups that consume the topic, with their lag,
// and lists every config with its source, as kafka-configs --describe
// --all does.
func TestConsole_TopicConsumersAndConfigs(t *testing.T) {
	c := startConsole(t, gregortest.Topic("orders", 2, map[string]string{"retention.ms": "3600000"}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 6 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "billing", kadm.Offsets{"orders": {0: {At: 1}, 1: {At: 3}}}); err != nil {
		t.Fatal(err)
	}
	code, _, page := c.do(t, "GET", "/topics/orders", "", nil)
	if code != 200 {
		t.Fatalf("topic page: %d", code)
	}
	for _, want := range []string{
		`<tr class="consumer" data-group="billing"><td><a href="/groups/billing">billing</a></td><td>Empty</td><td class="num">2</td><td class="num lag">2</td></tr>`,
		`<tr class="config override" data-config="retention.ms"><td>retention.ms</td><td>3600000</td><td class="source">DYNAMIC_TOPIC_CONFIG</td></tr>`,
		`<tr class="config" data-config="cleanup.policy"><td>cleanup.policy</td><td>delete</td><td class="source">DEFAULT_CONFIG</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %s in the topic page", want)
		}
	}
	if _, _, page := c.do(t, "GET", "/topics/orders", "", nil); strings.Contains(page, "No group has committed") {
		t.Error("the empty-consumers note shown beside a consumer")
	}
}
