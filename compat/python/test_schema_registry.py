"""confluent-kafka-python's schema registry client and Avro serdes against
Gregor's schema registry (schema.registry.listeners).

TestPythonClients sets GREGOR_SCHEMA_REGISTRY to the registry's URL.
"""

import os
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

USER = ('{"type":"record","name":"User","fields":'
        '[{"name":"name","type":"string"},{"name":"age","type":"int"}]}')
USER_WITH_EMAIL = ('{"type":"record","name":"User","fields":'
                   '[{"name":"name","type":"string"},{"name":"age","type":"int"},'
                   '{"name":"email","type":"string"}]}')


def test_avro_serde_round_trip_through_gregor_registry():
    url = os.environ["GREGOR_SCHEMA_REGISTRY"]
    bootstrap = os.environ["GREGOR_BOOTSTRAP"]
    topic = "sr-" + uuid.uuid4().hex[:8]
    subject = topic + "-value"
    registry = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)

    value = AvroSerializer(registry, USER)({"name": "ada", "age": 36}, ctx)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=value)
    assert producer.flush(30) == 0

    latest = registry.get_latest_version(subject)
    assert latest.version == 1
    assert value[0] == 0 and int.from_bytes(value[1:5], "big") == latest.schema_id

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        msg = None
        for _ in range(60):
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.error() is None
        assert AvroDeserializer(registry)(msg.value(), ctx) == {"name": "ada", "age": 36}
    finally:
        consumer.close()

    # Adding a field without a default breaks BACKWARD compatibility.
    with pytest.raises(SchemaRegistryError) as err:
        registry.register_schema(subject, Schema(USER_WITH_EMAIL, "AVRO"))
    assert err.value.http_status_code == 409
    assert registry.test_compatibility(subject, Schema(USER_WITH_EMAIL, "AVRO")) is False
    # The same schema registered again keeps its id.
    assert registry.register_schema(subject, Schema(USER, "AVRO")) == latest.schema_id
    assert subject in registry.get_subjects()
