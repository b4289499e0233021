"""Functions whose code is a package of the brokers' packages management, end to end: a real
`pulsar standalone` (with its functions worker) with enablePackagesManagement=true, real
`pulsar-admin packages` and `pulsar-admin functions` processes, the official client."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_functions.testing import receive_all, wait_for

pytestmark = pytest.mark.slow

CLI_TIMEOUT_S = 60.0
EXCLAMATION = b"""
import pulsar


class ExclamationFunction(pulsar.Function):
    def process(self, input, context):
        return input + "!"
"""


@pytest.fixture(scope="module")
def packages_standalone(tmp_path_factory: pytest.TempPathFactory,
                        ) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("packages") / "data"
    process = broker_testing.StandaloneProcess(
        data_dir, {"journalSyncData": "false", "enablePackagesManagement": "true"})
    process.start()
    yield process
    process.stop()


def admin(standalone: broker_testing.StandaloneProcess,
          *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pulsar_client_tools.admin.main", "--admin-url",
         standalone.web_url, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        check=False)


def ok(standalone: broker_testing.StandaloneProcess, *args: str) -> str:
    result = admin(standalone, *args)
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def test_pulsar_admin_packages_upload_list_download_and_delete(
        packages_standalone: broker_testing.StandaloneProcess, tmp_path: pathlib.Path) -> None:
    name = f"exclamation-{uuid.uuid4().hex[:6]}"
    url = f"function://public/default/{name}@v1"
    code = tmp_path / "exclamation.py"
    code.write_bytes(EXCLAMATION)
    assert ok(packages_standalone, "packages", "upload", url, "--path", str(code),
              "--description", "adds !", "-P", "lang=python") == \
        f"The package '{url}' uploaded from path '{code}' successfully\n"
    assert name in ok(packages_standalone, "packages", "list", "--type", "function",
                      "public/default").split()
    assert ok(packages_standalone, "packages", "list-versions",
              f"function://public/default/{name}").split() == ["v1"]
    metadata = json.loads(ok(packages_standalone, "packages", "get-metadata", url))
    assert (metadata["description"], metadata["properties"]) == ("adds !", {"lang": "python"})
    ok(packages_standalone, "packages", "update-metadata", url, "--description", "adds a !")
    metadata = json.loads(ok(packages_standalone, "packages", "get-metadata", url))
    assert metadata["description"] == "adds a !" and metadata["properties"] == {}
    target = tmp_path / "down" / "copy.py"
    ok(packages_standalone, "packages", "download", url, "--path", str(target))
    assert target.read_bytes() == EXCLAMATION
    again = admin(packages_standalone, "packages", "upload", url, "--path", str(code),
                  "--description", "again")
    assert again.returncode == 1 and "already exists" in again.stderr
    assert ok(packages_standalone, "packages", "delete", url) == \
        f"The package '{url}' deleted successfully\n"
    gone = admin(packages_standalone, "packages", "get-metadata", url)
    assert gone.returncode == 1 and "does not exist" in gone.stderr


def test_a_function_created_from_a_package_url_runs_the_package(
        packages_standalone: broker_testing.StandaloneProcess, tmp_path: pathlib.Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    url = f"function://public/default/exclamation-{suffix}@v1"
    source = f"persistent://public/default/in-{suffix}"
    sink = f"persistent://public/default/out-{suffix}"
    code = tmp_path / "anything.py"
    code.write_bytes(EXCLAMATION)
    ok(packages_standalone, "packages", "upload", url, "--path", str(code),
       "--description", "exclamation")
    name = f"exclamation-{suffix}"
    assert ok(packages_standalone, "functions", "create", "--py", url,
              "--classname", "exclamation.ExclamationFunction", "--inputs", source,
              "--output", sink, "--name", name) == "Created successfully\n"

    def running() -> bool:
        status = admin(packages_standalone, "functions", "status", "--name", name)
        return status.returncode == 0 and json.loads(status.stdout)["numRunning"] == 1

    wait_for(running, 60, "the instance runs")
    client = pulsar.Client(packages_standalone.service_url, operation_timeout_seconds=30)
    try:
        out = client.subscribe(sink, "check")
        producer = client.create_producer(source)
        for word in ("hello", "package"):
            producer.send(word.encode())
        assert sorted(m.data() for m in receive_all(out, 2)) == [b"hello!", b"package!"]
        # A new version of the package, and the function moved to it: instances restart
        # with the new code.
        code.write_bytes(EXCLAMATION.replace(b'"!"', b'"?"'))
        v2 = url.replace("@v1", "@v2")
        ok(packages_standalone, "packages", "upload", v2, "--path", str(code),
           "--description", "questions")
        assert ok(packages_standalone, "functions", "update", "--py", v2,
                  "--name", name) == "Updated successfully\n"
        assert json.loads(ok(packages_standalone, "functions", "get", "--name", name))["py"] == v2

        def answers_with_v2() -> bool:
            producer.send(b"again")
            try:
                return out.receive(2000).data() == b"again?"
            except pulsar.Timeout:
                return False

        wait_for(answers_with_v2, 60, "the instances run v2")
    finally:
        client.close()
    ok(packages_standalone, "functions", "delete", "--name", name)


def test_a_function_naming_a_missing_package_is_refused(
        packages_standalone: broker_testing.StandaloneProcess) -> None:
    result = admin(packages_standalone, "functions", "create", "--py",
                   "function://public/default/nothing-here@v1", "--classname", "x.Y",
                   "--inputs", "in", "--name", f"missing-{uuid.uuid4().hex[:6]}")
    assert result.returncode == 1 and "nothing-here" in result.stderr
