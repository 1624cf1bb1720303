"""SPX302 key-changed-after-partitioning: a DataFrame hash-partitioned by K, then K rewritten or
dropped, then a partition-local function that relies on K's rows being together."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent
from typing import TYPE_CHECKING

import libcst as cst

from sparkpar_lint.edits.chain import drop_call, insert_before, receiver_of
from sparkpar_lint.edits.code import string
from sparkpar_lint.edits.model import SAFE, Fix, Replacement
from sparkpar_lint.graph.forwarding import changed_columns, stale_partitioning
from sparkpar_lint.graph.partition_state import keyed_state
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx202_partitioned_state_without_partitioning import PARTITION_ROLES
from sparkpar_lint.sql.site import SqlSite, site_of

if TYPE_CHECKING:  # sqlglot loads only with SQL to read
    from sqlglot.tokens import TokenType


class KeyChangedAfterPartitioning(Rule):
    id = "SPX302"
    name = "key-changed-after-partitioning"
    severity = Severity.ERROR
    summary = "The partition key is rewritten after a hash repartition that a partition-local function relies on."
    fix_safety = SAFE
    fix_needs = "needs both the partitioning call and the consumer as method calls in this module"
    VALID = [
        # DISTRIBUTE BY applies to the SELECT's output: the rows are distributed by the new values.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.createOrReplaceTempView("orders")
                normalised = spark.sql("SELECT lower(user) AS user, amount FROM orders DISTRIBUTE BY user")
                normalised.mapInPandas(per_user, "user string, amount double")
                """)
        ),
        # The repartition comes after the change: rows are grouped by the new values.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.withColumn("user", F.lower("user")).repartition(8, "user").mapInPandas(per_user, "user string, amount double")
                """)
        ),
        # Other columns change; the key is forwarded unchanged.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.repartition(8, "user").withColumn("amount", F.col("amount") * 2).select("user", "amount").mapInPandas(per_user, "user string, amount double")
                """)
        ),
        # Spark's own keyed operators re-shuffle after the change: no partition-local function here.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.repartition(8, "user").withColumn("user", F.lower("user")).groupBy("user").sum("amount")
                """)
        ),
    ]
    INVALID = [
        # In SQL: DISTRIBUTE BY in the inner query, the key rewritten by the outer SELECT. The
        # consumer repartitions by the new values; the clause, feeding nothing else, goes.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.createOrReplaceTempView("orders")
                normalised = spark.sql("SELECT lower(user) AS user, amount FROM (SELECT * FROM orders DISTRIBUTE BY user)")
                normalised.mapInPandas(per_user, "user string, amount double")
                """),
            line=8,
            column=24,
            related_lines=(8, 9),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def per_user(batches):
                                 for pdf in batches:
                                     yield pdf.groupby("user", as_index=False)["amount"].sum()
                             orders = spark.read.parquet("orders")
                             orders.createOrReplaceTempView("orders")
                             normalised = spark.sql("SELECT lower(user) AS user, amount FROM (SELECT * FROM orders)")
                             normalised.repartition("user").mapInPandas(per_user, "user string, amount double")
                             """),
        ),
        # The same SQL read twice: the clause stays for the other reader.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.createOrReplaceTempView("orders")
                normalised = spark.sql("SELECT lower(user) AS user, amount FROM (SELECT * FROM orders DISTRIBUTE BY user)")
                normalised.write.parquet("copy")
                normalised.mapInPandas(per_user, "user string, amount double")
                """),
            line=8,
            column=24,
            related_lines=(8, 10),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def per_user(batches):
                                 for pdf in batches:
                                     yield pdf.groupby("user", as_index=False)["amount"].sum()
                             orders = spark.read.parquet("orders")
                             orders.createOrReplaceTempView("orders")
                             normalised = spark.sql("SELECT lower(user) AS user, amount FROM (SELECT * FROM orders DISTRIBUTE BY user)")
                             normalised.write.parquet("copy")
                             normalised.repartition("user").mapInPandas(per_user, "user string, amount double")
                             """),
        ),
        # The SELECT leaves the key out: no column of that name to repartition by.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                orders.createOrReplaceTempView("orders")
                totals = spark.sql("SELECT amount FROM (SELECT * FROM orders DISTRIBUTE BY user)")
                totals.mapInPandas(per_user, "user string, amount double")
                """),
            line=8,
            column=20,
            related_lines=(8, 9),
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                normalised = (
                    orders.repartition(8, "user")
                    .withColumn("user", F.lower(F.trim("user")))
                )
                normalised.mapInPandas(per_user, "user string, amount double")
                """),
            line=9,
            column=5,
            related_lines=(8, 11),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def per_user(batches):
                                 for pdf in batches:
                                     yield pdf.groupby("user", as_index=False)["amount"].sum()
                             orders = spark.read.parquet("orders")
                             normalised = (
                                 orders
                                 .withColumn("user", F.lower(F.trim("user")))
                             )
                             normalised.repartition(8, "user").mapInPandas(per_user, "user string, amount double")
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                by_user = orders.repartition(8, "user")
                by_user.select(F.col("user_id").alias("user"), "amount").mapInPandas(per_user, "user string, amount double")
                """),
            line=8,
            column=8,
            related_lines=(7, 8),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def per_user(batches):
                                 for pdf in batches:
                                     yield pdf.groupby("user", as_index=False)["amount"].sum()
                             orders = spark.read.parquet("orders")
                             by_user = orders
                             (
                                 by_user.select(F.col("user_id").alias("user"), "amount")
                                 .repartition(8, "user")
                                 .mapInPandas(per_user, "user string, amount double")
                             )
                             """),
        ),
        # The repartitioned frame feeds another stage too: it stays, and the consumer gets its own.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                orders = spark.read.parquet("orders")
                by_user = orders.repartition(8, "user")
                by_user.write.parquet("copy")
                by_user.withColumn("user", F.upper("user")).mapInPandas(per_user, "user string, amount double")
                """),
            line=9,
            column=8,
            related_lines=(7, 9),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def per_user(batches):
                                 for pdf in batches:
                                     yield pdf.groupby("user", as_index=False)["amount"].sum()
                             orders = spark.read.parquet("orders")
                             by_user = orders.repartition(8, "user")
                             by_user.write.parquet("copy")
                             (
                                 by_user.withColumn("user", F.upper("user"))
                                 .repartition(8, "user")
                                 .mapInPandas(per_user, "user string, amount double")
                             )
                             """),
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


def _fix(graph: StageGraph, partitioner: StageNode, consumer: StageNode) -> Fix | NoFix | None:
    """The same `repartition` right before the partition-local consumer, after every change.

    The original is dropped when the consumer is all it feeds; otherwise it stays for the others.
    """
    if partitioner.call is None and partitioner.sql is not None:
        return _distribute_fix(graph, partitioner, consumer)
    if partitioner.call is None or consumer.call is None or receiver_of(partitioner.call) is None:
        return None
    if receiver_of(consumer.call) is None:
        return None
    moved = insert_before("repartition", [a.deep_clone() for a in partitioner.call.args], skip_rdd=True)
    replacements: list[tuple[cst.CSTNode, Replacement]] = [(consumer.call, moved)]
    path = [partitioner, *(n for n in graph.upstream(consumer) if n.id > partitioner.id)]
    if all(len(graph.consumers(n)) == 1 for n in path):
        replacements.append((partitioner.call, drop_call))
    description = f"move `{partitioner.method}` after the key change, right before `{consumer.method}`"
    return Fix(SAFE, description, tuple(replacements))


def _distribute_fix(graph: StageGraph, partitioner: StageNode, consumer: StageNode) -> Fix | NoFix:
    """`DISTRIBUTE BY k` under a SELECT that rewrites `k` -> `.repartition("k")` right before the
    consumer, the clause removed when the consumer is all its rows feed (the same partitioning
    by the new values that the fixed twin's outer `DISTRIBUTE BY` gives)."""
    if consumer.call is None or receiver_of(consumer.call) is None:
        return NoFix("the consumer is not a method call in this module to put `repartition` before")
    if partitioner.columns.calls or not partitioner.keys:
        return NoFix("`DISTRIBUTE BY` an expression: the key to repartition by after the change is the author's")
    path = [partitioner, *(n for n in graph.upstream(consumer) if n.id > partitioner.id)]
    for node in path[1:]:
        changed = changed_columns(node, partitioner.keys)
        kept = node.projection.defined | node.projection.passed if node.projection is not None else set()
        if changed and (node.method not in _KEEPS_NAME or any(k.lower() not in kept for k in changed)):
            # Dropped or renamed: no column of that name left to repartition by.
            return NoFix("a step drops or renames the key: which column to repartition by is the author's")
    moved = insert_before("repartition", [string(k) for k in partitioner.keys], skip_rdd=True)
    replacements: list[tuple[cst.CSTNode, Replacement]] = [(consumer.call, moved)]
    if all(len(graph.consumers(n)) == 1 for n in path):
        site = site_of(partitioner.sql)
        removed = _without_distribute(site) if site is not None else None
        if removed is not None:
            replacements.append(removed)
    description = f"repartition by the new `{', '.join(partitioner.keys)}` right before `{consumer.method}`"
    if len(replacements) > 1:
        description += " (the earlier `DISTRIBUTE BY` removed)"
    return Fix(SAFE, description, tuple(replacements))


# Stages whose rewrite of a key keeps a column of its name (a SELECT naming its value, withColumn).
_KEEPS_NAME = frozenset({"select", "withColumn", "withColumns"})


def _key_tokens() -> frozenset[TokenType]:
    from sqlglot.tokens import TokenType

    return frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.DOT, TokenType.COMMA})


