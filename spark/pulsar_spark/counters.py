"""Read counters of a scan: what the planner probed and what the executors read.

Spark runs planning and each input partition in separate Python worker
processes, so counters cannot live in memory: when the `metrics.dir` option
is set every worker appends one JSON line per task to a file of its own in
that directory, and `load` sums them. Tests and benchmarks use this to show
what pruning saved.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import uuid


@dataclasses.dataclass(frozen=True)
class ReadCounters:
    #: Entries read to produce rows.
    entries_read: int = 0
    #: Bytes of those entries.
    bytes_read: int = 0
    #: Messages (rows before Spark's filters) decoded from them.
    messages_decoded: int = 0
    #: Entries read by the planner's publish-time search.
    entries_probed: int = 0
    #: Input partitions planned (counted by the planner).
    partitions_planned: int = 0

    def __add__(self, other: ReadCounters) -> ReadCounters:
        return ReadCounters(*(a + b for a, b in zip(
            dataclasses.astuple(self), dataclasses.astuple(other), strict=True)))


def record(directory: str | None, counters: ReadCounters) -> None:
    """Append the counters of one task (no-op without a directory)."""
    if not directory:
        return
    path = pathlib.Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    name = path / f"{os.getpid()}-{uuid.uuid4().hex}.jsonl"
    with open(name, "a", encoding="utf-8") as out:
        out.write(json.dumps(dataclasses.asdict(counters)) + "\n")


def load(directory: str | pathlib.Path) -> ReadCounters:
    """The sum of every task's counters written to directory."""
    total = ReadCounters()
    for path in sorted(pathlib.Path(directory).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                total = total + ReadCounters(**json.loads(line))
    return total
