//go:build kafka

package kafkaref

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStartStop starts Kafka, creates a topic on it and stops it. Built only
// with -tags kafka (a JVM is heavy); GREGOR_SKIP_KAFKA=1 skips it, and
// GREGOR_CI=1 turns a missing java or mvn into a failure.
func TestStartStop(t *testing.T) {
	if os.Getenv("GREGOR_SKIP_KAFKA") == "1" {
		t.Skip("GREGOR_SKIP_KAFKA=1")
	}
	if err := Available(); err != nil {
		if os.Getenv("GREGOR_CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := Start(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Kafka %s on %s ready %v after the JVM started", b.Version, b.Addr, b.StartDuration)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 2, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %+v", resp.Topics)
	}
	start := time.Now()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(start))
	if b.cmd.ProcessState == nil || !b.cmd.ProcessState.Exited() && b.cmd.ProcessState.Sys() == nil {
		t.Fatalf("process state %v", b.cmd.ProcessState)
	}
}
