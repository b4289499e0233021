"""`pulsar operator` command line: scopes, leader election settings, the runner it returns."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from pulsar_operator import cli


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pulsar operator")
    runner = cli.add_arguments(parser)
    assert runner is cli.run
    return parser.parse_args(list(argv))


def test_defaults_watch_everything_with_leader_election() -> None:
    args = parse()
    assert args.namespace == [] and not args.all_namespaces
    assert args.leader_election and args.lease_name == "pulsar-operator" and args.lease_duration == 15
    assert args.liveness_port == 8080 and args.resync_interval == 30.0 and args.function_mesh


def test_namespaces_repeat_and_exclude_all_namespaces() -> None:
    assert parse("--namespace", "a", "-n", "b").namespace == ["a", "b"]
    with pytest.raises(SystemExit):
        parse("--namespace", "a", "--all-namespaces")


@pytest.mark.parametrize(("argv", "env", "expected"), [
    (["--lease-namespace", "ops"], {"POD_NAMESPACE": "pulsar"}, "ops"),
    ([], {"POD_NAMESPACE": "pulsar"}, "pulsar"),
    (["--namespace", "team-*", "--namespace", "b"], {}, "b"),
    ([], {}, "default"),
])
def test_the_lease_lives_in_the_operators_own_namespace(monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                                        env: dict[str, str], expected: str) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert cli.lease_namespace(parse(*argv)) == expected


def test_identity_is_the_pod_name_in_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "pulsar-operator-7d9-abc")
    assert cli.identity() == "pulsar-operator-7d9-abc"


def test_python_m_pulsar_operator_prints_help() -> None:
    out = subprocess.run([sys.executable, "-m", "pulsar_operator", "--help"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "--all-namespaces" in out and "--no-leader-election" in out


def test_the_function_image_defaults_to_pulsar_image_else_this_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULSAR_IMAGE", "registry.example/pulsar-py:9")
    assert cli.default_function_image() == "registry.example/pulsar-py:9"
    monkeypatch.delenv("PULSAR_IMAGE")
    assert cli.default_function_image().startswith("pulsar-py:")
