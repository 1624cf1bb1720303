"""SPX105 partitioning-dependent-value: ids and random values that depend on how rows are split
into partitions (`monotonically_increasing_id`, `spark_partition_id`, `rand`, `zipWithIndex`, ...).

"Used as a key or id" (error) means: the value is itself a key of the operator it appears in
(`groupBy(spark_partition_id())`, `orderBy(rand())`), or the column it is stored in is later a key
(join, groupBy, repartition/partitionBy, dropDuplicates subset, window partitionBy/orderBy), or the
column is named like an id (`id`, `*_id`, `*Id`, `*_key`, `*_sk`) and the rows were shuffled before
it was assigned. For `zipWithIndex`/`zipWithUniqueId`: a shuffle before or after the index.
Anything else is a warning.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.edits.chain import insert_before
from sparkpar_lint.edits.code import column_function, column_name, positional_values, string
from sparkpar_lint.edits.model import UNSAFE, Fix, Imports
from sparkpar_lint.graph.batching import batches_rows_only
from sparkpar_lint.graph.made_up_rows import made_up_above
from sparkpar_lint.graph.order_consumers import contains
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.fixers.ordering import whole_row, window_class
from sparkpar_lint.rules.fixers.row_hash import STAR_STAGES, copy_numbered_hash, hashed_draw, hashed_split, row_hash
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN
from sparkpar_lint.rules.fixers.sql import random_tie_fix
from sparkpar_lint.rules.fixers.tie_breaker import typed_columns
from sparkpar_lint.rules.spx401_single_partition_window import small_input
from sparkpar_lint.sql.site import site_of

ID_NAME = re.compile(r"(^|_)(id|key|sk|uid)$|[a-z]Id$")
_NAMING_METHODS = frozenset({"alias", "name", "as_"})


class PartitioningDependentValue(Rule):
    id = "SPX105"
    name = "partitioning-dependent-value"
    severity = Severity.ERROR
    summary = "A value that depends on the partitioning (row ids, partition ids, random numbers)."
    fix_safety = UNSAFE
    fix_needs = "needs the columns that identify a row, to hash them instead"
    VALID = [
        # A numbering stored in a column and dropped on the next line: nothing ever reads it.
        Valid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, functions as F

                spark = SparkSession.builder.getOrCreate()
                picks = spark.read.parquet("picks").repartition(8)
                picks = picks.withColumn("n", F.monotonically_increasing_id()).drop("n").withColumn("copy", F.col("idx"))
                picks.write.parquet("out")
                """
            )
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                users = spark.read.parquet("events").select("user").distinct()
                dim = users.select("user", F.xxhash64("user").alias("user_sk"))
                spark.read.parquet("events").join(dim, "user")
                """)
        ),
        # A local function that happens to be called `rand` is not Spark's.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def rand():
                    return 4
                spark.read.parquet("e").withColumn("r", F.lit(rand()))
                """)
        ),
        Valid(
            textwrap.dedent("""\
                import random
                rows = [random.random() for _ in range(3)]
                print(sorted(rows))
                """)
        ),
        # Synthetic values meant to differ: nothing filters, sorts or keys on them.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.range(1000).withColumn("reading", F.rand() * 10).write.parquet("synthetic")
                """)
        ),
        # Noise added to columns named at run time, then written: synthetic data, drawn once.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                noisy = spark.read.table("readings")
                for i in range(3):
                    noisy = noisy.withColumn(f"probe_{i}", F.col(f"probe_{i}") + F.rand())
                noisy.write.mode("overwrite").saveAsTable("readings_noisy")
                """)
        ),
        # Looking at the partition layout: the ids are only shown.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("e").repartition(4, "day").withColumn("pid", F.spark_partition_id()).groupBy("pid").count().show()
                """)
        ),
        # Numbered right after a sort: partitions and positions follow the sort.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.sparkContext.parallelize([(2, "b"), (1, "a")]).sortByKey().zipWithIndex().collect()
                """)
        ),
        # A salted two-stage aggregation: partial sums per salt, then the sum without it.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                salted = spark.read.parquet("t").withColumn("salt", (F.rand() * 16).cast("int"))
                partial = salted.groupBy("user", "salt").agg(F.sum("amount").alias("amount"))
                partial.groupBy("user").agg(F.sum("amount").alias("amount")).write.parquet("totals")
                """)
        ),
        # A skew lesson: the salt only spreads rows over partitions, whose sizes are then printed.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                salted = spark.read.parquet("t").withColumn("salt", (F.rand() * 8).cast("int"))
                spread = salted.repartition(F.concat("city", F.lit("_"), "salt"))
                print(spread.rdd.glom().map(len).collect())
                spread.count()
                """)
        ),
        # Partition ids that only batch rows for a pandas function working row by row (the id
        # dropped), or one that only counts its rows: the grouping splits the work, nothing else.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import pandas as pd
                def shout(pdf):
                    return pdf.apply(lambda row: row.str.upper(), axis=1).drop(columns=["pid"])
                def blanks(pdf):
                    return pd.DataFrame({"name": ["?" for _ in range(len(pdf))]})
                batched = spark.read.parquet("t").withColumn("pid", F.spark_partition_id()).groupBy("pid")
                batched.applyInPandas(shout, "name string").write.parquet("loud")
                spark.range(9).withColumn("pid", F.spark_partition_id()).groupBy("pid").applyInPandas(blanks, "name string")
                """)
        ),
        # sparkpar's own sequential-semantics column, numbered right at the source before any shuffle.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                visits = spark.read.parquet("visits").withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                visits.groupBy("user").agg(F.min_by("page", F.struct("_sparkpar_seq", "page")))
                """)
        ),
        # Seeded samples, and an unseeded one that is only previewed.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                df = spark.read.parquet("e")
                train, test = df.randomSplit([0.8, 0.2], seed=7)
                df.sample(False, 0.1, 42).write.parquet("s")
                df.sample(0.01).show()
                """)
        ),
        # In SQL: a random column nothing filters, sorts or keys on is synthetic data.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.sql("SELECT *, rand() * 10 AS noise FROM readings").write.parquet("synthetic")
                """)
        ),
    ]
    INVALID = [
        # Near miss of the run-time-named noise: a filter reads the noisy column.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                noisy = spark.read.table("readings")
                for i in range(3):
                    noisy = noisy.withColumn(f"probe_{i}", F.col(f"probe_{i}") + F.rand())
                noisy.filter(F.col("probe_0") > 0.5).write.mode("overwrite").saveAsTable("readings_noisy")
                """),
            line=5,
            column=65,
            severity=Severity.WARNING,
            # The noise becomes a uniform value hashed from the row (the long line broken).
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                noisy = spark.read.table("readings")
                for i in range(3):
                    noisy = noisy.withColumn(
                        f"probe_{i}",
                        F.col(f"probe_{i}") + (F.pmod(F.xxhash64("*"), 2**53) / 2**53),
                    )
                noisy.filter(F.col("probe_0") > 0.5).write.mode("overwrite").saveAsTable("readings_noisy")
                """),
        ),
        # The near miss: an average of the salted partial sums depends on how the salt split them.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                salted = spark.read.parquet("t").withColumn("salt", (F.rand() * 16).cast("int"))
                partial = salted.groupBy("user", "salt").agg(F.sum("amount").alias("amount"))
                partial.groupBy("user").agg(F.avg("amount").alias("amount")).write.parquet("totals")
                """),
            line=3,
            column=53,
            related_lines=(4,),
            # A salt hashed from the row splits each user's rows the same way under any partitioning.
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                salted = (
                    spark.read.parquet("t")
                    .withColumn("salt", ((F.pmod(F.xxhash64("*"), 2**53) / 2**53) * 16).cast("int"))
                )
                partial = salted.groupBy("user", "salt").agg(F.sum("amount").alias("amount"))
                partial.groupBy("user").agg(F.avg("amount").alias("amount")).write.parquet("totals")
                """),
        ),
        # The near miss: the rows are numbered within each partition's group.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import pandas as pd
                def numbered(pdf):
                    return pd.DataFrame({"n": [i for i in range(len(pdf))]})
                spark.range(9).withColumn("pid", F.spark_partition_id()).groupBy("pid").applyInPandas(numbered, "n long")
                """),
            line=6,
            column=33,
            related_lines=(6,),
            expected_fix=None,
        ),
        # The near miss: the salted rows are written, so the random salt is kept data.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                salted = spark.read.parquet("t").withColumn("salt", (F.rand() * 8).cast("int"))
                salted.repartition("city", "salt").write.parquet("spread")
                """),
            line=3,
            column=53,
            related_lines=(4,),
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                salted = (
                    spark.read.parquet("t")
                    .withColumn("salt", ((F.pmod(F.xxhash64("*"), 2**53) / 2**53) * 8).cast("int"))
                )
                salted.repartition("city", "salt").write.parquet("spread")
                """),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                users = spark.read.parquet("events").select("user").distinct()
                dim = users.withColumn("user_sk", F.monotonically_increasing_id())
                spark.read.parquet("events").join(dim, "user")
                """),
            line=4,
            column=34,
            # The rows are distinct users: the id becomes a hash of the user.
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                users = spark.read.parquet("events").select("user").distinct()
                dim = users.withColumn("user_sk", F.xxhash64("user"))
                spark.read.parquet("events").join(dim, "user")
                """),
        ),
        # One row per group: the group's keys identify it.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                latest = spark.read.parquet("events").groupBy("user", "day").agg(F.max("ts").alias("ts"))
                keyed = latest.withColumn("visit_id", F.monotonically_increasing_id())
                keyed.join(spark.read.parquet("pages"), "visit_id")
                """),
            line=4,
            column=38,
            related_lines=(5,),
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                latest = spark.read.parquet("events").groupBy("user", "day").agg(F.max("ts").alias("ts"))
                keyed = latest.withColumn("visit_id", F.xxhash64("user", "day"))
                keyed.join(spark.read.parquet("pages"), "visit_id")
                """),
        ),
        # No evident key, but a few literal rows were just sorted: number them in that order.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.createDataFrame([(2, 1), (1, 7)], ["ts", "seq"]).orderBy("ts", "seq")
                numbered = events.withColumn("event_id", F.monotonically_increasing_id())
                """),
            line=4,
            column=41,
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.createDataFrame([(2, 1), (1, 7)], ["ts", "seq"]).orderBy("ts", "seq")
                numbered = events.withColumn("event_id", F.row_number().over(Window.orderBy("ts", "seq")))
                """),
        ),
        # The near miss: many sorted rows from a file; one task numbering them all is SPX401's
        # finding, so no fix.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events").orderBy("ts", "seq")
                numbered = events.withColumn("event_id", F.monotonically_increasing_id())
                """),
            line=4,
            column=41,
            expected_fix=None,
        ),
        # No key and no sort, but a few literal rows: number them in the order of their content.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                tiers = spark.createDataFrame([("gold", 3), ("silver", 1)], "tier string, rank int")
                dim = tiers.distinct().withColumn("tier_sk", F.monotonically_increasing_id())
                """),
            line=4,
            column=45,
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                tiers = spark.createDataFrame([("gold", 3), ("silver", 1)], "tier string, rank int")
                dim = tiers.distinct().withColumn("tier_sk", F.row_number().over(Window.orderBy("tier", "rank")))
                """),
        ),
        # Many distinct rows from a table: numbering them would take one task; a hash of the row does not.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                tiers = spark.read.table("tiers").distinct()
                dim = tiers.withColumn("tier_sk", F.monotonically_increasing_id())
                """),
            line=4,
            column=34,
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                tiers = spark.read.table("tiers").distinct()
                dim = tiers.withColumn("tier_sk", F.xxhash64("*"))
                """),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                sample = events.withColumn("r", F.rand(seed=7)).filter("r < 0.1")
                """),
            line=4,
            column=32,
            severity=Severity.WARNING,
            # The sample follows each row's hash (and the seed): the same rows under any partitioning.
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                sample = events.withColumn("r", F.pmod(F.xxhash64("*", F.lit(7)), 2**53) / 2**53).filter("r < 0.1")
                """),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql.functions import monotonically_increasing_id as row_id
                def with_ids(df):
                    ids = df.withColumn("event_id", row_id())
                    return ids.join(ids.groupBy("event_id").count(), "event_id")
                """),
            line=3,
            column=36,
            # Nothing says which columns identify a row of `df`.
            expected_fix=None,
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                lines = spark.sparkContext.textFile("t").distinct()
                numbered = lines.zipWithIndex()
                """),
            line=4,
            column=17,
            # After a shuffle the order means nothing: number the values in one order of their own.
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                lines = spark.sparkContext.textFile("t").distinct()
                numbered = lines.sortBy(repr).zipWithIndex()
                """),
        ),
        # An unseeded split: the model trained on it, and its accuracy, change on every run.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                train, test = spark.read.parquet("labelled").randomSplit([0.8, 0.2])
                """),
            line=3,
            column=45,
            severity=Severity.WARNING,
        ),
        # The same constructs in SQL text: a random sample in WHERE, ...
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.sql("SELECT * FROM events WHERE rand() < 0.1").write.parquet("sample")
                """),
            line=3,
            column=38,
            severity=Severity.WARNING,
        ),
        # ... a random DISTRIBUTE BY key (a retried task sends its rows elsewhere: lost or doubled rows) ...
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.sql("SELECT * FROM events DISTRIBUTE BY rand()").write.parquet("spread")
                """),
            line=3,
            column=46,
            related_lines=(3,),
        ),
        # ... a random tie-breaker in ORDER BY ...
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.sql("SELECT * FROM events ORDER BY ts, rand() LIMIT 10").write.parquet("first")
                """),
            line=3,
            column=45,
            related_lines=(3,),
        ),
        # ... and a uuid() id, made in a subquery, then joined on.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                SELECT * FROM (SELECT *, uuid() AS visit_id FROM visits) v
                JOIN pages p ON v.visit_id = p.visit_id
                \"\"\")
                """),
            line=4,
            column=25,
            related_lines=(5,),
        ),
        # Seeded test data written for others to read: reported, at medium confidence only, since
        # the same input and configuration draw the same values (tests/test_confidence.py).
        Invalid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, functions as F

                spark = SparkSession.builder.getOrCreate()
                readings = spark.range(500).withColumn("celsius", F.randn(3) * 4 + 12)
                readings.write.mode("overwrite").parquet("test_data/readings")
                """
            ),
            line=4,
            column=50,
            severity=Severity.WARNING,
        ),
        # A seeded random column, meant to repeat: it does only for the same partitions and row order.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                sample = spark.range(10).withColumn("score", F.rand(seed=42))
                sample.show()
                """),
            line=3,
            column=45,
            severity=Severity.WARNING,
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                sample = spark.range(10).withColumn("score", F.pmod(F.xxhash64("*", F.lit(42)), 2**53) / 2**53)
                sample.show()
                """),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            for call in node.columns.calls:
                if call.spec is not None and call.spec.partitioning_dependent:
                    if _sequence_column(graph, node, call):
                        continue
                    finding = self._column_finding(ctx, graph, node, call)
                    if finding is not None:
                        yield finding
            if node.spec is not None and node.spec.assigns_ids and node.input_order.kind != "total":
                # Right after a sort, partitions and positions follow the sort: the numbering is the sort's.
                yield self._operator_finding(ctx, graph, node)
            if node.method in _SAMPLERS and node.spec is not None and node.spec.partitioning_dependent:
                if not _seeded(node) and not _only_previewed(graph, node):
                    yield self._unseeded_finding(ctx, node)

    def _unseeded_finding(self, ctx: RuleContext, node: StageNode) -> Finding:
        message = (
            f"`{node.method}` with no seed draws a different subset on every run and on every task "
            "retry, so everything computed from it (a model, its accuracy, a written sample) changes; "
            "pass a seed (it is still tied to the input's partitioning, so keep that fixed too)"
        )
        why = (
            f"a seed fixes `{node.method}`'s draw for one partitioning only; a split derived from each "
            "row (`xxhash64(<id>) % 10 < 8`) needs the id column, which is the author's to choose"
        )
        fix = hashed_split(ctx.graph, node, ctx.source) if node.method == "randomSplit" else NoFix(why)
        return self.finding(ctx, node.span, message, severity=Severity.WARNING, fix=fix)

    def _column_finding(self, ctx: RuleContext, graph: StageGraph, node: StageNode, call: ColumnCall) -> Finding | None:
        if _set_once(call):
            return None  # `SET v = uuid()`: one value, drawn once per run of the statement, no rows
        name = _bound_name(node, call)
        if call.function not in _RANDOM_VALUES and _only_looked_at(graph, node, 0):
            return None  # a partition id shown or counted to look at the layout: nothing is kept
        key_user = None
        if _is_key_operator(node):
            key_user = node
        elif name is not None:
            key_user = next((d for d in graph.downstream(node) if name in _key_columns(d)), None)
        if name is not None and _dropped_unread(graph, node, name):
            return None  # `withColumn("rn", ...)` then `.drop("rn")`: no stage ever reads the value
        if key_user is not None and name is not None and _salt_aggregated_away(graph, key_user, name):
            return None  # a two-stage (salted) aggregation: the totals do not depend on the salt
        if key_user is not None and name is not None and _salt_only_places_rows(graph, node, call, name):
            return None  # a salt that only spreads rows out, then only the layout is looked at
        if key_user is not None and name is not None and _only_batches_rows(graph, node, name):
            return None  # groups that only batch rows for a row-by-row pandas function
        shuffle = next((u for u in graph.upstream(node) if u.is_shuffle), None)
        id_like = name is not None and ID_NAME.search(name) is not None and shuffle is not None
        related: tuple[RelatedLocation, ...] = ()
        advice = "derive ids from the data (hash the key columns, or `row_number` over a deterministic order)"
        outcomes: str | None = None
        if key_user is not None:
            operator = _operator_word(key_user)
            reason = f"and {operator} uses it as a key"
            related = (RelatedLocation(key_user.span, f"{operator} keys on it"),)
            if key_user.method == "join" and made_up_above(graph, key_user):
                # Generated rows zipped by a made-up number: another run pairs them otherwise,
                # which is another draw of the same synthetic data, not real rows mispaired.
                outcomes = _MADE_UP_PAIRING
        elif id_like and shuffle is not None:  # id_like holds only with a shuffle
            reason = f"and `{name}` is an id assigned after `{shuffle.method}` shuffled the rows"
            related = (RelatedLocation(shuffle.span, f"`{shuffle.method}` shuffles the rows"),)
        elif _seeded_value(call):
            reason = "so its seed repeats the values only for the same partitions holding rows in the same order"
            advice = "where the values must repeat, derive them from the row (a hash of its key columns)"
            if _value_harmless(graph, node, call, name):
                # A value column nothing keys, filters or sorts on (synthetic data): on the same
                # input and configuration the seed repeats it; that the partitioning changes
                # between runs, and that anyone needs the values to repeat then, is assumed.
                outcomes = _SEEDED_REPEAT
        elif _value_harmless(graph, node, call, name):
            return None
        else:
            reason = "so results built on it change from run to run"
        message = f"`{call.function}` depends on how rows are split into partitions, {reason}; {advice}"
        severity = Severity.ERROR if key_user is not None or id_like else Severity.WARNING
        if severity is Severity.ERROR or call.function == "monotonically_increasing_id":
            fix = _hashed_id(graph, node, call)
        elif _seeded_value(call) and call.function != "rand":
            fix = NoFix("which columns identify a row is the author's choice: hash them where the values must repeat")
        else:
            fix = hashed_draw(node, call)
        if call.from_sql and key_user is not None and call.function in _RANDOM_VALUES:
            fix = random_tie_fix(site_of(call.sql)) or fix  # a draw that only breaks a sort's ties
        elif call.from_sql and not isinstance(fix, NoFix):
            fix = _SQL_UNFIXED
        return self.finding(ctx, call.span, message, severity=severity, related=related, fix=fix, outcomes=outcomes)

    def _operator_finding(self, ctx: RuleContext, graph: StageGraph, node: StageNode) -> Finding:
        shuffle = next((u for u in graph.upstream(node) if u.is_shuffle), None)
        shuffle = shuffle or next((d for d in graph.downstream(node) if d.is_shuffle), None)
        message = (
            f"`{node.method}` numbers rows by partition and position, which change with the "
            "partitioning"
            + (f" (`{shuffle.method}` shuffles them)" if shuffle else "")
            + "; key rows by their data instead"
        )
        related = (RelatedLocation(shuffle.span, f"`{shuffle.method}` shuffles"),) if shuffle else ()
        severity = Severity.ERROR if shuffle is not None else Severity.WARNING
        return self.finding(
            ctx, node.span, message, severity=severity, related=related, fix=_sorted_numbering(graph, node)
        )


# Random subsets and where their seed goes: (positional index of the seed, or with a leading
# `withReplacement` bool, that index + 1).
_SAMPLERS = {"sample": 1, "randomSplit": 1, "sampleBy": 2}
_PREVIEWS = frozenset({"show", "count", "display"})


def _set_once(call: ColumnCall) -> bool:
    """A SQL variable assignment (`SET v_id = CONCAT('TX_', uuid())` in a script or procedure): the
    value is computed once, with no table and so no rows to split, and kept in the variable; what
    reads the variable reads that one value. A new id per run of the statement is what it asks for."""
    expression = getattr(call.sql, "expression", None) if call.from_sql else None
    if expression is None:
        return False
    from sqlglot import exp  # only with SQL read: the query was parsed

    return expression.find_ancestor(exp.Set) is not None


def _seeded(node: StageNode) -> bool:
    if "seed" in node.keywords or node.call is None:
        return "seed" in node.keywords
    positional = [a.value for a in node.call.args if a.keyword is None]
    index = _SAMPLERS[node.method]
    if node.method == "sample" and (
        node.receiver == "RDD"
        or (positional and isinstance(positional[0], cst.Name) and positional[0].value in ("True", "False"))
    ):
        index += 1  # sample(withReplacement, fraction, seed)
    return len(positional) > index


_MADE_UP_PAIRING = (
    "it matters which row pairs with which, though every row joined here is made up (`spark.range`, "
    "literal rows, a rate stream, or a file this module wrote from them)"
)
_SEEDED_REPEAT = "the values must repeat on a run whose input has another partition count or row order"
_RANDOM_VALUES = frozenset({"rand", "randn", "uuid", "shuffle"})
# Operators whose result depends on a column's values picking or ordering rows.
_ROW_PICKERS = frozenset({"filter", "where", "orderBy", "sort", "sortWithinPartitions", "limit", "sample"})


def _seeded_value(call: ColumnCall) -> bool:
    """`rand(42)`, `randn(seed=7)`: the seed says the values are meant to repeat, but Spark seeds
    each partition with seed + partition index and draws row by row, so another partition count
    or row order draws other values."""
    if call.function not in _RANDOM_VALUES or call.call is None:
        return False
    args = call.call.args
    position = 1 if call.function == "shuffle" else 0  # shuffle(column, seed)
    return len(args) > position or any(a.keyword is not None and a.keyword.value == "seed" for a in args)


_LOOKS = frozenset({"show", "display", "printSchema", "explain", "describe", "summary", "count"})


def _value_harmless(graph: StageGraph, node: StageNode, call: ColumnCall, name: str | None) -> bool:
    """Not a key, not an id: a random value column that no filter or sort reads (synthetic data,
    meant to differ), or a partition id / row id that is only looked at (a partitioning lesson)."""
    if node.method in _ROW_PICKERS or call.function not in _RANDOM_VALUES:
        return False
    if name is None:
        # A column named at run time (`withColumn(f"sensor_{i}", ...)`): harmless only while
        # nothing downstream filters, sorts or keys on any column.
        return node.method == "withColumn" and not any(
            d.method in _ROW_PICKERS or _is_key_operator(d) for d in graph.downstream(node)
        )
    return not any(d.method in _ROW_PICKERS and name in _mentioned(d) for d in graph.downstream(node))


def _dropped_unread(graph: StageGraph, node: StageNode, name: str) -> bool:
    """Every stage reading `node`'s rows drops the column `name` by its literal name: the value
    is gone before anything reads it."""
    consumers = graph.consumers(node)
    return bool(consumers) and all(
        c.method == "drop" and c.call is not None and any(name in _literals(a.value) for a in c.call.args)
        for c in consumers
    )


_SUMMABLE = frozenset({"sum", "min", "max", "count"})


def _salt_aggregated_away(graph: StageGraph, grouping: StageNode, salt: str) -> bool:
    """`groupBy(k, salt).agg(sum)` then `groupBy(k).agg(sum)`: a sum of partial sums (or a min of
    minima, a max of maxima) is the same whatever rows the salt put together."""
    if grouping.method not in ("groupBy", "groupby") or salt not in grouping.keys:
        return False
    partial_aggregates = graph.consumers(grouping)
    if len(partial_aggregates) != 1:
        return False
    first = partial_aggregates[0]
    if not _aggregates_within(first, _SUMMABLE):
        return False
    for later in graph.downstream(first):
        if later.method in ("groupBy", "groupby"):
            keys = set(later.keys)
            if salt in keys or not keys or not keys <= set(grouping.keys):
                return False
            final = graph.consumers(later)
            return len(final) == 1 and _aggregates_within(final[0], frozenset({"sum", "min", "max"}))
        if salt in _mentioned(later):
            return False
    return False


_PLACEMENT = frozenset({"repartition", "repartitionByRange"})


def _salt_only_places_rows(graph: StageGraph, node: StageNode, call: ColumnCall, salt: str) -> bool:
    """A random salt read only by repartitions (placement, never content) whose rows are then only
    counted, shown or measured per partition (a skew lesson): no kept value depends on it."""
    if call.function not in _RANDOM_VALUES or node.method in _ROW_PICKERS:
        return False
    readers = [d for d in graph.downstream(node) if salt in _mentioned(d) or salt in _key_columns(d)]
    return bool(readers) and all(r.method in _PLACEMENT and _layout_only(graph, r, 0) for r in readers)


_GROUPED_MAPS = frozenset({"applyInPandas", "apply", "applyInArrow"})


def _only_batches_rows(graph: StageGraph, node: StageNode, column: str) -> bool:
    """`groupBy(<partition id>).applyInPandas(f)` where f returns rows made one input row at a
    time (the id dropped) or only counts its rows: the grouping splits the work, nothing more."""
    readers = [d for d in graph.downstream(node) if column in _mentioned(d) or column in _key_columns(d)]
    if not readers:
        return False
    for grouping in readers:
        consumers = graph.consumers(grouping)
        if grouping.method not in ("groupBy", "groupby") or not consumers:
            return False
        for consumer in consumers:
            if consumer.method not in _GROUPED_MAPS or not consumer.functions:
                return False
            if not all(batches_rows_only(f.node, column) for f in consumer.functions):
                return False
    return True


def _feeds_grouped_map(graph: StageGraph, node: StageNode, column: str) -> bool:
    """A `groupBy(<column>)` downstream hands its groups to a pandas/arrow function."""
    return any(
        grouping.method in ("groupBy", "groupby")
        and column in _key_columns(grouping)
        and any(c.method in _GROUPED_MAPS for c in graph.consumers(grouping))
        for grouping in graph.downstream(node)
    )


def _layout_only(graph: StageGraph, node: StageNode, depth: int) -> bool:
    """Every path from `node` shows or counts rows, or measures partitions (`rdd.glom().map(len)`,
    `getNumPartitions`): nothing reads a row's values."""
    consumers = graph.consumers(node)
    if not consumers or depth > 20:
        return False
    for consumer in consumers:
        if consumer.method in _LOOKS or consumer.method == "getNumPartitions":
            continue
        if consumer.method == "rdd" and _layout_only(graph, consumer, depth + 1):
            continue
        if consumer.method == "glom" and all(_partition_sizes(graph, m) for m in graph.consumers(consumer)):
            continue
        return False
    return True


