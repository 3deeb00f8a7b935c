package compat

// Kafka 4.4's own kafka-topics (org.apache.kafka.tools.TopicCommand) and
// kafka-transactions (TransactionsCommand) against three Gregor nodes.
// kafka-topics --describe reads DescribeTopicPartitions: against a broker
// without it Kafka 4.4's tool prints "Elr: N/A". Against Kafka 4.4 (one
// KRaft node, measured with the same tool) it prints, for a topic of
// three partitions with min.insync.replicas=2:
//
//	Topic: tt	TopicId: SmqDim3mQua8T_Pu7Gcp9A	PartitionCount: 3	ReplicationFactor: 1	Configs: min.insync.replicas=2
//		Topic: tt	Partition: 0	Leader: 1	Replicas: 1	Isr: 1	Elr: 	LastKnownElr:
//
// and `find-hanging --broker-id N` prints its header alone when nothing
// hangs; before Gregor answered DescribeProducers on followers it exited
// 1 with NOT_LEADER_OR_FOLLOWER on three nodes.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicDescribeLines is what kafka-topics --describe prints for topic's
// partitions by Kafka's format, from a Metadata answer.
func topicDescribeLines(md *kmsg.MetadataResponse, topic string, only func(kmsg.MetadataResponseTopicPartition) bool) []string {
	ids := func(xs []int32) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	var lines []string
	for _, tp := range md.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		ps := slices.Clone(tp.Partitions)
		slices.SortFunc(ps, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
		for _, p := range ps {
			if only != nil && !only(p) {
				continue
			}
			leader := fmt.Sprint(p.Leader)
			if p.Leader < 0 {
				leader = "none"
			}
			lines = append(lines, fmt.Sprintf("\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tElr: \tLastKnownElr: ",
				topic, p.Partition, leader, ids(p.Replicas), ids(p.ISR)))
		}
	}
	return lines
}

// partitionLines keeps the per-partition lines of kafka-topics' output.
func partitionLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "\tTopic: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestKafkaTopicsAndTransactionsTools_Cluster(t *testing.T) {
	c := startCluster(t, 3)
	waitAllBrokers(c)
	const topics, txns = "org.apache.kafka.tools.TopicCommand", "org.apache.kafka.tools.TransactionsCommand"
	seed := c.Seeds()[0]
	kafkaTool(t, topics, "--bootstrap-server", seed, "--create", "--topic", "tt", "--partitions", "3",
		"--replication-factor", "3", "--config", "min.insync.replicas=2")
	var md *kmsg.MetadataResponse
	if err := waitUntil(30*time.Second, func() (err error) {
		if md, err = c.Metadata("tt"); err != nil {
			return err
		}
		for _, tp := range md.Topics {
			for _, p := range tp.Partitions {
				if len(p.ISR) != 3 {
					return fmt.Errorf("tt-%d: ISR %v", p.Partition, p.ISR)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	out := kafkaTool(t, topics, "--bootstrap-server", seed, "--describe", "--topic", "tt")
	head := strings.SplitN(out, "\n", 2)[0]
	if !strings.HasPrefix(head, "Topic: tt\tTopicId: ") || !strings.HasSuffix(head, "\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2") {
		t.Errorf("kafka-topics --describe's topic line: %q", head)
	}
	if got, want := partitionLines(out), topicDescribeLines(md, "tt", nil); !slices.Equal(got, want) {
		t.Errorf("kafka-topics --describe's partitions:\n%s\nwant (from Metadata):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// An open transaction on every partition: not hanging (its
	// coordinator knows it), so find-hanging asks every replica's
	// broker and lists nothing.
	cl := c.Client(kgo.TransactionalID("tools-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx := t.Context()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tt", Partition: p, Value: []byte("open")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const header = "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t"
	for id := 1; id <= 3; id++ {
		out := kafkaTool(t, txns, "--bootstrap-server", seed, "find-hanging", "--broker-id", fmt.Sprint(id), "--max-transaction-timeout", "0")
		if strings.TrimSpace(out) != strings.TrimSpace(header) {
			t.Errorf("find-hanging --broker-id %d printed:\n%s\nwant the header alone", id, out)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// A broker down: --under-replicated-partitions lists each partition
	// with the ISR that lost it, as Metadata has it.
	c.Node(3).Kill()
	if err := waitUntil(60*time.Second, func() (err error) {
		if md, err = c.Metadata("tt"); err != nil {
			return err
		}
		for _, tp := range md.Topics {
			for _, p := range tp.Partitions {
				if len(p.ISR) != 2 || p.Leader == 3 {
					return fmt.Errorf("tt-%d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out = kafkaTool(t, topics, "--bootstrap-server", seed, "--describe", "--topic", "tt", "--under-replicated-partitions")
	if got, want := partitionLines(out), topicDescribeLines(md, "tt", nil); !slices.Equal(got, want) {
		t.Errorf("kafka-topics --describe --under-replicated-partitions:\n%s\nwant (from Metadata):\n%s", out, strings.Join(want, "\n"))
	}
}
