package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Kafka Streams word count with a state store under exactly_once_v2, stopped and restarted. */
@Timeout(240)
class StreamsTest {
    static final String APP = "wc";
    static Gregor gregor;

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

    static KafkaStreams wordCount(Path stateDir) {
        Properties p = StreamsApps.exactlyOnce(gregor.props(), APP, stateDir, 1);
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "500");
        return new KafkaStreams(StreamsApps.wordCount("wc-lines", "wc-counts", "counts-store"), p);
    }

    static void produce(String... lines) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (String l : lines) {
                p.send(new ProducerRecord<>("wc-lines", null, l));
            }
            p.flush();
        }
    }

    /** Reads wc-counts until the latest count of every word equals want. */
    static List<String> awaitCounts(KafkaConsumer<String, Long> c, Map<String, Long> latest, Map<String, Long> want) {
        List<String> seen = new java.util.ArrayList<>();
        StreamsApps.readCounts(c, latest, seen, want, Duration.ofMillis(200), Duration.ofSeconds(90), "word counts in wc-counts");
        return seen;
    }

    @Test
    void wordCountExactlyOnceSurvivesRestart() throws Exception {
        Clients.createTopic(gregor, "wc-lines", 2);
        Clients.createTopic(gregor, "wc-counts", 1);
        Path stateDir = Files.createTempDirectory("gregor-streams-");
        Map<String, Long> latest = new HashMap<>();
        try (KafkaConsumer<String, Long> out = StreamsApps.countsReader(gregor.props(), "wc-reader")) {
            out.subscribe(List.of("wc-counts"));
            KafkaStreams s = wordCount(stateDir);
            try {
                s.start();
                produce("a b c", "a b", "a");
                awaitCounts(out, latest, Map.of("a", 3L, "b", 2L, "c", 1L));
            } finally {
                s.close(Duration.ofSeconds(30));
            }

            try (Admin a = Clients.admin(gregor)) {
                Set<String> topics = a.listTopics().names().get();
                String changelog = APP + "-counts-store-changelog";
                String repartition = APP + "-words-repartition";
                assertTrue(topics.contains(changelog), "changelog topic in " + topics);
                assertTrue(topics.contains(repartition), "repartition topic in " + topics);
                ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
                Config cfg = a.describeConfigs(List.of(res)).all().get().get(res);
                assertEquals("compact", cfg.get("cleanup.policy").value(), "changelog cleanup.policy");
            }

            // Restart with the local state wiped: the store is restored from the changelog.
            try (var files = Files.walk(stateDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
            produce("a c", "d");
            s = wordCount(stateDir);
            try {
                s.start();
                List<String> seen = awaitCounts(out, latest, Map.of("a", 4L, "b", 2L, "c", 2L, "d", 1L));
                for (ConsumerRecord<String, Long> r : out.poll(Duration.ofSeconds(1))) {
                    seen.add(r.key() + "=" + r.value());
                }
                // Only the new lines are counted, on top of the restored store: the input
                // offsets were committed with the output, and the changelog held the counts.
                assertEquals(Set.of("a=4", "c=2", "d=1"), Set.copyOf(seen), "updates after the restart: " + seen);
                assertEquals(3, seen.size(), "updates after the restart: " + seen);
            } finally {
                s.close(Duration.ofSeconds(30));
            }
        }
    }
}
