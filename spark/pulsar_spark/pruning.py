"""Column pruning for SQL over topics: read only the columns a query uses.

Spark's Python Data Source API hands a reader no list of required columns,
so a scan builds, ships to the JVM and converts every column of the topic,
even for `SELECT count(*) FROM t` (measured: all 13 columns of a JSON topic
cost the JVM about twice the CPU of one). A reader given a schema
(`.schema(...)`) builds only those columns and, without payload columns,
does not decode payloads at all.

For a SQL text, `pulsar sql` and the Kubernetes job therefore plan the query
once over the full tables, read from Spark's analyzed plan which columns of
each topic's relation the query uses, register the tables again with just
those columns, and run the query. The plan is walked from the top, carrying
the columns needed: a projection or an aggregation needs exactly the columns
it references; row-wise operators (filters, joins, sorts, limits, windows,
view and alias wrappers) need what is needed above them plus what they
reference; under any other operator (a union, DISTINCT over a whole table)
a relation keeps every column (so does one in a WITH clause's definition,
which other parts of the query may read under other names). Subqueries in
expressions are walked too, as their relations read the same views.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: Operators whose columns are exactly the ones their expressions reference.
_CONSUMERS = frozenset({"Project", "Aggregate"})
#: Operators that keep their children's rows' columns as they are, needing in addition only
#: the columns they reference.
_ROW_WISE = frozenset({"SubqueryAlias", "View", "Filter", "Join", "Sort", "GlobalLimit",
                       "LocalLimit", "Offset", "Sample", "Window", "Repartition",
                       "RepartitionByExpression", "ResolvedHint"})
_RELATION = "DataSourceV2Relation"
#: The column kept when a query needs none (count(*)): a constant per partition, never decoded.
PLACEHOLDER_COLUMN = "__partition"


def needed_columns(df: Any) -> dict[str, frozenset[str] | None]:
    """Per topic read by `df`: the columns its plan uses (None: all of them)."""
    found: dict[str, frozenset[str] | None] = {}
    for relation, needed in _relations(df._jdf.queryExecution().analyzed(), None):
        topic = relation.options().get("topic")
        if topic is None or relation.table().name() != "pulsar":
            continue
        names = [a.name() for a in _seq(relation.output())
                 if needed is None or a.exprId().id() in needed]
        known = found.get(topic, frozenset())
        found[topic] = None if needed is None or known is None else known | frozenset(names)
    return found


def narrowed(needed: Mapping[str, frozenset[str] | None], columns: Mapping[str, list[str]]) \
        -> dict[str, list[str]]:
    """Topics whose reads can leave columns out, with the columns to read (in table order)."""
    result = {}
    for topic, used in needed.items():
        all_columns = columns.get(topic)
        if used is None or all_columns is None:
            continue
        kept = [c for c in all_columns if c in used] or [PLACEHOLDER_COLUMN]
        if len(kept) < len(all_columns):
            result[topic] = kept
    return result


def _relations(node: Any, needed: frozenset[int] | None) \
        -> Iterator[tuple[Any, frozenset[int] | None]]:
    """Each relation under `node`, with the ids of its columns used (None: all), given the
    ids of `node`'s columns used above it."""
    kind = node.getClass().getSimpleName()
    if kind == _RELATION:
        yield node, needed
        return
    referenced = frozenset(a.exprId().id() for a in _seq(node.references().toSeq()))
    below: frozenset[int] | None = None
    if kind in _CONSUMERS:
        below = referenced
    elif kind in _ROW_WISE and needed is not None:
        below = needed | referenced
    for child in _seq(node.children()):
        yield from _relations(child, below)
    for subquery in _seq(node.subqueries()):
        yield from _relations(subquery, None)


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]
