"""Python Kafka clients against a running Gregor broker.

Run by TestPythonClients (compat/python_test.go), which starts a fresh broker
and sets GREGOR_BOOTSTRAP (host:port[,host:port...]) and GREGOR_RF (the
replication factor for new topics). Every test makes its own topics, so the
tests are independent of each other and of their order.

confluent-kafka is librdkafka underneath; aiokafka is pure Python (asyncio).
"""

import asyncio
import os
import time
import uuid

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

BOOTSTRAP = os.environ.get("GREGOR_BOOTSTRAP", "127.0.0.1:9092")
RF = int(os.environ.get("GREGOR_RF", "1"))
TIMEOUT = 20.0  # seconds, per blocking client call or wait loop


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin():
    return AdminClient({"bootstrap.servers": BOOTSTRAP})


def create_topic(name, partitions, config=None):
    adm = admin()  # kept alive until the result is in: a dropped client fails its futures
    fs = adm.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=RF, config=config or {})],
        operation_timeout=TIMEOUT,
        request_timeout=TIMEOUT,
    )
    fs[name].result(TIMEOUT)


def deliveries(producer):
    """Returns (on_delivery callback, list the callback appends (err, msg) to)."""
    got = []

    def cb(err, msg):
        got.append((err, msg))

    return cb, got


def poll_until(consumer, want, deadline_s=TIMEOUT):
    """Polls until want records arrived (or the deadline); fails on errors."""
    out = []
    deadline = time.monotonic() + deadline_s
    while len(out) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        out.append(msg)
    return out


def read_partition_to_end(conf, topic, partition):
    """Assigns one partition from the beginning and reads it up to its end
    (partition EOF); returns [(offset, key, value)]."""
    # librdkafka reports EOF after an empty fetch, i.e. after fetch.wait.max.ms.
    c = Consumer({**conf, "bootstrap.servers": BOOTSTRAP, "enable.partition.eof": True,
                  "group.id": unique("unused"), "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise KafkaException(msg.error())
            out.append((msg.offset(), msg.key(), msg.value()))
        pytest.fail(f"no partition EOF for {topic}/{partition} within {TIMEOUT}s; read {out}")
    finally:
        c.close()


# confluent-kafka ---------------------------------------------------------------------------


def expected_records(n, partitions):
    """Record i goes to partition i % partitions; a few are edge cases: a null
    key, a null value (tombstone), an empty value, no headers, a header with a
    null value and a repeated header key."""
    recs = []
    for i in range(n):
        key = None if i == 4 else f"key-{i}".encode()
        value = None if i == 5 else (b"" if i == 6 else f"value-{i}".encode() * (1 + i % 7))
        if i == 7:
            headers = None
        elif i == 8:
            headers = [("h", None), ("h", b"second"), ("idx", b"8")]
        else:
            headers = [("source", b"python"), ("idx", str(i).encode())]
        recs.append({"partition": i % partitions, "key": key, "value": value, "headers": headers})
    # Offsets are per partition in production order.
    next_off = {}
    for r in recs:
        r["offset"] = next_off.get(r["partition"], 0)
        next_off[r["partition"]] = r["offset"] + 1
    return recs, next_off


def test_confluent_idempotent_producer_and_group_consumer():
    topic = unique("py-idem")
    parts = 3
    create_topic(topic, parts)
    want, ends = expected_records(60, parts)

    p = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5})
    cb, got = deliveries(p)
    for r in want:
        kw = {"partition": r["partition"], "key": r["key"], "value": r["value"], "on_delivery": cb}
        if r["headers"] is not None:
            kw["headers"] = r["headers"]
        p.produce(topic, **kw)
    assert p.flush(TIMEOUT) == 0, "records still in flight after flush"
    assert len(got) == len(want)
    errs = [e for e, _ in got if e is not None]
    assert not errs, errs
    acked = sorted((m.partition(), m.offset(), m.key()) for _, m in got)
    assert acked == sorted((r["partition"], r["offset"], r["key"]) for r in want)

    group = unique("py-group")
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        c.subscribe([topic])
        msgs = poll_until(c, len(want))
        assert len(msgs) == len(want), f"consumed {len(msgs)} of {len(want)} records"
        # Nothing beyond: another poll returns no record.
        extra = c.poll(1.0)
        assert extra is None, f"unexpected record or event after the end: {extra.error() or extra.offset()}"
        by_pos = {(m.partition(), m.offset()): m for m in msgs}
        assert len(by_pos) == len(want), "duplicate (partition, offset) consumed"
        for r in want:
            m = by_pos[(r["partition"], r["offset"])]
            assert m.topic() == topic
            assert m.key() == r["key"], (r, m.key())
            assert m.value() == r["value"], (r["offset"], m.value())
            assert m.headers() == r["headers"], (r["offset"], m.headers())
            ts_type, ts = m.timestamp()
            assert ts_type == 1 and ts > 0  # CreateTime set by the producer
        # Within a partition, records arrive in offset order.
        for part in range(parts):
            offs = [m.offset() for m in msgs if m.partition() == part]
            assert offs == list(range(ends[part]))

        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(topic, i) for i in range(parts)], timeout=TIMEOUT)
        assert sorted((tp.partition, tp.offset) for tp in committed) == sorted(ends.items())
        for i in range(parts):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, i), timeout=TIMEOUT, cached=False)
            assert (lo, hi) == (0, ends[i])
    finally:
        c.close()

    # The group is listed and described with the committed offsets.
    adm = admin()
    offs = adm.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)],
        request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert sorted((tp.partition, tp.offset) for tp in offs.topic_partitions) == sorted(ends.items())


