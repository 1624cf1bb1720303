"""Results a person only looks at: the argument of a notebook's `display(...)` (Databricks,
Jupyter) or of `print(...)`, or an action whose result is a statement of its own (a notebook or
REPL shows it, a script drops it: `rdd.take(5)` on a line by itself); and results read only for their size: `len(df.take(1))`,
`if df.head(1):`, `if not rows.first():`. Which rows a limit or a sort left there decides
nothing downstream.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph

PREVIEW_FUNCTIONS = frozenset({"display", "print"})
# Python built-ins that read a collection's size or emptiness, never its elements.
SIZE_FUNCTIONS = frozenset({"len", "bool"})


def previewed(graph: StageGraph) -> set[int]:
    """ids of the expressions passed straight to `display(...)`/`print(...)`, or kept by nobody; the
    builder records them as it evaluates each call (enumerating nodes through positions cost
    about three parses a file)."""
    return graph.previewed_args


def previewed_queries(graph: StageGraph) -> set[int]:
    """Node ids of SQL results shown by `display(spark.sql(...))` (a notebook's SQL cell reads so)."""
    return {graph.sql_results[i] for i in graph.previewed_args if i in graph.sql_results}


def shown_expressions(call: cst.Call) -> Iterator[int]:
    """ids of what `print(...)`/`display(...)` shows: each argument, and the result a slice or an
    index of it reads (`print(rdd.collect()[:5])` shows the collected rows)."""
    for arg in call.args:
        yield from discarded(arg.value)


def truth_tested(test: cst.BaseExpression) -> Iterator[int]:
    """ids of the values an `if`/`while` test reads only for truth: the test itself, the operand
    of `not`, each side of `and`/`or`, and `x` in `x is None`/`x is not None`."""
    yield id(test)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from truth_tested(test.expression)
    elif isinstance(test, cst.BooleanOperation):
        yield from truth_tested(test.left)
        yield from truth_tested(test.right)
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if (
            isinstance(target.operator, (cst.Is, cst.IsNot))
            and isinstance(target.comparator, cst.Name)
            and target.comparator.value == "None"
        ):
            yield id(test.left)


def size_read(graph: StageGraph) -> set[int]:
    """ids of the expressions read only for their size or emptiness (recorded by the builder)."""
    return graph.size_read


def discarded(value: cst.BaseExpression) -> Iterator[int]:
    """ids of a value nobody keeps (an expression statement, or what is only shown): the value,
    and the call an index or slice of it reads (`df.collect()[0]` on a line by itself)."""
    yield id(value)
    while isinstance(value, cst.Subscript):
        value = value.value
        yield id(value)
