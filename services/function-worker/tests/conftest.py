"""Fixtures of the function runtime's tests: a real `pulsar standalone`, the official client,
and a way to write a function's code and start instances of it as processes."""

from __future__ import annotations

import pathlib
import textwrap
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_functions import testing


@pytest.fixture
def names() -> Callable[[str], str]:
    """Fresh topic names in public/default: names("in") -> persistent://public/default/in-<id>."""
    suffix = uuid.uuid4().hex[:10]
    return lambda prefix: f"persistent://public/default/{prefix}-{suffix}"


@pytest.fixture
def start_instance(
    tmp_path: pathlib.Path, standalone: broker_testing.StandaloneProcess,
) -> Iterator[Callable[..., testing.InstanceProcess]]:
    """start_instance(code, config, instance_id=0, ...) writes the code and runs an instance."""
    started: list[testing.InstanceProcess] = []

    def start(code: str, function: dict[str, Any], instance_id: int = 0,
              **options: Any) -> testing.InstanceProcess:
        code_path = tmp_path / "user_function.py"
        code_path.write_text(textwrap.dedent(code))
        document = {"tenant": "public", "namespace": "default", "name": "fn",
                    "runtime": "PYTHON", "py": str(code_path),
                    "brokerServiceUrl": standalone.service_url, **function}
        process = testing.InstanceProcess(tmp_path / f"instance-{len(started)}", document,
                                          instance_id, **options)
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()
