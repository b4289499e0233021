"""Shared fixtures of the Spark tests: etcd, a real `pulsar standalone`, one SparkSession.

Standalone keeps its metadata in etcd here so the data source can find each
ledger's bookies through `metadata.url`; ledgers roll over every few entries
so topics span several ledgers. SparkSession start-up is slow, so one
local[2] session serves every test.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import etcd_server

#: Entries per ledger in the test standalone: small, so topics span several ledgers.
ENTRIES_PER_LEDGER = 5


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[etcd_server.EtcdServer]:
    server = etcd_server.EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory,
               etcd: etcd_server.EtcdServer) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("standalone") / "data"
    process = broker_testing.StandaloneProcess(data_dir, {
        "journalSyncData": "false",
        "metadataStoreUrl": etcd.url,
        "managedLedgerMaxEntriesPerLedger": str(ENTRIES_PER_LEDGER),
        "managedLedgerMinLedgerRolloverTimeMinutes": "0",
        # Without subscriptions, consumed ledgers would be trimmed at once; keep them.
        "defaultRetentionTimeInMinutes": "-1",
        "defaultRetentionSizeInMB": "-1",
    })
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    import pulsar_spark
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("pulsar-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    pulsar_spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def client(standalone: broker_testing.StandaloneProcess) -> Iterator[Any]:
    import pulsar

    c = pulsar.Client(standalone.service_url)
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/spark-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def options_for(standalone: broker_testing.StandaloneProcess,
                etcd: etcd_server.EtcdServer) -> Callable[..., dict[str, str]]:
    """Data source options for the test cluster plus the given ones."""
    def make(**extra: str) -> dict[str, str]:
        return {"admin.url": standalone.web_url, "service.url": standalone.service_url,
                "metadata.url": etcd.url, **extra}
    return make


@pytest.fixture(scope="session")
def create_partitioned(standalone: broker_testing.StandaloneProcess) -> Callable[[str, int], None]:
    def create(topic: str, n: int) -> None:
        path = topic.replace("persistent://", "persistent/")
        request = urllib.request.Request(f"{standalone.web_url}/admin/v2/{path}/partitions",
                                         data=json.dumps(n).encode(), method="PUT",
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
    return create
