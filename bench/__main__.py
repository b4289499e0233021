"""Run the benchmarks: every module of this package that defines `run(argv: list[str]) -> None`.

python -m bench                 # all of them, ending with issue 16's table (bench.table)
python -m bench table           # only the table: ours vs pulsar-lite, goals, load average
python -m bench bookie_engine --seconds 3   # only the named ones; options go to each
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import bench

#: Run last when everything runs, so that the run ends with the summary table.
LAST = "table"


def main(argv: list[str]) -> int:
    split = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    wanted, options = argv[:split], argv[split:]
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")
    )
    unknown = [w for w in wanted if w not in names]
    if unknown:
        print(f"unknown benchmarks {unknown}; available: {names}", file=sys.stderr)
        return 2
    if not wanted:
        wanted = [n for n in names if n != LAST] + [LAST]
    for name in wanted:
        module = importlib.import_module(f"bench.{name}")
        run = getattr(module, "run", None)
        if run is None:
            continue
        print(f"=== bench.{name}", flush=True)
        started = time.monotonic()
        run(options)
        print(f"=== bench.{name} took {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