def _partition_sizes(graph: StageGraph, node: StageNode) -> bool:
    """`map(len)` over glom's lists, collected or taken: the partition sizes and nothing else."""
    if node.method != "map" or node.call is None or len(node.call.args) != 1:
        return False
    function = node.call.args[0].value
    if not (isinstance(function, cst.Name) and function.value == "len"):
        return False
    consumers = graph.consumers(node)
    return bool(consumers) and all(c.method in ("collect", "take", "first", "count") for c in consumers)


def _aggregates_within(node: StageNode, allowed: frozenset[str]) -> bool:
    aggregates = [c for c in node.columns.calls if c.spec is not None and c.spec.aggregate]
    return bool(aggregates) and all(c.function in allowed for c in aggregates)


def _mentioned(node: StageNode) -> set[str]:
    names = set(node.columns.columns)
    if node.call is not None:
        for arg in node.call.args:
            names |= set(_literals(arg.value))
            if isinstance(arg.value, cst.SimpleString) and isinstance(arg.value.evaluated_value, str):
                names |= set(re.findall(r"\w+", arg.value.evaluated_value))
    return names


def _only_looked_at(graph: StageGraph, node: StageNode, depth: int) -> bool:
    """Every path from `node` ends in showing or counting rows, never in data someone keeps."""
    consumers = graph.consumers(node)
    if not consumers or depth > 20:
        return False
    for consumer in consumers:
        if consumer.method in _LOOKS:
            continue
        spec = consumer.spec
        if spec is None or spec.sink or spec.returns not in ("DataFrame", "GroupedData") or spec.data_args:
            return False
        if not _only_looked_at(graph, consumer, depth + 1):
            return False
    return True


