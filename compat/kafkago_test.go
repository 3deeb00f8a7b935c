package compat

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaGo_ClientFetch reads a partition with segmentio/kafka-go's
// low-level Client.Fetch, which sends a full Fetch naming session -1 with
// epoch -1 (a full, sessionless fetch in Kafka): once answered
// FETCH_SESSION_ID_NOT_FOUND, which kafka-go reported as "topic not found".
func TestKafkaGo_ClientFetch(t *testing.T) {
	b := newBroker(t, noDelay)
	ctx := testCtx(t, 30*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 1, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic))
	for i := range 5 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	kc := &kafkago.Client{Addr: kafkago.TCP(b.seedList()...), Timeout: 20 * time.Second}
	resp, err := kc.Fetch(ctx, &kafkago.FetchRequest{Topic: topic, Partition: 0, Offset: 2, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Client.Fetch: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("Client.Fetch answered %v", resp.Error)
	}
	if resp.HighWatermark != 5 {
		t.Errorf("high watermark %d, want 5", resp.HighWatermark)
	}
	var got []string
	for {
		r, err := resp.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("ReadRecord: %v", err)
		}
		v, err := io.ReadAll(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset >= 2 { // the whole batch may come back; kafka-go's readers skip below the offset asked
			got = append(got, fmt.Sprintf("%d:%s", r.Offset, v))
		}
	}
	if want := "[2:v2 3:v3 4:v4]"; fmt.Sprint(got) != want {
		t.Errorf("records %v, want %s", got, want)
	}
}
