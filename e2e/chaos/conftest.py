"""The chaos harness lives in tools/chaos (run as `python -m tools.chaos`): make the
repository's root importable for its tests however pytest was started."""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
