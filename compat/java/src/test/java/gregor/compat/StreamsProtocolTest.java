package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
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
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
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
        gregor = Gregor.start("group.streams.heartbeat.interval.ms=300", "group.streams.session.timeout.ms=10000",
                "group.streams.min.heartbeat.interval.ms=300", "group.streams.min.session.timeout.ms=10000");
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    static KafkaStreams wordCount(Path stateDir, int port) {
        Properties p = StreamsApps.exactlyOnce(gregor.props(), APP, stateDir, 1);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "localhost:" + port);
        return new KafkaStreams(StreamsApps.wordCount(IN, OUT, "counts"), p);
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

    /** Reads the output until every word's latest count is want's; returns every update read. */
    static void readCounts(KafkaConsumer<String, Long> c, Map<String, Long> latest, List<String> updates, Map<String, Long> want) {
        StreamsApps.readCounts(c, latest, updates, want, Duration.ofMillis(100), Duration.ofSeconds(45), "word counts in " + OUT);
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
        Map<String, Long> want = new HashMap<>();
        Map<String, Long> latest = new HashMap<>();
        List<String> updates = new ArrayList<>();
        int words = 0;
        try (KafkaConsumer<String, Long> out = StreamsApps.countsReader(gregor.props(), "wcs-reader")) {
            out.subscribe(List.of(OUT));
            KafkaStreams a = wordCount(Files.createTempDirectory("gregor-streams-a-"), 7001);
            KafkaStreams b = null;
            KafkaStreams c = null;
            try {
                // One instance: all 8 tasks (2 subtopologies x 4 partitions).
                a.start();
                await("instance a runs all 8 tasks", () -> StreamsApps.activeTasks(a) == 8);
                List<String> l1 = lines("a", 40);
                produce(l1);
                count(want, l1);
                words += 80;
                readCounts(out, latest, updates, want);

                // Two instances: 4 tasks each; each knows the other's endpoint.
                b = wordCount(Files.createTempDirectory("gregor-streams-b-"), 7002);
                b.start();
                KafkaStreams bb = b;
                await("a and b run 4 tasks each", () -> StreamsApps.activeTasks(a) == 4 && StreamsApps.activeTasks(bb) == 4);
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
                    int na = StreamsApps.activeTasks(a), nb = StreamsApps.activeTasks(bb), nc = StreamsApps.activeTasks(cc);
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
                await("a runs all 8 tasks again", () -> StreamsApps.activeTasks(a) == 8);
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
