"""How pulsar-admin prints results: lists one item per line, records as indented JSON."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2))


def print_list(items: list[Any]) -> None:
    for item in items:
        print(item)


def print_error(reason: str) -> None:
    """Apache prints the reason, a blank line, then `Reason: <reason>` on stderr."""
    print(reason, file=sys.stderr)
    print(file=sys.stderr)
    print(f"Reason: {reason}", file=sys.stderr)


def print_connect_error(reason: str, admin_url: str) -> None:
    print(reason, file=sys.stderr)
    print(file=sys.stderr)
    print(f"Error connecting to: {admin_url}", file=sys.stderr)


def hex_dump(data: bytes) -> str:
    """A boxed hex dump of the payload, 16 bytes a row, in the style Apache prints it."""
    lines = ["         +-------------------------------------------------+",
             "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |",
             "+--------+-------------------------------------------------+----------------+"]
    for offset in range(0, len(data), 16):
        row = data[offset:offset + 16]
        hex_part = " ".join(f"{b:02x}" for b in row).ljust(47)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in row).ljust(16)
        lines.append(f"|{offset:08x}| {hex_part} |{text}|")
    lines.append("+--------+-------------------------------------------------+----------------+")
    return "\n".join(lines)
