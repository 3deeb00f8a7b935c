package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Idempotent producer, plain consumer, seek and offsetsForTimes. */
@Timeout(120)
class ProducerConsumerTest {
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

    @Test
    void idempotentProducerRoundTrip() throws Exception {
        String topic = "roundtrip";
        Clients.createTopic(gregor, topic, 3);
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = Clients.producer(gregor,
                Map.of("enable.idempotence", "true", "acks", "all", "max.in.flight.requests.per.connection", "5"))) {
            for (int i = 0; i < 30; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, i % 3, "k" + i, "v" + i,
                        List.<Header>of(new RecordHeader("h", ("hv" + i).getBytes(StandardCharsets.UTF_8)),
                                new RecordHeader("empty", new byte[0])));
                sent.add(p.send(r));
            }
            p.flush();
        }
        for (int i = 0; i < 30; i++) {
            RecordMetadata md = sent.get(i).get();
            assertEquals(i % 3, md.partition(), "partition of record " + i);
            assertEquals(i / 3, md.offset(), "offset of record " + i);
        }
        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, Map.of())) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1),
                    new TopicPartition(topic, 2));
            c.assign(tps);
            c.seekToBeginning(tps);
            List<ConsumerRecord<String, String>> got = Clients.pollN(c, 30);
            assertEquals(30, got.size());
            got.sort(Comparator.<ConsumerRecord<String, String>>comparingLong(ConsumerRecord::offset)
                    .thenComparingInt(ConsumerRecord::partition));
            for (ConsumerRecord<String, String> r : got) {
                int i = (int) r.offset() * 3 + r.partition();
                assertEquals("k" + i, r.key());
                assertEquals("v" + i, r.value());
                Header[] hs = r.headers().toArray();
                assertEquals(2, hs.length, "headers of " + r);
                assertEquals("h", hs[0].key());
                assertArrayEquals(("hv" + i).getBytes(StandardCharsets.UTF_8), hs[0].value());
                assertEquals("empty", hs[1].key());
                assertArrayEquals(new byte[0], hs[1].value());
            }
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            for (TopicPartition tp : tps) {
                assertEquals(10L, end.get(tp), "end offset of " + tp);
            }
        }
    }

    @Test
    void seekAndOffsetsForTimes() throws Exception {
        String topic = "times";
        Clients.createTopic(gregor, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 3_600_000L;
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, base + 1000L * (i + 1), "k" + i, "v" + i));
            }
            p.flush();
        }
        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, Map.of())) {
            c.assign(List.of(tp));
            assertEquals(0L, c.beginningOffsets(List.of(tp)).get(tp));
            assertEquals(10L, c.endOffsets(List.of(tp)).get(tp));

            Map<TopicPartition, Long> query = new HashMap<>();
            query.put(tp, base + 5500);
            OffsetAndTimestamp ot = c.offsetsForTimes(query).get(tp);
            assertNotNull(ot, "offsetsForTimes(base+5500)");
            assertEquals(5L, ot.offset());
            assertEquals(base + 6000, ot.timestamp());

            query.put(tp, base + 1000);
            assertEquals(0L, c.offsetsForTimes(query).get(tp).offset());
            query.put(tp, base + 20_000);
            assertNull(c.offsetsForTimes(query).get(tp), "offsetsForTimes past the last timestamp");

            c.seek(tp, 7);
            List<ConsumerRecord<String, String>> got = Clients.pollN(c, 3);
            assertEquals(List.of(7L, 8L, 9L), got.stream().map(ConsumerRecord::offset).toList());
            assertEquals("v7", got.get(0).value());
            assertEquals(base + 8000, got.get(0).timestamp());

            c.seek(tp, 2);
            ConsumerRecord<String, String> r = Clients.pollN(c, 1).get(0);
            assertEquals(2L, r.offset());
            assertEquals("k2", r.key());
        }
    }
}
