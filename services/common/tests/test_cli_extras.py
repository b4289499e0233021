"""An install without extras: the services and `pulsar --help` work, the rest names its extra.

A fresh virtualenv per test would be slow, so each case runs in a child
interpreter whose import system refuses the extras' modules (pyspark,
pyarrow, numpy, fastavro, yaml, kopf and the official client `pulsar`), as if
they were not installed. The distribution's metadata is read from a fresh
build of pyproject.toml.
"""

from __future__ import annotations

import importlib.metadata
import pathlib
import subprocess
import sys
import textwrap

import pytest
from packaging.requirements import Requirement
from pulsar_common.cli import main as pulsar_cli

REPO = pathlib.Path(__file__).resolve().parents[3]
EXTRA_MODULES = ("pyspark", "pyarrow", "numpy", "fastavro", "yaml", "kopf", "pulsar")
#: Packages an install without extras runs: the services and `pulsar-admin` (`pulsar-client`
#: and `pulsar-perf`, the rest of pulsar_client_tools, need the `cli` extra).
SERVICE_PACKAGES = ("pulsar_common", "pulsar_bookie", "pulsar_broker", "pulsar_proxy",
                    "pulsar_client_tools.admin")
#: Modules in them that drive the official client: the test harness, not a service.
HARNESS_MODULES = ("pulsar_broker.testing",)

BLOCKER = textwrap.dedent(f"""
    import importlib.abc, sys

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {EXTRA_MODULES!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
""")


def run_without_extras(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code), *argv],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )


def run_pulsar(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_without_extras("""
        from pulsar_common.cli import main
        sys.exit(main.main(sys.argv[1:]))
    """, *argv)


def test_the_blocker_really_hides_the_extras() -> None:
    result = run_without_extras("import pyspark")
    assert result.returncode == 1 and "No module named 'pyspark'" in result.stderr


def test_pulsar_help_lists_every_command_without_the_extras() -> None:
    result = run_pulsar("--help")
    assert result.returncode == 0, result.stderr
    for command in pulsar_cli.COMMANDS:
        assert command in result.stdout


@pytest.mark.parametrize("command", sorted(pulsar_cli.COMMANDS))
def test_every_command_explains_itself_without_the_extras(command: str) -> None:
    result = run_pulsar(command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: pulsar {command}")


@pytest.mark.parametrize(("argv", "extra", "missing"), [
    (["sql", "SELECT 1"], "spark", "pyspark"),
    (["sql", "--tables"], "spark", "pyspark"),
    (["sql", "--k8s-manifest", "SELECT 1", "--image", "i", "--output-path", "s3a://b/o"], "spark", "yaml"),
    (["operator", "--no-leader-election"], "operator", "kopf"),
    (["function-instance", "--config", "function.json"], "functions", "pulsar"),
    (["functions-worker"], "functions", "pulsar"),
], ids=["sql-query", "sql-tables", "sql-k8s-manifest", "operator", "function-instance",
        "functions-worker"])
def test_a_command_without_its_extra_names_the_extra_in_one_line(argv: list[str], extra: str, missing: str) -> None:
    result = run_pulsar(*argv)
    assert result.returncode == 2
    assert result.stderr == (
        f"pulsar {argv[0]}: needs the {extra!r} extra ({missing} is not installed): "
        f"pip install 'pulsar-py[{extra}]'\n"
    )


@pytest.mark.parametrize("tool", ["pulsar_client", "pulsar_perf"])
def test_client_tools_without_the_cli_extra_name_it(tool: str) -> None:
    result = run_without_extras(f"""
        from pulsar_common.cli import extras
        sys.exit(extras.{tool}())
    """, "--help")
    assert result.returncode == 2
    assert result.stderr == (
        f"{tool.replace('_', '-')}: needs the 'cli' extra (pulsar is not installed): pip install 'pulsar-py[cli]'\n"
    )


def test_client_tools_run_when_the_cli_extra_is_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from pulsar_common.cli import extras; sys.exit(extras.pulsar_client())",
         "--help"], capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: pulsar-client")


def test_every_service_module_imports_without_the_extras() -> None:
    result = run_without_extras(f"""
        import importlib, pkgutil
        failures = []
        for package in {SERVICE_PACKAGES!r}:
            root = importlib.import_module(package)
            for info in pkgutil.walk_packages(root.__path__, package + "."):
                if info.name.startswith({HARNESS_MODULES!r}):
                    continue
                try:
                    importlib.import_module(info.name)
                except ImportError as exc:
                    failures.append(f"{{info.name}}: {{exc}}")
        print("\\n".join(failures))
        sys.exit(1 if failures else 0)
    """)
    assert result.returncode == 0, result.stdout + result.stderr


def built_requirements(tmp_path: pathlib.Path) -> list[Requirement]:
    """Requires-Dist of pulsar-py as the PEP 517 backend builds it from pyproject.toml."""
    out = tmp_path / "metadata"
    out.mkdir()
    subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
         "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))", str(out)],
        cwd=REPO, check=True, capture_output=True, text=True, timeout=120,
    )
    (dist_info,) = out.glob("*.dist-info")
    return [Requirement(r) for r in importlib.metadata.PathDistribution(dist_info).requires or []]


def test_spark_kopf_and_the_official_client_are_only_in_extras(tmp_path: pathlib.Path) -> None:
    requirements = built_requirements(tmp_path)
    core = {r.name.lower() for r in requirements if r.marker is None}
    assert core and not core & {"pyspark", "pyarrow", "numpy", "fastavro", "pyyaml", "kopf", "pulsar-client"}

    def extra_of(name: str) -> set[str]:
        return {str(r.marker).split('"')[1] for r in requirements
                if r.name.lower() == name and r.marker is not None}

    assert {"spark"} <= extra_of("pyspark") and {"spark"} <= extra_of("pyarrow")
    assert extra_of("kopf") == {"operator"}
    assert {"cli", "spark", "functions"} <= extra_of("pulsar-client")
    all_extra = next(r for r in requirements if r.name == "pulsar-py")
    assert all_extra.extras == {"spark", "operator", "cli", "functions"} and str(all_extra.marker) == 'extra == "all"'
