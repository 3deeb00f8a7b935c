package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * KIP-1331 with a real Kafka Streams 4.4 client: with
 * group.streams.topology.description.plugin.class set to Kafka's in-memory
 * plugin, the broker asks the member for its topology description in a
 * heartbeat answer, the client pushes it (topology.description.push.enabled
 * is on by default), and Admin#describeStreamsGroups with
 * includeTopologyDescription returns it AVAILABLE, with the subtopologies
 * and nodes of the application's own Topology#describe().
 */
@Timeout(120)
class StreamsTopologyDescriptionTest {
    static final String APP = "wcd";
    static Gregor gregor;

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start("group.streams.topology.description.plugin.class=org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin",
                "group.streams.heartbeat.interval.ms=300", "group.streams.min.heartbeat.interval.ms=300",
                "group.streams.initial.rebalance.delay.ms=0");
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    /** Each subtopology's node names, by subtopology id, from the client's own description. */
    static Map<String, List<String>> nodes(TopologyDescription d) {
        Map<String, List<String>> out = new TreeMap<>();
        for (TopologyDescription.Subtopology s : d.subtopologies()) {
            List<String> names = new ArrayList<>();
            for (TopologyDescription.Node n : s.nodes()) {
                names.add(n.name());
            }
            names.sort(null);
            out.put(String.valueOf(s.id()), names);
        }
        return out;
    }

    @Test
    void theMemberPushesItsTopologyAndAdminDescribesIt() throws Exception {
        Clients.createTopic(gregor, "wcd-lines", 2);
        Clients.createTopic(gregor, "wcd-counts", 1);
        Topology topology = StreamsApps.wordCount("wcd-lines", "wcd-counts", "counts");
        Properties p = StreamsApps.props(gregor.props(), APP, Files.createTempDirectory("gregor-streams-desc-"), 1);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        try (KafkaStreams s = new KafkaStreams(topology, p); Admin admin = Clients.admin(gregor)) {
            s.start();
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            StreamsGroupDescription d = null;
            while (true) {
                try {
                    d = admin.describeStreamsGroups(List.of(APP), new DescribeStreamsGroupsOptions().includeTopologyDescription(true))
                            .all().get().get(APP);
                    if (d.topologyDescriptionStatus() == StreamsGroupTopologyDescriptionStatus.AVAILABLE) {
                        break;
                    }
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                        throw e;
                    }
                    // the member has not joined yet
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no topology description within 60 s: "
                            + (d == null ? "no group" : d.topologyDescriptionStatus()) + "\n" + gregor.tail());
                }
                Thread.sleep(100);
            }
            Map<String, List<String>> got = new TreeMap<>();
            for (var st : d.topologyDescription().orElseThrow().subtopologies()) {
                List<String> names = new ArrayList<>();
                for (var n : st.nodes()) {
                    names.add(n.name());
                }
                names.sort(null);
                got.put(st.id(), names);
            }
            assertEquals(nodes(topology.describe()), got, "the described topology's nodes");
        }
    }
}
