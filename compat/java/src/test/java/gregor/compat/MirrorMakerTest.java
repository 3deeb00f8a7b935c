package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.mirror.MirrorMaker;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * MirrorMaker 2 (the connect-mirror driver, in this JVM) between two Gregor
 * brokers: MirrorSourceConnector copies topic orders from A to B as A.orders
 * with the same partitions, offsets, keys, values, headers and timestamps;
 * MirrorCheckpointConnector translates the committed offsets of a consumer
 * group on A into A.checkpoints.internal and (sync.group.offsets.enabled)
 * into the group's offsets on B, where a consumer of the group resumes after
 * the records it had processed on A.
 */
@Tag("connect")
@Timeout(300)
class MirrorMakerTest {
    static final String TOPIC = "orders";
    static final String REMOTE = "A.orders";
    static final String GROUP = "billing";
    static final int PARTITIONS = 3;
    static Gregor a;
    static Gregor b;

    @BeforeAll
    static void start() throws Exception {
        KafkaExit.trap();
        a = Gregor.start("group.initial.rebalance.delay.ms=0");
        b = Gregor.start("group.initial.rebalance.delay.ms=0");
    }

    @AfterAll
    static void stop() throws Exception {
        KafkaExit.reset();
        for (Gregor g : new Gregor[] {a, b}) {
            if (g != null) {
                g.close();
            }
        }
    }

    static KafkaProducer<byte[], byte[]> producer(Gregor g) {
        Properties p = g.props();
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        p.put("linger.ms", "0");
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(Gregor g, String group) {
        Properties p = g.props();
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        if (group != null) {
            p.put("group.id", group);
        }
        return new KafkaConsumer<>(p);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Produces per records to each partition of orders on A: keys (one null), values, two headers, fixed timestamps. */
    static void produce(int from, int per) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer(a)) {
            for (int part = 0; part < PARTITIONS; part++) {
                for (int i = from; i < from + per; i++) {
                    byte[] key = i == from ? null : utf8("order-" + part + "-" + i);
                    List<Header> headers = List.of(new RecordHeader("trace", utf8("t" + part + "." + i)),
                            new RecordHeader("bin", new byte[] {0, (byte) part, (byte) i, (byte) 0xff}));
                    p.send(new ProducerRecord<>(TOPIC, part, 1_700_000_000_000L + part * 1000 + i, key,
                            utf8("{\"order\":" + i + ",\"partition\":" + part + "}"), headers)).get();
                }
            }
        }
    }

