"""Printing query results: an aligned text table, CSV or JSON lines."""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

#: Characters a table cell shows before it is cut with "...".
CELL_WIDTH_MAX = 60


def _plain(value: Any) -> Any:
    """A JSON-friendly form of a Spark value."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    plain = _plain(value)
    text = plain if isinstance(plain, str) else json.dumps(plain) if isinstance(
        plain, dict | list) else str(plain)
    text = text.replace("\n", "\\n")
    return text if len(text) <= CELL_WIDTH_MAX else text[: CELL_WIDTH_MAX - 3] + "..."


def write_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO) -> None:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out.write(rule + "\n")
    out.write("| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |\n")
    out.write(rule + "\n")
    out.writelines("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |\n" for row in cells)
    out.write(rule + "\n")


def write_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO) -> int:
    writer = csv.writer(out)
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([_csv_cell(v) for v in row])
        count += 1
    return count


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    plain = _plain(value)
    return json.dumps(plain) if isinstance(plain, dict | list) else plain


def write_json(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO) -> int:
    count = 0
    for row in rows:
        out.write(json.dumps({c: _plain(v) for c, v in zip(columns, row, strict=True)}) + "\n")
        count += 1
    return count