def test_confluent_transactions_read_committed():
    topic = unique("py-txn")
    create_topic(topic, 1)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": unique("py-txid"),
                  "transaction.timeout.ms": 10000})
    p.init_transactions(TIMEOUT)

    p.begin_transaction()
    for i in range(3):
        p.produce(topic, partition=0, key=b"k", value=f"committed-{i}".encode())
    p.commit_transaction(TIMEOUT)  # records at 0..2, commit marker at 3

    p.begin_transaction()
    for i in range(2):
        p.produce(topic, partition=0, key=b"k", value=f"aborted-{i}".encode())
    p.flush(TIMEOUT)  # the aborted records are in the log before the abort
    p.abort_transaction(TIMEOUT)  # records at 4..5, abort marker at 6

    p.begin_transaction()
    p.produce(topic, partition=0, key=b"k", value=b"committed-3")
    p.commit_transaction(TIMEOUT)  # record at 7, commit marker at 8

    committed = read_partition_to_end({"isolation.level": "read_committed"}, topic, 0)
    assert committed == [(0, b"k", b"committed-0"), (1, b"k", b"committed-1"),
                         (2, b"k", b"committed-2"), (7, b"k", b"committed-3")]
    uncommitted = read_partition_to_end({"isolation.level": "read_uncommitted"}, topic, 0)
    assert uncommitted == [(0, b"k", b"committed-0"), (1, b"k", b"committed-1"),
                           (2, b"k", b"committed-2"), (4, b"k", b"aborted-0"),
                           (5, b"k", b"aborted-1"), (7, b"k", b"committed-3")]

    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": unique("unused")})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT, cached=False)
        assert (lo, hi) == (0, 9)
    finally:
        c.close()

    # A transaction left open blocks read_committed readers at its first
    # record (the last stable offset) until it ends.
    p.begin_transaction()
    p.produce(topic, partition=0, value=b"open")
    p.flush(TIMEOUT)  # at offset 9
    assert read_partition_to_end({"isolation.level": "read_committed"}, topic, 0)[-1][0] == 7
    assert read_partition_to_end({"isolation.level": "read_uncommitted"}, topic, 0)[-1] == (9, None, b"open")
    p.commit_transaction(TIMEOUT)
    assert read_partition_to_end({"isolation.level": "read_committed"}, topic, 0)[-1] == (9, None, b"open")


def test_confluent_transactional_consume_transform_produce():
    """Offsets committed through a transaction (TxnOffsetCommit) take effect
    with its commit only: an aborted transaction's offsets and output vanish."""
    src, dst = unique("py-ctp-src"), unique("py-ctp-dst")
    create_topic(src, 1)
    create_topic(dst, 1)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True})
    for i in range(6):
        p.produce(src, partition=0, key=f"{i}".encode(), value=f"in-{i}".encode())
    assert p.flush(TIMEOUT) == 0

    group = unique("py-ctp-group")
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    tp = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": unique("py-ctp-txid")})
    tp.init_transactions(TIMEOUT)
    try:
        c.subscribe([src])
        msgs = poll_until(c, 6)
        assert [m.offset() for m in msgs] == list(range(6))

        def transform(batch, commit):
            tp.begin_transaction()
            for m in batch:
                tp.produce(dst, partition=0, key=m.key(), value=b"out-" + m.value())
            tp.send_offsets_to_transaction([TopicPartition(src, 0, batch[-1].offset() + 1)],
                                           c.consumer_group_metadata(), TIMEOUT)
            if commit:
                tp.commit_transaction(TIMEOUT)
            else:
                tp.flush(TIMEOUT)
                tp.abort_transaction(TIMEOUT)

        transform(msgs[:3], True)   # out at 0..2, marker 3; group offset 3
        transform(msgs[3:], False)  # out at 4..6, marker 7; offset 6 discarded
        got = c.committed([TopicPartition(src, 0)], timeout=TIMEOUT)
        assert [(t.partition, t.offset) for t in got] == [(0, 3)]
        transform(msgs[3:5], True)  # out at 8..9, marker 10; group offset 5
        got = c.committed([TopicPartition(src, 0)], timeout=TIMEOUT)
        assert [(t.partition, t.offset) for t in got] == [(0, 5)]
    finally:
        c.close()
    assert read_partition_to_end({"isolation.level": "read_committed"}, dst, 0) == [
        (0, b"0", b"out-in-0"), (1, b"1", b"out-in-1"), (2, b"2", b"out-in-2"),
        (8, b"3", b"out-in-3"), (9, b"4", b"out-in-4")]


