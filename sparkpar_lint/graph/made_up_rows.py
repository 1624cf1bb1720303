"""Rows a job makes up instead of reading: `spark.range(n)`, the `rate` stream, literal rows.

A random value drawn per row of such a frame is the data being generated (test or demo input), not
a value computed from rows that exist elsewhere: whether a retried task must draw the same values
is the reader's call, not something the code shows. Likewise which made-up row a join pairs with
which, when both sides are made up: any pairing is another draw of the same synthetic data.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.literal_rows import literal_rows
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

# Streaming sources that count rather than read (Spark's test sources).
_COUNTING_STREAMS = frozenset({"rate", "rate-micro-batch"})


def runs_on_made_up_rows(graph: StageGraph, function: UserFunction) -> bool:
    """Every stage that runs `function` reads only made-up rows (and at least one stage does)."""
    stages = stages_running(graph, function)
    return bool(stages) and all(_made_up(graph, node) for node in stages)


def made_up_above(graph: StageGraph, node: StageNode) -> bool:
    """Every source above `node` makes its rows up, or reads back a path or table this module
    wrote from made-up rows (`spark.range(n)...save(p)`, then `spark.read.json(p)`)."""
    return _made_up(graph, node, read_back=True)


def stages_running(graph: StageGraph, function: UserFunction) -> list[StageNode]:
    """The stages that call `function`: as their own function, or as a UDF in a column."""
    return [node for node in graph.nodes if _runs(node, function)]


def _runs(node: StageNode, function: UserFunction) -> bool:
    target = function.node
    if any(f.node is target for f in (*node.functions, *node.function_slots.values())):
        return True
    return any(c.udf is not None and c.udf.node is target for c in node.columns.calls)


def _made_up(graph: StageGraph, node: StageNode, read_back: bool = False, depth: int = 0) -> bool:
    """All the sources above `node`, through every input, make their rows up (`read_back`: or
    read what a write of made-up rows in this module wrote)."""
    frontier, seen, sources = [node], set(), []
    while frontier:
        current = frontier.pop()
        if current.id in seen:
            continue
        seen.add(current.id)
        if not current.inputs:
            sources.append(current)
        frontier.extend(graph.nodes[i] for i in current.inputs)
    return all(
        _counts(graph, source) or (read_back and depth < 3 and _reads_back_made_up(graph, source, depth))
        for source in sources
    )


def _reads_back_made_up(graph: StageGraph, source: StageNode, depth: int) -> bool:
    """`source` reads the path or table (the same expression) that a write of made-up rows names."""
    target = _target(source.call)
    if target is None or source.streaming:
        return False
    return any(
        node.spec is not None
        and node.spec.sink
        and node.id != source.id
        and (written := _target(node.call)) is not None
        and written.deep_equals(target)
        and _made_up(graph, node, read_back=True, depth=depth + 1)
        for node in graph.nodes
    )


def _target(call: cst.Call | None) -> cst.BaseExpression | None:
    """The path or table a reader or writer call names: its first positional or `path` argument."""
    if call is None:
        return None
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value in ("path", "tableName", "name"):
            return arg.value
    return None


def _counts(graph: StageGraph, source: StageNode) -> bool:
    if source.method == "range":  # SparkSession.range / SparkContext.range: numbers, not data
        return True
    if source.streaming and source.method == "load":
        return _stream_format(source.call) in _COUNTING_STREAMS
    return literal_rows(graph, source) is not None


def _stream_format(call: cst.Call | None) -> str | None:
    """The `format("...")` named on the reader chain `call` ends (`readStream.format("rate").load()`)."""
    receiver = call.func.value if call is not None and isinstance(call.func, cst.Attribute) else None
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        if receiver.func.attr.value == "format" and receiver.args:
            value = receiver.args[0].value
            return value.evaluated_value if isinstance(value, cst.SimpleString) else None  # type: ignore[return-value]
        receiver = receiver.func.value
    return None
