"""Instances that crash or restart: effectively-once and at-least-once output through a
SIGKILL, state that outlives instances and is shared by parallel ones, and state read back
from its compacted topic after many updates."""

from __future__ import annotations

import collections
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_functions.testing import http, receive_all, wait_for

pytestmark = pytest.mark.slow

IDENTITY = """
import time

def identity(input):
    time.sleep(0.001)  # slow enough for the test's SIGKILL to land mid-stream
    return input
"""


@pytest.fixture
def deduplication(standalone: broker_testing.StandaloneProcess) -> Iterator[None]:
    """Deduplication on for public/default during the test, and its policy removed after it:
    the standalone is the session's, shared with tests that do not expect it."""
    _deduplication_policy(standalone, "POST", b"true")
    yield
    _deduplication_policy(standalone, "DELETE", None)


def _deduplication_policy(standalone: broker_testing.StandaloneProcess, method: str,
                          body: bytes | None) -> None:
    request = urllib.request.Request(
        f"{standalone.web_url}/admin/v2/namespaces/public/default/deduplication",
        data=body, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status in (200, 204)


def read_everything(client: pulsar.Client, topic: str) -> list[bytes]:
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    values = []
    while reader.has_message_available():
        values.append(reader.read_next(timeout_millis=10_000).data())
    reader.close()
    return values


#: Inputs published before an instance is killed part way through them.
TOTAL = 2000


def killed_mid_stream(client: pulsar.Client, start_instance: Callable[..., Any],
                      function: dict[str, Any], source: str, total: int) -> tuple[Any, int]:
    """Publish total inputs, SIGKILL the instance once 200 are processed and start another:
    (the new instance, how many the first had processed)."""
    first = start_instance(IDENTITY, function)
    producer = client.create_producer(source, batching_enabled=False, block_if_queue_full=True)
    failed: list[Any] = []
    for i in range(total):
        producer.send_async(f"m{i}".encode(),
                            lambda result, _id: failed.append(result) if result != pulsar.Result.Ok
                            else None)
    producer.flush()
    assert not failed
    wait_for(lambda: first.stats()["numSuccessfullyProcessed"] >= 200, 30, "a part processed")
    processed_before_kill = int(first.stats()["numSuccessfullyProcessed"])
    first.kill()
    assert processed_before_kill < total
    return start_instance(IDENTITY, function), processed_before_kill


def backlog(standalone: broker_testing.StandaloneProcess, topic: str, subscription: str) -> int:
    local = topic.rsplit("/", 1)[1]
    stats = broker_testing.get_json(
        f"{standalone.web_url}/admin/v2/persistent/public/default/{local}/stats")
    return int(stats["subscriptions"][subscription]["msgBacklog"])


def test_effectively_once_output_survives_a_sigkill_without_loss_or_duplicates(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
    standalone: broker_testing.StandaloneProcess, deduplication: None,
) -> None:
    source, sink = names("in"), names("out")
    function = {"className": "user_function.identity", "inputs": [source], "output": sink,
                "processingGuarantee": "EFFECTIVELY_ONCE", "subscriptionName": "eo"}
    second, _ = killed_mid_stream(client, start_instance, function, source, TOTAL)
    wait_for(lambda: backlog(standalone, source, "eo") == 0, 60, "every input acknowledged")
    outputs = read_everything(client, sink)
    assert len(outputs) == TOTAL, f"{len(outputs)} outputs for {TOTAL} inputs"
    assert outputs == [f"m{i}".encode() for i in range(TOTAL)]
    assert second.stats()["numReceived"] > 0


def test_at_least_once_output_survives_a_sigkill_without_loss(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
    standalone: broker_testing.StandaloneProcess,
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check", receiver_queue_size=5000)
    function = {"className": "user_function.identity", "inputs": [source], "output": sink,
                "processingGuarantee": "ATLEAST_ONCE", "subscriptionName": "alo"}
    second, processed_before_kill = killed_mid_stream(client, start_instance, function, source, TOTAL)
    expected = {f"m{i}".encode() for i in range(TOTAL)}
    counts: collections.Counter[bytes] = collections.Counter()
    deadline = time.monotonic() + 60
    while not expected <= counts.keys() and time.monotonic() < deadline:
        try:
            message = out.receive(timeout_millis=1000)
        except pulsar.Timeout:
            continue
        out.acknowledge(message)
        counts[message.data()] += 1
    missing = expected - counts.keys()
    assert not missing, f"{len(missing)} of {TOTAL} inputs have no output, e.g. {sorted(missing)[:5]}"
    assert set(counts) == expected
    wait_for(lambda: backlog(standalone, source, "alo") == 0, 30, "every input acknowledged")
    duplicates = sum(counts.values()) - TOTAL
    print(f"{TOTAL} inputs, {sum(counts.values())} outputs ({duplicates} duplicates), "
          f"{processed_before_kill} processed before the SIGKILL")
    assert second.stats()["numReceived"] > 0


COUNTING = """
def count(input, context):
    context.incr_counter(input, 1)
    context.put_state("last", input)
    return "%s=%d last=%s" % (input, context.get_counter(input), context.get_state("last").decode())
"""


def test_counters_and_state_survive_an_instance_restart(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check")
    function = {"className": "user_function.count", "inputs": [source], "output": sink,
                "name": f"count-{source[-10:]}"}
    first = start_instance(COUNTING, function)
    producer = client.create_producer(source)
    for value in (b"a", b"a", b"b"):
        producer.send(value)
    assert [m.data() for m in receive_all(out, 3)] == [b"a=1 last=a", b"a=2 last=a",
                                                      b"b=1 last=b"]
    assert first.stop() == 0
    start_instance(COUNTING, function)
    producer.send(b"a")
    assert receive_all(out, 1)[0].data() == b"a=3 last=a"


def compact(standalone: broker_testing.StandaloneProcess, topic: str) -> None:
    """Compact the topic through the admin API and wait until it succeeded."""
    path = f"{standalone.web_url}/admin/v2/{topic.replace('://', '/')}/compaction"
    assert http("PUT", path)[0] == 204

    def done() -> bool:
        status, body = http("GET", path)
        assert status == 200, body
        assert json.loads(body)["status"] != "ERROR", body
        return bool(json.loads(body)["status"] == "SUCCESS")

    wait_for(done, 60, f"compaction of {topic}")


def read_compacted(client: pulsar.Client, topic: str) -> int:
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    count = 0
    while reader.has_message_available():
        reader.read_next(timeout_millis=10_000)
        count += 1
    reader.close()
    return count


def test_state_reloads_from_the_compacted_topic_after_many_updates(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
    standalone: broker_testing.StandaloneProcess,
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check")
    name = f"count-{source[-10:]}"
    function = {"className": "user_function.count", "inputs": [source], "output": sink, "name": name}
    state_topic = f"persistent://public/default/__function-state-{name}"
    first = start_instance(COUNTING, function)
    producer = client.create_producer(source, batching_enabled=False)
    updates = 300
    for i in range(updates):
        producer.send(b"b" if i % 2 else b"a")
    receive_all(out, updates)
    assert first.stop() == 0
    assert len(read_everything(client, state_topic)) == 2 * updates  # an incr and a put each
    compact(standalone, state_topic)
    # a's and b's counters (one writer) and "last": three compaction keys left of 600 updates.
    assert read_compacted(client, state_topic) == 3
    second = start_instance(COUNTING, function)
    for value in (b"a", b"b", b"a"):
        producer.send(value)
    assert [m.data() for m in receive_all(out, 3)] == [b"a=151 last=a", b"b=151 last=b",
                                                      b"a=152 last=a"]
    assert second.stop() == 0
    # Compacted records up to the horizon, then the six messages written after it.
    assert read_compacted(client, state_topic) == 3 + 6
    start_instance(COUNTING, function, instance_id=1)  # another writer adds its own total
    producer.send(b"b")
    assert receive_all(out, 1)[0].data() == b"b=152 last=b"


def test_parallel_instances_share_one_counter(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check")
    code = """
def tally(input, context):
    context.incr_counter("total", 1)
    return str(context.get_instance_id())
"""
    function = {"className": "user_function.tally", "inputs": [source], "output": sink,
                "name": f"tally-{source[-10:]}", "parallelism": 2}
    start_instance(code, function, instance_id=0)
    start_instance(code, function, instance_id=1)
    producer = client.create_producer(source, batching_enabled=False)
    for i in range(60):
        producer.send(str(i).encode())
    receive_all(out, 60)
    final = """
def read_total(input, context):
    return str(context.get_counter("total"))
"""
    probe_source, probe_sink = names("probe-in"), names("probe-out")
    probe_out = client.subscribe(probe_sink, "check")
    start_instance(final, {**function, "className": "user_function.read_total",
                           "inputs": [probe_source], "output": probe_sink, "parallelism": 1})
    client.create_producer(probe_source).send(b"?")
    assert receive_all(probe_out, 1)[0].data() == b"60"
