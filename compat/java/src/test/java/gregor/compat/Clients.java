package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Small helpers shared by the tests; every wait is bounded. */
final class Clients {
    static final Duration WAIT = Duration.ofSeconds(30);

    private Clients() {
    }

    static KafkaProducer<String, String> producer(Gregor g, Map<String, Object> extra) {
        Properties p = g.props();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("delivery.timeout.ms", "30000");
        p.put("linger.ms", "0");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(Gregor g, Map<String, Object> extra) {
        Properties p = g.props();
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static Admin admin(Gregor g) {
        return Admin.create(g.props());
    }

    static void createTopic(Gregor g, String name, int partitions) throws Exception {
        try (Admin a = admin(g)) {
            a.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
    }

    /** Polls until n records arrived (or WAIT passed) and returns them in arrival order. */
    static List<ConsumerRecord<String, String>> pollN(KafkaConsumer<String, String> c, int n) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (out.size() < n && System.nanoTime() < deadline) {
            c.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        if (out.size() < n) {
            throw new AssertionError("got " + out.size() + " records within " + WAIT + ", want " + n + ": " + out);
        }
        return out;
    }

    /** Waits until cond holds, failing with what after WAIT. */
    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + WAIT + " waiting for " + what);
            }
            Thread.sleep(50);
        }
    }
}