def _only_previewed(graph: StageGraph, node: StageNode) -> bool:
    consumers = graph.consumers(node)
    return bool(consumers) and all(c.method in _PREVIEWS for c in consumers)


def _sequence_column(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    """sparkpar's own `_sparkpar_seq`: numbered on rows of a batch source that no shuffle has
    moved since (rules/fixers/sequence.py), it is the source's arrival order (the sequential
    semantics), not an id."""
    chain = list(graph.upstream(node))
    source = chain[-1] if chain else None
    return (
        call.function == "monotonically_increasing_id"
        and node.method == "withColumn"
        and _bound_name(node, call) == SEQUENCE_COLUMN
        and source is not None
        and source.spec is not None
        and source.spec.source
        and not source.streaming
        and not any(n.is_shuffle for n in chain[:-1])
    )


def _hashed_id(graph: StageGraph, node: StageNode, call: ColumnCall) -> Fix | NoFix | None:
    """`monotonically_increasing_id()` → `xxhash64(<columns that identify the row>)`.

    Unsafe: the ids become hashes (not small increasing numbers, and two rows could collide).
    Only where the identifying columns are evident: the rows come out of a `distinct` of a
    `select` of columns, a `dropDuplicates(subset)`, or a `groupBy(keys).agg(...)`.
    """
    if call.function == "rand":
        return hashed_draw(node, call)
    if call.function == "randn":
        return NoFix(
            f"`{call.function}` is not derived from the row: a value hashed from its key "
            "(`xxhash64(<key>) % <buckets>`) needs the key columns, which are the author's to choose"
        )
    if call.function == "spark_partition_id":
        name = _bound_name(node, call)
        if name is not None and _feeds_grouped_map(graph, node, name):
            return NoFix(
                "`spark_partition_id()` batches rows for a function that reads its batch as a whole: a batch "
                "derived from the row (`pmod(xxhash64(<columns>), <n>)`) would still hand each batch its rows "
                "in shuffle order, so the function itself needs an order or a key"
            )
        return NoFix(
            "`spark_partition_id()` says where a row sits, not what it holds: a key derived from the "
            "row (`xxhash64(<id>) % <batches>`) needs a batch count, which is the author's to choose"
        )
    if call.function != "monotonically_increasing_id" or call.call is None:
        return None
    columns = _identifying_columns(graph, node)
    if not columns:
        ordered = _numbered_in_order(graph, node, call, call.call)
        if ordered is not None:
            return ordered
        if node.method in STAR_STAGES and not small_input(graph, node) and _distinct_rows(graph, node):
            hashed, imports = row_hash(call.call, None)
            description = f'`{call.function}()` → `xxhash64("*")`: an id hashed from the columns of distinct rows'
            return Fix(UNSAFE, description, ((call.call, hashed),), imports)
        return _numbered_by_content(graph, node, call, call.call)
    hashed, imports = column_function(call.call, "xxhash64", [string(c) for c in columns])
    description = f"`{call.function}()` → `xxhash64({', '.join(columns)})`: an id derived from the row's key"
    return Fix(UNSAFE, description, ((call.call, hashed),), imports)


def _sorted_numbering(graph: StageGraph, node: StageNode) -> Fix | NoFix:
    """`rdd.zipWithIndex()` after a shuffle → `rdd.sortBy(repr).zipWithIndex()`.

    Unsafe: the values are numbered in the order of their `repr`, one of the orders the shuffle
    could deliver them in (and equal `repr`s are interchangeable values), the same under every
    partitioning: the numbering changes, but only by a renaming of the ids. Not without a shuffle upstream: there the order may be a file's line order,
    which the author may mean.
    """
    if node.method == "zipWithUniqueId":
        # Its ids are position * partitions + partition: sorting does not fix the partition count.
        return NoFix(
            "`zipWithUniqueId` ids encode the number of partitions; `sortBy(...).zipWithIndex()` is the author's to choose"
        )
    if node.method != "zipWithIndex" or node.call is None or node.call.args:
        return NoFix(f"`{node.method}` is not a plain `zipWithIndex()` call")
    if node.receiver != "RDD":
        return NoFix("the numbered rows are not known to be an RDD here")
    if not any(u.is_shuffle for u in graph.upstream(node)):
        return NoFix("the rows come unshuffled from their source, whose order (a file's lines) may be the one meant")
    description = f"`{node.method}()` numbers the values sorted by their `repr`: one order the shuffle could give"
    return Fix(UNSAFE, description, ((node.call, insert_before("sortBy", [cst.Name("repr")])),))


_NO_KEY = (
    "no columns are known to identify a row here (no distinct, dropDuplicates or groupBy keys "
    "upstream) and the rows are not sorted: hash the columns that make a row unique "
    "(`xxhash64(<key>)`), or number a total order"
)


def _numbered_in_order(graph: StageGraph, node: StageNode, call: ColumnCall, site: cst.Call) -> Fix | NoFix | None:
    """`monotonically_increasing_id()` right after a sort → `row_number()` over that order.

    Unsafe: rows tied on the sort columns still get arbitrary numbers (add a tie-breaker to the
    sort). Only on the few rows SPX401 leaves alone: the window has no partitioning, so one task
    numbers every row, which on many rows is a new SPX401 finding the fix would have made.
    """
    order = node.input_order
    if order.kind != "total" or not order.by:
        return None
    if not small_input(graph, node):
        return NoFix(
            "the rows are sorted, but numbering many rows in that order (`row_number()` over a window "
            "with no partitionBy) moves them all to one task (SPX401): hash the columns that make a row "
            "unique (`xxhash64(<key>)`)"
        )
    over, imports = _row_number_over(site, cst.Name("Window"), [string(c) for c in order.by])
    description = f"`{call.function}()` → `row_number()` over the sort ({', '.join(order.by)})"
    return Fix(UNSAFE, description, ((site, over),), (*imports, ("pyspark.sql", "Window")))


def _numbered_by_content(graph: StageGraph, node: StageNode, call: ColumnCall, site: cst.Call) -> Fix | NoFix:
    """`monotonically_increasing_id()` with no key and no sort → `row_number()` over the rows
    ordered by their whole content (the typed columns as a struct, else the row as JSON).

    Unsafe: ids 1..n in an order of the rows' values, the same under every partitioning (rows
    that tie are equal in every column, so which of them gets which number changes no row); not
    the source's order. Only where one task numbering every row is no cost (the few rows SPX401
    leaves alone: literal rows, a small limit, an aggregate by time buckets), on rows of a batch
    source read in this scope (a window does not run on a stream), and not where the ids follow
    an unshuffled source's order that a later stage reads as an order.
    """
    chain = list(graph.upstream(node))
    source = chain[-1] if chain else None
    if source is None or source.spec is None or not source.spec.source or source.streaming or node.streaming:
        return NoFix(
            "no columns are known to identify a row here, the rows are not sorted, and they come from a "
            "stream or from outside this module, where no window can number them: hash the columns that "
            "make a row unique (`xxhash64(<key>)`)"
        )
    if node.call_site is not None:
        return NoFix(_NO_KEY + "; the ids are made in a helper other callers share")
    name = _bound_name(node, call)
    if not any(n.is_shuffle for n in chain) and (name is None or _read_as_order(graph, node, name)):
        return NoFix(
            "the ids follow the source's row order and a later stage sorts, filters or windows by "
            "them: numbering by content would change that order; number a total order the author chooses"
        )
    if not small_input(graph, node):
        if node.method not in STAR_STAGES:
            return NoFix(
                "no columns are known to identify a row here and the rows are not sorted; numbering them "
                "by content needs one task over every row: hash the columns that make a row unique (`xxhash64(<key>)`)"
            )
        window, more = window_class(graph)
        hashed, imports = copy_numbered_hash(site, window)
        description = (
            f"`{call.function}()` → `xxhash64` of the row's columns and its number among identical rows "
            "(a shuffle by the whole row): the same ids under any partitioning"
        )
        return Fix(UNSAFE, description, ((site, hashed),), (*imports, *more))
    rows = graph.input_of(node)
    columns = typed_columns(graph, rows) if rows is not None else None
    order: list[cst.BaseExpression]
    if columns:
        order, imports, what = [string(c) for c in columns], (), ", ".join(columns)
    else:
        whole, imports = whole_row(site)
        order, what = [whole], "the row as JSON"
    window, more = window_class(graph)
    over, numbered = _row_number_over(site, window, order)
    description = f"`{call.function}()` → `row_number()` over the rows ordered by their content ({what})"
    return Fix(UNSAFE, description, ((site, over),), (*imports, *more, *numbered))


def _distinct_rows(graph: StageGraph, node: StageNode) -> bool:
    """The rows reach `node` from a whole-row `distinct()`/`dropDuplicates()` through filters and
    columns added under names the deduplicated `select` does not have: no two rows are equal."""
    added: set[str] = set()
    for upstream in graph.upstream(node):
        if upstream.method in ("distinct", "dropDuplicates", "drop_duplicates"):
            if upstream.call is None or upstream.call.args:
                return False
            if not added:
                return True
            select = graph.input_of(upstream)
            if select is None or select.method != "select" or select.call is None:
                return False
            star = any(a.star or _literals(a.value) == ["*"] for a in select.call.args)
            return not star and not added & _mentioned(select)
        if upstream.method == "withColumn" and upstream.call is not None:
            name = _with_column_name(upstream)
            if name is None:
                return False
            added.add(name)
        elif upstream.method not in ("filter", "where"):
            return False
    return False


def _row_number_over(like: cst.Call, window: cst.Name, order: list[cst.BaseExpression]) -> tuple[cst.Call, Imports]:
    """`F.row_number().over(Window.orderBy(<order>))`, written as `like` calls its functions."""
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    spec = cst.Call(
        func=cst.Attribute(value=window, attr=cst.Name("orderBy")),
        args=[cst.Arg(o, comma=comma) for o in order[:-1]] + [cst.Arg(order[-1])],
    )
    numbered, imports = column_function(like, "row_number", [])
    return cst.Call(func=cst.Attribute(value=numbered, attr=cst.Name("over")), args=[cst.Arg(spec)]), imports


def _read_as_order(graph: StageGraph, node: StageNode, name: str) -> bool:
    """A later stage sorts, filters or windows by the column `name`."""
    return any(
        (d.method in _ROW_PICKERS and name in _mentioned(d))
        or any(c.window is not None and name in c.window.order_by for c in d.columns.calls)
        for d in graph.downstream(node)
    )


def _identifying_columns(graph: StageGraph, node: StageNode) -> tuple[str, ...]:
    for upstream in graph.upstream(node):
        if upstream.spec is None:
            return ()
        if upstream.method in ("dropDuplicates", "drop_duplicates") and upstream.keys:
            return upstream.keys
        if upstream.receiver == "GroupedData" and upstream.method == "agg" and upstream.keys:
            return upstream.keys
        # `distinct()` and `dropDuplicates()` alike: unique on every column a `select` names.
        whole_rows = upstream.call is not None and not upstream.call.args
        if upstream.method in ("distinct", "dropDuplicates", "drop_duplicates") and whole_rows:
            select = graph.input_of(upstream)
            if select is None or select.method != "select" or select.call is None:
                return ()
            names = [column_name(v) for v in positional_values(select.call)]
            known = [n for n in names if n]
            return tuple(known) if names and len(known) == len(names) == len(select.call.args) else ()
        # Between the deduplication and the id, rows stay unique: no new rows, all columns kept.
        if upstream.is_shuffle or upstream.spec.forwarding != "all" or upstream.selectivity == "any":
            return ()
    return ()


def _is_key_operator(node: StageNode) -> bool:
    spec = node.spec
    return spec is not None and (spec.keys == "args" or spec.shuffle) and spec.column_functions != "aggregate"


def _key_columns(node: StageNode) -> set[str]:
    """Column names `node` keys on: its literal keys, join conditions and window specs."""
    if node.spec is None:
        return set()
    names: set[str] = set()
    if _is_key_operator(node):
        names |= set(node.keys) | set(node.columns.columns)
        if node.call is not None:
            for arg in node.call.args:
                names |= set(_literals(arg.value))
    for call in node.columns.calls:
        if call.window is not None:
            names |= set(call.window.partition_by) | set(call.window.order_by)
    return names


def _literals(expr: cst.BaseExpression) -> list[str]:
    if isinstance(expr, cst.SimpleString):
        text = _text(expr)
        return [text] if text is not None else []
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [s for e in expr.elements for s in _literals(e.value)]
    return []


def _bound_name(node: StageNode, call: ColumnCall) -> str | None:
    """The column the value is stored in: `withColumn("id", ...)` or `(...).alias("id")`, and in
    SQL text `... AS id` (or `withColumn("id", F.expr("uuid()"))`)."""
    if call.from_sql:
        return _sql_alias(call) or _with_column_name(node)
    if node.call is None or call.call is None:
        return None
    args = node.call.args
    if node.method == "withColumn" and args and isinstance(args[0].value, cst.SimpleString):
        if contains(args[1].value if len(args) > 1 else None, call.call):
            return _text(args[0].value)
    for arg in args:
        expr = arg.value
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement) and contains(element.value, call.call):
                    return _text(element.key) if isinstance(element.key, cst.SimpleString) else None
        if contains(expr, call.call):
            return _alias_of(expr)
    return None


