"""`pulsar version`: the installed release, as Apache's `bin/pulsar version` prints it."""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
from collections.abc import Callable

DISTRIBUTION = "pulsar-py"


def installed_version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed as a distribution)"


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"Current version of pulsar is: {installed_version()}")
        print(f"Python {platform.python_version()} ({platform.python_implementation()})")
        return 0

    return run
