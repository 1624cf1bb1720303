"""The sequential semantics as a column: a sequence number taken before any shuffle, in the
consumer's own statement, so no other reader of a shared DataFrame sees it.

`monotonically_increasing_id()` on rows that have not been shuffled since a batch source numbers
them by input split and position, which is the arrival order the job had when it ran on one
partition. Narrow stages (select, filter, union) keep that order, so the number can be taken
right before the consumer's own shuffle: on every side of a union at once, on no DataFrame
another statement reads, and gone after the consumer (aggregates drop it; other fixes drop it).
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from sparkpar_lint.edits.chain import receiver_of
from sparkpar_lint.edits.code import column_function, string
from sparkpar_lint.edits.model import Imports, Replacement
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

SEQUENCE_COLUMN = "_sparkpar_seq"
# Stages that keep rows in their order within a partition, and all or chosen columns.
_FORWARDING = {"all", "selected"}


def sequence_parts(
    graph: StageGraph, consumer: StageNode, like: cst.Call
) -> tuple[tuple[tuple[cst.CSTNode, Replacement], ...], Imports] | None:
    """(replacements, imports) that make SEQUENCE_COLUMN reach `consumer`, or None.

    `like` is a column-function call in the module, so the new code uses the same import alias.
    """
    chain = list(graph.upstream(consumer))
    if not chain or not chain[-1].spec or not chain[-1].spec.source or chain[-1].streaming:
        return None
    between = chain[:-1]
    shuffles = [n for n in between if n.is_shuffle]
    # The consumer's own shuffle (groupBy/window partitioning) may sit just above it; none earlier.
    if any(n is not (between[0] if between else None) for n in shuffles):
        return None
    if any(n.spec is None or n.spec.forwarding not in _FORWARDING for n in between if not n.is_shuffle):
        return None
    target = between[0] if between and between[0].is_shuffle else consumer
    rows = receiver_of(target.call) if target.call is not None else None
    if rows is None:
        return None
    if target is not consumer and len(graph.consumers(target)) != 1:
        return None  # the shuffled rows feed other statements too
    if _whole_row_dedup(target):
        return None  # a number on every row would make every row distinct: nothing deduplicated
    if target.call_site is not None or consumer.call_site is not None:
        return None  # inside a helper other callers share
    numbered, imports = column_function(like, "monotonically_increasing_id", [])
    # A partial, not a lambda: findings and their fixes are pickled across the linter's workers.
    return ((rows, partial(_number, numbered=numbered)),), imports


def _number(rows: cst.BaseExpression, numbered: cst.Call) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=rows, attr=cst.Name("withColumn")),
        args=[cst.Arg(string(SEQUENCE_COLUMN)), cst.Arg(numbered)],
    )


def _whole_row_dedup(node: StageNode) -> bool:
    """`distinct()` or `dropDuplicates()` over every column, which a sequence column would join."""
    if node.method == "distinct":
        return True
    return node.method in ("dropDuplicates", "drop_duplicates") and node.call is not None and not node.call.args
