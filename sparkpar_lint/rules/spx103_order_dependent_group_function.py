"""SPX103 order-dependent-group-function: a grouped or per-partition function that reads its rows
by position or in sequence without sorting them first."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.graph.order_sensitivity import (
    GROUPS,
    PAIR,
    ROWS,
    Data,
    find_order_dependence,
    parameter_kinds,
)
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode, UserFunction
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

# Roles whose function sees a whole group or partition (catalogue function_role).
ORDERED_ROLES = frozenset(
    {"group", "cogroup", "stateful-group", "stateful-processor", "partition", "partition-with-index"}
)
_PRELUDE = "from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n"


class OrderDependentGroupFunction(Rule):
    id = "SPX103"
    name = "order-dependent-group-function"
    severity = Severity.ERROR
    summary = "A grouped or per-partition function depends on the order its rows arrive in."
    VALID = [
        Valid(
            _PRELUDE
            + "def fill_gaps(pdf):\n"
            + '    pdf = pdf.sort_values(["ts", "seq"])\n'
            + '    pdf["temp"] = pdf["temp"].interpolate()\n'
            + "    return pdf\n"
            + 'readings = spark.read.parquet("readings")\n'
            + 'readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)\n'
        ),
        # The group key is constant within a group: its first row is as good as any.
        Valid(
            _PRELUDE
            + "def summarize(pdf):\n"
            + '    device = pdf["device"].iloc[0]\n'
            + '    return pdf.assign(device_id=device, n=len(pdf), total=pdf["temp"].sum())\n'
            + 'spark.read.parquet("r").groupBy("device").applyInPandas(summarize, "device string, n long")\n'
        ),
        Valid(
            _PRELUDE
            + "def gaps(rows):\n"
            + "    prev = None\n"
            + "    for r in sorted(rows, key=lambda r: (r.ts, r.id)):\n"
            + "        if prev is not None:\n"
            + "            yield (r.user, r.ts - prev)\n"
            + "        prev = r.ts\n"
            + 'spark.read.parquet("c").rdd.mapPartitions(gaps)\n'
        ),
        # Order-free folds and an arg-max loop.
        Valid(
            _PRELUDE
            + "def latest(rows):\n"
            + "    best, total = None, 0\n"
            + "    for r in rows:\n"
            + "        total += r.amount\n"
            + "        if best is None or r.ts > best.ts:\n"
            + "            best = r\n"
            + "    return [(best, total)]\n"
            + 'spark.read.parquet("c").rdd.mapPartitions(latest)\n'
        ),
        # pandas on the driver, not a function Spark runs per group.
        Valid("import pandas as pd\npdf = pd.read_csv('x.csv')\npdf['v'] = pdf['v'].ffill()\nprint(pdf.iloc[0])\n"),
        Valid(_PRELUDE + 'spark.sparkContext.textFile("t").map(lambda l: l.split(",")).groupByKey().mapValues(len)\n'),
    ]
    INVALID = [
        Invalid(
            _PRELUDE
            + "def fill_gaps(pdf):\n"
            + '    pdf["temp"] = pdf["temp"].interpolate()\n'
            + "    return pdf\n"
            + 'readings = spark.read.parquet("readings")\n'
            + 'readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)\n',
            line=4,
            column=18,
            related_lines=(7,),
        ),
        Invalid(
            _PRELUDE
            + "def first_page(pdf):\n"
            + "    return pdf.head(1)\n"
            + 'spark.read.parquet("c").groupby("user").applyInPandas(first_page, "user string, page string")\n',
            line=4,
            column=11,
        ),
        Invalid(
            _PRELUDE
            + "def gaps(rows):\n"
            + "    prev = None\n"
            + "    for r in rows:\n"
            + "        if prev is not None:\n"
            + "            yield (r.user, r.ts - prev)\n"
            + "        prev = r.ts\n"
            + 'spark.read.parquet("c").rdd.mapPartitions(gaps)\n',
            line=6,
            column=11,
        ),
        Invalid(
            _PRELUDE
            + 'pairs = spark.sparkContext.textFile("t").map(lambda l: tuple(l.split(",")))\n'
            + "pairs.groupByKey().mapValues(lambda pages: list(pages)[0])\n",
            line=4,
            column=43,
        ),
        Invalid(
            _PRELUDE
            + "def smooth(x):\n"
            + '    return x.rolling(3).mean()\n'
            + "def per_device(pdf):\n"
            + '    pdf["smooth"] = smooth(pdf["temp"])\n'
            + "    return pdf\n"
            + 'spark.readStream.table("r").groupBy("device").applyInPandas(per_device, "d string")\n',
            line=4,
            column=11,
        ),
        Invalid(
            _PRELUDE
            + "def first_batch_rows(batches):\n"
            + "    yield next(batches)\n"
            + 'spark.read.parquet("c").mapInPandas(first_batch_rows, "user string")\n',
            line=4,
            column=10,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        helpers = {n.name.value: n for n in graph.positions if isinstance(n, cst.FunctionDef)}
        for node in graph.nodes:
            for function in node.functions:
                kinds = _kinds(graph, node, function)
                if not kinds:
                    continue
                dependence = find_order_dependence(function.node, kinds, node.keys, helpers)
                if dependence is not None:
                    yield self._finding(ctx, graph, node, function, dependence)

    def _finding(self, ctx, graph: StageGraph, node: StageNode, function: UserFunction, dependence) -> Finding:
        where = f" (in helper `{dependence.helper}`)" if dependence.helper else ""
        message = (
            f"{dependence.operation}{where} depends on the order rows reach `{function.name}`, and "
            f"`{node.method}` hands them over in whatever order the shuffle or partitioning delivers; "
            "sort by a deterministic key (with a tie-breaker) at the top of the function"
        )
        related = (RelatedLocation(node.span, f"`{node.method}` runs `{function.name}` on unordered rows"),)
        return self.finding(ctx, graph.span_of(dependence.node), message, related=related)


def _kinds(graph: StageGraph, node: StageNode, function: UserFunction) -> dict[str, Data]:
    """What the function's parameters hold, or {} when its rows carry no order to depend on."""
    role = function.role
    if role in ("partition", "partition-with-index") and node.input_order.kind in ("total", "per-key"):
        return {}  # sorted upstream and not shuffled since: the partition's order is defined
    if role in ORDERED_ROLES:
        return parameter_kinds(function.node, role, node.receiver)
    source = graph.input_of(node)
    if source is None or source.spec is None or not source.spec.produces_order_sensitive_groups:
        return {}
    cogrouped = source.method in ("cogroup", "groupWith")
    if role == "value":
        return parameter_kinds(function.node, "cogroup-value" if cogrouped else "value", node.receiver)
    if role == "row":
        kinds = parameter_kinds(function.node, "grouped-row", node.receiver)
        return {name: Data(PAIR, inner=GROUPS if cogrouped else ROWS) for name in kinds}
    return {}
