"""Every command a container of ours runs exists.

The containers come from everything that starts one: the operator's plans
for the sample cluster and for a cluster with every component switched on,
the PulsarCluster each values file of the cluster chart renders (through the
operator's plan, as in a real install), the operator chart's Deployment
(both rendered with the real Helm engine) and the Dockerfile's own
ENTRYPOINT/CMD. A container's argv is worked out as the kubelet does
(`command` replaces ENTRYPOINT, `args` replaces CMD). `pulsar <command> ...`
must parse with the real `pulsar` parser; any other program must be one the
image installs on its PATH.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulsar_common.cli import main as pulsar_cli
from pulsar_operator import cluster_reconcile, function_reconcile

from . import test_image as dockerfile
from .conftest import CLUSTER_CHART, OPERATOR_CHART, render, values_files

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
NOW = "2026-01-01T00:00:00Z"
#: Directories on the image's PATH that the Dockerfile copies programs into.
PATH_DIRS = ("/usr/local/bin", "/usr/bin", "/bin")
#: (where, container name, image, argv)
Container = tuple[str, str, str, list[str]]


def example(name: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    body["metadata"].update(namespace="pulsar", uid=f"uid-{body['metadata']['name']}", generation=1)
    return body


def everything_on() -> dict[str, Any]:
    body = example("pulsar-cluster.yaml")
    body["metadata"]["name"] = "everything"
    body["spec"]["proxy"] = {"enabled": True, "replicas": 1}
    body["spec"]["functionsWorker"] = {"enabled": True, "replicas": 1}
    body["spec"]["etcd"] = {"replicas": 3}
    return body


def entrypoint_and_cmd() -> tuple[list[str], list[str]]:
    stage = dockerfile.final_stage()
    (entrypoint,) = [json.loads(rest) for keyword, rest in stage if keyword == "ENTRYPOINT"]
    (cmd,) = [json.loads(rest) for keyword, rest in stage if keyword == "CMD"]
    return entrypoint, cmd


def image_programs() -> set[str]:
    """Programs on the image's PATH: the project's console scripts and what the Dockerfile copies in."""
    scripts = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"])
    copied = {
        Path(shlex.split(rest)[-1]).name
        for keyword, rest in dockerfile.final_stage()
        if keyword == "COPY" and str(Path(shlex.split(rest)[-1]).parent) in PATH_DIRS
    }
    return scripts | copied


def is_our_image(image: str) -> bool:
    return image.rsplit("/", 1)[-1].partition(":")[0] == "pulsar-py"


def containers_in(manifest: Any, where: str) -> Iterator[Container]:
    """Every container spec anywhere in a manifest (pod templates of any kind), with its argv."""
    if isinstance(manifest, list):
        for item in manifest:
            yield from containers_in(item, where)
    if not isinstance(manifest, dict):
        return
    for key, value in manifest.items():
        if key in ("containers", "initContainers", "ephemeralContainers") and isinstance(value, list):
            for container in value:
                yield where, container["name"], container.get("image", ""), argv_of(container)
        else:
            yield from containers_in(value, where)


def argv_of(container: dict[str, Any]) -> list[str]:
    """What the container runs: `command` replaces the image's ENTRYPOINT, `args` its CMD."""
    entrypoint, cmd = entrypoint_and_cmd()
    if "command" in container:
        return [*container["command"], *container.get("args", [])]
    return [*entrypoint, *container.get("args", cmd)]


def planned(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(cluster_reconcile.reconcile(body, {}, NOW).objects)


def all_containers() -> list[Container]:
    found: list[Container] = []
    entrypoint, cmd = entrypoint_and_cmd()
    found.append(("Dockerfile", "ENTRYPOINT+CMD", "pulsar-py", [*entrypoint, *cmd]))
    found += containers_in(planned(example("pulsar-cluster.yaml")), "operator plan of examples/pulsar-cluster.yaml")
    found += containers_in(planned(everything_on()), "operator plan with every component on")
    function_plan = function_reconcile.reconcile(example("function.yaml"), None, image="pulsar-py:0.1.0",
                                                 cluster_status=None, now=NOW)
    found += containers_in(list(function_plan.objects), "operator plan of examples/function.yaml")
    for values_file in [None, *values_files(CLUSTER_CHART)]:
        values = yaml.safe_load(values_file.read_text()) if values_file else None
        for manifest in render(CLUSTER_CHART, values):
            where = f"pulsar-cluster chart ({values_file.name if values_file else 'defaults'})"
            if manifest["kind"] == "PulsarCluster":
                manifest["metadata"].update(uid="uid", generation=1)
                found += containers_in(planned(manifest), f"operator plan of the {where}")
            else:
                found += containers_in(manifest, where)
    for values_file in [None, *values_files(OPERATOR_CHART)]:
        values = yaml.safe_load(values_file.read_text()) if values_file else None
        found += containers_in(render(OPERATOR_CHART, values),
                               f"pulsar-operator chart ({values_file.name if values_file else 'defaults'})")
    return found


CONTAINERS = all_containers()


def parse_with_the_pulsar_cli(args: list[str]) -> str | None:
    """None when `pulsar <args>` parses (or prints its help), else what argparse said."""
    parser = pulsar_cli.build_parser()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            if exc.code not in (0, None):
                return err.getvalue().strip().splitlines()[-1]
    return None


def test_the_walk_finds_the_containers_of_every_source() -> None:
    sources = {where.split(" (")[0] for where, *_ in CONTAINERS}
    assert {"Dockerfile", "operator plan of examples/pulsar-cluster.yaml", "operator plan with every component on",
            "operator plan of the pulsar-cluster chart", "pulsar-operator chart",
            "operator plan of examples/function.yaml"} <= sources
    programs = {(name, argv[0], argv[1] if len(argv) > 1 else "") for _, name, _, argv in CONTAINERS}
    assert {("etcd", "etcd", "--name"), ("bookie", "pulsar", "bookie"), ("broker", "pulsar", "broker"),
            ("proxy", "pulsar", "proxy"), ("operator", "pulsar", "operator"),
            ("pulsar-function", "pulsar", "function-instance")} <= programs


@pytest.mark.parametrize(("where", "name", "image", "argv"), CONTAINERS,
                         ids=[f"{where}:{name}" for where, name, _, _ in CONTAINERS])
def test_the_command_exists(where: str, name: str, image: str, argv: list[str]) -> None:
    assert is_our_image(image), f"{where}: container {name} runs {image}, not the pulsar-py image"
    program, *args = argv
    assert program in image_programs(), f"{where}: {program!r} is not installed in the image"
    if program == "pulsar":
        command = next((arg for arg in args if not arg.startswith("-")), None)
        assert command is None or command in pulsar_cli.COMMANDS, f"{where}: `pulsar {command}` does not exist"
        assert parse_with_the_pulsar_cli(args) is None, (
            f"{where}: `pulsar {shlex.join(args)}`: {parse_with_the_pulsar_cli(args)}")


def test_a_bad_pulsar_command_line_is_caught() -> None:
    """The check above can fail: an unknown command or flag does not parse."""
    assert parse_with_the_pulsar_cli(["no-such-command", "--config", "x"]) is not None
    assert parse_with_the_pulsar_cli(["broker", "--no-such-flag"]) is not None
    assert parse_with_the_pulsar_cli(["broker", "--config", "/pulsar/conf/broker.conf"]) is None
