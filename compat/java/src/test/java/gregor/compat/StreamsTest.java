package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
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
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
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
        StreamsBuilder b = new StreamsBuilder();
        b.stream("wc-lines", Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
                .groupBy((k, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts-store"))
                .toStream()
                .to("wc-counts", Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = gregor.props();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "500");
        return new KafkaStreams(b.build(), p);
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
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (!latest.equals(want) && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                latest.put(r.key(), r.value());
                seen.add(r.key() + "=" + r.value());
            }
        }
        assertEquals(want, latest, "word counts in wc-counts");
        return seen;
    }

    @Test
    void wordCountExactlyOnceSurvivesRestart() throws Exception {
        Clients.createTopic(gregor, "wc-lines", 2);
        Clients.createTopic(gregor, "wc-counts", 1);
        Path stateDir = Files.createTempDirectory("gregor-streams-");
        Properties cp = gregor.props();
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", LongDeserializer.class.getName());
        cp.put("isolation.level", "read_committed");
        cp.put("auto.offset.reset", "earliest");
        cp.put("group.id", "wc-reader");
        Map<String, Long> latest = new HashMap<>();
        try (KafkaConsumer<String, Long> out = new KafkaConsumer<>(cp)) {
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
