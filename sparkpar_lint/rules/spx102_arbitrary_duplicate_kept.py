"""SPX102 arbitrary-duplicate-kept: `dropDuplicates(subset)` keeps an arbitrary row per subset."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from textwrap import dedent
from typing import cast

import libcst as cst

from sparkpar_lint.edits.alias import bound_names
from sparkpar_lint.edits.chain import drop_call, method_call, receiver_of
from sparkpar_lint.edits.code import column_function, string
from sparkpar_lint.edits.model import SAFE, UNSAFE, Fix, Replacement
from sparkpar_lint.graph.contexts import holds_in_wider_contexts
from sparkpar_lint.graph.erasure import read_only_by_stages
from sparkpar_lint.graph.imports import dotted_name
from sparkpar_lint.graph.literal_rows import duplicates_identical
from sparkpar_lint.graph.order_flow import upstream_sort
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.tree_paths import path_to
from sparkpar_lint.graph.uniqueness import constant_within, is_unique_on, literal_names, output_columns, self_union
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.fixers.ordering import functions_like, sort_arguments, sort_reaches, whole_row, window_class
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN, sequence_parts
from sparkpar_lint.rules.fixers.tie_breaker import tie_breaker

_BATCH_FIX = "; keep `row_number()` over `Window.partitionBy(subset).orderBy(sort, tie-breaker)` == 1"
# Streaming queries have no row_number: aggregate the other columns by an order column instead.
_STREAMING_FIX = "; dedupe on every column, or aggregate: `groupBy(subset, window).agg(F.max_by(column, event_time))`"
# Ids of events (emitted once; a second row is a redelivery), not of entities that get updates
# (a payment, an order): `event_id`, `click_id`, `message_id`, `trade_id`, `uuid`.
_EVENT_ID = re.compile(
    r"(^|_)(event|message|msg|impression|click|view|record|request|delivery|log|trade)_?id$"
    r"|^(uuid|guid)$|^(event|message|trade)Id$",
    re.IGNORECASE,
)
# A record id hashed from the record's own identifying fields (`sha2(concat(vin, ts, name))`).
_DIGESTS = frozenset({"sha2", "sha1", "sha", "md5", "xxhash64", "hash", "crc32"})
_BATCH_PARAMETERS = frozenset({"batch_id", "epoch_id", "batchId", "epochId"})
# Consumers whose result is the same whichever duplicate was kept.
_ROW_BLIND = frozenset({"count", "isEmpty"})


class ArbitraryDuplicateKept(Rule):
    id = "SPX102"
    name = "arbitrary-duplicate-kept"
    severity = Severity.ERROR
    summary = "dropDuplicates on a subset keeps an arbitrary row of each duplicate group."
    fix_safety = SAFE
    fix_needs = (
        "needs a batch query and a sort whose columns reach the deduplication, or a batch source "
        "with no shuffle before it"
    )
    VALID = [
        # Only counted, through a name, a cache and a `distinct()` of rows already one per user.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                users = clicks.dropDuplicates(["user"]).cache()
                print(f"{users.distinct().count()} users")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.dropDuplicates()
                clicks.drop_duplicates()
                clicks.distinct()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.dropDuplicates(None)
                clicks.drop_duplicates(subset=None)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                newest_first = Window.partitionBy("user").orderBy(F.col("ts").desc(), "click_id")
                latest = clicks.withColumn("rn", F.row_number().over(newest_first)).filter("rn = 1").drop("rn")
                """)
        ),
        # Only the subset columns survive: every duplicate gives the same row.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.dropDuplicates(["user", "url"]).select("user", "url")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                n = clicks.dropDuplicates(["user"]).count()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                pairs = clicks.select("user", F.col("url")).dropDuplicates(["user", "url"])
                """)
        ),
        # A stream deduplicated on its event id: rows sharing one are redelivered copies of one event.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                stream = spark.readStream.format("kafka").load().withWatermark("ts", "10 minutes")
                stream.dropDuplicatesWithinWatermark(["event_id"]).writeStream.start()
                """)
        ),
        # A stream deduplicated on a digest of each reading's identity, or on keys that include a
        # trade's id (through `list(KEYS)`): a second row is the same record delivered again.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                readings = spark.readStream.format("kafka").load()
                readings = readings.withColumn("rid", F.sha2(F.concat("meter", "at", "channel"), 256))
                readings.dropDuplicates(["rid"]).writeStream.start()
                KEYS = ("venue", "trade_id")
                trades = spark.readStream.table("trades").withWatermark("at", "2 minutes")
                trades.dropDuplicatesWithinWatermark(list(KEYS)).writeStream.start()
                """)
        ),
        # Literal rows: the only repeated name is an exact copy.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                data = [("ann", "hr"), ("bo", "it"), ("ann", "hr")]
                spark.createDataFrame(data, ["name", "dept"]).dropDuplicates(["name"]).show()
                """)
        ),
        # Literal dict rows with distinct ids (columns stamped on afterwards): no duplicates at all.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                batch = [{"id": "3", "amount": 2.5}, {"id": "4", "amount": 3.0}]
                rows = spark.createDataFrame(batch).withColumn("loaded_at", F.current_timestamp())
                rows.dropDuplicates(["id"]).write.parquet("increment")
                pairs = spark.createDataFrame(data=[("a", 1), ("b", 2)], schema=["id", "n"])
                pairs.dropDuplicates(["id"]).write.parquet("pairs")
                """)
        ),
        # The JDBC query selects exactly the subset (through a variable and an f-string), and the
        # union keeps those columns: duplicates are identical rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def read_calls(table):
                    query = f"SELECT caller, at, kind FROM crm.{table}"
                    return spark.read.format("jdbc").option("dbtable", f"({query}) AS t").load()
                calls = read_calls("calls").unionByName(read_calls("calls_archive").withColumn("kind", F.lower("kind")))
                calls.dropDuplicates(["caller", "at", "kind"]).write.parquet("calls")
                """)
        ),
        # Already one row per user: nothing to choose between.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.groupBy("user").agg(F.max("ts").alias("ts")).dropDuplicates(["user"])
                """)
        ),
        # The other columns are computed from the subset: duplicates are identical rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.select("url").withColumn("host", F.split("url", "/").getItem(2)).dropDuplicates(["url"])
                """)
        ),
        # The columns outside the subset are dropped by name first: the subset is every column left.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                visits = clicks.select("user", "url").withColumn("pages", F.size(F.collect_set("url").over(Window.partitionBy("user"))))
                visits.drop("url").dropDuplicates(["user", "pages"]).write.parquet("visits")
                """)
        ),
        # A table unioned with itself: every duplicate is a copy of the same row.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.union(clicks).dropDuplicates(["click_id"])
                """)
        ),
        # pandas drop_duplicates keeps the first row of a frame in a defined order.
        Valid(
            dedent("""\
                import pandas as pd
                pdf = pd.read_csv('c.csv')
                pdf.sort_values('ts').drop_duplicates(['user'])
                """)
        ),
        # A local class with the same method name.
        Valid(
            dedent("""\
                class Log:
                    def dropDuplicates(self, cols):
                        return self
                Log().dropDuplicates(['user'])
                """)
        ),
    ]
    INVALID = [
        # Only shown: a person may see another row each run (lowest confidence, still reported).
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                users = clicks.dropDuplicates(["user"])
                users.show(5)
                """),
            line=4,
            column=15,
            severity=Severity.WARNING,
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                users = (
                    clicks.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                    .withColumn(
                        "_sparkpar_rn",
                        F.row_number().over(Window.partitionBy("user").orderBy("_sparkpar_seq")),
                    )
                    .filter(F.col("_sparkpar_rn") == 1)
                    .drop("_sparkpar_rn", "_sparkpar_seq")
                )
                users.show(5)
                """),
        ),
        # Counted, but also handed to code this file does not show: the count erases nothing.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                users = clicks.dropDuplicates(["user"])
                print(users.count())
                publish(users)
                """),
            line=4,
            column=15,
            severity=Severity.WARNING,
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                users = (
                    clicks.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                    .withColumn(
                        "_sparkpar_rn",
                        F.row_number().over(Window.partitionBy("user").orderBy("_sparkpar_seq")),
                    )
                    .filter(F.col("_sparkpar_rn") == 1)
                    .drop("_sparkpar_rn", "_sparkpar_seq")
                )
                print(users.count())
                publish(users)
                """),
        ),
        # The near miss: `SELECT *` says nothing about the columns beside the subset.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                calls = spark.read.format("jdbc").option("query", "SELECT * FROM crm.calls").load()
                calls.dropDuplicates(["caller", "at"]).write.parquet("calls")
                """),
            line=4,
            column=6,
            severity=Severity.WARNING,
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    calls = spark.read.format("jdbc").option("query", "SELECT * FROM crm.calls").load()
                    (
                        calls.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .withColumn(
                            "_sparkpar_rn",
                            F.row_number().over(Window.partitionBy("caller", "at").orderBy("_sparkpar_seq")),
                        )
                        .filter(F.col("_sparkpar_rn") == 1)
                        .drop("_sparkpar_rn", "_sparkpar_seq")
                        .write.parquet("calls")
                    )
                    """)
            ),
        ),
        # The near miss: identical literal copies, but a random column is stamped on each copy.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                batch = [{"id": "3", "amount": 2.5}, {"id": "3", "amount": 2.5}]
                rows = spark.createDataFrame(batch).withColumn("draw", F.rand())
                rows.dropDuplicates(["id"]).write.parquet("increment")
                """),
            line=5,
            column=5,
            severity=Severity.WARNING,
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    batch = [{"id": "3", "amount": 2.5}, {"id": "3", "amount": 2.5}]
                    rows = spark.createDataFrame(batch).withColumn("draw", F.rand())
                    (
                        rows.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .withColumn(
                            "_sparkpar_rn",
                            F.row_number().over(Window.partitionBy("id").orderBy("_sparkpar_seq")),
                        )
                        .filter(F.col("_sparkpar_rn") == 1)
                        .drop("_sparkpar_rn", "_sparkpar_seq")
                        .write.parquet("increment")
                    )
                    """)
            ),
        ),
        # The near miss: two rows share a department but not a name.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                data = [("ann", "hr"), ("bo", "it"), ("cy", "hr")]
                spark.createDataFrame(data, ["name", "dept"]).dropDuplicates(["dept"]).show()
                """),
            line=4,
            column=46,
            severity=Severity.WARNING,
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                data = [("ann", "hr"), ("bo", "it"), ("cy", "hr")]
                (
                    spark.createDataFrame(data, ["name", "dept"])
                    .withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                    .withColumn(
                        "_sparkpar_rn",
                        F.row_number().over(Window.partitionBy("dept").orderBy("_sparkpar_seq")),
                    )
                    .filter(F.col("_sparkpar_rn") == 1)
                    .drop("_sparkpar_rn", "_sparkpar_seq")
                    .show()
                )
                """),
        ),
        # A near miss: the drop leaves `ref`, which differs between a user's rows.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                visits = clicks.select("user", "url", "ref").withColumn("pages", F.size(F.collect_set("url").over(Window.partitionBy("user"))))
                visits.drop("url").dropDuplicates(["user", "pages"]).write.parquet("visits")
                """),
            line=5,
            column=19,
            severity=Severity.WARNING,
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                visits = clicks.select("user", "url", "ref").withColumn("pages", F.size(F.collect_set("url").over(Window.partitionBy("user"))))
                (
                    visits.drop("url")
                    .withColumn(
                        "_sparkpar_rn",
                        F.row_number().over(
                            Window.partitionBy("user", "pages").orderBy(
                                F.to_json(
                                    F.struct("*"),
                                    {"timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX", "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS"},
                                ),
                            ),
                        ),
                    )
                    .filter(F.col("_sparkpar_rn") == 1)
                    .drop("_sparkpar_rn")
                    .write.parquet("visits")
                )
                """),
        ),
        # A near miss: `host` is computed from another column than the subset.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                clicks.select("url", "ref").withColumn("host", F.split("ref", "/").getItem(2)).dropDuplicates(["url"])
                """),
            line=4,
            column=79,
            severity=Severity.WARNING,
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                (
                    clicks.select("url", "ref")
                    .withColumn("host", F.split("ref", "/").getItem(2))
                    .withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                    .withColumn(
                        "_sparkpar_rn",
                        F.row_number().over(Window.partitionBy("url").orderBy("_sparkpar_seq")),
                    )
                    .filter(F.col("_sparkpar_rn") == 1)
                    .drop("_sparkpar_rn", "_sparkpar_seq")
                )
                """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                latest = clicks.orderBy(F.col("ts").desc()).dropDuplicates(["user"])
                """),
            line=4,
            column=44,
            related_lines=(4,),
            severity=Severity.ERROR,
            # The sort's own arguments order the window (desc stays desc); the whole row breaks ties.
            # The sort itself goes: nothing else reads it, and the shuffle discarded its work.
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    clicks = spark.read.parquet("clicks")
                    latest = (
                        clicks.withColumn(
                            "_sparkpar_rn",
                            F.row_number().over(
                                Window.partitionBy("user").orderBy(
                                    F.col("ts").desc(),
                                    F.to_json(
                                        F.struct("*"),
                                        {
                                            "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                            "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                        },
                                    ),
                                ),
                            ),
                        )
                        .filter(F.col("_sparkpar_rn") == 1)
                        .drop("_sparkpar_rn")
                    )
                    """)
            ),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                one_per_session = clicks.drop_duplicates(subset=["session_id"])
                """),
            line=4,
            column=25,
            severity=Severity.WARNING,
            # No sort: the first row to arrive, by a sequence number taken at the source (unsafe).
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    clicks = spark.read.parquet("clicks")
                    one_per_session = (
                        clicks.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .withColumn(
                            "_sparkpar_rn",
                            F.row_number().over(Window.partitionBy("session_id").orderBy("_sparkpar_seq")),
                        )
                        .filter(F.col("_sparkpar_rn") == 1)
                        .drop("_sparkpar_rn", "_sparkpar_seq")
                    )
                    """)
            ),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import DataFrame
                def first_click(df: DataFrame) -> DataFrame:
                    ranked = df.sortWithinPartitions("ts")
                    return ranked.dropDuplicates(["user", "campaign"])
                """),
            line=4,
            column=18,
            related_lines=(3,),
            severity=Severity.ERROR,
            # Bare function names are imported; Window joins the existing pyspark.sql import.
            expected_fix=(
                dedent("""\
                    from pyspark.sql import DataFrame, Window, functions as F
                    def first_click(df: DataFrame) -> DataFrame:
                        ranked = df.sortWithinPartitions("ts")
                        return (
                            ranked.withColumn(
                                "_sparkpar_rn",
                                F.row_number().over(
                                    Window.partitionBy("user", "campaign").orderBy(
                                        "ts",
                                        F.to_json(
                                            F.struct("*"),
                                            {
                                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                            },
                                        ),
                                    ),
                                ),
                            )
                            .filter(F.col("_sparkpar_rn") == 1)
                            .drop("_sparkpar_rn")
                        )
                    """)
            ),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                stream = spark.readStream.format("kafka").load().withWatermark("ts", "10 minutes")
                stream.dropDuplicatesWithinWatermark(["user"]).writeStream.start()
                """),
            line=5,
            column=7,
            severity=Severity.WARNING,
            # Streaming has no row_number: no automatic fix.
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                import pyspark.sql.functions as fn
                from pyspark.sql.window import Window as W
                def newest(df):
                    return df.orderBy(fn.desc("ts"), "id").dropDuplicates(["user"])
                """),
            line=4,
            column=43,
            related_lines=(4,),
            severity=Severity.ERROR,
            # The module's own names for the functions and for Window.
            expected_fix=(
                dedent("""\
                    import pyspark.sql.functions as fn
                    from pyspark.sql.window import Window as W
                    def newest(df):
                        return (
                            df.withColumn(
                                "_sparkpar_rn",
                                fn.row_number().over(
                                    W.partitionBy("user").orderBy(
                                        fn.desc("ts"),
                                        "id",
                                        fn.to_json(
                                            fn.struct("*"),
                                            {
                                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                            },
                                        ),
                                    ),
                                ),
                            )
                            .filter(fn.col("_sparkpar_rn") == 1)
                            .drop("_sparkpar_rn")
                        )
                    """)
            ),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                latest = clicks.orderBy("ts", ascending=False).dropDuplicates(["user"])
                """),
            line=4,
            column=47,
            related_lines=(4,),
            severity=Severity.ERROR,
            # The direction sits in a keyword, apart from the columns: no automatic fix.
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                latest = clicks.orderBy("ts").select("user", "url").dropDuplicates(["user"])
                """),
            line=4,
            column=52,
            related_lines=(4,),
            severity=Severity.ERROR,
            # The select drops the sort column before the deduplication: nothing to order by.
            expected_fix=None,
        ),
        # A helper's subset parameter, checked non-empty: partitioned by its columns (unsafe).
        Invalid(
            dedent("""\
                from pyspark.sql import Window, functions as F
                def dedup(df, subset=None):
                    return df.dropDuplicates(subset) if subset else df.dropDuplicates()
                """),
            line=3,
            column=14,
            severity=Severity.WARNING,
            expected_fix=(
                dedent("""\
                    from pyspark.sql import Window, functions as F
                    def dedup(df, subset=None):
                        return (
                            df.withColumn(
                                "_sparkpar_rn",
                                F.row_number().over(
                                    Window.partitionBy(*subset).orderBy(
                                        F.to_json(
                                            F.struct("*"),
                                            {
                                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                            },
                                        ),
                                    ),
                                ),
                            )
                            .filter(F.col("_sparkpar_rn") == 1)
                            .drop("_sparkpar_rn")
                        ) if subset else df.dropDuplicates()
                    """)
            ),
        ),
        # The near miss: the same parameter unchecked may be None (every column), which
        # `partitionBy(*subset)` cannot take: no fix.
        Invalid(
            dedent("""\
                def dedup(df, subset=None):
                    return df.dropDuplicates(subset)
                """),
            line=2,
            column=14,
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # The near miss: a digest id in a batch table, which can hold several versions of a record.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.read.parquet("clicks")
                readings = clicks.withColumn("rid", F.sha2(F.concat("meter", "at"), 256))
                readings.dropDuplicates(["rid"]).write.parquet("readings")
                """),
            line=5,
            column=9,
            severity=Severity.WARNING,
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    clicks = spark.read.parquet("clicks")
                    readings = clicks.withColumn("rid", F.sha2(F.concat("meter", "at"), 256))
                    (
                        readings.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .withColumn(
                            "_sparkpar_rn",
                            F.row_number().over(Window.partitionBy("rid").orderBy("_sparkpar_seq")),
                        )
                        .filter(F.col("_sparkpar_rn") == 1)
                        .drop("_sparkpar_rn", "_sparkpar_seq")
                        .write.parquet("readings")
                    )
                    """)
            ),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is None or not node.spec.keeps_arbitrary_row or not _has_subset(node):
                continue
            if _only_subset_used(graph, node) or _only_subset_present(graph, node):
                continue
            if _duplicates_identical(graph, node) or holds_in_wider_contexts(
                graph, node, lambda other: _duplicates_identical(graph, other)
            ):
                continue
            yield self._finding(ctx, graph, node, upstream_sort(graph, node))

    def _finding(self, ctx: RuleContext, graph: StageGraph, node: StageNode, sort: StageNode | None) -> Finding:
        subset = f"({', '.join(node.keys)})" if node.keys else "subset value"
        message = (
            f"`{node.method}` keeps one arbitrary row per {subset}: the other columns come from "
            "whichever duplicate a partition reaches first"
        )
        related: tuple[RelatedLocation, ...] = ()
        if sort is not None:
            message += f", not the one `{sort.method}` put first (the shuffle discards that order)"
            related = (RelatedLocation(sort.span, f"`{sort.method}` orders the rows here ..."),)
        message += _STREAMING_FIX if node.streaming else _BATCH_FIX
        severity = Severity.ERROR if sort is not None else Severity.WARNING
        return self.finding(ctx, node.span, message, severity=severity, related=related, fix=_fix(graph, node, sort))


RANK_COLUMN = "_sparkpar_rn"


def _fix(graph: StageGraph, node: StageNode, sort: StageNode | None) -> Fix | NoFix:
    """`df.dropDuplicates(subset)` → the first row of each subset group by an explicit order:
    `row_number()` over `Window.partitionBy(subset).orderBy(order)`, kept where it is 1.

    The order is the upstream sort's own arguments (so `desc` stays `desc`) with the whole row as
    the tie-breaker (safe: the row the sort put first, and among rows tied on the sort columns
    one that no partitioning can change); with no sort, the sequence number taken at the source
    (unsafe: arrival order is a choice). Streaming queries have no `row_number`: no fix.
    """
    if node.streaming:
        return NoFix(
            "a streaming deduplication keeps the first copy the state store sees, and streams have "
            "no `row_number` to choose another; dedup on a key that tells copies apart, or keep the "
            "latest with an aggregation over the event time"
        )
    if node.call is None or receiver_of(node.call) is None:
        return NoFix(f"`{node.method}` is not a method call this fix can rewrite")
    subset: list[cst.BaseExpression | cst.Arg] = [string(k) for k in node.keys]
    shown = per = ", ".join(node.keys)
    if not node.keys:
        given = _guarded_subset(graph, node.call)
        if given is None:
            return NoFix(
                "the deduplication's subset is not a list of column names this fix can read, nor a name "
                "the code checks is non-empty right before (`dropDuplicates(subset) if subset else ...`)"
            )
        subset, shown, per = [cst.Arg(cst.Name(given), star="*")], given, f"*{given}"
    like = functions_like(graph)
    extra: tuple[tuple[cst.CSTNode, Replacement], ...] = ()
    drops: tuple[str, ...] = (RANK_COLUMN,)
    if sort is not None:
        order = sort_arguments(graph, sort)
        if order is None:
            return NoFix(f"the `{sort.method}` arguments cannot be moved (an `ascending=` keyword or a local name)")
        if not sort_reaches(graph, sort, node):
            return NoFix(f"a stage between `{sort.method}` and `{node.method}` may drop the sort's columns")
        tie, imports, how = tie_breaker(graph, graph.input_of(node), (*node.keys, *sort.keys), like)
        order, safety = [*order, *([tie] if tie is not None else [])], SAFE
        what = f"the first row by the `{sort.method}` order ({how})"
        if sort.call is not None and _sort_only_feeds(graph, sort, node):
            # The window now carries the order: the sort is work the shuffle threw away.
            extra = ((sort.call, drop_call),)
            what += ", the sort itself removed"
    else:
        parts = sequence_parts(graph, node, like)
        if parts is not None:
            (extra, imports), order, safety = parts, [string(SEQUENCE_COLUMN)], UNSAFE
            drops = (RANK_COLUMN, SEQUENCE_COLUMN)
            what = "the first row to arrive (a sequence number taken at the source)"
        else:
            # No order anywhere to read: the smallest row, one of those the job could keep.
            tie, imports, _ = tie_breaker(graph, graph.input_of(node), tuple(node.keys), like)
            if tie is None:
                tie, imports = whole_row(like)
            order, safety = [tie], UNSAFE
            what = "the smallest row (no order to read; one of the rows it could already keep)"
    window, window_imports = window_class(graph)
    spec = method_call(method_call(window, "partitionBy", subset), "orderBy", order)
    numbered, more = column_function(like, "row_number", [])
    ranked = cst.Call(func=cst.Attribute(value=numbered, attr=cst.Name("over")), args=[cst.Arg(spec)])
    rank, col_imports = column_function(like, "col", [string(RANK_COLUMN)])
    first = cst.Comparison(rank, [cst.ComparisonTarget(cst.Equal(), cst.Integer("1"))])
    rewrite = partial(_keep_first, ranked, first, drops)
    description = f"`{node.method}({shown})` → keep {what} per ({per})"
    return Fix(safety, description, ((node.call, rewrite), *extra), imports + window_imports + more + col_imports)


def _guarded_subset(graph: StageGraph, call: cst.Call) -> str | None:
    """The name the subset is passed in, where the call runs only while that name is truthy
    (`df.dropDuplicates(subset) if subset else df.dropDuplicates()`, or under `if subset:` that
    does not rebind it): then it holds column names (`dropDuplicates` takes no string and no
    `None` there), at least one, so `partitionBy(*subset)` groups the rows as it did."""
    value = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "subset"), None)
    if not isinstance(value, cst.Name) or graph.module is None:
        return None
    name = value.value
    path = path_to(graph.module, call) or []
    for outer, inner in zip(path, path[1:]):
        if not isinstance(outer, (cst.IfExp, cst.If)):
            continue
        tested = isinstance(outer.test, cst.Name) and outer.test.value == name
        if tested and inner is outer.body and (isinstance(outer, cst.IfExp) or name not in bound_names(outer.body)):
            return name
    return None


def _sort_only_feeds(graph: StageGraph, sort: StageNode, node: StageNode) -> bool:
    """Nothing but this deduplication reads the sorted rows, and the sort is a global sort."""
    if sort.method not in ("orderBy", "sort") or sort.call is None:
        return False
    for upstream in graph.upstream(node):
        if len(graph.consumers(upstream)) != 1:
            return False
        if upstream is sort:
            return True
    return False


def _keep_first(ranked: cst.Call, first: cst.Comparison, drops: tuple[str, ...], call: cst.Call) -> cst.Call:
    # _fix offers this rewrite only for a call with a receiver (`df.dropDuplicates(...)`).
    numbered = method_call(cast(cst.BaseExpression, receiver_of(call)), "withColumn", [string(RANK_COLUMN), ranked])
    return method_call(method_call(numbered, "filter", [first]), "drop", [string(c) for c in drops])


def _duplicates_identical(graph: StageGraph, node: StageNode) -> bool:
    """Whichever duplicate survives, the row is the same: there are no duplicates (the rows are
    already unique on the subset), every other column is constant within a subset value
    (computed from it, joined in on it), or the duplicates are the copies a self-union made."""
    if _in_stream(graph, node) and any(_event_id(graph, node, k) for k in node.keys):
        return True  # exactly-once dedup of redelivered events: copies of one event share its id
    source = graph.input_of(node)
    if source is None or not node.keys:
        return False
    if is_unique_on(graph, source, node.keys) or self_union(graph, source):
        return True
    if duplicates_identical(graph, source, node.keys):
        return True  # literal rows: the duplicates the job spells out are exact copies
    columns = output_columns(graph, source)
    if not columns:
        return False
    return all(constant_within(graph, source, node.keys, c) is not None for c in columns - set(node.keys))


def _event_id(graph: StageGraph, node: StageNode, column: str) -> bool:
    """The column identifies one event: named as an event's id, or made upstream as a digest of
    the record's fields (a second row with the same digest is the same record delivered again)."""
    if _EVENT_ID.search(column):
        return True
    for upstream in graph.upstream(node):
        call = upstream.call
        if upstream.method != "withColumn" or call is None or len(call.args) < 2:
            continue
        if literal_names(call.args[0].value) == [column]:
            outer = call.args[1].value
            name = dotted_name(outer.func) if isinstance(outer, cst.Call) else None
            return name is not None and name.rsplit(".", 1)[-1] in _DIGESTS
    return False


