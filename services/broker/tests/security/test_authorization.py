"""Authorization: what each role may do on the binary protocol and over HTTP, and the bypass
attempts that must be refused without touching anyone's data."""

from __future__ import annotations

import urllib.parse
import uuid

import pulsar
import pytest
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
REFUSED = (pulsar.AuthorizationError, pulsar.Timeout)


def local() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def grant(secured, tenant: str, role: str, actions: list[str], topic: str | None = None) -> None:
    if topic is None:
        secured.ok("POST", f"/admin/v2/namespaces/{tenant}/ns/permissions/{role}", actions)
    else:
        secured.ok("POST", f"/admin/v2/persistent/{tenant}/ns/{topic}/permissions/{role}",
                   actions)


def test_namespace_grants_allow_exactly_their_actions(secured) -> None:
    tenant = secured.tenant()
    topic = f"persistent://{tenant}/ns/{local()}"
    grant(secured, tenant, "writer", ["produce"])
    grant(secured, tenant, "reader", ["consume"])
    writer, reader = secured.client("writer"), secured.client("reader")
    try:
        consumer = reader.subscribe(topic, "s")
        writer.create_producer(topic).send(b"one")
        assert consumer.receive(10_000).data() == b"one"
        with pytest.raises(pulsar.AuthorizationError):
            writer.subscribe(topic, "s2")
        with pytest.raises(pulsar.AuthorizationError):
            reader.create_producer(topic)
        with pytest.raises(pulsar.AuthorizationError):
            writer.create_reader(topic, pulsar.MessageId.earliest)
    finally:
        writer.close()
        reader.close()
    status, permissions = secured.http("GET", f"/admin/v2/namespaces/{tenant}/ns/permissions")
    assert (status, permissions) == (200, {"writer": ["produce"], "reader": ["consume"]})


def test_topic_grant_covers_that_topic_and_its_partitions_only(secured) -> None:
    tenant = secured.tenant()
    name, other = local(), local()
    secured.ok("PUT", f"/admin/v2/persistent/{tenant}/ns/{name}/partitions", 2)
    grant(secured, tenant, "one-topic", ["produce", "consume"], topic=name)
    client = secured.client("one-topic")
    try:
        producer = client.create_producer(f"persistent://{tenant}/ns/{name}")
        producer.send(b"a")
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(f"persistent://{tenant}/ns/{other}")
    finally:
        client.close()
    status, permissions = secured.http(
        "GET", f"/admin/v2/persistent/{tenant}/ns/{name}/permissions")
    assert (status, permissions) == (200, {"one-topic": ["produce", "consume"]})


def test_role_without_permission_and_other_tenants_change_nothing(secured) -> None:
    victim = secured.tenant(admins=("victim-admin",))
    topic = f"persistent://{victim}/ns/{local()}"
    owner = secured.client("victim-admin")
    owner.create_producer(topic).send(b"private")
    owner.close()
    attacker_tenant = secured.tenant(admins=("attacker",))
    grant(secured, attacker_tenant, "attacker", ["produce", "consume"])
    attacker = secured.client("attacker")
    try:
        with pytest.raises(pulsar.AuthorizationError):
            attacker.create_producer(topic)
        with pytest.raises(pulsar.AuthorizationError):
            attacker.subscribe(topic, "steal", initial_position=pulsar.InitialPosition.Earliest)
        with pytest.raises(pulsar.AuthorizationError):
            attacker.create_reader(topic, pulsar.MessageId.earliest)
    finally:
        attacker.close()
    assert secured.stored(topic) == [b"private"]
    status, subscriptions = secured.http(
        "GET", f"/admin/v2/persistent/{victim}/ns/{topic.rsplit('/', 1)[1]}/subscriptions")
    assert status == 200 and subscriptions == []


def _raw(secured, role: str):
    sock, reply = secured.raw_connect("token", secured.token(role).encode())
    assert reply.type == T.CONNECTED
    return sock


def _request(sock, command: pb.BaseCommand) -> pb.BaseCommand:
    sock.sendall(frame.encode_command(command))
    decoder = frame.FrameDecoder()
    while True:
        chunk = sock.recv(1 << 20)
        assert chunk, "closed by the broker"
        for received in decoder.feed(chunk):
            if received.command.type != T.PING:
                return received.command


