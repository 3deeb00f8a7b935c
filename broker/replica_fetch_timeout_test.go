package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower waits replica.socket.timeout.ms (Kafka's 30 s) for its
// leader's answer. A full Fetch of tens of thousands of partitions takes a
// busy leader seconds; a follower that gave up after 3.5 s ended its
// session each time and sent the full Fetch again, and never caught up (a
// restarted broker at 100,000 partitions on three nodes, its partitions
// out of the ISR for good). Here every follower Fetch takes the leader
// 4 s: the follower still replicates.
func TestReplicaFetcher_WaitsForASlowLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, _ := startEtcdBrokers(t, 2, nil)
	const topic = "slow-leader"
	createAssigned(t, newClient(t, addrs[0]), brokers, topic, []int32{1, 2})
	if _, err := brokers[0].InjectFault(Fault{APIKey: int16(kmsg.Fetch), ClientID: "gregor-replica-2", Latency: 4 * time.Second}); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addrs[0], kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := cl.ProduceSync(testCtx(t), kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	follower := partitionOf(brokers[1], topic)
	waitFor(t, 30*time.Second, "the record on the follower", func() bool {
		return follower.log.LogEndOffset() == 1
	})
}
