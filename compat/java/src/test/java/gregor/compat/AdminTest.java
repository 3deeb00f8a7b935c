package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** AdminClient: topics, partitions, configs, group offsets, deleteRecords, cluster and log dirs. */
@Timeout(120)
class AdminTest {
    static Gregor gregor;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start();
        admin = Clients.admin(gregor);
    }

    @AfterAll
    static void stop() throws Exception {
        if (admin != null) {
            admin.close();
        }
        if (gregor != null) {
            gregor.close();
        }
    }

    static Throwable cause(ExecutionException e) {
        return e.getCause();
    }

    @Test
    void topicsAndPartitions() throws Exception {
        admin.createTopics(List.of(new NewTopic("adm-topic", 2, (short) 1)
                .configs(Map.of("retention.ms", "3600000")))).all().get();
        assertTrue(admin.listTopics().names().get().contains("adm-topic"));
        TopicDescription d = admin.describeTopics(List.of("adm-topic")).allTopicNames().get().get("adm-topic");
        assertEquals(2, d.partitions().size());
        assertEquals(1, d.partitions().get(0).replicas().size());
        assertNotNull(d.topicId());

        ExecutionException dup = assertThrows(ExecutionException.class,
                () -> admin.createTopics(List.of(new NewTopic("adm-topic", 1, (short) 1))).all().get());
        assertTrue(cause(dup) instanceof TopicExistsException, "duplicate create: " + cause(dup));

        admin.createPartitions(Map.of("adm-topic", NewPartitions.increaseTo(5))).all().get();
        d = admin.describeTopics(List.of("adm-topic")).allTopicNames().get().get("adm-topic");
        assertEquals(5, d.partitions().size());
        ExecutionException shrink = assertThrows(ExecutionException.class,
                () -> admin.createPartitions(Map.of("adm-topic", NewPartitions.increaseTo(3))).all().get());
        assertTrue(cause(shrink) instanceof InvalidPartitionsException, "shrinking: " + cause(shrink));

        admin.deleteTopics(List.of("adm-topic")).all().get();
        Clients.waitFor("adm-topic gone from listTopics", () -> {
            try {
                return !admin.listTopics().names().get().contains("adm-topic");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
    }

    @Test
    void configs() throws Exception {
        admin.createTopics(List.of(new NewTopic("cfg-topic", 1, (short) 1)
                .configs(Map.of("retention.ms", "3600000")))).all().get();
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, "cfg-topic");
        Config c = admin.describeConfigs(List.of(res)).all().get().get(res);
        assertEquals("3600000", c.get("retention.ms").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source());
        assertEquals("delete", c.get("cleanup.policy").value());

        admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all().get();
        c = admin.describeConfigs(List.of(res)).all().get().get(res);
        assertEquals("compact", c.get("cleanup.policy").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("cleanup.policy").source());
        assertEquals("604800000", c.get("retention.ms").value(), "retention.ms back to the default");
        assertTrue(c.get("retention.ms").isDefault() || c.get("retention.ms").source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);

        admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND)))).all().get();
        c = admin.describeConfigs(List.of(res)).all().get().get(res);
        assertEquals("compact,delete", c.get("cleanup.policy").value());

        ExecutionException bad = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(Map.of(res,
                List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "not-a-number"), AlterConfigOp.OpType.SET))))
                .all().get());
        assertTrue(cause(bad) instanceof org.apache.kafka.common.errors.InvalidConfigurationException
                || cause(bad) instanceof org.apache.kafka.common.errors.InvalidRequestException, "bad value: " + cause(bad));

        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, nodeId());
        Config bc = admin.describeConfigs(List.of(broker)).all().get().get(broker);
        assertNotNull(bc.get("num.partitions"), "broker config num.partitions");
    }

    static String nodeId() throws Exception {
        return String.valueOf(admin.describeCluster().nodes().get().iterator().next().id());
    }

    @Test
    void consumerGroupOffsets() throws Exception {
        admin.createTopics(List.of(new NewTopic("grp-topic", 2, (short) 1))).all().get();
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of())) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>("grp-topic", i % 2, "k", "v"));
            }
            p.flush();
        }
        TopicPartition p0 = new TopicPartition("grp-topic", 0);
        TopicPartition p1 = new TopicPartition("grp-topic", 1);
        admin.alterConsumerGroupOffsets("adm-group", Map.of(p0, new OffsetAndMetadata(3, "meta"),
                p1, new OffsetAndMetadata(5))).all().get();
        Map<TopicPartition, OffsetAndMetadata> off =
                admin.listConsumerGroupOffsets("adm-group").partitionsToOffsetAndMetadata().get();
        assertEquals(3L, off.get(p0).offset());
        assertEquals("meta", off.get(p0).metadata());
        assertEquals(5L, off.get(p1).offset());

        Collection<GroupListing> groups = admin.listGroups().all().get();
        assertTrue(groups.stream().anyMatch(g -> g.groupId().equals("adm-group")), "listGroups: " + groups);

        // A consumer of the group starts at the altered offsets.
        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, Map.of("group.id", "adm-group"))) {
            c.assign(List.of(p0, p1));
            assertEquals(3L, c.position(p0));
            assertEquals(5L, c.position(p1));
        }

        admin.deleteConsumerGroupOffsets("adm-group", Set.of(p1)).all().get();
        off = admin.listConsumerGroupOffsets("adm-group").partitionsToOffsetAndMetadata().get();
        assertEquals(Set.of(p0), off.keySet());

        admin.deleteConsumerGroups(List.of("adm-group")).all().get();
        ExecutionException gone = assertThrows(ExecutionException.class,
                () -> admin.deleteConsumerGroups(List.of("adm-group")).all().get());
        assertTrue(cause(gone) instanceof GroupIdNotFoundException, "deleting again: " + cause(gone));
    }

    @Test
    void deleteRecords() throws Exception {
        admin.createTopics(List.of(new NewTopic("del-topic", 1, (short) 1))).all().get();
        TopicPartition tp = new TopicPartition("del-topic", 0);
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of())) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>("del-topic", 0, "k" + i, "v" + i));
            }
            p.flush();
        }
        long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp).get().lowWatermark();
        assertEquals(4L, low);
        try (KafkaConsumer<String, String> c = Clients.consumer(gregor, Map.of())) {
            c.assign(List.of(tp));
            assertEquals(4L, c.beginningOffsets(List.of(tp)).get(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals("v4", Clients.pollN(c, 1).get(0).value());
        }
        ExecutionException past = assertThrows(ExecutionException.class,
                () -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(11))).all().get());
        assertTrue(cause(past) instanceof org.apache.kafka.common.errors.OffsetOutOfRangeException, "past the end: " + cause(past));
    }

    @Test
    void clusterAndLogDirs() throws Exception {
        DescribeClusterResult dc = admin.describeCluster();
        Collection<Node> nodes = dc.nodes().get();
        assertEquals(1, nodes.size());
        Node n = nodes.iterator().next();
        assertEquals("127.0.0.1", n.host());
        assertEquals(gregor.bootstrap(), n.host() + ":" + n.port());
        assertNotNull(dc.controller().get());
        String clusterId = dc.clusterId().get();
        assertNotNull(clusterId);
        assertFalse(clusterId.isEmpty());

        admin.createTopics(List.of(new NewTopic("dirs-topic", 1, (short) 1))).all().get();
        try (KafkaProducer<String, String> p = Clients.producer(gregor, Map.of())) {
            p.send(new ProducerRecord<>("dirs-topic", 0, "k", "v")).get();
        }
        Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(n.id())).allDescriptions().get().get(n.id());
        assertFalse(dirs.isEmpty(), "no log dirs");
        ReplicaInfo ri = null;
        for (LogDirDescription d : dirs.values()) {
            assertEquals(null, d.error(), "log dir error");
            if (d.replicaInfos().containsKey(new TopicPartition("dirs-topic", 0))) {
                ri = d.replicaInfos().get(new TopicPartition("dirs-topic", 0));
            }
        }
        assertNotNull(ri, "dirs-topic-0 in describeLogDirs: " + dirs);
        assertTrue(ri.size() > 0, "replica size " + ri.size());
    }
}
