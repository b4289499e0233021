"""What a scrape of a secured cluster needs, on real processes: the brokers' /metrics is
open, the proxies' asks for a token. This is why the chart requires
monitoring.bearerTokenSecret with auth.enabled, and sending it to every component is
harmless."""

from __future__ import annotations

import pathlib
import urllib.error
import urllib.request
from collections.abc import Iterator

import jwt
import pytest
from pulsar_broker import testing as broker_testing

pytestmark = pytest.mark.slow

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
SECRET = b"monitoring-test-secret-32-bytes!"


def token(role: str) -> str:
    return jwt.encode({"sub": role}, SECRET, algorithm="HS256")


def authentication(secret_file: pathlib.Path) -> dict[str, str]:
    """The keys the operator writes into broker.conf and proxy.conf with spec.auth."""
    return {"authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
            "tokenSecretKey": f"file://{secret_file}"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[broker_testing.StandaloneProcess, broker_testing.ProxyProcess]]:
    root = tmp_path_factory.mktemp("secured-metrics")
    secret_file = root / "secret.key"
    secret_file.write_bytes(SECRET)
    broker = broker_testing.StandaloneProcess(root / "standalone", {
        **authentication(secret_file), "authorizationEnabled": "true",
        "superUserRoles": "admin,proxy", "proxyRoles": "proxy", "journalSyncData": "false"})
    broker.start()
    proxy = broker_testing.ProxyProcess(root / "proxy", {
        **authentication(secret_file), "brokerServiceURL": broker.service_url,
        "brokerWebServiceURL": broker.web_url, "brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
        "brokerClientAuthenticationParameters": f"token:{token('proxy')}",
        "forwardAuthorizationCredentials": "true"})
    try:
        proxy.start()
        yield broker, proxy
    finally:
        proxy.stop()
        broker.stop()


def scrape_status(url: str, bearer: str | None) -> tuple[int, str]:
    request = urllib.request.Request(url + "/metrics")
    if bearer is not None:
        request.add_header("Authorization", f"Bearer {bearer}")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


def test_a_secured_proxy_serves_metrics_only_with_a_token(
    secured: tuple[broker_testing.StandaloneProcess, broker_testing.ProxyProcess]
) -> None:
    _, proxy = secured
    assert scrape_status(proxy.web_url, None)[0] == 401
    assert scrape_status(proxy.web_url, "not-a-token")[0] == 401
    status, text = scrape_status(proxy.web_url, token("prometheus"))
    assert status == 200 and "pulsar_proxy_active_connections" in text


def test_a_secured_broker_serves_metrics_with_or_without_the_token(
    secured: tuple[broker_testing.StandaloneProcess, broker_testing.ProxyProcess]
) -> None:
    broker, _ = secured
    for bearer in (None, token("prometheus")):
        status, text = scrape_status(broker.web_url, bearer)
        assert status == 200 and "pulsar_ml_count" in text
