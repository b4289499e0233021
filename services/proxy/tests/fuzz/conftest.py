"""The frame generators live in tools/fuzz (shared with `make fuzz`): make the repository's
root importable however pytest was started."""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
