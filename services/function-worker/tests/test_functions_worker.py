"""`pulsar functions-worker` processes on one etcd and a real standalone: Apache's REST API,
instances run and restarted as processes, instances moved off a worker that dies, and a
function's state topic compacted by the brokers at the threshold the worker set."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common.etcd_server import EtcdServer
from pulsar_functions import testing
from pulsar_functions.testing import http, multipart, receive_all, wait_for

pytestmark = pytest.mark.slow

EXCLAIM = b"""
import pulsar

class Exclaim(pulsar.Function):
    def process(self, input, context):
        context.incr_counter("seen", 1)
        return input + "!"
"""


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    server = EtcdServer(tmp_path_factory.mktemp("etcd") / "data")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def start_worker(
    tmp_path: pathlib.Path, etcd: EtcdServer, standalone: broker_testing.StandaloneProcess,
) -> Iterator[Callable[[], testing.WorkerProcess]]:
    """Workers of one fresh cluster (their own chroot in etcd)."""
    chroot = f"/workers-{uuid.uuid4().hex[:8]}"
    started: list[testing.WorkerProcess] = []

    def start() -> testing.WorkerProcess:
        worker = testing.WorkerProcess(tmp_path / f"worker-{len(started)}", etcd.url + chroot,
                                       standalone.service_url, standalone.web_url)
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


def create(worker: testing.WorkerProcess, name: str, document: dict[str, Any],
           code: bytes = EXCLAIM) -> None:
    body, content_type = multipart({
        "functionConfig": (None, json.dumps(document).encode()),
        "data": ("exclaim.py", code),
    })
    status, reply = http("POST", f"{worker.url}/admin/v3/functions/public/default/{name}",
                         body, content_type)
    assert status == 204, reply


def status_of(worker: testing.WorkerProcess, name: str) -> Any:
    return worker.json("GET", f"/admin/v3/functions/public/default/{name}/status")


def running_on(worker: testing.WorkerProcess, name: str) -> list[str]:
    """The worker id of each instance, [] until every instance runs."""
    status = status_of(worker, name)
    if status["numRunning"] != status["numInstances"]:
        return []
    return [i["status"]["workerId"] for i in status["instances"]]


def test_a_function_is_registered_run_controlled_and_deleted_through_the_rest_api(
    start_worker: Callable[[], testing.WorkerProcess], client: pulsar.Client,
    names: Callable[[str], str], standalone: broker_testing.StandaloneProcess,
) -> None:
    worker = start_worker()
    source, sink = names("in"), names("out")
    name = f"exclaim-{uuid.uuid4().hex[:6]}"
    out = client.subscribe(sink, "check")
    create(worker, name, {"className": "exclaim.Exclaim", "inputs": [source], "output": sink,
                          "parallelism": 2})
    base = f"/admin/v3/functions/public/default/{name}"
    assert http("POST", worker.url + base, *multipart({
        "functionConfig": (None, b'{"className": "exclaim.Exclaim", "inputs": ["x"]}'),
        "data": ("exclaim.py", EXCLAIM)}))[0] == 409
    assert name in worker.json("GET", "/admin/v3/functions/public/default")
    assert worker.json("GET", base)["parallelism"] == 2
    wait_for(lambda: running_on(worker, name) == [worker.worker_id] * 2, 60, "2 instances")

    producer = client.create_producer(source)
    for i in range(10):
        producer.send(f"m{i}".encode())
    assert sorted(m.data() for m in receive_all(out, 10)) == sorted(
        f"m{i}!".encode() for i in range(10))
    stats = worker.json("GET", f"{base}/stats")
    assert stats["processedSuccessfullyTotal"] == 10

    status, answer = http("POST", f"{worker.url}{base}/trigger",
                          *multipart({"data": (None, b"hey")}))
    assert (status, answer) == (200, b"hey!")
    receive_all(out, 1)
    assert worker.json("GET", f"{base}/state/seen") == {"key": "seen", "numberValue": 11,
                                                       "version": 11}
    assert http("POST", f"{worker.url}{base}/state/seen", *multipart(
        {"state": (None, b'{"key": "seen", "numberValue": 100}')}))[0] == 204
    assert worker.json("GET", f"{base}/state/seen")["numberValue"] == 100

    assert http("POST", f"{worker.url}{base}/1/stop")[0] == 204
    wait_for(lambda: status_of(worker, name)["numRunning"] == 1, 30, "instance 1 stopped")
    assert status_of(worker, name)["instances"][1]["status"]["error"] == "stopped"
    assert http("POST", f"{worker.url}{base}/start")[0] == 204
    wait_for(lambda: status_of(worker, name)["numRunning"] == 2, 60, "instance 1 started again")

    subscriptions = (f"{standalone.web_url}/admin/v2/persistent/public/default/"
                     f"{source.rsplit('/', 1)[1]}/subscriptions")
    assert f"public/default/{name}" in broker_testing.get_json(subscriptions)
    assert http("DELETE", worker.url + base)[0] == 204
    assert http("GET", worker.url + base)[0] == 404
    assert name not in worker.json("GET", "/admin/v3/functions/public/default")
    # cleanupSubscription (Apache's default): the input subscription went with the function.
    assert f"public/default/{name}" not in broker_testing.get_json(subscriptions)


def test_the_process_runtime_restarts_a_crashed_instance(
    start_worker: Callable[[], testing.WorkerProcess], client: pulsar.Client,
    names: Callable[[str], str],
) -> None:
    worker = start_worker()
    source, sink = names("in"), names("out")
    name = f"crash-{uuid.uuid4().hex[:6]}"
    create(worker, name, {"className": "exclaim.Exclaim", "inputs": [source], "output": sink})
    wait_for(lambda: running_on(worker, name), 60, "the instance running")
    placed = worker.json("GET", f"/admin/v3/functions/public/default/{name}/0/status")
    assert placed["numRestarts"] == 0
    wait_for(lambda: instance_pid(worker, name), 30, "the instance's pid published")
    os.kill(instance_pid(worker, name), signal.SIGKILL)
    wait_for(lambda: status_of(worker, name)["instances"][0]["status"]["numRestarts"] == 1
             and running_on(worker, name), 60, "the instance restarted")
    out = client.subscribe(sink, "check")
    client.create_producer(source).send(b"again")
    assert receive_all(out, 1)[0].data() == b"again!"


def instance_pid(worker: testing.WorkerProcess, name: str) -> int:
    import asyncio

    from pulsar_common.metadata import factory

    async def read() -> int:
        url = worker.overrides["configurationMetadataStoreUrl"]
        store = await factory.create_store(url)
        try:
            result = await store.get(f"/functions/runtime/public/default/{name}/0")
            return 0 if result is None else int(json.loads(result.value)["pid"] or 0)
        finally:
            await store.close()

    return asyncio.run(read())


def test_instances_of_a_dead_worker_move_to_the_live_one(
    start_worker: Callable[[], testing.WorkerProcess], client: pulsar.Client,
    names: Callable[[str], str],
) -> None:
    first, second = start_worker(), start_worker()
    source, sink = names("in"), names("out")
    name = f"moving-{uuid.uuid4().hex[:6]}"
    create(first, name, {"className": "exclaim.Exclaim", "inputs": [source], "output": sink,
                         "parallelism": 2})
    wait_for(lambda: sorted(running_on(second, name)) == sorted(
        [first.worker_id, second.worker_id]), 60, "one instance on each worker")
    first.kill()
    wait_for(lambda: running_on(second, name) == [second.worker_id] * 2, 60,
             "both instances on the live worker")
    assert [w["workerId"] for w in second.json("GET", "/admin/v2/worker/cluster")] == [
        second.worker_id]
    out = client.subscribe(sink, "check")
    producer = client.create_producer(source)
    for i in range(6):
        producer.send(f"m{i}".encode())
    assert len(receive_all(out, 6)) == 6


def test_the_brokers_compact_a_function_s_state_topic_at_the_threshold_the_worker_set(
    tmp_path: pathlib.Path, etcd: EtcdServer,
) -> None:
    standalone = broker_testing.StandaloneProcess(tmp_path / "data", {
        "journalSyncData": "false", "brokerServiceCompactionMonitorIntervalInSeconds": "1"})
    standalone.extra_arguments = ["--no-functions-worker"]
    worker = testing.WorkerProcess(tmp_path / "worker", f"{etcd.url}/compacting-{uuid.uuid4().hex[:8]}",
                                   "", "")
    standalone.start()
    client = None
    try:
        worker.overrides.update(pulsarServiceUrl=standalone.service_url,
                                pulsarWebServiceUrl=standalone.web_url,
                                functionStateCompactionThresholdBytes="1000")
        worker.start()
        source, sink = "persistent://public/default/counted-in", "persistent://public/default/counted-out"
        create(worker, "counted", {"className": "exclaim.Exclaim", "inputs": [source], "output": sink})
        base = "/admin/v3/functions/public/default/counted"
        wait_for(lambda: status_of(worker, "counted")["numRunning"] == 1, 60, "the instance runs")
        client = pulsar.Client(standalone.service_url)
        out = client.subscribe(sink, "check")
        producer = client.create_producer(source, batching_enabled=False)
        for i in range(200):
            producer.send(f"m{i}".encode())
        receive_all(out, 200)
        state_topic = "persistent://public/default/__function-state-counted"
        compaction = f"{standalone.web_url}/admin/v2/persistent/public/default/__function-state-counted/compaction"

        def compacted() -> bool:
            status, body = http("GET", compaction)
            return status == 200 and json.loads(body)["status"] == "SUCCESS"

        wait_for(compacted, 60, "the brokers compacted the state topic on their own")
        reader = client.create_reader(state_topic, pulsar.MessageId.earliest, is_read_compacted=True)
        kept = 0
        while reader.has_message_available():
            reader.read_next(timeout_millis=10_000)
            kept += 1
        print(f"{kept} of 200 state updates read from the compacted view")
        assert kept < 20, f"{kept} of 200 state updates read from the compacted view"
        assert worker.json("GET", f"{base}/state/seen")["numberValue"] == 200
    finally:
        if client is not None:
            client.close()
        worker.stop()
        standalone.stop()
