package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.flink.avro.registry.confluent.shaded.io.confluent.kafka.schemaregistry.avro.AvroSchema;
import org.apache.flink.avro.registry.confluent.shaded.io.confluent.kafka.schemaregistry.client.CachedSchemaRegistryClient;
import org.apache.flink.avro.registry.confluent.shaded.io.confluent.kafka.schemaregistry.client.SchemaMetadata;
import org.apache.flink.avro.registry.confluent.shaded.io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException;
import org.apache.flink.avro.shaded.org.apache.avro.Schema;
import org.apache.flink.avro.shaded.org.apache.avro.generic.GenericData;
import org.apache.flink.avro.shaded.org.apache.avro.generic.GenericRecord;
import org.apache.flink.formats.avro.registry.confluent.ConfluentRegistryAvroDeserializationSchema;
import org.apache.flink.formats.avro.registry.confluent.ConfluentRegistryAvroSerializationSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A Java serde for Confluent's schema registry against Gregor's: Apache
 * Flink's Confluent-registry Avro format (ConfluentRegistryAvroSerializationSchema
 * and ConfluentRegistryAvroDeserializationSchema, from
 * org.apache.flink:flink-sql-avro-confluent-registry), which registers and
 * fetches schemas with Confluent's own CachedSchemaRegistryClient
 * (kafka-schema-registry-client 7.5.3, bundled in that jar under
 * org.apache.flink.avro.registry.confluent.shaded; Avro under
 * org.apache.flink.avro.shaded). The bytes go through kafka-clients'
 * producer and consumer as they are. Runs in the Maven profile "registry"
 * only (see pom.xml).
 */
@Tag("registry")
@Timeout(120)
class SchemaRegistrySerdeTest {
    static final String TOPIC = "users";
    static final String SUBJECT = TOPIC + "-value";
    static final Schema USER = new Schema.Parser().parse("""
            {"type":"record","name":"User","namespace":"gregor.compat","fields":[
              {"name":"name","type":"string"},
              {"name":"age","type":"int"},
              {"name":"email","type":["null","string"],"default":null}]}""");
    // Adds a field with a default: what a reader on a newer schema uses.
    static final Schema USER_WITH_COUNTRY = new Schema.Parser().parse("""
            {"type":"record","name":"User","namespace":"gregor.compat","fields":[
              {"name":"name","type":"string"},
              {"name":"age","type":"int"},
              {"name":"email","type":["null","string"],"default":null},
              {"name":"country","type":"string","default":"unknown"}]}""");
    // Adds a field without a default: not BACKWARD compatible.
    static final Schema USER_WITH_PHONE = new Schema.Parser().parse("""
            {"type":"record","name":"User","namespace":"gregor.compat","fields":[
              {"name":"name","type":"string"},
              {"name":"age","type":"int"},
              {"name":"email","type":["null","string"],"default":null},
              {"name":"phone","type":"string"}]}""");

