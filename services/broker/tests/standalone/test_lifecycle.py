"""`pulsar standalone` as an operator of a laptop meets it: first start, clean stop."""

from __future__ import annotations

import json
import os
import signal
import urllib.request

import pytest

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
