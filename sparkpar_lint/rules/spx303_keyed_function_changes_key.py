"""SPX303 keyed-function-changes-key: a grouped function emits rows under another key than its
group, while a later partition-local stage relies on rows being grouped by that key."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

import libcst as cst

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx202_partitioned_state_without_partitioning import PARTITION_ROLES

KEYED_ROLES = frozenset({"group", "stateful-group", "stateful-processor", "cogroup"})


def _literal(expr: cst.BaseExpression) -> str | None:
    value = expr.evaluated_value if isinstance(expr, cst.SimpleString) else None
    return value if isinstance(value, str) else None


class _KeyWrites(cst.CSTVisitor):
    """`pdf[K] = ...`, `pdf.assign(K=...)`, `pdf.rename(columns={K: ...})`."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = set(keys)
        self.found: list[tuple[str, cst.CSTNode]] = []

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if (
            isinstance(target, cst.Subscript)
            and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)
        ):
            name = _literal(target.slice[0].slice.value)
            if name in self.keys:
                self.found.append((name, target))

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute):
            return
        method = node.func.attr.value
        for arg in node.args:
            if method == "assign" and arg.keyword is not None and arg.keyword.value in self.keys:
                self.found.append((arg.keyword.value, node))
            elif method == "rename" and isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    renamed = _literal(element.key) if isinstance(element, cst.DictElement) else None
                    if renamed is not None and renamed in self.keys:
                        self.found.append((renamed, node))


def rewritten_key(function: UserFunction, keys: tuple[str, ...]) -> tuple[str, cst.CSTNode] | None:
    visitor = _KeyWrites(keys)
    function.node.body.visit(visitor)
    return visitor.found[0] if visitor.found else None


def relying_consumer(graph: StageGraph, node: StageNode) -> StageNode | None:
    for later in graph.downstream(node):
        if later.input_partitioning != node.output_partitioning:
            continue
        if any(f.role in PARTITION_ROLES for f in later.functions):
            return later
    return None


class KeyedFunctionChangesKey(Rule):
    id = "SPX303"
    name = "keyed-function-changes-key"
    severity = Severity.WARNING
    summary = "A grouped function rewrites its group key while a later partition-local stage relies on it."
    VALID = [
        # The key is kept; other columns change.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def running(batches):
                    for pdf in batches:
                        yield pdf.assign(total=pdf["amount"].cumsum())
                orders = spark.read.parquet("orders")
                def dedupe(pdf):
                    pdf['amount'] = pdf['amount'].round(2)
                    return pdf
                orders.groupBy("user").applyInPandas(dedupe, "user string, amount double").mapInPandas(running, "user string, amount double, total double")
                """)
        ),
        # Rewritten, but the next stage re-shuffles by the new values.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def running(batches):
                    for pdf in batches:
                        yield pdf.assign(total=pdf["amount"].cumsum())
                orders = spark.read.parquet("orders")
                def merge(pdf):
                    pdf['user'] = pdf['user'].str.lower()
                    return pdf
                orders.groupBy("user").applyInPandas(merge, "user string, amount double").repartition(8, "user").mapInPandas(running, "user string, amount double, total double")
                """)
        ),
    ]
    INVALID = [
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def running(batches):
                    for pdf in batches:
                        yield pdf.assign(total=pdf["amount"].cumsum())
                orders = spark.read.parquet("orders")
                def merge(pdf):
                    pdf['user'] = pdf['user'].str.lower()
                    return pdf
                orders.groupBy("user").applyInPandas(merge, "user string, amount double").mapInPandas(running, "user string, amount double, total double")
                """),
            line=8,
            column=4,
            related_lines=(10, 10),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if not node.keys:
                continue
            for function in node.functions:
                if function.role not in KEYED_ROLES:
                    continue
                rewritten = rewritten_key(function, node.keys)
                consumer = relying_consumer(graph, node) if rewritten else None
                if rewritten is None or consumer is None:
                    continue
                key, where = rewritten
                related = (
                    RelatedLocation(node.span, f"`{node.method}` groups by `{key}`"),
                    RelatedLocation(consumer.span, f"`{consumer.method}` runs per partition, without a new shuffle"),
                )
                message = (
                    f"`{function.name}` rewrites the group key `{key}`, so its output is still laid out "
                    f"by the old values: `{consumer.method}` sees rows of one new `{key}` in several "
                    f'partitions and out of order. Keep the key, or `repartition(n, "{key}")` '
                    "(plus `sortWithinPartitions`) after it"
                )
                yield self.finding(ctx, graph.span_of(where), message, related=related)
