"""`python -m pulsar_operator ...`: the same as `pulsar operator ...`."""

from __future__ import annotations

import argparse
import sys

from pulsar_operator import cli


def main() -> int:
    parser = argparse.ArgumentParser(prog="pulsar operator", description=cli.__doc__)
    return cli.add_arguments(parser)(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
