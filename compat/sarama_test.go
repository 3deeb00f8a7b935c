package compat

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// IBM/sarama: SyncProducer, Consumer and ClusterAdmin. Sarama picks request
// versions from Config.Version rather than from ApiVersions alone, so this
// pins the newest Kafka version Gregor claims to speak.

var saramaVersion = sarama.V4_0_0_0

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "gregor-compat"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	return cfg
}

func saramaMessages(topic string, keys []string, perKey int, base time.Time) []*sarama.ProducerMessage {
	var ms []*sarama.ProducerMessage
	for i := range perKey {
		for j, k := range keys {
			ms = append(ms, &sarama.ProducerMessage{
				Topic: topic,
				Key:   sarama.StringEncoder(k),
				Value: sarama.ByteEncoder(fmt.Appendf(nil, "%s-sarama-%04d", k, i)),
				Headers: []sarama.RecordHeader{
					{Key: []byte("key"), Value: []byte(k)},
					{Key: []byte("seq"), Value: []byte(strconv.Itoa(i))},
				},
				Timestamp: base.Add(time.Duration(i*len(keys)+j) * time.Millisecond),
			})
		}
	}
	return ms
}

func TestSarama_AdminProduceConsume(t *testing.T) {
	b := newBroker(t)
	topic := topicName(t, "")

	adminCfg := saramaConfig()
	admin, err := sarama.NewClusterAdmin(b.seedList(), adminCfg)
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	rf := replicationFactor()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: rf}, false); err != nil {
		t.Fatalf("ClusterAdmin.CreateTopic: %v", err)
	}
	b.waitTopic(t, topic, 3)
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: rf}, false); err == nil {
		t.Errorf("second ClusterAdmin.CreateTopic succeeded, want TOPIC_ALREADY_EXISTS")
	} else if te, ok := err.(*sarama.TopicError); !ok || te.Err != sarama.ErrTopicAlreadyExists {
		t.Errorf("second ClusterAdmin.CreateTopic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ClusterAdmin.ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 3 || d.ReplicationFactor != rf {
		t.Errorf("ListTopics[%q] = %+v (present %v), want 3 partitions, rf %d", topic, d, ok, rf)
	}
	//lint:ignore SA1019 deprecated, but it is what many sarama users still call
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("ClusterAdmin.DescribeConfig: %v", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" {
			found = true
			if e.Value != "604800000" || e.Source != sarama.SourceDefault {
				t.Errorf("DescribeConfig retention.ms = %q (source %v), want 604800000 (default)", e.Value, e.Source)
			}
		}
	}
	if !found {
		t.Errorf("DescribeConfig: no retention.ms among %d entries", len(entries))
	}

	for _, tc := range []struct {
		name       string
		idempotent bool
	}{{"plain", false}, {"idempotent", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := saramaConfig()
			if tc.idempotent {
				cfg.Producer.Idempotent = true
				cfg.Net.MaxOpenRequests = 1
			}
			producer, err := sarama.NewSyncProducer(b.seedList(), cfg)
			if err != nil {
				t.Fatalf("NewSyncProducer: %v", err)
			}
			base := time.Now().Truncate(time.Millisecond)
			sent := saramaMessages(topic, testKeys, 100, base)
			if err := producer.SendMessages(sent); err != nil {
				producer.Close()
				t.Fatalf("SendMessages: %v", err)
			}
			if err := producer.Close(); err != nil {
				t.Errorf("SyncProducer.Close: %v", err)
			}
			checkSarama(t, b, topic, sent)
		})
	}
}

// checkSarama consumes every partition of topic from the oldest offset with
// sarama and requires the messages in sent (wherever they were produced to)
// to be there exactly, each key on one partition in order.
func checkSarama(t *testing.T, b *broker, topic string, sent []*sarama.ProducerMessage) {
	t.Helper()
	type pos struct {
		p int32
		o int64
	}
	want := make(map[pos]*sarama.ProducerMessage)
	ends := make(map[int32]int64)
	keyPart := make(map[string]int32)
	for _, m := range sent {
		want[pos{m.Partition, m.Offset}] = m
		ends[m.Partition] = max(ends[m.Partition], m.Offset+1)
		k, _ := m.Key.Encode()
		if p, ok := keyPart[string(k)]; ok && p != m.Partition {
			t.Errorf("key %q produced to partitions %d and %d by the hash partitioner", k, p, m.Partition)
		}
		keyPart[string(k)] = m.Partition
	}

	consumer, err := sarama.NewConsumer(b.seedList(), saramaConfig())
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer consumer.Close()
	parts, err := consumer.Partitions(topic)
	if err != nil {
		t.Fatalf("Consumer.Partitions: %v", err)
	}
	slices.Sort(parts)
	if !slices.Equal(parts, []int32{0, 1, 2}) {
		t.Fatalf("Consumer.Partitions = %v, want [0 1 2]", parts)
	}
	deadline := time.After(30 * time.Second)
	matched := 0
	for _, p := range parts {
		if ends[p] == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%d): %v", p, err)
		}
		next := int64(0)
		lastSeq := make(map[string]int)
		for next < ends[p] {
			select {
			case m := <-pc.Messages():
				if m.Offset < next {
					continue // from an earlier run into this topic? never expected
				}
				if m.Offset != next {
					t.Errorf("partition %d: offset %d follows %d", p, m.Offset, next-1)
				}
				next = m.Offset + 1
				w, ok := want[pos{p, m.Offset}]
				if !ok {
					continue // produced by the other subtest
				}
				matched++
				wk, _ := w.Key.Encode()
				wv, _ := w.Value.Encode()
				var hdrs []string
				for _, h := range m.Headers {
					hdrs = append(hdrs, string(h.Key)+"="+string(h.Value))
				}
				var whdrs []string
				for _, h := range w.Headers {
					whdrs = append(whdrs, string(h.Key)+"="+string(h.Value))
				}
				if !bytes.Equal(m.Key, wk) || !bytes.Equal(m.Value, wv) || !slices.Equal(hdrs, whdrs) || !m.Timestamp.Equal(w.Timestamp) {
					t.Errorf("%s[%d]@%d = key %q value %q headers %q ts %v; want %q %q %q %v",
						topic, p, m.Offset, m.Key, m.Value, hdrs, m.Timestamp, wk, wv, whdrs, w.Timestamp)
				}
				seq, _ := strconv.Atoi(string(m.Headers[len(m.Headers)-1].Value))
				if last, ok := lastSeq[string(m.Key)]; ok && seq != last+1 {
					t.Errorf("key %q: seq %d after %d", m.Key, seq, last)
				}
				lastSeq[string(m.Key)] = seq
			case err := <-pc.Errors():
				t.Fatalf("partition %d: consumer error: %v", p, err)
			case <-deadline:
				t.Fatalf("partition %d: consumed up to offset %d of %d before the deadline", p, next, ends[p])
			}
		}
		pc.Close()
	}
	if matched != len(sent) {
		t.Errorf("matched %d of %d produced messages", matched, len(sent))
	}
}
