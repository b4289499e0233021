"""The namespace's delayed_delivery_policies ({active, tickTime}) over broker.conf's
delayedDelivery* settings, also on a topic already loaded."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from datetime import timedelta

import pulsar
import pytest

SHARED = pulsar.ConsumerType.Shared


def _call(web_url: str, method: str, path: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(web_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def namespace(standalone) -> str:
    name = f"public/delayed-{uuid.uuid4().hex[:8]}"
    assert _call(standalone.web_url, "PUT", f"/admin/v2/namespaces/{name}") == 204
    return name


def test_an_inactive_namespace_policy_delivers_at_once_even_on_a_loaded_topic(
        client, standalone, namespace):
    topic = f"persistent://{namespace}/t"
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic)
    producer.send(b"held", deliver_after=timedelta(seconds=60))
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=500)

    path = f"/admin/v2/namespaces/{namespace}/delayedDelivery"
    assert _call(standalone.web_url, "POST", path, {"active": False, "tickTime": 100}) == 204
    with urllib.request.urlopen(standalone.web_url + path, timeout=30) as reply:
        assert json.loads(reply.read())["active"] is False
    # Turning it off releases what was held, and new delayed messages go out at once.
    assert consumer.receive(timeout_millis=10_000).data() == b"held"
    producer.send(b"now", deliver_after=timedelta(seconds=60))
    assert consumer.receive(timeout_millis=10_000).data() == b"now"


def test_bad_delayed_delivery_policies_are_refused(standalone, namespace):
    path = f"/admin/v2/namespaces/{namespace}/delayedDelivery"
    assert _call(standalone.web_url, "POST", path, {"active": "yes"}) == 400
    assert _call(standalone.web_url, "POST", path, {"active": True, "tickTime": 0}) == 400
    assert _call(standalone.web_url, "POST", path,
                 {"active": True, "tickTime": 100, "maxDeliveryDelayInMillis": 5000}) == 400
