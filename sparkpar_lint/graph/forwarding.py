"""Forwarding: does a key survive a stage unchanged? (the forwarded-key condition of the
auto-parallelizing paper, §3: a replicated keyed operator is safe only if every operator between
the split and it forwards the key.)

Two questions, both read without running anything:
- pair RDDs: does a user function's output tuple carry the input's key `[0]` unchanged?
- DataFrames: which of a hash partitioning's key columns does a column-modifying stage rewrite?
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.user_functions import parameter_names
from sparkpar_lint.graph.visiting import visit

KEPT, CHANGED, UNKNOWN = "kept", "changed", "unknown"
_COLUMN_REFERENCES = frozenset({"col", "column"})
# Roles whose function receives one element, or an iterator of elements.
_ELEMENT_ROLES = frozenset({"row"})
_ITERATOR_ROLES = frozenset({"partition", "partition-with-index"})


# ----------------------------------------------------------------- pair RDD functions


class _PairAliases:
    """Names that hold the incoming pair (`kv`) or its key (`k` in `k, v = kv`)."""

    def __init__(self) -> None:
        self.pairs: set[str] = set()
        self.keys: set[str] = set()
        self.iterators: set[str] = set()

    def is_key(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.keys
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value in self.pairs:
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"
        return False

    def bind_element(self, target: cst.BaseExpression) -> None:
        """`target` receives one incoming pair."""
        if isinstance(target, cst.Name):
            self.pairs.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)) and target.elements:
            first = target.elements[0].value
            if isinstance(first, cst.Name):
                self.keys.add(first.value)

    def bind_from(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`target = value` inside the function body."""
        if isinstance(value, cst.Name) and value.value in self.pairs:
            self.bind_element(target)
        elif isinstance(target, cst.Name) and self.is_key(value):
            self.keys.add(target.value)
        elif isinstance(value, cst.Name) and value.value in self.iterators and isinstance(target, cst.Name):
            self.iterators.add(target.value)


