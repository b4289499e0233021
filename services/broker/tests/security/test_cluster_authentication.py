"""Two brokers with authentication and authorization on: each authenticates to the other with
its brokerClientAuthenticationPlugin/Parameters, so lookups and admin requests that span
both brokers (a partitioned topic's stats) work for a superuser and stay closed to others."""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import local_cluster
from pulsar_broker.testing import broker_id
from pulsar_common.auth import token as auth_token

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
PARTITIONS = 8


class Cluster:
    def __init__(self, cluster: local_cluster.LocalCluster, secret: bytes) -> None:
        self.cluster, self.secret = cluster, secret

    def token(self, role: str) -> str:
        return auth_token.create(self.secret, role)

    def http(self, method: str, url: str, body: Any = None, role: str = "admin"
             ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token(role)}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                raw, status = reply.read(), reply.status
        except urllib.error.HTTPError as exc:
            raw, status = exc.read(), exc.code
        return status, json.loads(raw) if raw.strip() else None


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("secured-cluster")
    secret = secrets.token_bytes(32)
    (root / "secret.key").write_bytes(secret)
    overrides = {
        "authenticationEnabled": "true",
        "authenticationProviders":
            "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
        "tokenSecretKey": f"file://{root / 'secret.key'}",
        "authorizationEnabled": "true",
        "superUserRoles": "admin,broker",
        "brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
        "brokerClientAuthenticationParameters":
            f"token:{auth_token.create(secret, 'broker')}",
    }
    cluster = local_cluster.LocalCluster(root / "cluster", bookies=1, brokers=2, ensemble=1,
                                         write_quorum=1, ack_quorum=1,
                                         broker_overrides=overrides, journal_sync=False)
    cluster.start()
    try:
        yield Cluster(cluster, secret)
    finally:
        cluster.stop()


def test_partitioned_topic_spanning_both_brokers_is_served_with_credentials(
        secured_cluster: Cluster) -> None:
    first, second = secured_cluster.cluster.brokers
    topic = "persistent://public/default/spanning"
    path = "/admin/v2/persistent/public/default/spanning"
    assert secured_cluster.http("PUT", first.web_url + path + "/partitions", PARTITIONS)[0] == 204
    client = pulsar.Client(secured_cluster.cluster.service_url, operation_timeout_seconds=30,
                           authentication=pulsar.AuthenticationToken(
                               secured_cluster.token("admin")))
    try:
        producer = client.create_producer(topic)
        for i in range(PARTITIONS * 2):
            producer.send(f"m-{i}".encode(), partition_key=str(i))
    finally:
        client.close()
    owners = []
    for broker in (first, second):
        status, owned = secured_cluster.http(
            "GET", f"{broker.web_url}/admin/v2/brokers/local/{broker_id(broker)}/ownedNamespaces")
        assert status == 200
        owners.append(bool(owned))
    assert all(owners), "the test needs bundles on both brokers"
    for broker in (first, second):
        status, stats = secured_cluster.http(
            "GET", broker.web_url + path + "/partitioned-stats?perPartition=true")
        assert status == 200, stats
        assert stats["msgInCounter"] == PARTITIONS * 2
        status, _ = secured_cluster.http(
            "GET", broker.web_url + path + "/partitioned-stats", role="stranger")
        assert status == 403
