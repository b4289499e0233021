"""Packages management on a cluster: a package uploaded through one broker is served by every
broker, read from replicated ledgers, and stays readable when a bookie is SIGKILLed."""

from __future__ import annotations

import json
import os
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from pulsar_broker import local_cluster

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=3, brokers=2, ensemble=3, write_quorum=2, ack_quorum=2,
        broker_overrides={"enablePackagesManagement": "true"}, journal_sync=False)
    running.start()
    yield running
    running.stop()


def _upload(web_url: str, path: str, content: bytes) -> int:
    boundary = uuid.uuid4().hex
    body = b"".join([
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.py"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode(), content, b"\r\n",
        f'--{boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n'
        "Content-Type: application/json\r\n\r\n".encode(),
        json.dumps({"description": "d"}).encode(), f"\r\n--{boundary}--\r\n".encode()])
    request = urllib.request.Request(
        web_url + path, data=body, method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return int(reply.status)


def _download(web_url: str, path: str) -> bytes:
    with urllib.request.urlopen(web_url + path, timeout=30) as reply:
        return bytes(reply.read())


def test_a_package_uploaded_through_one_broker_is_served_by_the_other_despite_a_dead_bookie(
        cluster: local_cluster.LocalCluster) -> None:
    path = "/admin/v3/packages/function/public/default/shared/v1"
    content = os.urandom(2_500_000)  # five entries, striped over the three bookies
    first, second = cluster.brokers
    assert _upload(first.web_url, path, content) == 204
    assert _download(second.web_url, path) == content
    cluster.bookies[0].kill()
    assert _download(second.web_url, path) == content
    assert _download(first.web_url, path) == content
