"""Apache's relative time (`10m`, `3h`, `2d`, `1w`) and size (`10M`, `2G`) arguments."""

from __future__ import annotations

import re

_TIME_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_SIZE_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


class UnitError(ValueError):
    pass


def seconds(text: str) -> int:
    """`-1` (infinite), a bare number (seconds) or a number with s/m/h/d/w/y."""
    match = re.fullmatch(r"(-?\d+)([smhdwy]?)", text.strip().lower())
    if not match:
        raise UnitError(f"invalid time {text!r}: use e.g. 30s, 10m, 3h, 2d, 1w")
    value = int(match.group(1))
    return value if value < 0 else value * _TIME_UNITS_S.get(match.group(2) or "s", 1)


def size_bytes(text: str) -> int:
    """`-1` (infinite), a bare number of bytes or a number with K/M/G/T."""
    match = re.fullmatch(r"(-?\d+)([kmgt]?)b?", text.strip().lower())
    if not match:
        raise UnitError(f"invalid size {text!r}: use e.g. 100M, 10G")
    value = int(match.group(1))
    return value if value < 0 else value * _SIZE_UNITS.get(match.group(2), 1)
