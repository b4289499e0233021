"""What the command-line tools do when whoever reads their output stops reading."""

from __future__ import annotations

import os
import sys


def reader_gone() -> None:
    """Standard output's reader went away (`| head`, `| grep -m1`): nothing is wrong, so the
    tool ends without a traceback, as Apache's Java tools ignore it; later writes (the
    interpreter's last flush among them) go to /dev/null instead of failing again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
