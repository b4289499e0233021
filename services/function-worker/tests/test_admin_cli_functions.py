"""`pulsar-admin functions ...` as a user runs it: real `pulsar-admin` processes against a real
`pulsar functions-worker` (its records in a RocksDB store of its own) and a real standalone,
and `pulsar-admin functions localrun` against the standalone with no worker at all."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import testing as common_testing
from pulsar_functions import testing
from pulsar_functions.testing import receive_all, wait_for

pytestmark = pytest.mark.slow

CLI_TIMEOUT_S = 60.0

EXCLAMATION = """
import pulsar

class ExclamationFunction(pulsar.Function):
    def process(self, input, context):
        return input + "!"

class CountingExclamation(pulsar.Function):
    def process(self, input, context):
        context.incr_counter(input, 1)
        return input + "!"
"""


class Admin:
    """`pulsar-admin --admin-url <url> ...` as a process."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url

    def arguments(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pulsar_client_tools.admin.main",
                "--admin-url", self.admin_url, *args]

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.arguments(*args), capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S, check=False)

    def ok(self, *args: str) -> str:
        result = self(*args)
        assert result.returncode == 0, (result.stdout, result.stderr)
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args))


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory,
           standalone: broker_testing.StandaloneProcess) -> Iterator[testing.WorkerProcess]:
    work_dir = tmp_path_factory.mktemp("cli-worker")
    process = testing.WorkerProcess(work_dir, f"rocksdb:{work_dir / 'metadata'}",
                                    standalone.service_url, standalone.web_url)
    process.start()
    yield process
    process.stop()


@pytest.fixture
def admin(worker: testing.WorkerProcess) -> Admin:
    return Admin(worker.url)


@pytest.fixture
def code(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "exclamation.py"
    path.write_text(textwrap.dedent(EXCLAMATION))
    return path


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:8]


def running(worker: testing.WorkerProcess, name: str, count: int = 1) -> bool:
    status = worker.json("GET", f"/admin/v3/functions/public/default/{name}/status")
    return bool(status["numRunning"] == count)


def test_a_created_function_answers_and_get_list_status_stats_delete_show_it(
    admin: Admin, worker: testing.WorkerProcess, client: pulsar.Client, code: pathlib.Path,
    unique: str,
) -> None:
    name, source, sink = f"exclamation-{unique}", f"in-{unique}", f"out-{unique}"
    assert admin.ok("functions", "create", "--py", str(code),
                    "--classname", "exclamation.ExclamationFunction", "--inputs", source,
                    "--output", sink, "--tenant", "public", "--namespace", "default",
                    "--name", name) == "Created successfully\n"
    wait_for(lambda: running(worker, name), 60, "the instance running")
    out = client.subscribe(f"persistent://public/default/{sink}", "check")
    client.create_producer(f"persistent://public/default/{source}").send(b"hello")
    assert receive_all(out, 1)[0].data() == b"hello!"

    config = admin.json("functions", "get", "--name", name)
    assert config["className"] == "exclamation.ExclamationFunction"
    assert config["inputs"] == [f"persistent://public/default/{source}"]
    assert config["output"] == f"persistent://public/default/{sink}"
    assert name in admin.ok("functions", "list").splitlines()
    status = admin.json("functions", "status", "--fqfn", f"public/default/{name}")
    assert (status["numInstances"], status["numRunning"]) == (1, 1)
    assert admin.json("functions", "status", "--name", name, "--instance-id", "0")["running"]
    wait_for(lambda: admin.json("functions", "stats", "--name", name)[
        "processedSuccessfullyTotal"] == 1, 30, "stats counting the message")

    assert admin.ok("functions", "delete", "--name", name) == "Deleted successfully\n"
    missing = admin("functions", "get", "--name", name)
    assert missing.returncode == 1
    assert "Reason:" in missing.stderr
    assert name not in admin.ok("functions", "list", "--tenant", "public",
                                "--namespace", "default").splitlines()


def test_stop_start_and_restart_act_on_one_instance_or_all(
    admin: Admin, worker: testing.WorkerProcess, client: pulsar.Client, code: pathlib.Path,
    unique: str, tmp_path: pathlib.Path,
) -> None:
    name, source, sink = f"controlled-{unique}", f"in-{unique}", f"out-{unique}"
    config_file = tmp_path / "function.yaml"
    config_file.write_text(textwrap.dedent(f"""\
        className: exclamation.ExclamationFunction
        inputs: [{source}]
        output: {sink}
        parallelism: 2
        """))
    assert admin.ok("functions", "create", "--function-config-file", str(config_file),
                    "--py", str(code), "--fqfn", f"public/default/{name}"
                    ) == "Created successfully\n"
    wait_for(lambda: running(worker, name, 2), 60, "both instances running")

    assert admin.ok("functions", "stop", "--name", name, "--instance-id", "1"
                    ) == "Stopped successfully\n"
    wait_for(lambda: running(worker, name, 1), 30, "instance 1 stopped")
    status = admin.json("functions", "status", "--name", name)
    assert status["instances"][1]["status"]["error"] == "stopped"
    assert admin.ok("functions", "start", "--name", name) == "Started successfully\n"
    wait_for(lambda: running(worker, name, 2), 60, "instance 1 started again")
    assert admin.ok("functions", "restart", "--name", name) == "Restarted successfully\n"
    wait_for(lambda: running(worker, name, 2), 60, "both instances running after the restart")

    out = client.subscribe(f"persistent://public/default/{sink}", "check")
    client.create_producer(f"persistent://public/default/{source}").send(b"again")
    assert receive_all(out, 1)[0].data() == b"again!"
    admin.ok("functions", "delete", "--name", name)