    /** All records of topic on g, by partition then offset. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(Gregor g, String topic, int want) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(g, null)) {
            c.assign(IntStream.range(0, PARTITIONS).mapToObj(i -> new TopicPartition(topic, i)).collect(Collectors.toList()));
            c.seekToBeginning(c.assignment());
            List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (out.size() < want && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            out.sort(Comparator.<ConsumerRecord<byte[], byte[]>>comparingInt(ConsumerRecord::partition)
                    .thenComparingLong(ConsumerRecord::offset));
            assertEquals(want, out.size(), "records of " + topic);
            return out;
        }
    }

    static void assertSameRecords(List<ConsumerRecord<byte[], byte[]>> want, List<ConsumerRecord<byte[], byte[]>> got) {
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            ConsumerRecord<byte[], byte[]> w = want.get(i);
            ConsumerRecord<byte[], byte[]> g = got.get(i);
            String at = REMOTE + "-" + g.partition() + "@" + g.offset();
            assertEquals(w.partition(), g.partition(), at);
            assertEquals(w.offset(), g.offset(), at);
            assertArrayEquals(w.key(), g.key(), at + " key");
            assertArrayEquals(w.value(), g.value(), at + " value");
            assertEquals(w.timestamp(), g.timestamp(), at + " timestamp");
            Header[] wh = w.headers().toArray();
            Header[] gh = g.headers().toArray();
            assertEquals(wh.length, gh.length, at + " headers");
            for (int h = 0; h < wh.length; h++) {
                assertEquals(wh[h].key(), gh[h].key(), at + " header key");
                assertArrayEquals(wh[h].value(), gh[h].value(), at + " header " + wh[h].key());
            }
        }
    }

    static Map<String, String> mm2Config() {
        Map<String, String> p = new HashMap<>();
        p.put("clusters", "A, B");
        p.put("A.bootstrap.servers", a.bootstrap());
        p.put("B.bootstrap.servers", b.bootstrap());
        p.put("A->B.enabled", "true");
        p.put("A->B.topics", TOPIC);
        p.put("A->B.groups", GROUP);
        p.put("B->A.enabled", "false");
        p.put("tasks.max", "1");
        // Every plugin has a ServiceLoader manifest: no class-path scan (seconds
        // on two cores), neither by the driver nor by the herder for A->B,
        // which takes its worker settings with the target's prefix.
        p.put("plugin.discovery", "service_load");
        p.put("B.plugin.discovery", "service_load");
        for (String rf : new String[] {"replication.factor", "checkpoints.topic.replication.factor",
                "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
                "offset.storage.replication.factor", "status.storage.replication.factor",
                "config.storage.replication.factor"}) {
            p.put(rf, "1");
        }
        p.put("sync.group.offsets.enabled", "true");
        p.put("sync.group.offsets.interval.seconds", "1");
        p.put("emit.checkpoints.interval.seconds", "1");
        p.put("emit.heartbeats.interval.seconds", "1");
        p.put("refresh.topics.interval.seconds", "1");
        p.put("refresh.groups.interval.seconds", "1");
        // An offset sync for every record, so the translation is exact.
        p.put("offset.lag.max", "0");
        // The offset flush also sends the offset syncs that waited for a free slot.
        p.put("B.offset.flush.interval.ms", "1000");
        p.put("B.scheduled.rebalance.max.delay.ms", "0");
        return p;
    }

    @Test
    void mirrorsTopicAndTranslatesGroupOffsets() throws Exception {
        final int first = 10;
        final int second = 5;
        Clients.createTopic(a, TOPIC, PARTITIONS);
        produce(0, first);

        // The group processes everything on A and commits.
        Map<TopicPartition, OffsetAndMetadata> committed;
        try (KafkaConsumer<byte[], byte[]> c = consumer(a, GROUP)) {
            c.subscribe(List.of(TOPIC));
            int n = 0;
            long deadline = System.nanoTime() + Clients.WAIT.toNanos();
            while (n < PARTITIONS * first && System.nanoTime() < deadline) {
                n += c.poll(Duration.ofMillis(200)).count();
            }
            assertEquals(PARTITIONS * first, n, "records the group consumed on A");
            c.commitSync();
            committed = c.committed(c.assignment());
        }
        for (int part = 0; part < PARTITIONS; part++) {
            assertEquals(first, committed.get(new TopicPartition(TOPIC, part)).offset());
        }

        MirrorMaker mm = new MirrorMaker(mm2Config(), List.of("B"));
        mm.start();
        try {
            try (Admin admin = Clients.admin(b)) {
                Clients.waitFor(REMOTE + " on B", () -> {
                    try {
                        return admin.listTopics().names().get().contains(REMOTE);
                    } catch (Exception e) {
                        return false;
                    }
                });
                TopicDescription d = admin.describeTopics(List.of(REMOTE)).allTopicNames().get().get(REMOTE);
                assertEquals(PARTITIONS, d.partitions().size(), REMOTE + " partitions");
            }
            assertSameRecords(readAll(a, TOPIC, PARTITIONS * first), readAll(b, REMOTE, PARTITIONS * first));

            Map<TopicPartition, OffsetAndMetadata> want = new HashMap<>();
            for (int part = 0; part < PARTITIONS; part++) {
                want.put(new TopicPartition(REMOTE, part), new OffsetAndMetadata(first));
            }
            // The checkpoints in A.checkpoints.internal on B, read as a client of MM2 would.
            Map<String, Object> onB = new HashMap<>();
            onB.put("bootstrap.servers", b.bootstrap());
            awaitEquals("checkpoints of " + GROUP + " in A.checkpoints.internal on B", offsets(want),
                    () -> offsets(RemoteClusterUtils.translateOffsets(onB, "A", GROUP, Duration.ofSeconds(10))));
            // sync.group.offsets.enabled: the group's committed offsets on B.
            try (Admin admin = Clients.admin(b)) {
                awaitEquals("committed offsets of " + GROUP + " on B", offsets(want),
                        () -> offsets(admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get()));
            }

            // New records on A reach B, and the group on B resumes after what it processed on A.
            produce(first, second);
            try (KafkaConsumer<byte[], byte[]> c = consumer(b, GROUP)) {
                c.subscribe(List.of(REMOTE));
                List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (got.size() < PARTITIONS * second && System.nanoTime() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(got::add);
                }
                got.sort(Comparator.<ConsumerRecord<byte[], byte[]>>comparingInt(ConsumerRecord::partition)
                        .thenComparingLong(ConsumerRecord::offset));
                List<ConsumerRecord<byte[], byte[]>> all = readAll(a, TOPIC, PARTITIONS * (first + second));
                List<ConsumerRecord<byte[], byte[]>> fresh = all.stream().filter(r -> r.offset() >= first)
                        .collect(Collectors.toList());
                assertSameRecords(fresh, got);
            }
            assertSameRecords(readAll(a, TOPIC, PARTITIONS * (first + second)),
                    readAll(b, REMOTE, PARTITIONS * (first + second)));
        } finally {
            mm.stop();
        }
    }

    interface Probe<T> {
        T get() throws Exception;
    }

    /** Waits until probe returns want, failing with the last value (or exception) after 60 s. */
    static <T> void awaitEquals(String what, T want, Probe<T> probe) throws InterruptedException {
        Object last = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            try {
                last = probe.get();
                if (want.equals(last)) {
                    return;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(200);
        }
        throw new AssertionError(what + ": last " + last + ", want " + want);
    }

    static Map<TopicPartition, Long> offsets(Map<TopicPartition, OffsetAndMetadata> m) {
        Map<TopicPartition, Long> out = new HashMap<>();
        m.forEach((tp, om) -> out.put(tp, om == null ? null : om.offset()));
        return out;
    }
}
