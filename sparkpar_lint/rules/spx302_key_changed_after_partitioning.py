"""SPX302 key-changed-after-partitioning: a DataFrame hash-partitioned by K, then K rewritten or
dropped, then a partition-local function that relies on K's rows being together."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.fixes.chain import drop_call, insert_before, receiver_of
from sparkpar_lint.fixes.model import SAFE, Fix
from sparkpar_lint.graph.forwarding import stale_partitioning
from sparkpar_lint.graph.partition_state import keyed_state
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx202_partitioned_state_without_partitioning import PARTITION_ROLES

_PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    "def per_user(batches):\n"
    "    for pdf in batches:\n"
    '        yield pdf.groupby("user", as_index=False)["amount"].sum()\n'
    'orders = spark.read.parquet("orders")\n'
)
_SCHEMA = '"user string, amount double"'


class KeyChangedAfterPartitioning(Rule):
    id = "SPX302"
    name = "key-changed-after-partitioning"
    severity = Severity.ERROR
    summary = "The partition key is rewritten after a hash repartition that a partition-local function relies on."
    fix_safety = SAFE
    VALID = [
        # DISTRIBUTE BY applies to the SELECT's output: the rows are distributed by the new values.
        Valid(
            _PRELUDE
            + 'orders.createOrReplaceTempView("orders")\n'
            + 'normalised = spark.sql("SELECT lower(user) AS user, amount FROM orders DISTRIBUTE BY user")\n'
            + "normalised.mapInPandas(per_user, "
            + _SCHEMA
            + ")\n"
        ),
        # The repartition comes after the change: rows are grouped by the new values.
        Valid(
            _PRELUDE
            + 'orders.withColumn("user", F.lower("user")).repartition(8, "user").mapInPandas(per_user, '
            + _SCHEMA
            + ")\n"
        ),
        # Other columns change; the key is forwarded unchanged.
        Valid(
            _PRELUDE
            + 'orders.repartition(8, "user").withColumn("amount", F.col("amount") * 2)'
            + '.select("user", "amount").mapInPandas(per_user, '
            + _SCHEMA
            + ")\n"
        ),
        # Spark's own keyed operators re-shuffle after the change: no partition-local function here.
        Valid(
            _PRELUDE
            + 'orders.repartition(8, "user").withColumn("user", F.lower("user")).groupBy("user").sum("amount")\n'
        ),
    ]
    INVALID = [
        # In SQL: DISTRIBUTE BY in the inner query, the key rewritten by the outer SELECT.
        Invalid(
            _PRELUDE
            + 'orders.createOrReplaceTempView("orders")\n'
            + 'normalised = spark.sql("SELECT lower(user) AS user, amount FROM (SELECT * FROM orders DISTRIBUTE BY user)")\n'
            + "normalised.mapInPandas(per_user, "
            + _SCHEMA
            + ")\n",
            line=8,
            column=24,
            related_lines=(8, 9),
        ),
        Invalid(
            _PRELUDE
            + "normalised = (\n"
            + '    orders.repartition(8, "user")\n'
            + '    .withColumn("user", F.lower(F.trim("user")))\n'
            + ")\n"
            + "normalised.mapInPandas(per_user, "
            + _SCHEMA
            + ")\n",
            line=9,
            column=5,
            related_lines=(8, 11),
            expected_fix=_PRELUDE
            + "normalised = (\n"
            + "    orders\n"
            + '    .withColumn("user", F.lower(F.trim("user")))\n'
            + ")\n"
            + 'normalised.repartition(8, "user").mapInPandas(per_user, '
            + _SCHEMA
            + ")\n",
        ),
        Invalid(
            _PRELUDE
            + 'by_user = orders.repartition(8, "user")\n'
            + 'by_user.select(F.col("user_id").alias("user"), "amount").mapInPandas(per_user, '
            + _SCHEMA
            + ")\n",
            line=8,
            column=8,
            related_lines=(7, 8),
            expected_fix=(
                _PRELUDE
                + "by_user = orders\n"
                + "(\n"
                + '    by_user.select(F.col("user_id").alias("user"), "amount")\n'
                + '    .repartition(8, "user")\n'
                + '    .mapInPandas(per_user, "user string, amount double")\n'
                + ")\n"
            ),
        ),
        # The repartitioned frame feeds another stage too: it stays, and the consumer gets its own.
        Invalid(
            _PRELUDE
            + 'by_user = orders.repartition(8, "user")\n'
            + 'by_user.write.parquet("copy")\n'
            + 'by_user.withColumn("user", F.upper("user")).mapInPandas(per_user, '
            + _SCHEMA
            + ")\n",
            line=9,
            column=8,
            related_lines=(7, 9),
            expected_fix=(
                _PRELUDE
                + 'by_user = orders.repartition(8, "user")\n'
                + 'by_user.write.parquet("copy")\n'
                + "(\n"
                + '    by_user.withColumn("user", F.upper("user"))\n'
                + '    .repartition(8, "user")\n'
                + '    .mapInPandas(per_user, "user string, amount double")\n'
                + ")\n"
            ),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            functions = [f for f in node.functions if f.role in PARTITION_ROLES]
            if not functions:
                continue
            stale = stale_partitioning(graph, node)
            if stale is None:
                continue
            partitioner, breaker, keys = stale
            relied = {s.key for f in functions for s in keyed_state(f)} & set(keys)
            if not relied:
                continue
            key = sorted(relied)[0]
            # Stages built from SQL have no call: name them by their SQL clause.
            partitions = "`DISTRIBUTE BY`" if partitioner.call is None else f"`{partitioner.method}`"
            changer = "the `SELECT`" if breaker.projection is not None else f"`{breaker.method}`"
            related = (
                RelatedLocation(partitioner.span, f"{partitions} hash-partitions by `{key}` here"),
                RelatedLocation(node.span, f"`{node.method}` relies on every `{key}` being in one partition"),
            )
            message = (
                f"{changer} rewrites `{key}` after the rows were hash-partitioned by it: rows "
                f"with equal new `{key}` values sit in different partitions, and `{node.method}` keeps "
                f"per-`{key}` state inside each partition. Move the {partitions} after the change"
            )
            yield self.finding(ctx, breaker.span, message, related=related, fix=_fix(graph, partitioner, node))


def _fix(graph: StageGraph, partitioner: StageNode, consumer: StageNode) -> Fix | None:
    """The same `repartition` right before the partition-local consumer, after every change.

    The original is dropped when the consumer is all it feeds; otherwise it stays for the others.
    """
    if partitioner.call is None or consumer.call is None or receiver_of(partitioner.call) is None:
        return None
    if receiver_of(consumer.call) is None:
        return None
    moved = insert_before("repartition", [a.deep_clone() for a in partitioner.call.args], skip_rdd=True)
    replacements = [(consumer.call, moved)]
    path = [partitioner, *(n for n in graph.upstream(consumer) if n.id > partitioner.id)]
    if all(len(graph.consumers(n)) == 1 for n in path):
        replacements.append((partitioner.call, drop_call))
    description = f"move `{partitioner.method}` after the key change, right before `{consumer.method}`"
    return Fix(SAFE, description, tuple(replacements))