def test_confluent_admin_topics_and_configs():
    adm = admin()
    topic = unique("py-admin")
    create_topic(topic, 4, {"cleanup.policy": "compact", "retention.ms": "3600000",
                            "max.message.bytes": "2000000"})

    # Creating it again fails with TOPIC_ALREADY_EXISTS.
    fs = adm.create_topics([NewTopic(topic, num_partitions=1, replication_factor=RF)],
                           operation_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as ei:
        fs[topic].result(TIMEOUT)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    # Invalid partition count: INVALID_PARTITIONS.
    bad = unique("py-bad")
    fs = adm.create_topics([NewTopic(bad, num_partitions=0, replication_factor=RF)],
                           operation_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as ei:
        fs[bad].result(TIMEOUT)
    assert ei.value.args[0].code() == KafkaError.INVALID_PARTITIONS

    desc = adm.describe_topics(TopicCollection([topic]), request_timeout=TIMEOUT)[topic].result(TIMEOUT)
    assert desc.name == topic
    assert not desc.is_internal
    assert desc.topic_id is not None and str(desc.topic_id) != "AAAAAAAAAAAAAAAAAAAAAA"
    assert [p.id for p in desc.partitions] == [0, 1, 2, 3]
    for p in desc.partitions:
        assert p.leader is not None
        assert len(p.replicas) == RF and len(p.isr) == RF

    md = adm.list_topics(timeout=TIMEOUT)
    assert topic in md.topics and len(md.topics[topic].partitions) == 4
    assert bad not in md.topics

    res = ConfigResource(ResourceType.TOPIC, topic)
    cfg = adm.describe_configs([res], request_timeout=TIMEOUT)[res].result(TIMEOUT)
    assert cfg["cleanup.policy"].value == "compact"
    assert cfg["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not cfg["cleanup.policy"].is_default
    assert cfg["retention.ms"].value == "3600000"
    assert cfg["max.message.bytes"].value == "2000000"
    assert cfg["segment.bytes"].is_default
    assert cfg["segment.bytes"].source in (ConfigSource.DEFAULT_CONFIG.value,
                                           ConfigSource.STATIC_BROKER_CONFIG.value)

    # Change one config incrementally and see it described.
    res2 = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    adm.incremental_alter_configs([res2])[res2].result(TIMEOUT)
    cfg = adm.describe_configs([res], request_timeout=TIMEOUT)[res].result(TIMEOUT)
    assert cfg["retention.ms"].value == "7200000"
    assert cfg["cleanup.policy"].value == "compact"

    adm.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while topic in adm.list_topics(timeout=TIMEOUT).topics:
        assert time.monotonic() < deadline, f"{topic} still listed after DeleteTopics"
        time.sleep(0.1)
    with pytest.raises(KafkaException) as ei:
        adm.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


# aiokafka ----------------------------------------------------------------------------------


def test_aiokafka_producer_group_consumer_manual_commit_resume():
    asyncio.run(asyncio.wait_for(aiokafka_resume(), 60))


async def aiokafka_resume():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition as TP
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic as AIONewTopic

    topic = unique("py-aio")
    parts = 2
    adm = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await adm.start()
    try:
        await adm.create_topics([AIONewTopic(topic, num_partitions=parts, replication_factor=RF)])
    finally:
        await adm.close()

    # 40 records, round-robin over the partitions by explicit partition.
    prod = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, enable_idempotence=True, acks="all")
    await prod.start()
    sent = {}  # (partition, offset) -> (key, value, headers)
    try:
        for i in range(40):
            key, value = f"k{i}".encode(), f"v{i}".encode()
            headers = [("i", str(i).encode())]
            md = await prod.send_and_wait(topic, value, key=key, partition=i % parts, headers=headers)
            sent[(md.partition, md.offset)] = (key, value, headers)
        # A batch of sends in flight at once keeps its order too.
        futs = [await prod.send(topic, f"b{i}".encode(), key=b"batch", partition=0) for i in range(20)]
        for i, fut in enumerate(futs):
            md = await fut
            sent[(md.partition, md.offset)] = (b"batch", f"b{i}".encode(), [])
    finally:
        await prod.stop()
    assert sorted(o for p, o in sent if p == 0) == list(range(40))
    assert sorted(o for p, o in sent if p == 1) == list(range(20))

    group = unique("py-aio-group")

    def consumer():
        return AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                max_poll_records=7)

    # First consumer: process 25 records, commit exactly those, stop.
    c1 = consumer()
    await c1.start()
    processed = []
    try:
        while len(processed) < 25:
            batch = await c1.getmany(timeout_ms=1000)
            for tp, msgs in batch.items():
                for m in msgs:
                    if len(processed) < 25:
                        processed.append(m)
        last = {}
        for m in processed:
            last[m.partition] = max(last.get(m.partition, -1), m.offset)
        await c1.commit({TP(topic, p): o + 1 for p, o in last.items()})
        for p, o in last.items():
            assert await c1.committed(TP(topic, p)) == o + 1
    finally:
        await c1.stop()
    for m in processed:
        key, value, headers = sent[(m.partition, m.offset)]
        assert (m.key, m.value, list(m.headers)) == (key, value, headers)
    # Each partition's processed records are a prefix of it.
    for p in range(parts):
        offs = [m.offset for m in processed if m.partition == p]
        assert offs == list(range(len(offs)))

    # Second consumer in the same group resumes at the committed offsets:
    # exactly the rest, no record twice, none missing.
    c2 = consumer()
    await c2.start()
    rest = []
    try:
        want = len(sent) - len(processed)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while len(rest) < want and loop.time() < deadline:
            batch = await c2.getmany(timeout_ms=500)
            for msgs in batch.values():
                rest.extend(msgs)
        extra = await c2.getmany(timeout_ms=500)
        assert not any(extra.values()), f"records beyond the end: {extra}"
    finally:
        await c2.stop()
    seen = [(m.partition, m.offset) for m in processed] + [(m.partition, m.offset) for m in rest]
    assert len(seen) == len(set(seen)), "a record was consumed twice"
    assert set(seen) == set(sent), f"missing: {sorted(set(sent) - set(seen))}"
    for p in range(parts):
        first = min((m.offset for m in rest if m.partition == p), default=None)
        assert first == last.get(p, -1) + 1 or first is None
    for m in rest:
        key, value, headers = sent[(m.partition, m.offset)]
        assert (m.key, m.value, list(m.headers)) == (key, value, headers)


def test_aiokafka_transactions_read_committed():
    asyncio.run(asyncio.wait_for(aiokafka_transactions(), 60))


async def aiokafka_transactions():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition as TP

    topic = unique("py-aio-txn")
    create_topic(topic, 1)
    prod = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id=unique("py-aio-txid"))
    await prod.start()
    try:
        async with prod.transaction():
            for i in range(3):
                await prod.send(topic, f"c{i}".encode(), partition=0)
        # Offsets 0..2, marker 3.
        await prod.begin_transaction()
        for i in range(2):
            await (await prod.send(topic, f"a{i}".encode(), partition=0))
        await prod.abort_transaction()  # 4..5, marker 6
        async with prod.transaction():
            await prod.send(topic, b"c3", partition=0)  # 7, marker 8
    finally:
        await prod.stop()

    async def read_all(isolation):
        c = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, isolation_level=isolation,
                             enable_auto_commit=False)
        await c.start()
        try:
            tp = TP(topic, 0)
            c.assign([tp])
            await c.seek_to_beginning(tp)
            end = (await c.end_offsets([tp]))[tp]
            got = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + TIMEOUT
            while await c.position(tp) < end and loop.time() < deadline:
                for msgs in (await c.getmany(timeout_ms=200)).values():
                    got.extend((m.offset, m.value) for m in msgs)
            return end, got
        finally:
            await c.stop()

    end, got = await read_all("read_committed")
    # end_offsets under read_committed is the last stable offset: 9 (no open transaction).
    assert end == 9
    assert got == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (7, b"c3")]
    end, got = await read_all("read_uncommitted")
    assert end == 9
    assert got == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (4, b"a0"), (5, b"a1"), (7, b"c3")]