def test_lookups_and_topic_listings_do_not_leak_other_tenants(secured) -> None:
    victim = secured.tenant()
    secret_topic = f"persistent://{victim}/ns/{local()}"
    admin = secured.client("admin")
    admin.create_producer(secret_topic).send(b"x")
    admin.close()
    sock = _raw(secured, "outsider")
    try:
        lookup = T(type=T.LOOKUP)
        lookup.lookupTopic.topic = secret_topic
        lookup.lookupTopic.request_id = 1
        reply = _request(sock, lookup)
        assert reply.lookupTopicResponse.response == pb.CommandLookupTopicResponse.Failed
        assert reply.lookupTopicResponse.error == pb.AuthorizationError
        metadata = T(type=T.PARTITIONED_METADATA)
        metadata.partitionMetadata.topic = secret_topic
        metadata.partitionMetadata.request_id = 2
        reply = _request(sock, metadata)
        assert reply.partitionMetadataResponse.error == pb.AuthorizationError
        listing = T(type=T.GET_TOPICS_OF_NAMESPACE)
        listing.getTopicsOfNamespace.namespace = f"{victim}/ns"
        listing.getTopicsOfNamespace.request_id = 3
        reply = _request(sock, listing)
        assert reply.type == T.ERROR and reply.error.error == pb.AuthorizationError
        assert secret_topic not in str(reply)
    finally:
        sock.close()
    for path in (f"/admin/v2/namespaces/{victim}/ns/topics", f"/admin/v2/persistent/{victim}/ns",
                 f"/admin/v2/persistent/{victim}/ns/partitioned"):
        status, reply = secured.http("GET", path, role="outsider")
        assert status == 403 and secret_topic.rsplit("/", 1)[1] not in str(reply), path
    status, _ = secured.http(
        "GET", f"/lookup/v2/topic/persistent/{victim}/ns/{secret_topic.rsplit('/', 1)[1]}",
        role="outsider")
    assert status == 403


def test_consumers_of_a_namespace_may_list_its_topics_and_use_regex(secured) -> None:
    tenant = secured.tenant()
    grant(secured, tenant, "lister", ["consume"])
    status, _ = secured.http("GET", f"/admin/v2/namespaces/{tenant}/ns/topics", role="lister")
    assert status == 200
    client = secured.client("lister")
    try:
        import re
        client.subscribe(re.compile(f"persistent://{tenant}/ns/.*"), "regex-sub")
    finally:
        client.close()


def test_admin_routes_need_tenant_admin_or_superuser(secured) -> None:
    tenant = secured.tenant(admins=("boss",))
    grant(secured, tenant, "worker", ["produce", "consume"])
    name = local()
    secured.ok("PUT", f"/admin/v2/persistent/{tenant}/ns/{name}")
    for role in ("worker", "stranger"):
        for method, path, body in (
                ("PUT", f"/admin/v2/tenants/{local()}", {"adminRoles": [role]}),
                ("DELETE", f"/admin/v2/tenants/{tenant}", None),
                ("POST", f"/admin/v2/tenants/{tenant}", {"adminRoles": [role]}),
                ("PUT", f"/admin/v2/namespaces/{tenant}/other", None),
                ("DELETE", f"/admin/v2/namespaces/{tenant}/ns", None),
                ("POST", f"/admin/v2/namespaces/{tenant}/ns/retention",
                 {"retentionTimeInMinutes": 1, "retentionSizeInMB": 1}),
                ("POST", f"/admin/v2/namespaces/{tenant}/ns/permissions/{role}", ["consume"]),
                ("DELETE", f"/admin/v2/persistent/{tenant}/ns/{name}", None),
                ("POST", f"/admin/v2/persistent/{tenant}/ns/{name}/terminate", None),
                ("PUT", "/admin/v2/clusters/evil", {"serviceUrl": "http://x"}),
                ("GET", "/admin/v2/brokers/standalone", None),
                ("GET", "/admin/v2/tenants", None)):
            status, reply = secured.http(method, path, body, role=role)
            assert status == 403, (role, method, path, status, reply)
            assert "reason" in reply
    # Permission holders may read the topic's stats; tenant admins may administer.
    assert secured.http("GET", f"/admin/v2/persistent/{tenant}/ns/{name}/stats",
                        role="worker")[0] == 200
    assert secured.http("GET", f"/admin/v2/persistent/{tenant}/ns/{name}/stats",
                        role="stranger")[0] == 403
    assert secured.http("POST", f"/admin/v2/namespaces/{tenant}/ns/retention",
                        {"retentionTimeInMinutes": 1, "retentionSizeInMB": 1},
                        role="boss")[0] == 204
    assert secured.http("PUT", f"/admin/v2/namespaces/{tenant}/second", role="boss")[0] == 204
    assert secured.http("GET", f"/admin/v2/tenants/{tenant}", role="boss")[0] == 403
    assert secured.http("DELETE", f"/admin/v2/tenants/{tenant}", role="boss")[0] == 403
    status, policies = secured.http("GET", f"/admin/v2/namespaces/{tenant}/ns")
    assert policies["retention_policies"]["retentionTimeInMinutes"] == 1
    assert secured.http("GET", f"/admin/v2/tenants/{tenant}")[0] == 200


