package compat

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLink_StatusGathersEveryNode: in a three-node cluster each mirror
// partition is fetched by its leader, so a link's status asked of any node
// gathers every node's share. Apache Kafka mirrors one partition into
// three Gregor nodes; Kafka is killed; the status asked of a node that
// neither leads the partition nor (if it can be helped) syncs the link
// shows the leader's fetching error, prefixed with its node, and names the
// leader as the partition's fetcher.
func TestLink_StatusGathersEveryNode(t *testing.T) {
	ctx := testCtx(t, 4*time.Minute)
	kafka := startKafkaSource(t, ctx)
	src := newAddrClient(t, kafka.Addr, kgo.DefaultProduceTopic("events"))
	if _, err := kadm.NewClient(src).CreateTopic(ctx, 1, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := src.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "e-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c := startCluster(t, 3)
	seeds := strings.Join(c.Seeds(), ",")
	gregorCLI(t, false, "link", "create", "mig", "--brokers", seeds, "--source", kafka.Addr, "--topics", "events", "--sync-interval", "500ms")
	if err := waitUntil(time.Minute, func() error {
		out := gregorCLI(t, false, "link", "status", "mig", "--brokers", seeds)
		if f := statusRow(out, "events", 0); len(f) < 7 || f[4] != "10" || f[5] != "0" {
			return errors.New(out)
		}
		return nil
	}); err != nil {
		t.Fatalf("events-0 not mirrored: %v", err)
	}
	leader := c.WaitLeader("events", 0)
	controller, err := c.Controller()
	if err != nil {
		t.Fatal(err)
	}
	ask := int32(-1)
	for _, n := range c.Nodes() {
		if n.id != leader && (ask < 0 || n.id != controller) {
			ask = n.id
		}
	}
	t.Logf("events-0 led by node %d, controller %d; asking node %d", leader, controller, ask)
	kafka.Kill()
	select {
	case <-kafka.Exited():
	case <-ctx.Done():
		t.Fatal("Kafka did not exit")
	}
	want := fmt.Sprintf("node %d: fetching from the source", leader)
	var last string
	if err := waitUntil(time.Minute, func() error {
		last = gregorCLI(t, false, "link", "status", "mig", "--brokers", c.Node(ask).addr)
		if !strings.Contains(last, want) {
			return fmt.Errorf("no %q", want)
		}
		f := statusRow(last, "events", 0)
		if len(f) < 7 {
			return errors.New("no row for events-0")
		}
		if f[6] != fmt.Sprint(leader) {
			return fmt.Errorf("events-0's fetcher is %s, want node %d", f[6], leader)
		}
		return nil
	}); err != nil {
		t.Fatalf("status asked of node %d: %v:\n%s", ask, err, last)
	}
	t.Logf("status asked of node %d:\n%s", ask, last)
}

// statusRow returns the fields of a partition's row in `gregor link
// status`: topic, state, partition, source end, mirror end, lag, node,
// error; nil when there is none.
func statusRow(out, topic string, p int32) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 7 && f[0] == topic && f[2] == fmt.Sprint(p) {
			return f
		}
	}
	return nil
}
