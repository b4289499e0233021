"""A real `pulsar standalone` with a real `pulsar proxy` in front of it (fixed broker URLs),
and official clients that reach the broker only through the proxy."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Callable, Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing

ProxyFactory = Callable[..., broker_testing.ProxyProcess]


def _proxy_for(standalone: broker_testing.StandaloneProcess, root: pathlib.Path,
               **overrides: str) -> broker_testing.ProxyProcess:
    settings = {"brokerServiceURL": standalone.service_url,
                "brokerWebServiceURL": standalone.web_url, **overrides}
    return broker_testing.ProxyProcess(root / f"proxy-{uuid.uuid4().hex[:6]}", settings).start()


@pytest.fixture(scope="session")
def proxy(standalone: broker_testing.StandaloneProcess,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.ProxyProcess]:
    process = _proxy_for(standalone, tmp_path_factory.mktemp("proxy"))
    yield process
    process.stop()


@pytest.fixture
def make_proxy(standalone: broker_testing.StandaloneProcess,
               tmp_path: pathlib.Path) -> Iterator[ProxyFactory]:
    """Another proxy in front of the same standalone, with settings of the test's own."""
    started: list[broker_testing.ProxyProcess] = []

    def make(**overrides: str) -> broker_testing.ProxyProcess:
        started.append(_proxy_for(standalone, tmp_path, **overrides))
        return started[-1]

    yield make
    for process in started:
        process.stop()


@pytest.fixture
def client(proxy: broker_testing.ProxyProcess) -> Iterator[pulsar.Client]:
    """An official client whose service URL is the proxy's."""
    c = pulsar.Client(proxy.service_url, operation_timeout_seconds=30,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/proxied-{uuid.uuid4().hex[:12]}"
