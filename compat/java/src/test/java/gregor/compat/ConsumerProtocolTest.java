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
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * KIP-848 consumer groups (group.protocol=consumer): the broker assigns; two
 * consumers split four partitions 2/2, and after a broker restart a new pair
 * resumes from the commits.
 */
@Timeout(180)
class ConsumerProtocolTest {
    static Gregor gregor;
    static final Map<String, Object> CONSUMER = Map.of("group.protocol", "consumer", "group.id", "g-848");
    static final String TOPIC = "kip848";

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start("group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500");
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    static void produce(int perPartition, String prefix) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (int i = 0; i < perPartition; i++) {
                for (int part = 0; part < 4; part++) {
                    p.send(new ProducerRecord<>(TOPIC, part, prefix + part + "-" + i, "v"));
                }
            }
            p.flush();
        }
    }

    /**
     * A consumer of the group that commits what it consumed of partitions
     * taken away from it, so a partition that moves is resumed exactly
     * where it was left. It tracks the offsets itself: position() of a
     * partition it has not fetched from yet, called inside the callback,
     * timed out (30 s) with kafka-clients 4.4.0's consumer.
     */
    static final class Member implements ConsumerRebalanceListener {
        final KafkaConsumer<String, String> c = Clients.consumer(gregor, CONSUMER);
        final List<ConsumerRecord<String, String>> records = new ArrayList<>();
        final List<String> events = new ArrayList<>();
        /** The offset after the last record consumed, by partition. */
        final Map<TopicPartition, Long> next = new HashMap<>();

        Member() {
            c.subscribe(List.of(TOPIC), this);
        }

        void poll() {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                records.add(r);
                next.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            events.add("assigned " + parts);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            events.add("revoked " + parts);
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            for (TopicPartition tp : parts) {
                Long n = next.get(tp);
                if (n != null) {
                    offs.put(tp, new OffsetAndMetadata(n));
                }
            }
            if (!offs.isEmpty()) {
                c.commitSync(offs);
            }
        }
    }

    /** Polls both members until they own two partitions each and have read n records between them. */
    static void pollSplit(Member a, Member b, int n) throws InterruptedException {
        Clients.waitFor("a 2/2 split and " + n + " records", () -> {
            a.poll();
            b.poll();
            return a.c.assignment().size() == 2 && b.c.assignment().size() == 2
                    && a.records.size() + b.records.size() >= n;
        });
        a.poll();
        b.poll();
        Set<TopicPartition> union = new HashSet<>(a.c.assignment());
        union.addAll(b.c.assignment());
        assertEquals(4, union.size(), "a and b overlap: " + a.c.assignment() + " " + b.c.assignment());
    }

    /** Checks that the records are exactly the keys of want, each once. */
    static void exactlyOnce(Member a, Member b, Set<String> want) {
        List<String> keys = new ArrayList<>();
        a.records.forEach(r -> keys.add(r.key()));
        b.records.forEach(r -> keys.add(r.key()));
        assertEquals(want.size(), keys.size(), "records consumed (a " + a.events + ", b " + b.events + ")");
        assertEquals(want, new HashSet<>(keys), "distinct records consumed");
    }

    static Set<String> keys(String prefix, int perPartition) {
        Set<String> s = new HashSet<>();
        for (int part = 0; part < 4; part++) {
            for (int i = 0; i < perPartition; i++) {
                s.add(prefix + part + "-" + i);
            }
        }
        return s;
    }

    @Test
    void twoConsumersSplitAndResumeAfterRestart() throws Exception {
        Clients.createTopic(gregor, TOPIC, 4);
        Member a = new Member();
        Member b = new Member();
        try {
            pollSplit(a, b, 0);
            try (Admin adm = Clients.admin(gregor)) {
                ConsumerGroupDescription d = adm.describeConsumerGroups(List.of("g-848"))
                        .describedGroups().get("g-848").get();
                assertEquals(GroupType.CONSUMER, d.type(), "group type");
                assertEquals(GroupState.STABLE, d.groupState(), "group state");
                assertEquals(2, d.members().size(), "members " + d.members());
                for (MemberDescription m : d.members()) {
                    assertEquals(2, m.assignment().topicPartitions().size(), "member " + m);
                    assertEquals(d.groupEpoch(), m.memberEpoch(), "member epoch of " + m);
                }
            }
            // Produced once the split is stable: every record goes to its partition's owner, once.
            produce(10, "a");
            pollSplit(a, b, 40);
            exactlyOnce(a, b, keys("a", 10));
            for (Member m : List.of(a, b)) {
                for (ConsumerRecord<String, String> r : m.records) {
                    assertTrue(m.c.assignment().contains(new TopicPartition(r.topic(), r.partition())),
                            "record " + r + " outside the consumer's assignment " + m.c.assignment());
                }
                m.c.commitSync();
            }
        } finally {
            a.c.close();
            b.c.close();
        }
        try (Admin adm = Clients.admin(gregor)) {
            Map<TopicPartition, OffsetAndMetadata> off =
                    adm.listConsumerGroupOffsets("g-848").partitionsToOffsetAndMetadata().get();
            for (int p = 0; p < 4; p++) {
                assertEquals(10L, off.get(new TopicPartition(TOPIC, p)).offset(), "committed offset of partition " + p);
            }
        }

        // The commits survive a broker restart; a new pair reads only what came after them.
        gregor.restart();
        produce(5, "b");
        a = new Member();
        b = new Member();
        try {
            pollSplit(a, b, 20);
            exactlyOnce(a, b, keys("b", 5));
            for (Member m : List.of(a, b)) {
                for (ConsumerRecord<String, String> r : m.records) {
                    assertTrue(r.offset() >= 10L, "read below the committed offset: " + r);
                }
                m.c.commitSync();
            }
        } finally {
            a.c.close();
            b.c.close();
        }
        try (Admin adm = Clients.admin(gregor)) {
            Map<TopicPartition, OffsetAndMetadata> off =
                    adm.listConsumerGroupOffsets("g-848").partitionsToOffsetAndMetadata().get();
            for (int p = 0; p < 4; p++) {
                assertEquals(15L, off.get(new TopicPartition(TOPIC, p)).offset(), "committed offset of partition " + p);
            }
        }
    }
}
