package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Share groups (KIP-932) with the Java client's KafkaShareConsumer: two
 * consumers of one group share two partitions and every record is
 * delivered once when all are accepted; a record a consumer releases comes
 * back with delivery count 2, a rejected one never comes back; under
 * share.isolation.level=read_committed an aborted transaction's records
 * never come, and the transaction markers the consumer is given are
 * acknowledged as gaps, so the share-partition start offset passes them.
 */
@Timeout(180)
class ShareConsumerTest {
    static Gregor gregor;

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    /** Sets share.auto.offset.reset=earliest for group (else it starts at the end). */
    static void fromEarliest(String group) throws Exception {
        groupConfig(group, "share.auto.offset.reset", "earliest");
    }

    /** Sets a group config of group. */
    static void groupConfig(String group, String name, String value) throws Exception {
        try (Admin a = Clients.admin(gregor)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
            a.incrementalAlterConfigs(Map.of(r, List.of(op))).all().get();
        }
    }

    static KafkaShareConsumer<String, String> shareConsumer(String group, String topic) {
        Properties p = gregor.props();
        p.put("group.id", group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", "explicit");
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
        return c;
    }

    static Set<String> produce(String topic, int n) throws Exception {
        Set<String> keys = new HashSet<>();
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (int i = 0; i < n; i++) {
                String k = "k" + i;
                p.send(new ProducerRecord<>(topic, i % 2, k, "v" + i));
                keys.add(k);
            }
            p.flush();
        }
        return keys;
    }

    /** Polls c once, accepting every record, and returns them. */
    static List<ConsumerRecord<String, String>> pollAccept(KafkaShareConsumer<String, String> c) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
            c.acknowledge(r, AcknowledgeType.ACCEPT);
            got.add(r);
        }
        if (!got.isEmpty()) {
            c.commitSync();
        }
        return got;
    }

    @Test
    void twoConsumersShareEveryRecordOnce() throws Exception {
        String topic = "share-java";
        String group = "sg-java";
        Clients.createTopic(gregor, topic, 2);
        fromEarliest(group);
        Set<String> want = produce(topic, 200);
        List<String> seen = new ArrayList<>();
        Map<String, Integer> byConsumer = new HashMap<>();
        try (KafkaShareConsumer<String, String> a = shareConsumer(group, topic);
                KafkaShareConsumer<String, String> b = shareConsumer(group, topic)) {
            Clients.waitFor("200 records between two share consumers", () -> {
                for (ConsumerRecord<String, String> r : pollAccept(a)) {
                    seen.add(r.key());
                    byConsumer.merge("a", 1, Integer::sum);
                    assertEquals(1, (int) r.deliveryCount().orElse((short) -1), "delivery count of " + r.key());
                }
                for (ConsumerRecord<String, String> r : pollAccept(b)) {
                    seen.add(r.key());
                    byConsumer.merge("b", 1, Integer::sum);
                    assertEquals(1, (int) r.deliveryCount().orElse((short) -1), "delivery count of " + r.key());
                }
                return seen.size() >= want.size();
            });
            // Nothing more comes: every record was accepted once.
            for (int i = 0; i < 5; i++) {
                assertTrue(pollAccept(a).isEmpty() && pollAccept(b).isEmpty(), "a record delivered twice");
            }
        }
        assertEquals(want.size(), seen.size(), "records delivered (by consumer " + byConsumer + ")");
        assertEquals(want, new HashSet<>(seen), "distinct records delivered");
    }

    @Test
    void releasedRecordComesBackRejectedDoesNot() throws Exception {
        String topic = "share-java-release";
        String group = "sg-java-release";
        Clients.createTopic(gregor, topic, 1);
        fromEarliest(group);
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (String k : List.of("keep", "again", "poison")) {
                p.send(new ProducerRecord<>(topic, 0, k, k));
            }
            p.flush();
        }
        Map<String, List<Integer>> deliveries = new HashMap<>();
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, topic)) {
            Clients.waitFor("keep once, again twice, poison once", () -> {
                Collection<ConsumerRecord<String, String>> recs = new ArrayList<>();
                c.poll(Duration.ofMillis(100)).forEach(recs::add);
                for (ConsumerRecord<String, String> r : recs) {
                    int count = r.deliveryCount().orElse((short) -1);
                    deliveries.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(count);
                    AcknowledgeType t = AcknowledgeType.ACCEPT;
                    if (r.key().equals("again") && count == 1) {
                        t = AcknowledgeType.RELEASE;
                    } else if (r.key().equals("poison")) {
                        t = AcknowledgeType.REJECT;
                    }
                    c.acknowledge(r, t);
                }
                if (!recs.isEmpty()) {
                    c.commitSync();
                }
                return deliveries.getOrDefault("again", List.of()).size() == 2
                        && deliveries.containsKey("keep") && deliveries.containsKey("poison");
            });
            for (int i = 0; i < 5; i++) {
                c.poll(Duration.ofMillis(100)).forEach(r -> deliveries.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(-9));
            }
        }
        assertEquals(List.of(1), deliveries.get("keep"), "keep: " + deliveries);
        assertEquals(List.of(1, 2), deliveries.get("again"), "again: " + deliveries);
        assertEquals(List.of(1), deliveries.get("poison"), "poison: " + deliveries);
    }

    @Test
    void readCommittedSkipsAbortedTransactions() throws Exception {
        String topic = "share-java-rc";
        String group = "sg-java-rc";
        Clients.createTopic(gregor, topic, 1);
        fromEarliest(group);
        groupConfig(group, "share.isolation.level", "read_committed");
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("transactional.id", "share-java-rc-txn"))) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "aborted-1", "a"));
            p.send(new ProducerRecord<>(topic, 0, "aborted-2", "a"));
            p.flush();
            p.abortTransaction(); // offsets 0-1, marker 2
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "committed", "c"));
            p.commitTransaction(); // 3, marker 4
        }
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            p.send(new ProducerRecord<>(topic, 0, "plain", "p")).get(); // 5
        }
        List<String> seen = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, topic);
                Admin a = Clients.admin(gregor)) {
            Clients.waitFor("the committed and the plain record, and the start offset past them", () -> {
                pollAccept(c).forEach(r -> seen.add(r.key()));
                Map<TopicPartition, SharePartitionOffsetInfo> offsets;
                try {
                    offsets = a.listShareGroupOffsets(
                            Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp))))
                            .partitionsToOffsetInfo(group).get();
                } catch (Exception e) {
                    throw new AssertionError("listShareGroupOffsets", e);
                }
                SharePartitionOffsetInfo info = offsets.get(tp);
                return seen.size() >= 2 && info != null && info.startOffset() == 6;
            });
            for (int i = 0; i < 5; i++) {
                pollAccept(c).forEach(r -> seen.add(r.key()));
            }
        }
        assertEquals(List.of("committed", "plain"), seen, "records delivered under read_committed");
    }
}
