"""`pulsar standalone` as an operator of a laptop meets it: first start, clean stop."""

from __future__ import annotations

import json
import os
import signal
import urllib.request

import pytest

from pulsar_common import testing

from pulsar_broker.testing import StandaloneProcess


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_standalone_cleanly(tmp_path, sig):
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "false"}).start()
    os.kill(node.pid, sig)
    assert node.process is not None
    assert node.process.wait(30) == 0
    assert "shutting down" in node.log_text()


def test_first_start_creates_the_standalone_cluster_tenants_and_namespaces(tmp_path):
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "false"}).start()
    try:
        assert _get(f"{node.web_url}/admin/v2/clusters") == ["standalone"]
        assert sorted(_get(f"{node.web_url}/admin/v2/tenants")) == ["public", "pulsar"]
        assert _get(f"{node.web_url}/admin/v2/namespaces/public") == ["public/default"]
        assert _get(f"{node.web_url}/admin/v2/namespaces/pulsar") == ["pulsar/system"]
    finally:
        node.stop()


def test_settings_come_from_a_broker_conf_file_with_apache_keys(tmp_path):
    conf = tmp_path / "standalone.conf"
    conf.write_text("# Apache-style file\nclusterName=my-laptop\nmaxMessageSize=1048576\n"
                    "someKeyWeDoNotImplement=1\n")
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "false"})
    node.extra_arguments = ["--config", str(conf)]
    node.start()
    try:
        assert _get(f"{node.web_url}/admin/v2/clusters") == ["my-laptop"]
    finally:
        node.stop()


def test_apache_standalone_flags_advertised_address_bookie_port_and_wipe_data(tmp_path):
    """`-a`, `--bookkeeper-port` and `--wipe-data` as Apache's `pulsar standalone` takes them;
    `-nss` is accepted (there is no stream storage to turn off)."""
    data = tmp_path / "data"
    node = StandaloneProcess(data, {"journalSyncData": "false"})
    node.overrides.pop("advertisedAddress")
    node.overrides.pop("bookiePort")
    node.extra_arguments = ["-a", "127.0.0.1", "--bookkeeper-port", str(node.bookie_port),
                            "-nss", "-nfw"]
    node.start()
    try:
        lookup = _get(f"{node.web_url}/lookup/v2/topic/persistent/public/default/flags")
        assert lookup["brokerUrl"] == f"pulsar://127.0.0.1:{node.broker_port}"
        assert testing.port_open(node.bookie_port)  # the embedded bookie took the flag's port
        request = urllib.request.Request(
            f"{node.web_url}/admin/v2/persistent/public/default/kept", method="PUT")
        urllib.request.urlopen(request, timeout=10).close()
        assert "persistent://public/default/kept" in _get(
            f"{node.web_url}/admin/v2/persistent/public/default")
    finally:
        node.stop()

    node.extra_arguments = [*node.extra_arguments, "--wipe-data"]
    node.start()
    try:
        assert "persistent://public/default/kept" not in _get(
            f"{node.web_url}/admin/v2/persistent/public/default")
        assert _get(f"{node.web_url}/admin/v2/namespaces/public") == ["public/default"]
    finally:
        node.stop()