    static Gregor gregor;
    static String registry;

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start("schema.registry.listeners=http://127.0.0.1:0");
        registry = gregor.schemaRegistryUrl();
    }

    @AfterAll
    static void stop() throws Exception {
        if (gregor != null) {
            gregor.close();
        }
    }

    static GenericRecord user(Schema schema, String name, int age, String email) {
        GenericRecord r = new GenericData.Record(schema);
        r.put("name", name);
        r.put("age", age);
        r.put("email", email);
        return r;
    }

    /**
     * Three records serialized by Flink's serializer (which registers the
     * schema under users-value on first use) are produced to a topic whose
     * values the broker validates (confluent.value.schema.validation), read
     * back and deserialized by a new deserializer (the writer schema
     * fetched by id) to the exact records, then read again with a newer
     * reader schema (its default filled in). Confluent's client then finds
     * the subject and id in Gregor, is refused an incompatible schema with
     * Confluent's 409, and gets the same id for the same schema again; the
     * broker refuses a value with an unregistered id.
     */
    @Test
    void flinkConfluentAvroRoundTrip() throws Exception {
        try (Admin a = Clients.admin(gregor)) {
            a.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1)
                    .configs(Map.of("confluent.value.schema.validation", "true")))).all().get();
        }
        List<GenericRecord> want = List.of(
                user(USER, "ada", 36, "ada@example.com"),
                user(USER, "alan", 41, null),
                user(USER, "grace", 85, null));

        ConfluentRegistryAvroSerializationSchema<GenericRecord> ser =
                ConfluentRegistryAvroSerializationSchema.forGeneric(SUBJECT, USER, registry);
        ser.open(null); // Flink passes a context for metrics, which these schemas do not use
        List<byte[]> values = new ArrayList<>();
        for (GenericRecord r : want) {
            values.add(ser.serialize(r));
        }

        CachedSchemaRegistryClient client = new CachedSchemaRegistryClient(registry, 100);
        SchemaMetadata latest = client.getLatestSchemaMetadata(SUBJECT);
        assertEquals(1, latest.getVersion(), "version registered by the serializer");
        for (byte[] v : values) {
            assertEquals(0, v[0], "magic byte");
            assertEquals(latest.getId(), ByteBuffer.wrap(v, 1, 4).getInt(), "schema id in the value");
        }

        Properties pp = gregor.props();
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        pp.put("acks", "all");
        pp.put("delivery.timeout.ms", "30000");
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < values.size(); i++) {
                RecordMetadata md = p.send(new ProducerRecord<>(TOPIC, 0,
                        ("u" + i).getBytes(StandardCharsets.UTF_8), values.get(i))).get();
                assertEquals(i, md.offset(), "offset of record " + i);
            }
            // A value whose id is not registered under users-value.
            byte[] bad = values.get(0).clone();
            ByteBuffer.wrap(bad, 1, 4).putInt(latest.getId() + 1000);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> p.send(new ProducerRecord<>(TOPIC, 0, null, bad)).get());
            assertEquals(InvalidRecordException.class, e.getCause().getClass(), "refusal: " + e.getCause());
        }

        Properties cp = gregor.props();
        cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + Clients.WAIT.toNanos();
            while (got.size() < want.size() && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
        assertEquals(want.size(), got.size(), "records read back");

        ConfluentRegistryAvroDeserializationSchema<GenericRecord> de =
                ConfluentRegistryAvroDeserializationSchema.forGeneric(USER, registry);
        de.open(null);
        ConfluentRegistryAvroDeserializationSchema<GenericRecord> newer =
                ConfluentRegistryAvroDeserializationSchema.forGeneric(USER_WITH_COUNTRY, registry);
        newer.open(null);
        for (int i = 0; i < want.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = got.get(i);
            assertEquals(i, r.offset());
            assertArrayEquals(("u" + i).getBytes(StandardCharsets.UTF_8), r.key());
            assertArrayEquals(values.get(i), r.value(), "value bytes of record " + i);
            assertEquals(want.get(i).toString(), de.deserialize(r.value()).toString(), "record " + i);
            GenericRecord withCountry = user(USER_WITH_COUNTRY, (String) want.get(i).get("name"),
                    (Integer) want.get(i).get("age"), (String) want.get(i).get("email"));
            withCountry.put("country", "unknown");
            assertEquals(withCountry.toString(), newer.deserialize(r.value()).toString(), "record " + i + " as newer reader");
        }
        assertEquals("{\"name\": \"ada\", \"age\": 36, \"email\": \"ada@example.com\"}",
                de.deserialize(got.get(0).value()).toString());

        // Confluent's own client against the same registry.
        assertEquals(List.of(SUBJECT), List.copyOf(client.getAllSubjects()));
        assertEquals(USER, ((AvroSchema) client.getSchemaById(latest.getId())).rawSchema());
        assertFalse(client.testCompatibility(SUBJECT, new AvroSchema(USER_WITH_PHONE)));
        RestClientException refused = assertThrows(RestClientException.class,
                () -> client.register(SUBJECT, new AvroSchema(USER_WITH_PHONE)));
        assertEquals(409, refused.getStatus());
        assertEquals(409, refused.getErrorCode());
        assertEquals("Schema being registered is incompatible with an earlier schema for subject \"users-value\", "
                + "details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'phone' in the new schema "
                + "has no default value and is missing in the old schema', path:'/fields/3'}]; error code: 409",
                refused.getMessage());
        assertEquals(latest.getId(), new CachedSchemaRegistryClient(registry, 100).register(SUBJECT, new AvroSchema(USER)),
                "the same schema registered again");

        // And over plain HTTP.
        HttpResponse<String> subjects = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(registry + "/subjects")).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, subjects.statusCode());
        assertEquals("[\"users-value\"]", subjects.body().trim());
    }
}
