package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Transactional consume-transform-produce with sendOffsetsToTransaction, and read_committed. */
@Timeout(120)
class TransactionsTest {
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
    void consumeTransformProduce() throws Exception {
        Clients.createTopic(gregor, "tx-in", 1);
        Clients.createTopic(gregor, "tx-out", 1);
        TopicPartition in = new TopicPartition("tx-in", 0);
        TopicPartition out = new TopicPartition("tx-out", 0);
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of("acks", "all"))) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>("tx-in", 0, "k" + i, "word" + i));
            }
            p.flush();
        }

        try (KafkaConsumer<String, String> c = Clients.consumer(gregor,
                Map.of("group.id", "tx-group", "isolation.level", "read_committed"));
             KafkaProducer<String, String> tp = Clients.producer(gregor,
                     Map.of("transactional.id", "java-ctp", "transaction.timeout.ms", "30000"))) {
            tp.initTransactions();
            c.subscribe(List.of("tx-in"));
            int done = 0;
            long deadline = System.nanoTime() + Clients.WAIT.toNanos();
            while (done < 10 && System.nanoTime() < deadline) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                tp.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : recs) {
                    tp.send(new ProducerRecord<>("tx-out", 0, r.key(), r.value().toUpperCase()));
                    offsets.put(in, new OffsetAndMetadata(r.offset() + 1));
                    done++;
                }
                tp.sendOffsetsToTransaction(offsets, c.groupMetadata());
                tp.commitTransaction();
            }
            assertEquals(10, done, "input records transformed");

            // An aborted transaction: its record must never be seen by read_committed.
            tp.beginTransaction();
            tp.send(new ProducerRecord<>("tx-out", 0, "aborted", "ABORTED")).get();
            tp.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(0)), c.groupMetadata());
            tp.abortTransaction();

            tp.beginTransaction();
            tp.send(new ProducerRecord<>("tx-out", 0, "after", "AFTER"));
            tp.commitTransaction();
        }

        try (Admin a = Clients.admin(gregor)) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                    a.listConsumerGroupOffsets("tx-group").partitionsToOffsetAndMetadata().get();
            assertEquals(10L, committed.get(in).offset(), "tx-group offset after the aborted transaction");
        }

        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, Map.of("isolation.level", "read_committed"))) {
            c.assign(List.of(out));
            c.seekToBeginning(List.of(out));
            List<ConsumerRecord<String, String>> got = Clients.pollN(c, 11);
            // Nothing more arrives: the aborted record stays hidden.
            ConsumerRecords<String, String> extra = c.poll(Duration.ofMillis(500));
            assertEquals(0, extra.count(), "records past the committed output: " + extra);
            for (int i = 0; i < 10; i++) {
                assertEquals("k" + i, got.get(i).key());
                assertEquals("WORD" + i, got.get(i).value());
                assertEquals(i, got.get(i).offset());
            }
            // offsets: 0-9 data, 10 commit marker, 11 aborted record, 12 abort marker, 13 "after", 14 marker
            assertEquals("AFTER", got.get(10).value());
            assertEquals(13L, got.get(10).offset());
            assertEquals(15L, c.endOffsets(List.of(out)).get(out));
            assertEquals(15L, c.position(out));
        }

        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, Map.of("isolation.level", "read_uncommitted"))) {
            c.assign(List.of(out));
            c.seekToBeginning(List.of(out));
            List<ConsumerRecord<String, String>> got = Clients.pollN(c, 12);
            assertEquals("ABORTED", got.get(10).value(), "read_uncommitted sees the aborted record");
            assertEquals(11L, got.get(10).offset());
        }
    }
}
