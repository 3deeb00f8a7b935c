"""librdkafka (confluent-kafka) with group.protocol=consumer (KIP-848), and
librdkafka's OAUTHBEARER client with its unsecured token.

Run by TestPythonClients (compat/python_test.go) like test_clients.py, whose
helpers it uses. GREGOR_OAUTH_BOOTSTRAP names a SASL_PLAINTEXT listener with
OAUTHBEARER enabled (the broker's unsecured-token validator); without it the
OAUTHBEARER test skips.
"""

import os
import time

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupType,
    KafkaException,
    Producer,
    TopicPartition,
)

from test_clients import BOOTSTRAP, TIMEOUT, admin, create_topic, deliveries, unique

OAUTH_BOOTSTRAP = os.environ.get("GREGOR_OAUTH_BOOTSTRAP", "")


class Member:
    """One group.protocol=consumer consumer that records every assignment
    change its rebalance callbacks see and every record it receives."""

    def __init__(self, name, group, topic):
        self.name = name
        self.events = []  # ("assign" | "revoke" | "lost", [partition, ...])
        self.owned = set()  # partitions, as the callbacks left them
        self.records = []  # (partition, offset, value)
        self.c = Consumer({
            "bootstrap.servers": BOOTSTRAP,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        self.c.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                         on_lost=self._on_lost)

    # With the consumer protocol librdkafka rebalances incrementally: the
    # callbacks get only the partitions added or taken away, and the Python
    # binding calls incremental_assign/incremental_unassign after them.
    def _on_assign(self, consumer, parts):
        ps = sorted(tp.partition for tp in parts)
        self.events.append(("assign", ps))
        self.owned |= set(ps)

    def _on_revoke(self, consumer, parts):
        ps = sorted(tp.partition for tp in parts)
        self.events.append(("revoke", ps))
        self.owned -= set(ps)

    def _on_lost(self, consumer, parts):
        ps = sorted(tp.partition for tp in parts)
        self.events.append(("lost", ps))
        self.owned -= set(ps)

    def poll_once(self, timeout=0.1):
        msg = self.c.poll(timeout)
        if msg is None:
            return
        if msg.error():
            raise KafkaException(msg.error())
        self.records.append((msg.partition(), msg.offset(), msg.value()))

    def assignment(self):
        return sorted(tp.partition for tp in self.c.assignment())


def poll_all_until(members, cond, what):
    """Polls every member in turn until cond() holds; fails after TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while not cond():
        if time.monotonic() > deadline:
            state = {m.name: (m.assignment(), len(m.records), m.events) for m in members}
            pytest.fail(f"{what}: not within {TIMEOUT}s; members {state}")
        for m in members:
            m.poll_once()


def produce(topic, parts, prefix, n):
    """Produces n records round-robin over parts partitions; returns the
    set of (partition, offset, value) acknowledged."""
    p = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "linger.ms": 5})
    cb, got = deliveries(p)
    for i in range(n):
        p.produce(topic, partition=i % parts, value=f"{prefix}-{i}".encode(), on_delivery=cb)
    assert p.flush(TIMEOUT) == 0, "records still in flight after flush"
    errs = [e for e, _ in got if e is not None]
    assert not errs, errs
    return {(m.partition(), m.offset(), m.value()) for _, m in got}


def received(members):
    return [r for m in members for r in m.records]


def check_exactly_once(members, want, what):
    got = received(members)
    assert len(got) == len(set(got)), f"{what}: duplicates among {len(got)} records"
    assert set(got) == want, f"{what}: {len(set(got) - want)} unexpected, {len(want - set(got))} missing"


def test_confluent_consumer_protocol_three_members():
    topic, group, parts = unique("py-848"), unique("py-848-group"), 6
    create_topic(topic, parts)
    names = ["m0", "m1", "m2"]
    ms = [Member(n, group, topic) for n in names]
    closed = []
    try:
        # The uniform assignor splits 6 partitions 2/2/2.
        poll_all_until(ms, lambda: all(len(m.assignment()) == 2 for m in ms)
                       and sorted(p for m in ms for p in m.assignment()) == list(range(parts)),
                       "three members splitting six partitions 2/2/2")
        for m in ms:
            assert m.owned == set(m.assignment()), (m.name, m.owned, m.assignment(), m.events)
        # The broker runs it as a KIP-848 group (ConsumerGroupDescribe).
        adm = admin()
        d = adm.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
        assert d.type == ConsumerGroupType.CONSUMER, d.type
        assert d.state == ConsumerGroupState.STABLE, d.state
        assert sorted(m.client_id for m in d.members) == names
        assert sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions) == list(range(parts))

        want = produce(topic, parts, "first", 600)
        poll_all_until(ms, lambda: len(received(ms)) >= len(want), "first 600 records")
        for m in ms:  # nothing more arrives
            for _ in range(3):
                m.poll_once(0.2)
        check_exactly_once(ms, want, "first run")
        for m in ms:
            assert {r[0] for r in m.records} <= set(m.assignment()), (m.name, m.assignment())
            m.c.commit(asynchronous=False)
        committed = ms[0].c.committed([TopicPartition(topic, i) for i in range(parts)], timeout=TIMEOUT)
        assert sorted((tp.partition, tp.offset) for tp in committed) == [(i, 100) for i in range(parts)]

        # m2 leaves: its two partitions go to m0 and m1, which keep theirs
        # (no stop-the-world: nothing is revoked from them, their
        # assignments only grow).
        before = {m.name: set(m.assignment()) for m in ms[:2]}
        for m in ms:
            m.events.clear()
        gone = ms.pop()
        gone.c.close()
        closed.append(gone)
        poll_all_until(ms, lambda: all(len(m.assignment()) == 3 for m in ms)
                       and sorted(p for m in ms for p in m.assignment()) == list(range(parts)),
                       "two members taking over the leaver's partitions")
        for m in ms:
            kinds = {k for k, _ in m.events}
            assert kinds == {"assign"}, f"{m.name}: events {m.events} after a member left, want only assignments"
            assert before[m.name] < set(m.assignment()), (m.name, before[m.name], m.assignment())
            assert m.owned == set(m.assignment()), (m.name, m.owned, m.assignment())

        for m in ms:
            m.records.clear()
        want2 = produce(topic, parts, "second", 300)
        poll_all_until(ms, lambda: len(received(ms)) >= len(want2), "300 records after the leave")
        check_exactly_once(ms, want2, "after the leave")
        for m in ms:
            m.c.commit(asynchronous=False)
        for m in ms:
            m.c.close()
        closed.extend(ms)
        ms = []

        # A restarted consumer resumes from the commits: only what came later.
        want3 = produce(topic, parts, "third", 120)
        ms = [Member("m0-again", group, topic)]
        poll_all_until(ms, lambda: len(ms[0].assignment()) == parts and len(received(ms)) >= len(want3),
                       "the restarted member reading from the commits")
        for _ in range(3):
            ms[0].poll_once(0.2)
        check_exactly_once(ms, want3, "after the restart")
        assert min(r[1] for r in ms[0].records) == 150, "resumed below the committed offsets"
    finally:
        for m in ms:
            m.c.close()


@pytest.mark.skipif(not OAUTH_BOOTSTRAP, reason="GREGOR_OAUTH_BOOTSTRAP not set")
def test_confluent_oauthbearer_unsecured_jwt():
    sasl = {
        "bootstrap.servers": OAUTH_BOOTSTRAP,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": "principal=alice scope=produce,consume lifeSeconds=600",
    }
    topic = unique("py-oauth")
    p = Producer({**sasl, "acks": "all", "allow.auto.create.topics": True})
    cb, got = deliveries(p)
    for i in range(10):
        p.produce(topic, key=f"k{i}".encode(), value=f"oauth-{i}".encode(), on_delivery=cb)
    assert p.flush(TIMEOUT) == 0, "records still in flight after flush"
    assert [e for e, _ in got if e is not None] == []
    assert sorted(m.offset() for _, m in got) == list(range(10))

    c = Consumer({**sasl, "group.id": unique("py-oauth-group"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        out = []
        deadline = time.monotonic() + TIMEOUT
        while len(out) < 10 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append((msg.offset(), msg.key(), msg.value()))
        assert out == [(i, f"k{i}".encode(), f"oauth-{i}".encode()) for i in range(10)]
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
        assert committed[0].offset == 10
    finally:
        c.close()
