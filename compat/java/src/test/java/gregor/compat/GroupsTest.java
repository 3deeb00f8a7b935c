package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Consumer groups with the classic protocol: sharing, resuming after a broker restart, static membership. */
@Timeout(180)
class GroupsTest {
    static Gregor gregor;
    static final Map<String, Object> CLASSIC = Map.of("group.protocol", "classic",
            "session.timeout.ms", "10000", "heartbeat.interval.ms", "500");

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start("group.initial.rebalance.delay.ms=0");
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    static void produce(String topic, int partitions, int perPartition, String prefix) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (int i = 0; i < perPartition; i++) {
                for (int part = 0; part < partitions; part++) {
                    p.send(new ProducerRecord<>(topic, part, prefix + part + "-" + i, "v"));
                }
            }
            p.flush();
        }
    }

    static Map<String, Object> with(Map<String, Object> base, Object... kv) {
        Map<String, Object> m = new java.util.HashMap<>(base);
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    void twoConsumersShareAndResumeAfterRestart() throws Exception {
        String topic = "shared";
        Clients.createTopic(gregor, topic, 4);
        produce(topic, 4, 10, "a");
        Map<String, Object> cfg = with(CLASSIC, "group.id", "g-shared");
        List<ConsumerRecord<String, String>> all = new ArrayList<>();
        try (KafkaConsumer<String, String> a = Clients.consumer(gregor, cfg);
             KafkaConsumer<String, String> b = Clients.consumer(gregor, cfg)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Clients.WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                a.poll(Duration.ofMillis(100)).forEach(all::add);
                b.poll(Duration.ofMillis(100)).forEach(all::add);
                if (a.assignment().size() == 2 && b.assignment().size() == 2
                        && caughtUp(a) && caughtUp(b)) {
                    break;
                }
            }
            assertEquals(2, a.assignment().size(), "a's assignment " + a.assignment());
            assertEquals(2, b.assignment().size(), "b's assignment " + b.assignment());
            Set<TopicPartition> union = new HashSet<>(a.assignment());
            union.addAll(b.assignment());
            assertEquals(4, union.size(), "a and b overlap: " + a.assignment() + " " + b.assignment());
            a.commitSync();
            b.commitSync();
        }
        // Records of a partition that moved in the rebalance may be read twice (nothing was
        // committed before it moved); all 40 must have been seen.
        Set<String> keys = new HashSet<>();
        all.forEach(r -> keys.add(r.key()));
        assertEquals(40, keys.size(), "distinct records consumed");

        try (Admin adm = Clients.admin(gregor)) {
            Map<TopicPartition, OffsetAndMetadata> off =
                    adm.listConsumerGroupOffsets("g-shared").partitionsToOffsetAndMetadata().get();
            for (int p = 0; p < 4; p++) {
                assertEquals(10L, off.get(new TopicPartition(topic, p)).offset(), "committed offset of partition " + p);
            }
        }

        gregor.restart();
        produce(topic, 4, 1, "b");
        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, cfg)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = Clients.pollN(c, 4);
            for (ConsumerRecord<String, String> r : got) {
                assertEquals(10L, r.offset(), "resumed at the committed offset: " + r);
                assertTrue(r.key().startsWith("b"), "only new records after the restart: " + r);
            }
            assertEquals(0, c.poll(Duration.ofMillis(300)).count());
        }
    }

    /** Whether the consumer's position on each assigned partition is at the end (10). */
    static boolean caughtUp(KafkaConsumer<String, String> c) {
        for (TopicPartition tp : c.assignment()) {
            if (c.position(tp) != 10L) {
                return false;
            }
        }
        return true;
    }

    @Test
    void staticMembership() throws Exception {
        String topic = "static";
        Clients.createTopic(gregor, topic, 2);
        produce(topic, 2, 3, "s");
        Map<String, Object> cfg = with(CLASSIC, "group.id", "g-static", "group.instance.id", "instance-1",
                "session.timeout.ms", "30000");
        KafkaConsumer<String, String> first = Clients.consumer(gregor, cfg);
        try {
            first.subscribe(List.of(topic));
            Clients.pollN(first, 6);
            first.commitSync();
            try (Admin adm = Clients.admin(gregor)) {
                ConsumerGroupDescription d = adm.describeConsumerGroups(List.of("g-static"))
                        .describedGroups().get("g-static").get();
                assertEquals(1, d.members().size(), "members " + d.members());
                MemberDescription m = d.members().iterator().next();
                assertEquals("instance-1", m.groupInstanceId().orElse(null));
                assertEquals(2, m.assignment().topicPartitions().size());
            }

            // A second consumer with the same group.instance.id replaces the first, which is fenced.
            try (KafkaConsumer<String, String> second = Clients.consumer(gregor, cfg)) {
                second.subscribe(List.of(topic));
                Clients.waitFor("the replacement's assignment", () -> {
                    second.poll(Duration.ofMillis(100));
                    return second.assignment().size() == 2;
                });
                assertEquals(0, second.poll(Duration.ofMillis(300)).count(), "the replacement resumes at the commit");
                Exception e = assertThrows(Exception.class, () -> {
                    long deadline = System.nanoTime() + Clients.WAIT.toNanos();
                    while (System.nanoTime() < deadline) {
                        first.poll(Duration.ofMillis(100));
                        first.commitSync(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(1)));
                    }
                });
                assertTrue(e instanceof FencedInstanceIdException, "the old instance got " + e);
            }
        } finally {
            try {
                first.close(Duration.ofSeconds(5));
            } catch (Exception ignored) {
                // fenced consumers may throw on close
            }
        }
    }
}