def test_trigger_answers_the_output_and_querystate_putstate_read_and_write_state(
    admin: Admin, worker: testing.WorkerProcess, code: pathlib.Path, unique: str,
) -> None:
    name, source = f"counting-{unique}", f"in-{unique}"
    admin.ok("functions", "create", "--py", str(code), "--className",
             "exclamation.CountingExclamation", "--inputs", source, "--output", f"out-{unique}",
             "--name", name)
    wait_for(lambda: running(worker, name), 60, "the instance running")

    assert admin.ok("functions", "trigger", "--name", name, "--topic", source,
                    "--trigger-value", "hello") == "hello!\n"
    assert admin.json("functions", "querystate", "--name", name, "--key", "hello") == {
        "key": "hello", "numberValue": 1, "version": 1}
    assert admin.ok("functions", "putstate", "--name", name, "--state",
                    '{"key": "greeting", "stringValue": "hi"}') == ""
    state = admin.json("functions", "querystate", "--name", name, "-k", "greeting")
    assert state["stringValue"] == "hi"
    missing = admin("functions", "querystate", "--name", name, "--key", f"none-{unique}")
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr
    admin.ok("functions", "delete", "--name", name)


def test_update_changes_only_the_flags_given(
    admin: Admin, worker: testing.WorkerProcess, client: pulsar.Client, code: pathlib.Path,
    unique: str,
) -> None:
    name, source = f"updated-{unique}", f"in-{unique}"
    admin.ok("functions", "create", "--py", str(code), "--classname",
             "exclamation.ExclamationFunction", "--inputs", source, "--output",
             f"out-{unique}", "--name", name, "--user-config", '{"a": 1}')
    assert admin.ok("functions", "update", "--name", name, "--output", f"other-{unique}"
                    ) == "Updated successfully\n"
    config = admin.json("functions", "get", "--name", name)
    assert config["output"] == f"persistent://public/default/other-{unique}"
    assert config["inputs"] == [f"persistent://public/default/{source}"]
    assert config["userConfig"] == {"a": 1}

    wait_for(lambda: running(worker, name), 60, "the updated instance running")
    out = client.subscribe(f"persistent://public/default/other-{unique}", "check")
    producer = client.create_producer(f"persistent://public/default/{source}")

    def arrives() -> bool:
        # The instance of the old config may still take a message before its restart.
        producer.send(b"moved")
        try:
            return bool(out.receive(timeout_millis=2000).data() == b"moved!")
        except pulsar.Timeout:
            return False

    wait_for(arrives, 60, "outputs on the updated output topic")
    admin.ok("functions", "delete", "--name", name)


def test_localrun_runs_the_function_against_the_standalone_until_sigterm(
    standalone: broker_testing.StandaloneProcess, client: pulsar.Client, code: pathlib.Path,
    unique: str,
) -> None:
    source, sink = f"persistent://public/default/in-{unique}", f"out-{unique}"
    port = common_testing.free_port()
    localrun = subprocess.Popen(
        Admin("http://127.0.0.1:1").arguments(
            "functions", "localrun", "--broker-service-url", standalone.service_url,
            "--py", str(code), "--classname", "exclamation.ExclamationFunction",
            "--inputs", source, "--output", sink, "--name", f"local-{unique}",
            "--metrics-port-start", str(port)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        common_testing.wait_until(lambda: healthy(port), 60, "the localrun instance",
                                  localrun)
        out = client.subscribe(f"persistent://public/default/{sink}", "check")
        client.create_producer(source).send(b"hello")
        assert receive_all(out, 1)[0].data() == b"hello!"
        localrun.send_signal(signal.SIGTERM)
        assert localrun.wait(timeout=30) == 0
        assert not common_testing.port_open(port)
    finally:
        common_testing.stop_process(localrun, timeout_s=30)


def healthy(port: int) -> bool:
    try:
        status, _body = testing.http("GET", f"http://127.0.0.1:{port}/healthz")
    except OSError:
        return False
    return status == 200


def test_localrun_stops_with_status_2_when_the_instance_config_is_wrong(
    code: pathlib.Path, unique: str,
) -> None:
    result = subprocess.run(
        Admin("http://127.0.0.1:1").arguments(
            "functions", "localrun", "--py", str(code), "--classname",
            "exclamation.ExclamationFunction", "--inputs", "in", "--name", f"bad-{unique}",
            "--timeout-ms", "-5"),
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "its config is wrong" in result.stderr


def test_the_instances_of_a_killed_localrun_stop_with_it(
    standalone: broker_testing.StandaloneProcess, code: pathlib.Path, unique: str,
) -> None:
    port = common_testing.free_port()
    localrun = subprocess.Popen(
        Admin("http://127.0.0.1:1").arguments(
            "functions", "localrun", "--broker-service-url", standalone.service_url,
            "--py", str(code), "--classname", "exclamation.ExclamationFunction",
            "--inputs", f"in-{unique}", "--name", f"killed-{unique}",
            "--metrics-port-start", str(port)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        common_testing.wait_until(lambda: healthy(port), 60, "the localrun instance", localrun)
        common_testing.kill_process(localrun)
        common_testing.wait_until(lambda: not common_testing.port_open(port), 30,
                                  "the instance gone with localrun")
    finally:
        common_testing.stop_process(localrun, timeout_s=30)