class _Outputs(cst.CSTVisitor):
    """Collects the aliases of the input and every expression the function emits."""

    def __init__(self, aliases: _PairAliases) -> None:
        self.aliases = aliases
        self.emitted: list[cst.BaseExpression] = []
        self.yielded: list[cst.BaseExpression] = []  # one element each, never a collection

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.aliases.bind_from(target.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        if _iterates_input(node.iter, self.aliases):
            self.aliases.bind_element(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if _iterates_input(node.iter, self.aliases):
            self.aliases.bind_element(node.target)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.emitted.append(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        if isinstance(node.value, cst.BaseExpression):
            self.yielded.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _iterates_input(expr: cst.BaseExpression, aliases: _PairAliases) -> bool:
    return isinstance(expr, cst.Name) and expr.value in aliases.iterators


def _classify(expr: cst.BaseExpression, aliases: _PairAliases, many: bool) -> list[str]:
    """kept/changed/unknown for each element an emitted expression stands for."""
    if many and isinstance(expr, (cst.List, cst.Tuple, cst.Set)) and not _is_pair_literal(expr, aliases):
        return [v for element in expr.elements for v in _classify(element.value, aliases, False)]
    if many and isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        return _classify(expr.elt, aliases, False)
    if isinstance(expr, cst.Tuple) and expr.elements:
        return [KEPT if aliases.is_key(expr.elements[0].value) else CHANGED]
    if isinstance(expr, cst.Name) and expr.value in aliases.pairs:
        return [KEPT]
    if isinstance(expr, cst.Name) and expr.value in aliases.iterators:
        return [KEPT]
    return [UNKNOWN]


def _is_pair_literal(expr: cst.BaseExpression, aliases: _PairAliases) -> bool:
    """`(k, v)` returned from flatMap is one pair, not two elements."""
    return (
        isinstance(expr, cst.Tuple)
        and len(expr.elements) == 2
        and not any(isinstance(e.value, (cst.Tuple, cst.List)) for e in expr.elements)
    )


def key_forwarding(function: UserFunction, many: bool = False) -> str:
    """Whether every pair the function emits keeps the incoming pair's key: kept/changed/unknown.

    `many`: the function returns a collection of pairs (flatMap); iterator roles always do.
    """
    aliases = _PairAliases()
    params = parameter_names(function.node)
    if not params:
        return UNKNOWN
    iterator = function.role in _ITERATOR_ROLES
    # mapPartitionsWithIndex passes (index, iterator).
    element = params[1] if function.role == "partition-with-index" and len(params) > 1 else params[0]
    (aliases.iterators if iterator else aliases.pairs).add(element)
    visitor = _Outputs(aliases)
    if isinstance(function.node, cst.Lambda):
        visit(function.node.body, visitor)
        emitted = [function.node.body]
    else:
        visit(function.node.body, visitor)
        emitted = visitor.emitted
    if not emitted and not visitor.yielded:
        return UNKNOWN
    verdicts = [v for expr in emitted for v in _classify(expr, aliases, many or iterator)]
    verdicts += [v for expr in visitor.yielded for v in _classify(expr, aliases, False)]
    if CHANGED in verdicts:
        return CHANGED
    return KEPT if verdicts and all(v == KEPT for v in verdicts) else UNKNOWN


# ----------------------------------------------------------------- DataFrame columns


def _literal(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _column_name(expr: cst.BaseExpression) -> str | None:
    """ "k", F.col("k"), col("k"), df["k"], df.k: a reference to one column, unchanged."""
    literal = _literal(expr)
    if literal is not None:
        return literal
    if isinstance(expr, cst.Call) and len(expr.args) == 1:
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _COLUMN_REFERENCES:
            return _literal(expr.args[0].value)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        return _literal(expr.slice[0].slice.value)
    return None


def _dict_keys(expr: cst.BaseExpression) -> list[str]:
    if not isinstance(expr, cst.Dict):
        return []
    return [k for e in expr.elements if isinstance(e, cst.DictElement) and (k := _literal(e.key)) is not None]


def changed_columns(node: StageNode, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The `keys` a DataFrame stage rewrites, renames or drops (so rows with equal new values may
    sit in different partitions). Stages the catalogue says forward every column change nothing."""
    if node.projection is not None:
        return tuple(k for k in keys if node.projection.changes(k))
    if node.spec is None or node.call is None or node.receiver != "DataFrame" or not keys:
        return ()
    args = [a.value for a in node.call.args if a.keyword is None]
    method = node.method
    touched: set[str] = set()
    if method == "withColumn" and args:
        touched = _named([_literal(args[0])])
    elif method == "withColumns" and args:
        touched = set(_dict_keys(args[0]))
    elif method == "withColumnRenamed" and args:
        touched = _named(_literal(a) for a in args[:2])
    elif method == "withColumnsRenamed" and args:
        touched = set(_dict_keys(args[0]))
        # A mapping held in a name renames columns we cannot see: only the keys are known then.
        elements = args[0].elements if isinstance(args[0], cst.Dict) else ()
        touched |= _named(_literal(e.value) for e in elements if isinstance(e, cst.DictElement))
    elif method == "drop":
        touched = _named(_column_name(a) for a in args)
    elif node.spec.forwarding == "selected":
        kept = _named(_column_name(a) for a in args)
        if "*" in kept:
            return ()
        touched = set(keys) - kept
    elif method == "toDF":
        touched = set(keys) - _named(_literal(a) for a in args)
    return tuple(k for k in keys if k in touched)


def _named(names: Iterable[str | None]) -> set[str]:
    """The names that were read, without the Nones of those that were not."""
    return {n for n in names if n is not None}


def stale_partitioning(graph: StageGraph, node: StageNode) -> tuple[StageNode, StageNode, tuple[str, ...]] | None:
    """(partitioner, breaker, keys) when the node's input is hash-partitioned by `keys` per the
    builder, but a stage in between rewrote one of those columns; None otherwise."""
    partitioning = node.input_partitioning
    if partitioning.kind != "hash" or partitioning.established_by is None or not partitioning.keys:
        return None
    keys = tuple(k for k in partitioning.keys if not k.startswith("["))
    if not keys:
        return None
    breaker = None
    for upstream in graph.upstream(node):
        if upstream.id == partitioning.established_by:
            return (upstream, breaker, keys) if breaker is not None else None
        changed = changed_columns(upstream, keys)
        if changed:
            breaker = upstream  # keep walking: the nearest one to the partitioner is reported
    return None