_SQL_UNFIXED = NoFix(
    "the value is written in SQL text, which SPX105 does not rewrite: derive it from columns "
    "(`xxhash64(<key>)`), or number a total order with `row_number()`"
)
# SQL stages (no CST call) are named by their clause.
_SQL_CLAUSES = {
    "repartition": "DISTRIBUTE BY",
    "sortWithinPartitions": "SORT BY",
    "orderBy": "ORDER BY",
    "groupBy": "GROUP BY",
    "join": "JOIN",
}


def _operator_word(node: StageNode) -> str:
    if node.call is None and node.method in _SQL_CLAUSES:
        return f"`{_SQL_CLAUSES[node.method]}`"
    return f"`{node.method}`"


def _sql_alias(call: ColumnCall) -> str | None:
    """The `AS name` the SQL call sits under, within its own select item."""
    from sqlglot import exp

    site = site_of(call.sql)
    expression: exp.Expr | None = site.expression if site is not None else None
    while expression is not None and not isinstance(expression, (exp.Query, exp.Where, exp.Order, exp.Group)):
        if isinstance(expression, exp.Alias):
            return expression.alias or None
        expression = expression.parent
    return None


def _with_column_name(node: StageNode) -> str | None:
    args = node.call.args if node.call is not None else ()
    if node.method == "withColumn" and args and isinstance(args[0].value, cst.SimpleString):
        return _text(args[0].value)
    return None


def _alias_of(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _NAMING_METHODS:
        if expr.args and isinstance(expr.args[0].value, cst.SimpleString):
            return _text(expr.args[0].value)
    return None


def _text(string: cst.SimpleString) -> str | None:
    """The text of a string literal; None for a bytes literal, which names no column."""
    value = string.evaluated_value
    return value if isinstance(value, str) else None