def _without_distribute(site: SqlSite) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """(literal, literal without the `DISTRIBUTE BY` clause) where the text allows, else None.
    Not for CLUSTER BY or a SELECT that also sorts (SORT BY) its partitions."""
    from sqlglot import exp
    from sqlglot.tokens import TokenType

    from sparkpar_lint.sql.literal_edit import rewrite

    clause, parsed = site.expression, site.parsed
    select = clause.parent
    if site.literal is None or not parsed.rewritable or not isinstance(clause, exp.Distribute):
        return None
    if not isinstance(select, exp.Select) or select.args.get("sort") is not None:
        return None
    where = parsed.clause(select, TokenType.DISTRIBUTE_BY)
    tokens, depths = parsed.tokens, parsed.depths
    index = next((i for i, t in enumerate(tokens) if where and t.start == where[0]), None)
    keys = [k.this if isinstance(k, exp.Ordered) else k for k in clause.expressions]
    if not index or not all(isinstance(k, exp.Column) for k in keys):
        return None
    # The keys: names, dots and commas at the clause's depth, up to what closes the query.
    last = index
    while last + 1 < len(tokens) and depths[last + 1] == depths[index] and tokens[last + 1].token_type in _key_tokens():
        last += 1
    if last == index or (last + 1 < len(tokens) and depths[last + 1] == depths[index]):
        return None  # something follows the keys in the same query: leave the text alone
    start, end = tokens[index - 1].end + 1, tokens[last].end + 1
    literal = rewrite(site.literal, parsed.text, [(start, end, "")])
    return (site.literal, literal) if not isinstance(literal, NoFix) else None
