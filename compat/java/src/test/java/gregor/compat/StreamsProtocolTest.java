package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kafka Streams with the streams rebalance protocol (group.protocol=streams,
 * KIP-1071): a word count (a repartition topic and a changelogged store, both
 * created by the broker from the topology) under exactly_once_v2 scales from
 * one instance to two, then three, and back to one while lines keep coming;
 * every count update is in the output exactly once.
 */
@Timeout(180)
class StreamsProtocolTest {
    static final String APP = "wcs";
    static final String IN = "wcs-lines";
    static final String OUT = "wcs-counts";
    static Gregor gregor;

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start("group.streams.heartbeat.interval.ms=300", "group.streams.session.timeout.ms=10000");
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    static KafkaStreams wordCount(Path stateDir, int port) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(IN, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
                .groupBy((k, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream()
                .to(OUT, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = gregor.props();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "localhost:" + port);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        return new KafkaStreams(b.build(), p);
    }

    static void produce(List<String> lines) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (String l : lines) {
                p.send(new ProducerRecord<>(IN, l, l));
            }
            p.flush();
        }
    }

    static void await(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(45).toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 45 s: " + what + "\n" + gregor.tail());
            }
            Thread.sleep(50);
        }
    }

    static int activeTasks(KafkaStreams s) {
        if (s.state() != KafkaStreams.State.RUNNING) {
            return -1;
        }
        int n = 0;
        for (ThreadMetadata t : s.metadataForLocalThreads()) {
            n += t.activeTasks().size();
        }
        return n;
    }

    /** Reads the output until every word's latest count is want's; returns every update read. */
    static void readCounts(KafkaConsumer<String, Long> c, Map<String, Long> latest, List<String> updates, Map<String, Long> want) {
        long deadline = System.nanoTime() + Duration.ofSeconds(45).toNanos();
        while (!latest.equals(want) && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(100))) {
                latest.put(r.key(), r.value());
                updates.add(r.key() + "=" + r.value());
            }
        }
        assertEquals(want, latest, "word counts in " + OUT);
    }

    static List<String> lines(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add("w" + (i % 7) + " " + prefix + (i % 3));
        }
        return out;
    }

    static void count(Map<String, Long> want, List<String> lines) {
        for (String l : lines) {
            for (String w : l.split(" ")) {
                want.merge(w, 1L, Long::sum);
            }
        }
    }

    @Test
    void wordCountScalesOutAndInExactlyOnce() throws Exception {
        Clients.createTopic(gregor, IN, 4);
        Clients.createTopic(gregor, OUT, 1);
        Properties cp = gregor.props();
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", LongDeserializer.class.getName());
        cp.put("isolation.level", "read_committed");
        cp.put("auto.offset.reset", "earliest");
        cp.put("group.id", "wcs-reader");
        Map<String, Long> want = new HashMap<>();
        Map<String, Long> latest = new HashMap<>();
        List<String> updates = new ArrayList<>();
        int words = 0;
        try (KafkaConsumer<String, Long> out = new KafkaConsumer<>(cp)) {
            out.subscribe(List.of(OUT));
            KafkaStreams a = wordCount(Files.createTempDirectory("gregor-streams-a-"), 7001);
            KafkaStreams b = null;
            KafkaStreams c = null;
            try {
                // One instance: all 8 tasks (2 subtopologies x 4 partitions).
                a.start();
                await("instance a runs all 8 tasks", () -> activeTasks(a) == 8);
                List<String> l1 = lines("a", 40);
                produce(l1);
                count(want, l1);
                words += 80;
                readCounts(out, latest, updates, want);

                // Two instances: 4 tasks each; each knows the other's endpoint.
                b = wordCount(Files.createTempDirectory("gregor-streams-b-"), 7002);
                b.start();
                KafkaStreams bb = b;
                await("a and b run 4 tasks each", () -> activeTasks(a) == 4 && activeTasks(bb) == 4);
                await("a sees both endpoints", () -> {
                    Set<Integer> ports = new HashSet<>();
                    for (StreamsMetadata m : a.metadataForAllStreamsClients()) {
                        if (!m.topicPartitions().isEmpty()) {
                            ports.add(m.hostInfo().port());
                        }
                    }
                    return ports.equals(Set.of(7001, 7002));
                });
                List<String> l2 = lines("b", 40);
                produce(l2);
                count(want, l2);
                words += 80;
                readCounts(out, latest, updates, want);

                try (Admin adm = Clients.admin(gregor)) {
                    Collection<GroupListing> gs = adm.listGroups(ListGroupsOptions.forStreamsGroups()).all().get();
                    assertEquals(1, gs.size(), "streams groups: " + gs);
                    GroupListing g = gs.iterator().next();
                    assertEquals(APP, g.groupId());
                    assertEquals(GroupType.STREAMS, g.type().orElseThrow());
                    Set<String> topics = adm.listTopics().names().get();
                    assertTrue(topics.contains(APP + "-words-repartition") && topics.contains(APP + "-counts-changelog"), "internal topics in " + topics);
                }

                // Three instances: 3, 3 and 2 tasks.
                c = wordCount(Files.createTempDirectory("gregor-streams-c-"), 7003);
                c.start();
                KafkaStreams cc = c;
                await("a, b and c run 8 tasks between them, at least 2 each", () -> {
                    int na = activeTasks(a), nb = activeTasks(bb), nc = activeTasks(cc);
                    return na >= 2 && nb >= 2 && nc >= 2 && na + nb + nc == 8;
                });
                List<String> l3 = lines("c", 40);
                produce(l3);
                count(want, l3);
                words += 80;
                readCounts(out, latest, updates, want);

                // Back to one: a takes b's and c's tasks when they leave.
                b.close(Duration.ofSeconds(30));
                b = null;
                c.close(Duration.ofSeconds(30));
                c = null;
                await("a runs all 8 tasks again", () -> activeTasks(a) == 8);
                List<String> l4 = lines("d", 40);
                produce(l4);
                count(want, l4);
                words += 80;
                readCounts(out, latest, updates, want);
            } finally {
                if (c != null) {
                    c.close(Duration.ofSeconds(30));
                }
                if (b != null) {
                    b.close(Duration.ofSeconds(30));
                }
                a.close(Duration.ofSeconds(30));
            }
            for (ConsumerRecord<String, Long> r : out.poll(Duration.ofMillis(500))) {
                updates.add(r.key() + "=" + r.value());
            }
        }
        // Exactly once: one update per word read, none twice, none lost.
        assertEquals(words, updates.size(), "count updates");
        assertEquals(words, new HashSet<>(updates).size(), "distinct count updates");
    }
}
