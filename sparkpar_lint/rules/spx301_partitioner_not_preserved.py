"""SPX301 partitioner-not-preserved: `preservesPartitioning=True` on a function that may change
the pair's key, so later keyed operators trust a stale partitioner."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from textwrap import dedent

import libcst as cst

from sparkpar_lint.edits.model import SAFE, Fix
from sparkpar_lint.graph.forwarding import KEPT, key_forwarding
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

# Partitioners only matter to stages that would otherwise shuffle by key.
_STALE_INPUTS = frozenset({"hash", "range", "unknown"})


def preserves_partitioning(node: StageNode) -> bool:
    if node.keywords.get("preservesPartitioning") == "True":
        return True
    positional = [a.value for a in node.call.args if a.keyword is None] if node.call is not None else []
    return len(positional) > 1 and isinstance(positional[1], cst.Name) and positional[1].value == "True"


def trusting_consumer(graph: StageGraph, node: StageNode) -> StageNode | None:
    """The first later stage that reuses the partitioner instead of shuffling."""
    for later in graph.downstream(node):
        if later.spec is not None and (
            later.spec.uses_partitioner or (later.is_shuffle and later.spec.keys == "pair-key")
        ):
            return later
        if later.spec is not None and later.is_shuffle and later.spec.forwarding == "keys":
            return later
    return None


class PartitionerNotPreserved(Rule):
    id = "SPX301"
    name = "partitioner-not-preserved"
    severity = Severity.ERROR
    summary = (
        "`preservesPartitioning=True` on a function that may change the key: keyed stages trust a stale partitioner."
    )
    fix_safety = SAFE
    fix_needs = "needs the `preservesPartitioning` flag written in the call"
    VALID = [
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                pairs.mapValues(lambda v: v * 2).reduceByKey(lambda a, b: a + b)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                pairs.map(lambda kv: (kv[0], kv[1] * 2), preservesPartitioning=True).reduceByKey(max)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                def scale(part):
                    for key, value in part:
                        yield key, value * 2
                pairs.mapPartitions(scale, preservesPartitioning=True).groupByKey()
                """)
        ),
        # Without the flag Spark forgets the partitioner and shuffles again: correct.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                pairs.map(lambda kv: (kv[1], kv[0])).reduceByKey(max)
                """)
        ),
        # No partitioner upstream to go stale.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sparkContext.textFile("t").map(lambda l: (l[:3], l), preservesPartitioning=True).groupByKey()
                """)
        ),
    ]
    INVALID = [
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                pairs.map(lambda kv: (kv[1], kv[0]), preservesPartitioning=True).reduceByKey(max)
                """),
            line=4,
            column=6,
            related_lines=(3, 4),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                             pairs.map(lambda kv: (kv[1], kv[0])).reduceByKey(max)
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                def rekey(part):
                    for key, value in part:
                        yield key.lower(), value
                regrouped = pairs.mapPartitions(rekey, True)
                regrouped.join(pairs)
                """),
            line=7,
            column=18,
            related_lines=(3, 8),
            # The flag passed by position goes too.
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                             def rekey(part):
                                 for key, value in part:
                                     yield key.lower(), value
                             regrouped = pairs.mapPartitions(rekey)
                             regrouped.join(pairs)
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                pairs.flatMap(lambda kv: [(w, 1) for w in kv[0].split()], preservesPartitioning=True).lookup('a')
                """),
            line=4,
            column=6,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             pairs = spark.sparkContext.textFile("t").map(lambda l: (l.split(",")[0], 1)).partitionBy(8)
                             pairs.flatMap(lambda kv: [(w, 1) for w in kv[0].split()]).lookup('a')
                             """),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is None or node.spec.partitioning_effect != "unless-preserved":
                continue
            if not preserves_partitioning(node) or node.input_partitioning.kind not in _STALE_INPUTS:
                continue
            many = node.spec.selectivity == "any"
            if all(key_forwarding(f, many) == KEPT for f in node.functions) and node.functions:
                continue
            yield self._finding(ctx, graph, node)

    def _finding(self, ctx: RuleContext, graph: StageGraph, node: StageNode) -> Finding:
        related = []
        partitioning = node.input_partitioning
        if partitioning.established_by is not None:
            source = graph.node(partitioning.established_by)
            related.append(RelatedLocation(source.span, f"`{source.method}` sets the partitioner here"))
        consumer = trusting_consumer(graph, node)
        if consumer is not None:
            related.append(RelatedLocation(consumer.span, f"`{consumer.method}` trusts it and skips the shuffle"))
        message = (
            f"`{node.method}` keeps the partitioner (`preservesPartitioning=True`) but its function "
            "may emit pairs under a different key: equal new keys sit in different partitions, and "
            + (f"`{consumer.method}`" if consumer is not None else "a later keyed stage")
            + " that trusts the partitioner returns split or missing groups. Drop the flag, or use "
            "`mapValues`/`flatMapValues` when the key is kept"
        )
        return self.finding(ctx, node.span, message, related=tuple(related), fix=_fix(node))


def _fix(node: StageNode) -> Fix | None:
    """Drop the flag: Spark forgets the partitioner and the keyed stage shuffles by the new key.

    (`mapValues` is the other cure, but only where the key is provably kept, and there this rule
    is silent: a kept-key map with the flag is already correct.)
    """
    if node.call is None or len(_unflagged(node.call.args)) == len(node.call.args):
        return None
    description = f"`{node.method}`: drop `preservesPartitioning=True` (the function may change the key)"
    return Fix(SAFE, description, ((node.call, _without_flag),))


def _unflagged(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """The arguments but the flag, by keyword or in its position (the second)."""
    return [
        a
        for i, a in enumerate(args)
        if not (a.keyword is not None and a.keyword.value == "preservesPartitioning")
        and not (a.keyword is None and i == 1)
    ]


def _without_flag(call: cst.Call) -> cst.Call:
    args = _unflagged(call.args)
    args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)
