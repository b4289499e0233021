"""The cluster chart's Grafana dashboards as data: their queries, and the series names and
label names each query reads.

A dashboard must only point at series our processes export. The tests take every PromQL
expression out of the dashboard JSON (panel targets and query variables) and name what
it reads with `read_by`, a small lexer that knows PromQL's shapes: metric names are the
identifiers that are not functions, keywords, label names or numbers.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHART = Path(__file__).resolve().parents[3] / "charts" / "pulsar-cluster"
DASHBOARDS_DIR = CHART / "dashboards"
#: Dashboard file stem -> the component whose /metrics it reads.
COMPONENTS = {"pulsar-broker": "broker", "pulsar-bookie": "bookie", "pulsar-proxy": "proxy"}

_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{([^}]*)\}")
_MATCHER_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_RANGE = re.compile(r"\[[^\]]*\]")
_OFFSET = re.compile(r"\boffset\s+-?[0-9a-z]+", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![A-Za-z0-9_:])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.DOTALL)
KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
                      "group_left", "group_right", "inf", "nan"})


@dataclasses.dataclass(frozen=True)
class Reads:
    """What one PromQL expression reads."""

    #: Series names (`rate(x_total[5m])` reads x_total).
    metrics: frozenset[str]
    #: Label names in the matchers of each series (`x{job="a"}` -> {x: {job}}).
    matcher_labels: dict[str, frozenset[str]]
    #: Label names of by/without/on/ignoring/group_* clauses and of label_values().
    grouping_labels: frozenset[str]


def read_by(expression: str) -> Reads:
    """The series and label names a PromQL expression (or Grafana's label_values()) reads."""
    grouping: set[str] = set()
    if match := _LABEL_VALUES.match(expression):
        expression = match.group(1)
        grouping.add(match.group(2))
    text = _STRING.sub('""', expression)
    text = _OFFSET.sub(" ", _RANGE.sub("", text))
    if "$" in text:
        raise ValueError(f"a Grafana variable outside a string or range: {expression!r}")
    matchers: dict[str, frozenset[str]] = {}

    def selector(found: re.Match[str]) -> str:
        name = found.group(1) or ""
        labels = frozenset(_MATCHER_LABEL.findall(found.group(2)))
        if name:
            matchers[name] = matchers.get(name, frozenset()) | labels
        return f" {name} "

    text = _SELECTOR.sub(selector, text)
    for found in _GROUPING.finditer(text):
        grouping |= set(_IDENTIFIER.findall(found.group(1)))
    text = _GROUPING.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    metrics = set()
    for found in _IDENTIFIER.finditer(text):
        word = found.group(0)
        followed_by = text[found.end():].lstrip()[:1]
        if word.lower() in KEYWORDS or followed_by == "(":
            continue
        metrics.add(word)
    for name in metrics:
        matchers.setdefault(name, frozenset())
    return Reads(frozenset(metrics), matchers, frozenset(grouping))


def load(stem: str) -> dict[str, Any]:
    loaded = json.loads((DASHBOARDS_DIR / f"{stem}.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query: panel targets, then query variables."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} target {target['refId']}", target["expr"]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]
            yield f"variable {variable['name']!r}", query["query"] if isinstance(query, dict) else query
