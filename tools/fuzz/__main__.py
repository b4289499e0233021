"""`python -m tools.fuzz`: the long fuzz run; exit code 1 when the broker or proxy failed."""

from __future__ import annotations

import argparse
import pathlib
import random
import sys

from tools.fuzz import long_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames to send")
    parser.add_argument("--max-seconds", type=float, default=0.0,
                        help="stop after this long even if frames remain (0: no time limit)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the attacks (random when not given; printed)")
    parser.add_argument("--connections", type=int, default=8,
                        help="attacking connections open at once")
    parser.add_argument("--rss-limit-mib", type=int, default=long_run.RSS_LIMIT_MIB,
                        help="fail when the broker's or proxy's peak RSS passes this")
    parser.add_argument("--report-dir", type=pathlib.Path,
                        default=pathlib.Path("build/fuzz-report"),
                        help="where fuzz-report.json and fuzz-report.md are written")
    args = parser.parse_args(argv)
    if args.frames <= 0 or args.connections <= 0:
        parser.error("--frames and --connections must be positive")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    result = long_run.run(long_run.FuzzOptions(
        frames=args.frames, seed=seed, connections=args.connections,
        max_seconds=args.max_seconds, rss_limit_mib=args.rss_limit_mib,
        report_dir=args.report_dir))
    return 0 if long_run.passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
