"""Column pruning for SQL over topics: read only the columns a query uses.

Spark's Python Data Source API hands a reader no list of required columns,
so a scan builds, ships to the JVM and converts every column of the topic,
even for `SELECT count(*) FROM t` (measured: all 13 columns of a JSON topic
cost the JVM about twice the CPU of one). A reader given a schema
(`.schema(...)`) builds only those columns and, without payload columns,
does not decode payloads at all.

For a SQL text, `pulsar sql` and the Kubernetes job therefore plan the query
once over the full tables, read from Spark's analyzed plan which columns
each topic's relation feeds into, register the tables again with just those
columns, and run the query. A relation counts as pruned only where that is
certain: when, above it (past view and alias wrappers and filters), the
first operator is a projection or an aggregation, which use exactly the
columns they reference. Under anything else (a join, a union, `TABLE t`)
the relation keeps all its columns. Subqueries in expressions are walked
too, as their relations read the same views.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: Operators that pass their child's columns through unchanged.
_TRANSPARENT = frozenset({"SubqueryAlias", "View"})
#: Operators whose columns are exactly the ones their expressions reference.
_CONSUMERS = frozenset({"Project", "Aggregate"})
_RELATION = "DataSourceV2Relation"
#: The column kept when a query needs none (count(*)): a constant per partition, never decoded.
PLACEHOLDER_COLUMN = "__partition"


def needed_columns(df: Any) -> dict[str, frozenset[str] | None]:
    """Per topic read by `df`: the columns its plan uses (None: all of them)."""
    found: dict[str, frozenset[str] | None] = {}
    plan = df._jdf.queryExecution().analyzed()
    for relation, ancestors in _relations(plan, []):
        topic = relation.options().get("topic")
        if topic is None or relation.table().name() != "pulsar":
            continue
        used = _used_by_ancestors(relation, ancestors)
        known = found.get(topic, frozenset())
        found[topic] = None if used is None or known is None else known | used
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


def _relations(node: Any, ancestors: list[Any]) -> Iterator[tuple[Any, list[Any]]]:
    if node.getClass().getSimpleName() == _RELATION:
        yield node, ancestors
        return
    for child in _seq(node.children()):
        yield from _relations(child, [node, *ancestors])
    for subquery in _seq(node.subqueries()):
        yield from _relations(subquery, [])


def _used_by_ancestors(relation: Any, ancestors: list[Any]) -> frozenset[str] | None:
    ids = {attribute.exprId().id(): attribute.name() for attribute in _seq(relation.output())}
    used: set[str] = set()
    for node in ancestors:
        kind = node.getClass().getSimpleName()
        if kind in _TRANSPARENT:
            continue
        used.update(ids[a.exprId().id()] for a in _seq(node.references().toSeq())
                    if a.exprId().id() in ids)
        if kind in _CONSUMERS:
            return frozenset(used)
        if kind != "Filter":
            return None
    return None  # the relation's rows are the query's result: every column is shown


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]
