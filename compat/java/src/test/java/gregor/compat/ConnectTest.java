package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import org.apache.kafka.connect.storage.StringConverter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Kafka Connect in distributed mode (connect-runtime, in this JVM) against
 * Gregor: the worker creates its compacted config/offset/status topics, a
 * FileStreamSource and a FileStreamSink connector made through the REST API
 * copy a file through a topic exactly, and a new worker after a stop resumes
 * both from their stored offsets.
 */
@Tag("connect")
@Timeout(300)
class ConnectTest {
    static final String GROUP = "connect-cluster";
    static final String TOPIC = "file-lines";
    static final Set<String> INTERNAL = Set.of("connect-configs", "connect-offsets", "connect-status");
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    static Gregor gregor;

    @BeforeAll
    static void start() throws Exception {
        KafkaExit.trap();
        gregor = Gregor.start("group.initial.rebalance.delay.ms=0");
    }

    @AfterAll
    static void stop() throws Exception {
        KafkaExit.reset();
        if (gregor != null) {
            gregor.close();
        }
    }

    /** A distributed worker on Gregor with REST on 127.0.0.1:0 and plain string records. */
    static Connect<?> worker(Gregor g, String group) {
        Map<String, String> p = new HashMap<>();
        p.put("bootstrap.servers", g.bootstrap());
        p.put("group.id", group);
        p.put("config.storage.topic", "connect-configs");
        p.put("offset.storage.topic", "connect-offsets");
        p.put("status.storage.topic", "connect-status");
        p.put("config.storage.replication.factor", "1");
        p.put("offset.storage.replication.factor", "1");
        p.put("status.storage.replication.factor", "1");
        p.put("key.converter", StringConverter.class.getName());
        p.put("value.converter", StringConverter.class.getName());
        p.put("listeners", "http://127.0.0.1:0");
        // Every plugin has a ServiceLoader manifest: no class-path scan (seconds on two cores).
        p.put("plugin.discovery", "service_load");
        p.put("offset.flush.interval.ms", "500");
        p.put("scheduled.rebalance.max.delay.ms", "0");
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        return new ConnectDistributed().startConnect(p);
    }

