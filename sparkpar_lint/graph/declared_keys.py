"""Columns the project declares unique (`[tool.sparkpar] unique-columns`), where they apply.

`"order_id"` identifies a row of any table; `"events.event_id"` only of rows read from the table
`events` (`spark.table("events")`, `spark.read.table(...)`) or from a path whose last part is
`events` (`spark.read.parquet("s3://lake/events")`). A declaration is the author's word, taken as
the rows' own uniqueness where they are read: operations that keep rows keep it (uniqueness.py).
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode


def declared_sets(graph: StageGraph, node: StageNode) -> list[frozenset[str]]:
    """Declared unique columns of the rows `node` starts a chain with (a source, or a value of
    unknown origin such as a parameter)."""
    declared = graph.unique_columns
    if not declared:
        return []
    table = source_name(node)
    found = []
    for entry in declared:
        qualifier, _, column = entry.rpartition(".")
        if not qualifier or qualifier == table:
            found.append(frozenset({column}))
    return found


def source_name(node: StageNode) -> str | None:
    """The table a source reads, or the last part of its path ("s3://lake/events/" -> "events")."""
    if node.spec is None or not node.spec.source or node.call is None:
        return None
    first = next(
        (a.value for a in node.call.args if a.keyword is None or a.keyword.value in ("path", "tableName")), None
    )
    if not isinstance(first, cst.SimpleString) or not isinstance(first.evaluated_value, str):
        return None
    text = first.evaluated_value.rstrip("/")
    last = text.rsplit("/", 1)[-1]
    if node.method != "table" and "." in last:
        last = last.rsplit(".", 1)[0]  # events.parquet -> events
    elif node.method == "table":
        last = last.rsplit(".", 1)[-1]  # db.events -> events
    return last or None
