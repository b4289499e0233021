"""A `pulsar standalone` tuned so namespace policies show quickly: small ledgers that roll
over at once, a message expiry check every half second, a backlog quota check every second.

It overrides the shared `standalone`, so the shared `client` connects to it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing

#: The tests count ledgers with this many entries each.
ENTRIES_PER_LEDGER = 5


@pytest.fixture(scope="session")
def standalone(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("policies") / "data"
    node = broker_testing.StandaloneProcess(data_dir, {
        "journalSyncData": "false",
        "managedLedgerMaxEntriesPerLedger": str(ENTRIES_PER_LEDGER),
        "managedLedgerMinLedgerRolloverTimeMinutes": "0",
        "messageExpiryCheckIntervalSeconds": "0.5",
        "backlogQuotaCheckIntervalInSeconds": "1",
        "managedLedgerMaxEnsembleSize": "3",
    })
    node.start()
    yield node
    node.stop()


class Admin:
    """JSON over HTTP against the node's admin API; answers (status, decoded body)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, (json.loads(raw) if raw else None)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        assert status < 300, (method, path, status, answer)
        return answer

    def set_policy(self, ns: str, path: str, value: Any) -> None:
        self.ok("POST", f"/admin/v2/namespaces/{ns}/{path}", value)

    def internal_stats(self, topic: str, metadata: bool = False) -> Any:
        query = "?metadata=true" if metadata else ""
        return self.ok("GET", f"/admin/v2/{_topic_path(topic)}/internalStats{query}")

    def stats(self, topic: str) -> Any:
        return self.ok("GET", f"/admin/v2/{_topic_path(topic)}/stats")

    def create_subscription(self, topic: str, name: str) -> None:
        self.ok("PUT", f"/admin/v2/{_topic_path(topic)}/subscription/{name}")

    @staticmethod
    def topic_policy_path(topic: str, policy: str) -> str:
        """The REST path of one of a topic's topic-level policies."""
        return f"/admin/v2/{_topic_path(topic)}/{policy}"


def _topic_path(topic: str) -> str:
    return topic.replace("://", "/")


@pytest.fixture
def quick_client(standalone: broker_testing.StandaloneProcess) -> Iterator[pulsar.Client]:
    """A client that gives up on a refused subscription after 2 s instead of 30."""
    c = pulsar.Client(standalone.service_url, operation_timeout_seconds=2,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield c
    c.close()


@pytest.fixture
def admin(standalone: broker_testing.StandaloneProcess) -> Admin:
    return Admin(standalone.web_url)


@pytest.fixture
def namespace(admin: Admin) -> str:
    """A fresh namespace of tenant public (each test sets its own policies)."""
    ns = f"public/policies-{uuid.uuid4().hex[:8]}"
    admin.ok("PUT", f"/admin/v2/namespaces/{ns}")
    return ns

