"""The Dockerfile, read statically (no Docker engine here): it builds the project into one
non-root image whose entry point is `pulsar`, with a supported etcd release for the etcd
pods, and agrees with the charts on image name, version and user id."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

#: Ports of the services the image runs: binary, HTTP, bookie, bookie HTTP,
#: etcd client and peer.
SERVICE_PORTS = {6650, 8080, 3181, 8000, 2379, 2380}
#: The etcd project's release image; its binaries live in /usr/local/bin.
ETCD_RELEASE_IMAGE = "gcr.io/etcd-development/etcd"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "Dockerfile ends inside a continued line"
    pairs = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        pairs.append((keyword.upper(), rest.strip()))
    return pairs


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def arg_defaults() -> dict[str, str]:
    defaults = {}
    for keyword, rest in instructions():
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            defaults[name] = value
    return defaults


def expand(text: str) -> str:
    args = arg_defaults()
    return re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), text)


def ignore_patterns() -> list[str]:
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line.rstrip("/") for line in lines if line and not line.startswith("#")]


def in_build_context(relative: str) -> bool:
    """Whether a repository path is sent to the builder (a pattern on any parent excludes it).

    fnmatch's `*` also crosses `/`, so this errs towards excluding: a needed
    file it keeps is really kept.
    """
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in ignore_patterns():
        assert not pattern.startswith("!"), "exceptions are not handled by this check"
        bare = pattern[3:] if pattern.startswith("**/") else None
        for prefix in prefixes:
            if fnmatch.fnmatch(prefix, pattern):
                return False
            if bare is not None and fnmatch.fnmatch(prefix.rsplit("/", 1)[-1], bare):
                return False
    return True


def test_final_image_is_python_311_slim() -> None:
    assert expand(final_stage()[0][1]).startswith("python:3.11-slim")


def etcd_stage_image() -> str:
    """The image of the stage the final stage copies etcd from."""
    stages = {
        rest.split()[-1]: expand(rest.split()[0])
        for keyword, rest in instructions()
        if keyword == "FROM" and " AS " in rest.upper()
    }
    (source,) = [
        shlex.split(rest)[0].removeprefix("--from=")
        for keyword, rest in final_stage()
        if keyword == "COPY" and rest.startswith("--from") and "etcd" in shlex.split(rest)[-1]
    ]
    return stages[source]


def test_etcd_comes_from_a_supported_release_line_of_the_etcd_project() -> None:
    image, _, tag = etcd_stage_image().rpartition(":")
    assert image == ETCD_RELEASE_IMAGE
    major, minor, _patch = (int(part) for part in tag.removeprefix("v").split("."))
    assert (major, minor) >= (3, 5), f"etcd {tag}: 3.4 and older are end of life"
    copies = [shlex.split(rest) for keyword, rest in final_stage() if keyword == "COPY" and rest.startswith("--from")]
    assert ["--from=etcd", "/usr/local/bin/etcd", "/usr/local/bin/etcd"] in copies
    assert not any("etcd-server" in rest for keyword, rest in final_stage() if keyword == "RUN")


def test_the_project_is_pip_installed_in_the_final_image_with_functions_and_without_spark() -> None:
    name = PYPROJECT["project"]["name"]
    build = [shlex.split(rest) for keyword, rest in instructions() if keyword == "RUN"]
    assert ["pip", "wheel", "--wheel-dir", "/wheels", ".[operator,cli,functions]"] in build
    final_runs = [shlex.split(rest) for keyword, rest in final_stage() if keyword == "RUN"]
    install = ["pip", "install", "--no-index", "--find-links=/wheels", f"{name}[operator,cli,functions]"]
    assert any(run[: len(install)] == install for run in final_runs)
    assert set(PYPROJECT["project"]["optional-dependencies"]) >= {"operator", "cli", "spark", "functions"}


def test_the_example_function_is_where_apache_images_and_function_mesh_samples_keep_it() -> None:
    runs = " ".join(rest for keyword, rest in final_stage() if keyword == "RUN")
    assert "import pulsar_functions.examples.exclamation_function" in runs
    assert "/pulsar/examples/python-examples/exclamation_function.py" in runs
    assert (REPO / "services/function-worker/pulsar_functions/examples/exclamation_function.py").is_file()


def test_entrypoint_runs_the_pulsar_console_script() -> None:
    entrypoints = [rest for keyword, rest in final_stage() if keyword == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    assert json.loads(entrypoints[0]) == ["pulsar"]
    assert "pulsar" in PYPROJECT["project"]["scripts"]


def test_image_runs_as_the_non_root_user_the_charts_expect() -> None:
    users = [expand(rest) for keyword, rest in final_stage() if keyword == "USER"]
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    operator_values = yaml.safe_load((REPO / "charts/pulsar-operator/values.yaml").read_text())
    cluster_values = yaml.safe_load((REPO / "charts/pulsar-cluster/values.yaml").read_text())
    assert operator_values["podSecurityContext"]["runAsUser"] == int(uid)
    assert cluster_values["podPolicy"]["securityContext"]["runAsUser"] == int(uid)


def test_exposed_ports_cover_every_service_port() -> None:
    exposed = {
        int(port.split("/")[0])
        for keyword, rest in final_stage()
        if keyword == "EXPOSE"
        for port in rest.split()
    }
    assert SERVICE_PORTS <= exposed


def test_build_context_holds_everything_the_build_copies_and_installs() -> None:
    copied = [
        shlex.split(rest)[:-1]
        for keyword, rest in instructions()
        if keyword == "COPY" and not rest.startswith("--from")
    ]
    for sources in copied:
        for source in sources:
            assert (REPO / source).exists(), f"COPY {source}: no such path"
            assert in_build_context(source), f"COPY {source}: excluded by .dockerignore"
    for package, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items():
        if (REPO / folder).exists():
            init = f"{folder}/__init__.py"
            assert in_build_context(init), f"{package} ({init}) is excluded by .dockerignore"
            assert any(folder == s or folder.startswith(s.rstrip("/") + "/") for c in copied for s in c), (
                f"{package} lives in {folder}, which no COPY brings in"
            )


def copy_build_context(destination: Path) -> None:
    """Copy what the build stage COPYs, as the builder would receive it."""
    for keyword, rest in instructions():
        if keyword != "COPY" or rest.startswith("--from"):
            continue
        for source in shlex.split(rest)[:-1]:
            root = REPO / source
            files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
            for path in files:
                relative = path.relative_to(REPO).as_posix()
                if in_build_context(relative):
                    target = destination / relative
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)


def test_the_build_context_makes_a_wheel_with_every_package_and_the_pulsar_script(
    tmp_path: Path,
) -> None:
    context = tmp_path / "context"
    copy_build_context(context)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", str(wheels), str(context)],
        check=True,
        timeout=180,
    )
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert re.search(r"^pulsar = ", archive.read(entry_points).decode(), re.MULTILINE)
    for package, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items():
        if (REPO / folder / "__init__.py").exists():
            assert f"{package}/__init__.py" in names, package


def test_build_context_leaves_out_the_virtualenv_history_and_tests() -> None:
    for path in (".venv/bin/python", ".git/HEAD", "operator/tests/charts/test_image.py", "e2e/x.py"):
        assert not in_build_context(path), path


def test_image_name_and_version_agree_with_the_charts_and_the_crd_default() -> None:
    version = PYPROJECT["project"]["version"]
    for chart in ("pulsar-operator", "pulsar-cluster"):
        chart_dir = REPO / "charts" / chart
        metadata: dict[str, Any] = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
        values: dict[str, Any] = yaml.safe_load((chart_dir / "values.yaml").read_text())
        assert metadata["appVersion"] == version, chart
        assert values["image"]["repository"] == "pulsar-py", chart
    crd = yaml.safe_load_all((REPO / "crds/pulsar.pulsar-py.dev_pulsarclusters.yaml").read_text())
    spec = next(doc for doc in crd if doc)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert spec["properties"]["spec"]["properties"]["image"]["default"] == f"pulsar-py:{version}"
