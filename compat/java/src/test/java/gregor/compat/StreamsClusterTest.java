package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kafka Streams with group.protocol=streams (KIP-1071) and exactly_once_v2
 * on a three-node cluster (every topic, the internal ones included, with
 * replication factor 3 and min.insync.replicas 2): a word count (a
 * repartition topic and a changelogged store) scales from one instance to
 * three and back to one while lines keep coming, and survives a kill -9 of
 * the broker coordinating its group, then of the leader of an input
 * partition, each restarted on its data directory. Every count update is in
 * the output exactly once (read_committed), the final counts are exact, and
 * no instance ever calls its uncaught exception handler.
 */
@Timeout(600)
class StreamsClusterTest {
    /** Extra kill rounds (system property gregor.streams.chaos.rounds), about 20 s each. */
    static final int CHAOS_ROUNDS = Integer.getInteger("gregor.streams.chaos.rounds", 0);

    static final String APP = "wcc";
    static final String IN = "wcc-lines";
    static final String OUT = "wcc-counts";
    static GregorCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = GregorCluster.start(3,
                "default.replication.factor=3", "min.insync.replicas=2",
                "offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3",
                "transaction.state.log.min.isr=2",
                "group.streams.heartbeat.interval.ms=300", "group.streams.session.timeout.ms=6000",
                "group.streams.min.heartbeat.interval.ms=300", "group.streams.min.session.timeout.ms=6000",
                "group.streams.initial.rebalance.delay.ms=0");
    }

    @AfterAll
    static void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** Uncaught exceptions of every instance, by name. */
    final Map<String, Throwable> uncaught = new ConcurrentHashMap<>();

    KafkaStreams wordCount(String name) throws Exception {
        Properties p = StreamsApps.exactlyOnce(cluster.props(), APP, Files.createTempDirectory("gregor-streams-" + name + "-"), 3);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, APP + "-" + name);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.topicPrefix("min.insync.replicas"), "2");
        // Delete the repartition topic's consumed records (DeleteRecords)
        // at almost every commit rather than every 30 s: a restarted
        // follower then finds the leader's log start offset moved, often
        // inside a batch.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, "100");
        KafkaStreams s = new KafkaStreams(StreamsApps.wordCount(IN, OUT, "counts"), p);
        s.setUncaughtExceptionHandler(e -> {
            uncaught.put(name, e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        return s;
    }

    static int activeTasks(KafkaStreams s) {
        return StreamsApps.activeTasks(s);
    }

    void await(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!cond.getAsBoolean()) {
            if (!uncaught.isEmpty()) {
                throw new AssertionError("waiting for " + what + ": uncaught exceptions " + uncaught, uncaught.values().iterator().next());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 60 s: " + what + "\n" + cluster.tails());
            }
            Thread.sleep(50);
        }
    }

    /**
     * Lines produced by a background idempotent acks=all producer, one
     * small batch after another until stopped; only acknowledged lines are
     * counted.
     */
    static final class LineProducer implements AutoCloseable {
        final List<String> acked = Collections.synchronizedList(new ArrayList<>());
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        final Thread thread;

        LineProducer() {
            thread = new Thread(this::run, "line-producer");
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            Properties p = cluster.props();
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            p.put("acks", "all");
            p.put("enable.idempotence", "true");
            p.put("linger.ms", "5");
            p.put("delivery.timeout.ms", "60000");
            try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
                for (int batch = 0; !stop.get(); batch++) {
                    List<String> lines = new ArrayList<>();
                    List<Future<RecordMetadata>> fs = new ArrayList<>();
                    for (int i = 0; i < 8; i++) {
                        String l = "w" + ((batch + i) % 11) + " b" + (batch % 5);
                        lines.add(l);
                        fs.add(prod.send(new ProducerRecord<>(IN, "k" + batch + "-" + i, l)));
                    }
                    prod.flush();
                    for (Future<RecordMetadata> f : fs) {
                        f.get();
                    }
                    acked.addAll(lines);
                    // Pacing only: about 150 lines a second.
                    Thread.sleep(50);
                }
            } catch (Throwable e) {
                failed.set(e);
            }
        }

        int size() {
            return acked.size();
        }

        List<String> finish() throws Exception {
            stop.set(true);
            thread.join(90_000);
            if (thread.isAlive()) {
                throw new AssertionError("the line producer did not stop within 90 s");
            }
            if (failed.get() != null) {
                throw new AssertionError("producing lines failed", failed.get());
            }
            return new ArrayList<>(acked);
        }

        @Override
        public void close() throws Exception {
            stop.set(true);
            thread.join(90_000);
        }
    }

    /** The output read so far (read_committed), every update and the latest count of each word. */
    static final class Output {
        final KafkaConsumer<String, Long> c;
        final List<String> updates = new ArrayList<>();
        final Map<String, Long> latest = new HashMap<>();

        Output() {
            c = StreamsApps.countsReader(cluster.props(), null);
            c.assign(List.of(new TopicPartition(OUT, 0)));
            c.seekToBeginning(List.of(new TopicPartition(OUT, 0)));
        }

        void poll() {
            for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(50))) {
                latest.put(r.key(), r.value());
                updates.add(r.key() + "=" + r.value());
            }
        }

        long total() {
            return latest.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    /** Waits until n more lines are acknowledged. */
    void awaitProduced(LineProducer lp, int n) throws InterruptedException {
        int from = lp.size();
        await(n + " more lines acknowledged", () -> lp.size() >= from + n);
    }

    /**
     * Waits until the output has counted at least words words (twice the
     * lines acknowledged when called: everything produced so far), so that
     * processing goes on.
     */
    void awaitProgress(String what, Output out, long words) throws InterruptedException {
        await(what + ": output counts at least " + words + " words", () -> {
            out.poll();
            return out.total() >= words;
        });
        log(what + ": " + out.total() + " words counted");
    }

    static StreamsGroupDescription describe(Admin adm) throws Exception {
        return adm.describeStreamsGroups(List.of(APP)).all().get().get(APP);
    }

    static void log(String s) {
        System.out.println("StreamsClusterTest: " + s);
    }

    static int leaderOf(Admin adm, String topic, int partition) throws Exception {
        TopicDescription d = adm.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        return d.partitions().get(partition).leader().id();
    }

    /** Every topic of the test, the internal ones included. */
    static final List<String> TOPICS = List.of(IN, OUT, APP + "-words-repartition", APP + "-counts-changelog",
            "__consumer_offsets", "__transaction_state");

    /**
     * Waits until every partition of every topic has all three replicas in
     * its ISR: the restarted broker has caught up everywhere, so the next
     * kill leaves every partition at min.insync.replicas.
     */
    void awaitFullIsr(Admin adm, int restarted) throws InterruptedException {
        await("node " + restarted + " back in the ISR of every partition", () -> {
            try {
                for (TopicDescription d : adm.describeTopics(TOPICS).allTopicNames().get().values()) {
                    if (!d.partitions().stream().allMatch(p -> p.leader() != null && p.isr().size() == 3)) {
                        return false;
                    }
                }
                return true;
            } catch (Exception e) {
                return false;
            }
        });
    }

    @Test
    void wordCountOnThreeNodesScalesAndSurvivesKill9() throws Exception {
        try (Admin adm = Admin.create(cluster.props())) {
            await("three brokers registered", () -> {
                try {
                    return adm.describeCluster().nodes().get().size() == 3;
                } catch (Exception e) {
                    return false;
                }
            });
            adm.createTopics(List.of(
                    new NewTopic(IN, 4, (short) 3).configs(Map.of("min.insync.replicas", "2")),
                    new NewTopic(OUT, 1, (short) 3).configs(Map.of("min.insync.replicas", "2")))).all().get();

            KafkaStreams a = wordCount("a");
            KafkaStreams b = null;
            KafkaStreams c = null;
            List<String> lines;
            int killedCoordinator;
            int killedLeader;
            int killedAgain;
            int killedTxn;
            Output out = new Output();
            try (LineProducer lp = new LineProducer()) {
                // One instance: all 8 tasks (2 subtopologies x 4 partitions).
                a.start();
                await("a runs all 8 tasks", () -> activeTasks(a) == 8);
                awaitProgress("a alone", out, 2L * lp.size() + 1);
                for (String t : List.of("__consumer_offsets", "__transaction_state", APP + "-words-repartition", APP + "-counts-changelog")) {
                    TopicDescription d = adm.describeTopics(List.of(t)).allTopicNames().get().get(t);
                    assertEquals(3, d.partitions().get(0).replicas().size(), "replicas of " + t);
                    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
                    Config cfg = adm.describeConfigs(List.of(r)).all().get().get(r);
                    assertEquals("2", cfg.get("min.insync.replicas").value(), "min.insync.replicas of " + t);
                }

                // Three instances, the coordinator killed with kill -9 while
                // a hands tasks over to b and c: its successor loads the group
                // from __consumer_offsets (the three members, the same group
                // epoch), the rebalance completes there (8 tasks, at least 2
                // each) and processing goes on; then the node is restarted.
                b = wordCount("b");
                c = wordCount("c");
                b.start();
                c.start();
                KafkaStreams bb = b;
                KafkaStreams cc = c;
                AtomicReference<StreamsGroupDescription> joined = new AtomicReference<>();
                await("b and c join the group", () -> {
                    try {
                        joined.set(describe(adm));
                        return joined.get().members().size() == 3;
                    } catch (Exception e) {
                        return false;
                    }
                });
                StreamsGroupDescription before = joined.get();
                killedCoordinator = before.coordinator().id();
                log("killing the coordinator, node " + killedCoordinator + ", tasks a/b/c " + activeTasks(a) + "/" + activeTasks(bb) + "/" + activeTasks(cc) + ": " + before);
                cluster.node(killedCoordinator).kill();
                await("a, b and c run 8 tasks between them, at least 2 each", () -> {
                    int na = activeTasks(a), nb = activeTasks(bb), nc = activeTasks(cc);
                    return na >= 2 && nb >= 2 && nc >= 2 && na + nb + nc == 8;
                });
                awaitProduced(lp, 80);
                awaitProgress("a, b and c, coordinator " + killedCoordinator + " killed", out, 2L * lp.size());
                StreamsGroupDescription after = describe(adm);
                log("after the kill: " + after);
                assertTrue(after.coordinator().id() != killedCoordinator, "a new coordinator: " + after);
                assertEquals(3, after.members().size(), "members after the failover: " + after);
                // The same epoch: no member was fenced (as a Streams thread
                // whose commit at its previous epoch was refused is) or
                // expired across the failover.
                assertEquals(before.groupEpoch(), after.groupEpoch(), "group epoch after the failover: " + after);
                cluster.node(killedCoordinator).start();
                awaitFullIsr(adm, killedCoordinator);
                awaitProgress("coordinator " + killedCoordinator + " restarted", out, 2L * lp.size());

                // kill -9 the leader of input partition 0, restart it.
                killedLeader = leaderOf(adm, IN, 0);
                log("killing the leader of " + IN + "-0, node " + killedLeader);
                cluster.node(killedLeader).kill();
                awaitProduced(lp, 80);
                awaitProgress("leader " + killedLeader + " of " + IN + "-0 killed", out, 2L * lp.size());
                cluster.node(killedLeader).start();
                awaitFullIsr(adm, killedLeader);
                log("node " + killedLeader + " back in every ISR");
                await("a, b and c are RUNNING with 8 tasks between them", () -> {
                    int na = activeTasks(a), nb = activeTasks(bb), nc = activeTasks(cc);
                    return na >= 0 && nb >= 0 && nc >= 0 && na + nb + nc == 8;
                });

                // Back to one: a takes b's and c's tasks when they leave,
                // the coordinator killed between the two leaving.
                b.close(Duration.ofSeconds(30));
                b = null;
                killedAgain = describe(adm).coordinator().id();
                log("b left; killing the coordinator, node " + killedAgain);
                cluster.node(killedAgain).kill();
                c.close(Duration.ofSeconds(30));
                c = null;
                await("a runs all 8 tasks again", () -> activeTasks(a) == 8);
                awaitProduced(lp, 80);
                awaitProgress("a alone again, coordinator " + killedAgain + " killed", out, 2L * lp.size());
                cluster.node(killedAgain).start();
                awaitFullIsr(adm, killedAgain);
                awaitProgress("a alone again, coordinator " + killedAgain + " restarted", out, 2L * lp.size());

                // kill -9 the transaction coordinator of a's producer (its
                // transactional id is the application id, a's process id and
                // thread 1) mid-transaction, restart it.
                String processId = describe(adm).members().iterator().next().processId();
                String txnId = APP + "-" + processId + "-1";
                killedTxn = adm.describeTransactions(List.of(txnId)).all().get().get(txnId).coordinatorId();
                log("killing the transaction coordinator of " + txnId + ", node " + killedTxn);
                cluster.node(killedTxn).kill();
                awaitProduced(lp, 80);
                awaitProgress("transaction coordinator " + killedTxn + " killed", out, 2L * lp.size());
                cluster.node(killedTxn).start();
                awaitFullIsr(adm, killedTxn);
                awaitProgress("transaction coordinator " + killedTxn + " restarted", out, 2L * lp.size());
                // Chaos rounds (make compat-java-streams-chaos; none in
                // make test): a fourth instance joins, the coordinator is
                // killed while a hands it half the tasks; it leaves while
                // the leader of a repartition partition is killed; each
                // node restarted and back in every ISR.
                for (int round = 0; round < CHAOS_ROUNDS; round++) {
                    KafkaStreams d = wordCount("d" + round);
                    d.start();
                    await("d joins", () -> {
                        try {
                            return describe(adm).members().size() == 2;
                        } catch (Exception e) {
                            return false;
                        }
                    });
                    int k1 = describe(adm).coordinator().id();
                    log("round " + round + ": d joined, killing the coordinator, node " + k1);
                    cluster.node(k1).kill();
                    await("a and d run 4 tasks each", () -> activeTasks(a) == 4 && activeTasks(d) == 4);
                    awaitProduced(lp, 40);
                    awaitProgress("round " + round + ", a and d", out, 2L * lp.size());
                    cluster.node(k1).start();
                    awaitFullIsr(adm, k1);
                    int k2 = leaderOf(adm, APP + "-words-repartition", round % 4);
                    log("round " + round + ": d leaves, killing the leader of " + APP + "-words-repartition-" + (round % 4) + ", node " + k2);
                    Thread leaving = new Thread(() -> d.close(Duration.ofSeconds(30)));
                    leaving.start();
                    cluster.node(k2).kill();
                    leaving.join(60_000);
                    await("a runs all 8 tasks again", () -> activeTasks(a) == 8);
                    awaitProduced(lp, 40);
                    awaitProgress("round " + round + ", a alone", out, 2L * lp.size());
                    cluster.node(k2).start();
                    awaitFullIsr(adm, k2);
                }
                lines = lp.finish();
                log(lines.size() + " lines produced");
            } finally {
                if (c != null) {
                    c.close(Duration.ofSeconds(30));
                }
                if (b != null) {
                    b.close(Duration.ofSeconds(30));
                }
            }

            Map<String, Long> want = new TreeMap<>();
            List<String> wantUpdates = new ArrayList<>();
            for (String l : lines) {
                for (String w : l.split(" ")) {
                    long n = want.merge(w, 1L, Long::sum);
                    wantUpdates.add(w + "=" + n);
                }
            }
            try {
                await("the output's latest counts are the " + lines.size() + " lines' counts", () -> {
                    out.poll();
                    return out.latest.equals(want);
                });
                assertEquals(KafkaStreams.State.RUNNING, a.state(), "instance a");
            } finally {
                a.close(Duration.ofSeconds(30));
                out.poll();
                out.c.close();
            }
            assertEquals(Map.of(), uncaught, "uncaught exceptions");
            assertEquals(want, new TreeMap<>(out.latest), "word counts in " + OUT);
            // Exactly once: each word's updates are 1, 2, ... n, each read once.
            List<String> got = new ArrayList<>(out.updates);
            Collections.sort(got);
            Collections.sort(wantUpdates);
            assertEquals(wantUpdates, got, "count updates (killed coordinator " + killedCoordinator + ", leader " + killedLeader + ", coordinator " + killedAgain + ", transaction coordinator " + killedTxn + ")");
            assertTrue(lines.size() > 100, "lines produced: " + lines.size());
        }
    }
}
