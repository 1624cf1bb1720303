"""The sequential semantics as a column: a sequence number added right after the source, before
any shuffle, and forwarded through every stage up to the consumer that needs the order.

`monotonically_increasing_id()` right after a batch source numbers rows by input split and
position, which is the arrival order the job had when it ran on one partition.
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from sparkpar_lint.fixes.edits import column_function, string
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

SEQUENCE_COLUMN = "_sparkpar_seq"
# Stages that keep every column, or whose column list can be widened to keep the sequence.
_FORWARDING = {"all", "selected"}


def sequence_parts(graph: StageGraph, consumer: StageNode, like: cst.Call):
    """(replacements, imports) that make SEQUENCE_COLUMN reach `consumer`, or None.

    `like` is a column-function call in the module, so the new code uses the same import alias.
    """
    chain = list(graph.upstream(consumer))
    if not chain or not chain[-1].spec or not chain[-1].spec.source or chain[-1].streaming:
        return None
    source, between = chain[-1], chain[:-1]
    shuffles = [n for n in between if n.is_shuffle]
    # The consumer's own shuffle (groupBy/window partitioning) may sit just above it; none earlier.
    if any(n is not (between[0] if between else None) for n in shuffles):
        return None
    if any(n.spec is None or n.spec.forwarding not in _FORWARDING for n in between if not n.is_shuffle):
        return None
    if source.call is None or any(n.call is None for n in between):
        return None
    numbered, imports = column_function(like, "monotonically_increasing_id", [])
    # A partial, not a lambda: findings and their fixes are pickled across the linter's workers.
    replacements = [(source.call, partial(_number, numbered=numbered))]
    replacements += [(n.call, _widen) for n in between if n.spec.forwarding == "selected"]
    return tuple(replacements), imports


def _number(source: cst.Call, numbered: cst.Call) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=source, attr=cst.Name("withColumn")),
        args=[cst.Arg(string(SEQUENCE_COLUMN)), cst.Arg(numbered)],
    )


def _widen(select: cst.Call) -> cst.Call:
    args = [*select.args]
    args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return select.with_changes(args=[*args, cst.Arg(string(SEQUENCE_COLUMN))])
