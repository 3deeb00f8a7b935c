package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * What the Kafka Streams tests share: the word count they run (a
 * repartition topic "words" and a changelogged store), its configuration,
 * its running tasks and the reading of its counts.
 */
final class StreamsApps {
    private StreamsApps() {
    }

    /**
     * The word count from in to out: lines split into lowercase words,
     * repartitioned by word ("words") and counted in store.
     */
    static Topology wordCount(String in, String out, String store) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
                .groupBy((k, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(store))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /** base (a broker's client properties) with the application id, state directory and replication factor. */
    static Properties props(Properties base, String app, Path stateDir, int replication) {
        base.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        base.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        base.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.toString(replication));
        return base;
    }

    /**
     * props, exactly_once_v2 with commits every 100 ms and no record cache,
     * so that every count update is written, soon.
     */
    static Properties exactlyOnce(Properties base, String app, Path stateDir, int replication) {
        Properties p = props(base, app, stateDir, replication);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        return p;
    }

    /** The active tasks s runs, -1 unless it is RUNNING. */
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

    /** A read_committed reader of the counts from the earliest offset, in group (unless null). */
    static KafkaConsumer<String, Long> countsReader(Properties base, String group) {
        base.put("key.deserializer", StringDeserializer.class.getName());
        base.put("value.deserializer", LongDeserializer.class.getName());
        base.put("isolation.level", "read_committed");
        base.put("auto.offset.reset", "earliest");
        if (group != null) {
            base.put("group.id", group);
        }
        return new KafkaConsumer<>(base);
    }

    /**
     * Reads c (polling every poll) until every word's latest count is
     * want's, or timeout passed; adds every update read to updates, as
     * word=count, and fails unless latest is want then.
     */
    static void readCounts(KafkaConsumer<String, Long> c, Map<String, Long> latest, List<String> updates,
            Map<String, Long> want, Duration poll, Duration timeout, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!latest.equals(want) && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, Long> r : c.poll(poll)) {
                latest.put(r.key(), r.value());
                updates.add(r.key() + "=" + r.value());
            }
        }
        assertEquals(want, latest, what);
    }
}
