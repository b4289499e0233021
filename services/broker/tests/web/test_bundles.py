"""Namespace bundles over the admin API of a standalone: which bundle a topic is in, which
bundles the broker owns, and unloading a bundle while clients are connected."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulsar
from pulsar_broker import resources
from pulsar_broker import testing as broker_testing
from pulsar_broker.namespace import bundles
from pulsar_common import naming

if TYPE_CHECKING:
    from conftest import Http


def _bundle(topic: str) -> bundles.NamespaceBundle:
    return bundles.bundle_of(naming.TopicName.parse(topic), resources.default_policies())


def _owned(http: Http, standalone: broker_testing.StandaloneProcess) -> set[str]:
    reply = http.get(f"/admin/v2/brokers/standalone/127.0.0.1:{standalone.web_port}/ownedNamespaces")
    assert reply.status == 200
    return set(reply.json())


def test_topic_bundle_range_is_the_crc32_bundle(http: Http, unique: str) -> None:
    topic = f"persistent://public/default/range-{unique}"
    reply = http.get(f"/lookup/v2/topic/persistent/public/default/range-{unique}/bundle")
    assert (reply.status, reply.body.decode()) == (200, _bundle(topic).range)


def test_unloading_a_bundle_moves_its_clients_without_losing_messages(
        http: Http, standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        unique: str) -> None:
    topic = f"persistent://public/default/unload-{unique}"
    bundle = _bundle(topic)
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    assert str(bundle) in _owned(http, standalone)

    reply = http.call("PUT", f"/admin/v2/namespaces/public/default/{bundle.range}/unload")
    assert reply.status == 204
    assert str(bundle) not in _owned(http, standalone)

    producer.send(b"after")  # The client was told to reconnect; its lookup assigns the bundle.
    assert [consumer.receive(10_000).data() for _ in range(2)] == [b"before", b"after"]
    assert str(bundle) in _owned(http, standalone)


def test_unknown_bundles_are_not_found(http: Http) -> None:
    reply = http.call("PUT", "/admin/v2/namespaces/public/default/0x00000000_0x00000010/unload")
    assert reply.status == 404
    assert "0x00000000_0x00000010" in reply.reason
    assert http.call("PUT", "/admin/v2/namespaces/public/nope/0x00000000_0x40000000/unload"
                     ).status == 404
    assert http.get("/admin/v2/brokers/standalone/10.9.9.9:1/ownedNamespaces").status == 404


def test_owned_bundles_of_several_namespaces_are_listed(
        http: Http, standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        unique: str) -> None:
    namespace = f"public/own-{unique}"
    assert http.call("PUT", f"/admin/v2/namespaces/{namespace}", {"bundles": {"numBundles": 1}}
                     ).status == 204
    client.create_producer(f"persistent://{namespace}/t").send(b"x")
    client.create_producer(f"persistent://public/default/own-{unique}").send(b"x")
    owned = _owned(http, standalone)
    assert f"{namespace}/0x00000000_0xffffffff" in owned
    assert str(_bundle(f"persistent://public/default/own-{unique}")) in owned