    static JsonNode http(String method, URI uri, String body, int wantStatus) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").header("Accept", "application/json");
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != wantStatus) {
            throw new AssertionError(method + " " + uri + " = " + r.statusCode() + " " + r.body() + ", want " + wantStatus);
        }
        return r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    /** Creates a connector with the REST API (POST /connectors), as a user of Connect would. */
    static void createConnector(URI rest, String name, Map<String, String> config) throws Exception {
        String body = JSON.writeValueAsString(Map.of("name", name, "config", config));
        JsonNode created = http("POST", rest.resolve("/connectors"), body, 201);
        assertEquals(name, created.get("name").asText());
    }

    /** Waits until GET /connectors/NAME/status shows the connector and one task RUNNING. */
    static void awaitRunning(URI rest, String name) throws Exception {
        String[] last = {""};
        Clients.waitFor(name + " RUNNING with one RUNNING task (last status " + last[0] + ")", () -> {
            try {
                HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(rest.resolve("/connectors/" + name + "/status"))
                        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
                last[0] = r.body();
                if (r.statusCode() != 200) {
                    return false;
                }
                JsonNode s = JSON.readTree(r.body());
                JsonNode tasks = s.get("tasks");
                return "RUNNING".equals(s.get("connector").get("state").asText())
                        && tasks.size() == 1 && "RUNNING".equals(tasks.get(0).get("state").asText());
            } catch (Exception e) {
                last[0] = e.toString();
                return false;
            }
        });
    }

    static String read(Path f) {
        try {
            return Files.exists(f) ? Files.readString(f, StandardCharsets.UTF_8) : "";
        } catch (Exception e) {
            return "";
        }
    }

    /** Waits until out holds at least want's length, then asserts it equals want exactly. */
    static void awaitFile(Path out, String want) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (read(out).length() < want.length() && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertSameLines(want, read(out), "sink file " + out);
    }

    /** Asserts got equals want, describing the first differing line instead of both texts. */
    static void assertSameLines(String want, String got, String what) {
        if (want.equals(got)) {
            return;
        }
        String[] w = want.split("\n", -1);
        String[] g = got.split("\n", -1);
        int i = 0;
        while (i < w.length && i < g.length && w[i].equals(g[i])) {
            i++;
        }
        throw new AssertionError(what + ": " + g.length + " lines, want " + w.length + "; first difference at line " + i
                + ": got " + (i < g.length ? "\"" + g[i] + "\"" : "EOF") + ", want " + (i < w.length ? "\"" + w[i] + "\"" : "EOF"));
    }

    static String lines(int from, int to) {
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < to; i++) {
            // ASCII only: FileStreamSourceTask stores its position in chars
            // but skips bytes on restart, so a non-ASCII file resumes mid-line.
            sb.append(String.format("line %05d: the quick brown fox jumps over %d lazy dogs\n", i, i * 7));
        }
        return sb.toString();
    }

    static long topicRecords(Admin a, String topic) throws Exception {
        TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Map<TopicPartition, OffsetSpec> req = d.partitions().stream()
                .collect(Collectors.toMap(p -> new TopicPartition(topic, p.partition()), p -> OffsetSpec.latest()));
        return a.listOffsets(req).all().get().values().stream().mapToLong(o -> o.offset()).sum();
    }

    @Test
    void fileSourceToSinkResumesAfterWorkerRestart() throws Exception {
        Path dir = Files.createTempDirectory("gregor-connect-");
        Path in = dir.resolve("in.txt");
        Path out = dir.resolve("out.txt");
        final int n = 500;
        final int m = 300;
        String first = lines(0, n);
        Files.writeString(in, first, StandardCharsets.UTF_8);

        Connect<?> w = worker(gregor, GROUP);
        try {
            URI rest = w.rest().advertisedUrl();
            assertEquals("127.0.0.1", rest.getHost());
            http("GET", rest.resolve("/"), null, 200);
            createConnector(rest, "file-source", Map.of(
                    "connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "tasks.max", "1",
                    "file", in.toString(),
                    "topic", TOPIC));
            createConnector(rest, "file-sink", Map.of(
                    "connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector",
                    "tasks.max", "1",
                    "file", out.toString(),
                    "topics", TOPIC));
            awaitRunning(rest, "file-source");
            awaitRunning(rest, "file-sink");
            awaitFile(out, first);
            JsonNode names = http("GET", rest.resolve("/connectors"), null, 200);
            assertEquals(Set.of("file-source", "file-sink"),
                    Set.of(names.get(0).asText(), names.get(1).asText()));
        } finally {
            w.stop();
        }

        try (Admin a = Clients.admin(gregor)) {
            // The worker created its internal topics compacted (it refuses to start otherwise).
            List<ConfigResource> res = INTERNAL.stream()
                    .map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).collect(Collectors.toList());
            Map<ConfigResource, Config> cfg = a.describeConfigs(res).all().get();
            for (ConfigResource r : res) {
                assertEquals("compact", cfg.get(r).get("cleanup.policy").value(), r.name() + " cleanup.policy");
            }
            assertEquals(n, topicRecords(a, TOPIC), "records in " + TOPIC + " after the first worker");
        }

        String more = lines(n, n + m);
        Files.writeString(in, more, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        Connect<?> w2 = worker(gregor, GROUP);
        try {
            URI rest = w2.rest().advertisedUrl();
            awaitRunning(rest, "file-source");
            awaitRunning(rest, "file-sink");
            // The source resumes at its stored file position and the sink at its
            // committed offset: the output is the input, without duplicates.
            awaitFile(out, first + more);
        } finally {
            w2.stop();
        }
        try (Admin a = Clients.admin(gregor)) {
            assertEquals(n + m, topicRecords(a, TOPIC), "records in " + TOPIC + " after the second worker");
        }
        assertSameLines(first + more, read(out), "sink file " + out);
    }
}
