"""`python -m tools.chaos`: one chaos run; exit code 1 when the checker finds a violation."""

from __future__ import annotations

import argparse
import pathlib
import random
import sys

from tools.chaos import nemesis, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.chaos", description=__doc__)
    parser.add_argument("--cycles", type=int, default=10, help="faults to inflict, one per cycle")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the fault schedule (random when not given; printed)")
    parser.add_argument("--data-dir", type=pathlib.Path, default=None,
                        help="where the cluster keeps its data and logs (a temporary "
                             "directory, removed afterwards, when not given)")
    parser.add_argument("--report-dir", type=pathlib.Path, default=pathlib.Path("build/chaos-report"),
                        help="where chaos-report.json and chaos-report.md are written")
    parser.add_argument("--exclude", default="",
                        help="comma-separated fault kinds to leave out, e.g. disk-full "
                             f"(kinds: {', '.join(nemesis.KINDS)})")
    args = parser.parse_args(argv)
    excluded = {kind: "left out with --exclude" for kind in args.exclude.split(",") if kind}
    unknown = set(excluded) - set(nemesis.KINDS)
    if unknown:
        parser.error(f"unknown fault kinds: {', '.join(sorted(unknown))}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    if args.cycles < 0:
        parser.error("--cycles cannot be negative")
    result = run.run(run.RunOptions(seed, args.cycles, args.data_dir, args.report_dir,
                                    excluded))
    return 0 if run.passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
