"""Functions on `pulsar standalone`, as on Apache's: the standalone runs a functions worker,
and the broker's web port serves `/admin/v3/functions` by forwarding to it; a created function's
state topic gets a compaction threshold."""

from __future__ import annotations

import json
import pathlib
import uuid
from collections.abc import Callable

import pulsar
from pulsar_broker import testing as broker_testing
from pulsar_functions.testing import http, multipart, receive_all, wait_for

EXCLAIM = b"""
import pulsar


class Exclaim(pulsar.Function):
    def process(self, input, context):
        return input + "!"
"""


def test_a_function_created_through_the_brokers_web_port_runs_in_the_standalone(
        standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        names: Callable[[str], str]) -> None:
    source, sink = names("in"), names("out")
    name = f"exclaim-{uuid.uuid4().hex[:6]}"
    base = f"{standalone.web_url}/admin/v3/functions/public/default/{name}"
    out = client.subscribe(sink, "check")
    document = {"className": "exclaim.Exclaim", "inputs": [source], "output": sink}
    status, reply = http("POST", base, *multipart({
        "functionConfig": (None, json.dumps(document).encode()),
        "data": ("exclaim.py", EXCLAIM)}))
    assert status == 204, reply

    def running() -> bool:
        status, reply = http("GET", f"{base}/status")
        return status == 200 and json.loads(reply)["numRunning"] == 1

    wait_for(running, 60, "the instance runs")
    producer = client.create_producer(source)
    for word in ("hello", "world"):
        producer.send(word.encode())
    assert sorted(m.data() for m in receive_all(out, 2)) == [b"hello!", b"world!"]
    # The worker asked the brokers to compact the function's state topic (1 MiB by default).
    status, threshold = http("GET", f"{standalone.web_url}/admin/v2/persistent/public/default/"
                                    f"__function-state-{name}/compactionThreshold")
    assert (status, json.loads(threshold)) == (200, 1 << 20)
    status, listed = http("GET", f"{standalone.web_url}/admin/v3/functions/public/default")
    assert status == 200 and name in json.loads(listed)
    assert http("DELETE", base)[0] == 204


def test_without_a_worker_the_broker_says_so(tmp_path: pathlib.Path) -> None:
    process = broker_testing.StandaloneProcess(tmp_path / "data", {"journalSyncData": "false"})
    process.extra_arguments = ["--no-functions-worker"]
    process.start()
    try:
        status, reply = http("GET", f"{process.web_url}/admin/v3/functions/public/default")
        assert status == 503 and b"functions-worker" in reply
    finally:
        process.stop()