@pytest.mark.parametrize("trick", [
    "..%2F..%2F{victim}%2Fns%2Fsecret", "%2E%2E%2F%2E%2E%2F{victim}%2Fns%2Fsecret",
    "..", "%2E%2E", "x%2F..%2F..%2F{victim}"])
def test_path_tricks_in_topic_names_do_not_reach_another_namespace(secured, trick: str) -> None:
    victim = secured.tenant()
    admin = secured.client("admin")
    admin.create_producer(f"persistent://{victim}/ns/secret").send(b"kept")
    admin.close()
    own = secured.tenant(admins=("trickster",))
    name = trick.format(victim=victim)
    for method, suffix in (("GET", "/stats"), ("DELETE", ""), ("PUT", "/unload"),
                           ("GET", "/subscriptions"), ("POST", "/terminate")):
        status, _ = secured.http(method, f"/admin/v2/persistent/{own}/ns/{name}{suffix}",
                                 role="trickster")
        assert status in (400, 403, 404, 405, 412), (method, name, suffix, status)
    sock = _raw(secured, "trickster")
    try:
        for request_id, text in enumerate((f"persistent://{own}/ns/{urllib.parse.unquote(name)}",
                                           f"persistent://{own}/ns/../../{victim}/ns/secret",
                                           f"{own}/ns/../../{victim}/ns/secret"), start=1):
            producer = T(type=T.PRODUCER)
            producer.producer.topic = text
            producer.producer.producer_id = request_id
            producer.producer.request_id = request_id
            reply = _request(sock, producer)
            assert reply.type == T.ERROR, (text, reply)
            assert reply.error.error in (pb.InvalidTopicName, pb.AuthorizationError), reply
    finally:
        sock.close()
    assert secured.stored(f"persistent://{victim}/ns/secret") == [b"kept"]


def test_revoked_permission_stops_new_producers_and_reconnects(secured) -> None:
    tenant = secured.tenant()
    topic = f"persistent://{tenant}/ns/{local()}"
    grant(secured, tenant, "temp", ["produce"])
    client = secured.client("temp")
    try:
        producer = client.create_producer(topic, send_timeout_millis=3000)
        producer.send(b"before")
        secured.ok("DELETE", f"/admin/v2/namespaces/{tenant}/ns/permissions/temp")
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(topic)
        # The topic is unloaded: the live producer reconnects and must be refused now.
        secured.ok("PUT", f"/admin/v2/persistent/{tenant}/ns/{topic.rsplit('/', 1)[1]}/unload")
        with pytest.raises(REFUSED):
            producer.send(b"after")
    finally:
        client.close()
    assert secured.stored(topic) == [b"before"]
    grant(secured, tenant, "temp", ["produce"])
    again = secured.client("temp")
    try:
        again.create_producer(topic).send(b"granted again")
    finally:
        again.close()


def test_subscription_roles_limit_who_uses_a_subscription(secured) -> None:
    tenant = secured.tenant()
    topic = f"persistent://{tenant}/ns/{local()}"
    grant(secured, tenant, "team-a", ["consume"])
    grant(secured, tenant, "team-b", ["consume"])
    secured.ok("POST", f"/admin/v2/namespaces/{tenant}/ns/permissions/subscription/billing",
               ["team-a"])
    a, b = secured.client("team-a"), secured.client("team-b")
    try:
        a.subscribe(topic, "billing")
        with pytest.raises(pulsar.AuthorizationError):
            b.subscribe(topic, "billing")
        b.subscribe(topic, "own")
    finally:
        a.close()
        b.close()


def test_functions_routes_need_credentials_and_rights(secured) -> None:
    tenant = secured.tenant(admins=("fn-admin",))
    grant(secured, tenant, "fn-dev", ["functions"])
    path = f"/admin/v3/functions/{tenant}/ns/my-function"
    assert secured.http("GET", path, role=None)[0] == 401
    assert secured.http("GET", path, role="stranger")[0] == 403
    assert secured.http("GET", "/admin/v3/functions/connectors", role="fn-admin")[0] == 403
    # Allowed through: no functions worker runs here, so the broker answers 503.
    assert secured.http("GET", path, role="fn-admin")[0] == 503
    assert secured.http("GET", path, role="fn-dev")[0] == 503


def test_prefix_subscription_auth_mode_is_enforced(secured) -> None:
    tenant = secured.tenant()
    topic = f"persistent://{tenant}/ns/{local()}"
    grant(secured, tenant, "team", ["consume"])
    secured.ok("POST", f"/admin/v2/namespaces/{tenant}/ns/subscriptionAuthMode", "Prefix")
    client = secured.client("team")
    try:
        client.subscribe(topic, "team-orders")
        with pytest.raises(pulsar.AuthorizationError):
            client.subscribe(topic, "orders")
    finally:
        client.close()