def _in_stream(graph: StageGraph, node: StageNode) -> bool:
    """A streaming query, a watermarked frame, or a `foreachBatch` function's micro-batch."""
    if node.streaming or node.has_watermark_upstream:
        return True
    line = node.span.line
    for definition in graph.definitions:
        if isinstance(definition, cst.FunctionDef):
            where = graph.span_of(definition)
            names = {p.name.value for p in definition.params.params}
            if where.line <= line <= where.end_line and names & _BATCH_PARAMETERS:
                return True
    return False


def _has_subset(node: StageNode) -> bool:
    """A subset was passed and is not `None` (which means every column)."""
    if node.call is None:
        return False
    subset = next((a.value for a in node.call.args if a.keyword is None or a.keyword.value == "subset"), None)
    return subset is not None and not (isinstance(subset, cst.Name) and subset.value == "None")


def _only_subset_used(graph: StageGraph, node: StageNode) -> bool:
    """Every consumer reads only subset columns or no row content at all, and nothing else reads
    the result (`n = deduped.count()` beside `publish(deduped)` hands the rows on)."""
    consumers = graph.consumers(node)
    if not consumers or not node.keys:
        return False
    return all(_reads_only(consumer, set(node.keys)) for consumer in consumers) and read_only_by_stages(graph, node)


def _only_subset_present(graph: StageGraph, node: StageNode) -> bool:
    """`select("user", "url").dropDuplicates(["user", "url"])`: the subset is every column."""
    source = graph.input_of(node)
    return source is not None and node.keys != () and _reads_only(source, set(node.keys))


def _reads_only(consumer: StageNode, subset: set[str]) -> bool:
    if consumer.method in _ROW_BLIND and consumer.spec is not None and consumer.spec.returns == "driver":
        return True
    if consumer.spec is None or consumer.spec.forwarding != "selected" or consumer.call is None:
        return False
    names = {a.value.evaluated_value for a in consumer.call.args if isinstance(a.value, cst.SimpleString)}
    columns = names | set(consumer.columns.columns)
    return bool(columns) and "*" not in columns and columns <= subset
