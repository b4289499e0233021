"""A consumer that grants huge permits and never reads cannot make the broker buffer the
backlog: dispatch stops when its connection's outbound buffer passes the high-water mark and
resumes when the buffer drains, with nothing lost."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

import pulsar
from pulsar_common.wire import pulsar_api_pb2 as pb

ENTRY_BYTES = 100 * 1024
ENTRIES = 600  # a 60 MB backlog
#: What may sit in the broker's buffer (4 MiB high water), the kernel's socket buffers and
#: one read past the mark, with room to spare; the backlog is three times this.
DISPATCHED_BYTES_MAX = 20 * 1024 * 1024
RSS_GROWTH_MAX = 30 * 1024 * 1024


def _msg_out(web_url: str, topic: str, subscription: str) -> int:
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/stats"
    with urllib.request.urlopen(web_url + path, timeout=10) as reply:
        stats = json.loads(reply.read())
    return int(stats["subscriptions"][subscription]["msgOutCounter"])


def test_a_consumer_that_never_reads_stalls_dispatch_until_it_reads(
        standalone: Any, client: pulsar.Client, topic: str, probe: Any,
        raw_connection: Callable[..., Any]) -> None:
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=100,
                                      block_if_queue_full=True)
    payload = b"x" * ENTRY_BYTES
    for _ in range(ENTRIES):
        producer.send_async(payload, None)
    producer.flush()
    baseline_rss = probe.rss_bytes()

    cnx = raw_connection(receive_buffer_bytes=64 * 1024, timeout_s=30)
    subscribe = pb.BaseCommand(type=pb.BaseCommand.SUBSCRIBE)
    subscribe.subscribe.topic = topic
    subscribe.subscribe.subscription = "hungry"
    subscribe.subscribe.subType = pb.CommandSubscribe.Exclusive
    subscribe.subscribe.consumer_id = 1
    subscribe.subscribe.request_id = cnx.next_request_id()
    subscribe.subscribe.initialPosition = pb.CommandSubscribe.Earliest
    assert cnx.request(subscribe).command.type == pb.BaseCommand.SUCCESS
    flow = pb.BaseCommand(type=pb.BaseCommand.FLOW)
    flow.flow.consumer_id = 1
    flow.flow.messagePermits = 1_000_000
    cnx.send(flow)

    dispatched = probe.settled(lambda: _msg_out(standalone.web_url, topic, "hungry"))
    assert 0 < dispatched * ENTRY_BYTES <= DISPATCHED_BYTES_MAX, dispatched
    assert probe.rss_bytes() - baseline_rss < RSS_GROWTH_MAX

    received = 0
    while received < ENTRIES:
        if cnx.read().command.type == pb.BaseCommand.MESSAGE:
            received += 1
    assert _msg_out(standalone.web_url, topic, "hungry") == ENTRIES
