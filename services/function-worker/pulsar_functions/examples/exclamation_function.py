"""Apache Pulsar's exclamation example: every input comes out with "!" appended."""

from __future__ import annotations

from typing import Any

import pulsar


class ExclamationFunction(pulsar.Function):  # type: ignore[misc]
    def process(self, input: Any, context: Any) -> Any:
        return input + "!"
