"""SPX104 unordered-window: `first`, `collect_list`, ... over a window spec with no `orderBy`."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import libcst as cst

from sparkpar_lint.catalogue import load_catalogue
from sparkpar_lint.edits.chain import append_after, method_call
from sparkpar_lint.edits.code import column_name, positional_values, string
from sparkpar_lint.edits.model import SAFE, UNSAFE, Fix, Imports, Replacement
from sparkpar_lint.graph.constant_columns import constant_column
from sparkpar_lint.graph.current_versions import current_versions_by
from sparkpar_lint.graph.kept_results import nothing_kept
from sparkpar_lint.graph.literal_rows import Row, literal_rows, written_columns
from sparkpar_lint.graph.order_flow import upstream_sort
from sparkpar_lint.graph.positions import walk
from sparkpar_lint.graph.stage_graph import ColumnCall, LazySpan, StageGraph, StageNode, WindowSpecValue
from sparkpar_lint.graph.uniqueness import deduplicated_on, is_unique_on, literal_names
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity, Span
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.fixers.ordering import (
    FRAME_BLIND,
    functions_like,
    sort_arguments,
    sort_reaches,
    watermark_column,
    whole_row,
    window_class,
)
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN, sequence_parts
from sparkpar_lint.rules.fixers.sql import window_tie_fix
from sparkpar_lint.rules.fixers.sql_window_order import window_order_fix
from sparkpar_lint.sql.site import site_of


class UnorderedWindow(Rule):
    id = "SPX104"
    name = "unordered-window"
    severity = Severity.ERROR
    summary = "An order-sensitive window function runs over a window with no orderBy."
    fix_safety = SAFE
    fix_needs = (
        "needs the window spec built in this module, one order for every use, and a sort, watermark "
        "or unshuffled batch source to take it from"
    )
    VALID = [
        # A running total over the same literal rows, but the tied days hold equal amounts: either
        # arrival order gives each row the same total.
        Valid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                sales = spark.createDataFrame(
                    [("north", 1, 10), ("north", 2, 30), ("north", 2, 30), ("north", 3, 5)],
                    ["region", "day", "amount"],
                )
                running = Window.partitionBy("region").orderBy("day").rowsBetween(Window.unboundedPreceding, Window.currentRow)
                sales.withColumn("to_date", F.sum("amount").over(running)).show()
                """
            )
        ),
        # The load time is one value for every row, but a unique id breaks its ties.
        Valid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                orders = spark.read.parquet("orders")
                stamped = orders.withColumn("loaded_at", F.current_timestamp())
                latest = Window.partitionBy("customer").orderBy(F.col("loaded_at").desc(), "order_id")
                kept = stamped.withColumn("rn", F.row_number().over(latest)).filter("rn = 1").drop("rn")
                kept.write.mode("overwrite").parquet("last_orders")
                """
            )
        ),
        # Columns made in a `withColumns` dict are read like `withColumn`: this order is unique.
        Valid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                customers = spark.read.parquet("customers")
                by_id = Window.orderBy("customer_id")
                keyed = customers.withColumns({"customer_key": F.row_number().over(by_id), "loaded_on": F.current_date()})
                keyed.write.mode("overwrite").parquet("dim_customer")
                """
            )
        ),
        # Orders unique within each partition by how the rows were built: one row per user and day
        # (the day a named expression), a `row_number()` per user, a `monotonically_increasing_id()`.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                daily = events.groupBy("user", F.to_date("ts").alias("day")).agg(F.count("*").alias("visits"))
                daily.withColumn("n", F.row_number().over(Window.partitionBy("user").orderBy("day"))).write.parquet("o")
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ranked = events.withColumn("r", F.row_number().over(Window.partitionBy("user").orderBy("ts", "page")))
                ranked.withColumn("n", F.first("page").over(Window.partitionBy("user").orderBy("r"))).write.parquet("o")
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ided = events.orderBy("ts", "page").withColumn("seq_no", F.monotonically_increasing_id())
                ided.withColumn("n", F.row_number().over(Window.partitionBy("user").orderBy("seq_no"))).write.parquet("o")
                """)
        ),
        # Numbered, then only counted: how ties fall cannot change how many rows there are.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                numbered = events.withColumn("n", F.row_number().over(Window.partitionBy("user").orderBy("day")))
                print(numbered.count())
                """)
        ),
        # Numbered among identical copies (partitioned by the whole row): which copy is first changes no row.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                copies = F.row_number().over(Window.partitionBy(F.struct("*")).orderBy(F.struct("*")))
                spark.read.parquet("t").withColumn("row_key", F.xxhash64("*", copies)).write.parquet("keyed")
                """)
        ),
        # Tied rows, but `lag(pay, 2)` of either tied 50 looks back to a 30: the same answers either way.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                staff = spark.createDataFrame([("ann", "ops", 30), ("bob", "ops", 30), ("cy", "ops", 50), ("dee", "ops", 50)], ["name", "team", "pay"])
                staff.withColumn("two_back", F.lag("pay", 2).over(Window.partitionBy("team").orderBy("pay"))).show()
                """)
        ),
        # Literal rows are read: no two differ on the same (partition, order) value, so nothing ties.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                scores = spark.createDataFrame([("ann", "math", 90), ("bob", "math", 80), ("cid", "math", 70)], ["name", "subject", "score"])
                scores.withColumn("half", F.ntile(2).over(Window.partitionBy("subject").orderBy("score"))).show()
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from datetime import date
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                sc = spark.sparkContext
                prices = sc.parallelize([("tea", date(2024, 1, 1), 3.0), ("tea", date(2024, 1, 3), 3.5), ("tea", date(2024, 1, 2), 4.0)]).toDF(["item", "day", "price"])
                prices.withColumn("before", F.lag("price").over(Window.partitionBy("item").orderBy("day"))).show()
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                by_user = Window.partitionBy("user").orderBy("ts", "event_id")
                sessions = events.withColumn("entry_page", F.first("page").over(by_user))
                """)
        ),
        # Order-insensitive functions need no order.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user")
                events.withColumn("n", F.count("page").over(w)).withColumn("m", F.max("ts").over(w))
                """)
        ),
        # Sorting the collected list removes the dependence on arrival order.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user")
                events.select(F.array_sort(F.collect_list("page").over(w)).alias("pages"))
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.withColumn("n", F.size(F.collect_list("page").over(Window.partitionBy("user"))))
                """)
        ),
        # The spec comes from a helper that orders it (with a tie-breaker).
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def by_user():
                    return Window.partitionBy("user").orderBy(F.col("ts").desc(), "event_id")
                events.withColumn("last_page", F.first("page").over(by_user()))
                """)
        ),
        # SQL expression strings are parsed: an ordered window with a tie-breaker is clean there too.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.selectExpr("first(page) OVER (PARTITION BY user ORDER BY ts, event_id) AS entry")
                events.withColumn("e", F.expr("first(page) OVER (PARTITION BY user ORDER BY ts, event_id)"))
                """)
        ),
        # A groupBy aggregate is SPX101's business, and pandas' first is not Spark's.
        Valid(
            textwrap.dedent("""\
                import pandas as pd
                pdf = pd.DataFrame()
                pdf.groupby('user').first()
                pdf.rolling(3).apply(lambda xs: xs[0])
                """)
        ),
        # A local `first` shadows Spark's.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def first(column):
                    return F.min(column)
                events.withColumn("f", first("page").over(Window.partitionBy("user")))
                """)
        ),
        # Ties give `rank` one answer: every row of the partition ranks 1.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy(F.lit(1))
                events.withColumn("r", F.rank().over(w))
                """)
        ),
        # One order column that identifies the row, or made unique upstream, and lag over time.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy(F.col("event_id").desc())
                events.withColumn("r", F.row_number().over(w))
                by_ts = Window.partitionBy("user").orderBy("ts")
                events.dropDuplicates(["user", "ts"]).withColumn("r", F.row_number().over(by_ts))
                events.withColumn("prev", F.lag("page").over(by_ts))
                """)
        ),
        # Ordered by its keys after a deduplication on them: one row per key, nothing to choose.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user", "ts").orderBy("ts")
                events.dropDuplicates(["user", "ts"]).withColumn("r", F.row_number().over(w))
                """)
        ),
        # An order column beyond the partition keys, and an order held in a parameter.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy("user", "ts")
                events.withColumn("r", F.row_number().over(w))
                def ranked(df, order):
                    return df.withColumn("r", F.row_number().over(Window.partitionBy("user").orderBy(order)))
                """)
        ),
        # Rows handed back by an unknown library call may already be one per key: not judged.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                from platform_tools import audit
                spark = SparkSession.builder.getOrCreate()
                plants = audit.tap(spark, spark.read.table("raw.plants"))
                w = Window.partitionBy("plant").orderBy("plant")
                current = plants.withColumn("rn", F.row_number().over(w)).filter("rn = 1")
                """)
        ),
        # Ordered by the very value `first` reads: rows tied on it give the same answer.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.withColumn("entry", F.first("page").over(Window.partitionBy("user").orderBy("page")))
                """)
        ),
        # SQL: the named window is ordered, with a tie-breaker.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                landing = spark.sql(
                    "SELECT user, first_value(page) OVER w AS landing FROM visits "
                    "WINDOW w AS (PARTITION BY user ORDER BY ts, page)"
                )
                """)
        ),
        # Numbered only to look at in the notebook; the job writes the raw rows, not the numbering.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                by_user = Window.partitionBy("user").orderBy(F.col("ts").desc())
                numbered = events.withColumn("n", F.row_number().over(by_user))
                latest = numbered.filter("n = 1")
                display(numbered)
                events.write.mode("overwrite").saveAsTable("events_copy")
                """)
        ),
        # SQL ordered by a count: RANK gives tied stores the same rank, and a tie-breaker settles
        # ROW_NUMBER; a key built with `concat` may tell rows apart (not judged as an amount).
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                CREATE TABLE top_store AS
                SELECT * FROM (
                    SELECT region, store, RANK() OVER (PARTITION BY region ORDER BY COUNT(*) DESC) AS rnk
                    FROM visits GROUP BY region, store
                ) WHERE rnk = 1
                \"\"\")
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                CREATE TABLE top_store AS
                SELECT * FROM (
                    SELECT region, store, ROW_NUMBER() OVER (PARTITION BY region ORDER BY COUNT(*) DESC, store) AS rn
                    FROM visits GROUP BY region, store
                ) WHERE rn = 1
                \"\"\")
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                CREATE TABLE first_visit AS
                SELECT * FROM (
                    SELECT user, page, ROW_NUMBER() OVER (PARTITION BY user ORDER BY concat(day, '-', visit_id)) AS rn
                    FROM visits
                ) WHERE rn = 1
                \"\"\")
                """)
        ),
        # One row per partition (grouped by the partition key itself): nothing competes. And a
        # fallback between two dates is a date of the row, not a total that ties.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                CREATE TABLE spend AS
                SELECT customer, SUM(amount) AS total,
                       ROW_NUMBER() OVER (PARTITION BY customer ORDER BY SUM(amount) DESC) AS rn
                FROM orders GROUP BY customer
                \"\"\")
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                CREATE TABLE latest_address AS
                SELECT * FROM (
                    SELECT customer, address,
                           ROW_NUMBER() OVER (PARTITION BY customer ORDER BY COALESCE(moved_out, moved_in) DESC) AS rn
                    FROM addresses
                ) WHERE rn = 1
                \"\"\")
                """)
        ),
    ]
    INVALID = [
        # A running total over a frame of rows, on literal rows where day 2 holds two sales: the
        # first of the tied rows to arrive gets 30, the other 50, and which is which is the shuffle's.
        Invalid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                sales = spark.createDataFrame(
                    [("north", 1, 10), ("north", 2, 20), ("north", 2, 40), ("north", 3, 5)],
                    ["region", "day", "amount"],
                )
                running = Window.partitionBy("region").orderBy("day").rowsBetween(Window.unboundedPreceding, Window.currentRow)
                sales.withColumn("to_date", F.sum("amount").over(running)).show()
                """
            ),
            line=8,
            column=28,
            related_lines=(7,),
            severity=Severity.INFO,
        ),
        # Ordered by a column stamped with the load time just before: every row of a partition
        # holds the same value, so the tie is certain and the kept row is the shuffle's choice.
        Invalid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                orders = spark.read.parquet("orders")
                stamped = orders.withColumn("loaded_at", F.current_timestamp()).filter(F.col("amount") > 0)
                latest = Window.partitionBy("customer").orderBy(F.col("loaded_at").desc())
                kept = stamped.withColumn("rn", F.row_number().over(latest)).filter("rn = 1").drop("rn")
                kept.write.mode("overwrite").parquet("last_orders")
                """
            ),
            line=6,
            column=32,
            related_lines=(4,),
            # Nothing else tells the rows apart: the whole row breaks the ties (unsafe).
            expected_fix=textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                orders = spark.read.parquet("orders")
                stamped = orders.withColumn("loaded_at", F.current_timestamp()).filter(F.col("amount") > 0)
                latest = (
                    Window.partitionBy("customer")
                    .orderBy(
                        F.col("loaded_at").desc(),
                        F.to_json(
                            F.struct("*"),
                            {
                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                            },
                        ),
                    )
                )
                kept = stamped.withColumn("rn", F.row_number().over(latest)).filter("rn = 1").drop("rn")
                kept.write.mode("overwrite").parquet("last_orders")
                """
            ),
        ),
        # A surrogate key numbered over a constant order, made in a `withColumns` dict: which
        # customer gets which key is the order the single partition's rows arrive in.
        Invalid(
            textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                customers = spark.read.parquet("customers")
                everyone = Window.partitionBy(F.lit(1)).orderBy(F.lit(1))
                keyed = customers.withColumns({"customer_key": F.row_number().over(everyone), "loaded_on": F.current_date()})
                keyed.write.mode("overwrite").parquet("dim_customer")
                """
            ),
            line=5,
            column=47,
            related_lines=(4,),
            expected_fix=textwrap.dedent(
                """\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                customers = spark.read.parquet("customers")
                everyone = (
                    Window.partitionBy(F.lit(1))
                    .orderBy(
                        F.lit(1),
                        F.to_json(
                            F.struct("*"),
                            {
                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                            },
                        ),
                    )
                )
                keyed = customers.withColumns({"customer_key": F.row_number().over(everyone), "loaded_on": F.current_date()})
                keyed.write.mode("overwrite").parquet("dim_customer")
                """
            ),
        ),
        # The near misses: `rank()` gives tied rows one number; a join on a key the other side may
        # repeat copies an id onto several rows.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ranked = events.withColumn("r", F.rank().over(Window.partitionBy("user").orderBy("ts")))
                ranked.withColumn("n", F.row_number().over(Window.partitionBy("user").orderBy("r"))).write.parquet("out")
                """),
            line=5,
            column=23,
            severity=Severity.INFO,
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ranked = events.withColumn("r", F.rank().over(Window.partitionBy("user").orderBy("ts")))
                (
                    ranked.withColumn(
                        "n",
                        F.row_number().over(
                            Window.partitionBy("user").orderBy(
                                "r",
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
                    .write.parquet("out")
                )
                """),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ided = events.withColumn("seq_no", F.monotonically_increasing_id())
                pages = ided.join(spark.read.parquet("pages"), "page")
                pages.withColumn("n", F.row_number().over(Window.partitionBy("user").orderBy("seq_no"))).write.parquet("out")
                """),
            line=6,
            column=22,
            severity=Severity.INFO,
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ided = events.withColumn("seq_no", F.monotonically_increasing_id())
                pages = ided.join(spark.read.parquet("pages"), "page")
                (
                    pages.withColumn(
                        "n",
                        F.row_number().over(
                            Window.partitionBy("user").orderBy(
                                "seq_no",
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
                    .write.parquet("out")
                )
                """),
        ),
        # Literal rows that do tie: two math scores of 90 straddle the ntile boundary.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                scores = spark.createDataFrame([("ann", "math", 90), ("bob", "math", 90), ("cid", "math", 70)], ["name", "subject", "score"])
                scores.withColumn("half", F.ntile(2).over(Window.partitionBy("subject").orderBy("score"))).show()
                """),
            line=4,
            column=26,
            related_lines=(4,),
            severity=Severity.INFO,
            expected_fix=(
                textwrap.dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    scores = spark.createDataFrame([("ann", "math", 90), ("bob", "math", 90), ("cid", "math", 70)], ["name", "subject", "score"])
                    (
                        scores.withColumn(
                            "half",
                            F.ntile(2).over(
                                Window.partitionBy("subject").orderBy(
                                    "score",
                                    F.to_json(
                                        F.struct("*"),
                                        {"timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX", "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS"},
                                    ),
                                ),
                            ),
                        )
                        .show()
                    )
                    """)
            ),
        ),
        # `lag` over literal rows (through `parallelize(...).toDF`) with two prices on one day.
        Invalid(
            textwrap.dedent("""\
                from datetime import date
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                sc = spark.sparkContext
                prices = sc.parallelize([("tea", date(2024, 1, 1), 3.0), ("tea", date(2024, 1, 1), 3.5), ("tea", date(2024, 1, 2), 4.0)]).toDF(["item", "day", "price"])
                prices.withColumn("before", F.lag("price").over(Window.partitionBy("item").orderBy("day"))).show()
                """),
            line=6,
            column=28,
            related_lines=(6,),
            severity=Severity.INFO,
            expected_fix=(
                textwrap.dedent("""\
                    from datetime import date
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    sc = spark.sparkContext
                    prices = sc.parallelize([("tea", date(2024, 1, 1), 3.0), ("tea", date(2024, 1, 1), 3.5), ("tea", date(2024, 1, 2), 4.0)]).toDF(["item", "day", "price"])
                    (
                        prices.withColumn(
                            "before",
                            F.lag("price").over(
                                Window.partitionBy("item").orderBy(
                                    "day",
                                    F.to_json(F.struct("*"), {"timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX", "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS"}),
                                ),
                            ),
                        )
                        .show()
                    )
                    """)
            ),
        ),
        # Near miss: the same numbering, and the latest rows are written.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                by_user = Window.partitionBy("user").orderBy(F.col("ts").desc())
                numbered = events.withColumn("n", F.row_number().over(by_user))
                latest = numbered.filter("n = 1")
                display(numbered)
                latest.write.mode("overwrite").saveAsTable("latest_events")
                """),
            line=5,
            column=34,
            related_lines=(4,),
            severity=Severity.INFO,
            # The whole row breaks the tie (unsafe: one of the orders the shuffle could give).
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                by_user = (
                    Window.partitionBy("user")
                    .orderBy(
                        F.col("ts").desc(),
                        F.to_json(
                            F.struct("*"),
                            {
                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                            },
                        ),
                    )
                )
                numbered = events.withColumn("n", F.row_number().over(by_user))
                latest = numbered.filter("n = 1")
                display(numbered)
                latest.write.mode("overwrite").saveAsTable("latest_events")
                """),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                by_user = Window.partitionBy("user")
                sessions = events.withColumn("entry_page", F.first("page").over(by_user))
                """),
            line=5,
            column=43,
            related_lines=(4,),
            # No sort: arrival order, a sequence number taken at the source and dropped after (unsafe).
            expected_fix=(
                textwrap.dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    events = spark.read.parquet("events")
                    by_user = Window.partitionBy("user").orderBy("_sparkpar_seq")
                    sessions = (
                        events.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .withColumn("entry_page", F.first("page").over(by_user))
                        .drop("_sparkpar_seq")
                    )
                    """)
            ),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql.functions import collect_list as gather
                from pyspark.sql.window import Window
                def with_history(df):
                    spec = Window.partitionBy("device").rowsBetween(Window.unboundedPreceding, 0)
                    return df.withColumn("history", gather("status").over(spec))
                """),
            line=5,
            column=36,
            related_lines=(4,),
            # A frame parameter with no sort and no source to number: no automatic fix.
            expected_fix=None,
        ),
        Invalid(
            textwrap.dedent("""\
                import pyspark.sql.functions as fn
                from pyspark.sql import Window
                def by(key):
                    return Window.partitionBy(key)
                def latest(df):
                    return df.select("device", fn.last("status", ignorenulls=True)
                                     .over(by("device")).alias("status"))
                """),
            line=6,
            column=31,
            related_lines=(4,),
            # No order anywhere: the whole row orders the spec where the helper builds it (unsafe).
            expected_fix=(
                textwrap.dedent("""\
                    import pyspark.sql.functions as fn
                    from pyspark.sql import Window
                    def by(key):
                        return (
                            Window.partitionBy(key)
                            .orderBy(
                                fn.to_json(
                                    fn.struct("*"),
                                    {
                                        "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                        "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                    },
                                ),
                            )
                            .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
                        )
                    def latest(df):
                        return df.select("device", fn.last("status", ignorenulls=True)
                                         .over(by("device")).alias("status"))
                    """)
            ),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.selectExpr("user", "first(page) OVER (PARTITION BY user) AS entry_page")
                """),
            line=4,
            column=27,  # `first` inside the string, not the string
            # The window is SQL text: no automatic fix.
            expected_fix=None,
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                stream = spark.readStream.format("kafka").load()
                stream.withColumn("second", F.nth_value("page", 2).over(Window.partitionBy("user")))
                """),
            line=5,
            column=28,
            related_lines=(5,),
            # Streaming queries support only time windows: no automatic fix.
            expected_fix=None,
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user")
                latest = events.orderBy("ts").withColumn("last_page", F.last("page").over(w)).withColumn("views", F.count("page").over(w))
                """),
            line=5,
            column=54,
            related_lines=(4,),
            # The user's sort orders the window, the value breaks ties (safe); the whole-partition
            # frame keeps `last` the partition's last row and `count` the partition's count.
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy("ts", "page").rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
                latest = events.orderBy("ts").withColumn("last_page", F.last("page").over(w)).withColumn("views", F.count("page").over(w))
                """),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql.functions import col, collect_list as gather
                from pyspark.sql.window import Window
                def with_history(df):
                    spec = Window.partitionBy("device").rowsBetween(Window.unboundedPreceding, 0)
                    return df.orderBy(col("ts").desc()).withColumn("history", gather("status").over(spec))
                """),
            line=5,
            column=62,
            related_lines=(4,),
            # The spec's own frame stays: the history up to each row, newest first.
            expected_fix=(
                textwrap.dedent("""\
                    from pyspark.sql.functions import col, collect_list as gather
                    from pyspark.sql.window import Window
                    def with_history(df):
                        spec = (
                            Window.partitionBy("device")
                            .orderBy(col("ts").desc(), "status")
                            .rowsBetween(Window.unboundedPreceding, 0)
                        )
                        return df.orderBy(col("ts").desc()).withColumn("history", gather("status").over(spec))
                    """)
            ),
        ),
        # Ordered by a constant: every row ties, row_number numbers them in arrival order.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy(F.lit("x"))
                numbered = events.withColumn("n", F.row_number().over(w))
                """),
            line=5,
            column=34,
            related_lines=(4,),
            # Nothing tells the rows apart: the whole row breaks the ties (unsafe).
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = (
                    Window.partitionBy("user")
                    .orderBy(
                        F.lit("x"),
                        F.to_json(
                            F.struct("*"),
                            {
                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                            },
                        ),
                    )
                )
                numbered = events.withColumn("n", F.row_number().over(w))
                """),
        ),
        # Ordered by the partition key itself: "keep row 1" keeps an arbitrary row per user.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy(F.col("user").desc())
                kept = events.withColumn("rn", F.row_number().over(w)).filter(F.col("rn") == 1)
                previous = events.withColumn("prev", F.lag("page").over(Window.partitionBy("user").orderBy("ts")))
                """),
            line=5,
            column=31,
            related_lines=(4,),
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = (
                    Window.partitionBy("user")
                    .orderBy(
                        F.col("user").desc(),
                        F.to_json(
                            F.struct("*"),
                            {
                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                            },
                        ),
                    )
                )
                kept = events.withColumn("rn", F.row_number().over(w)).filter(F.col("rn") == 1)
                previous = events.withColumn("prev", F.lag("page").over(Window.partitionBy("user").orderBy("ts")))
                """),
        ),
        # SQL: a window named in the WINDOW clause, with no ORDER BY. The one-line string would
        # pass 100 characters with the order: left, with the reason.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                landing = spark.sql(
                    "SELECT user, first_value(page) OVER w AS landing FROM visits WINDOW w AS (PARTITION BY user)"
                )
                """),
            line=4,
            column=18,
            related_lines=(4,),
            expected_fix=None,
        ),
        # The same in a triple-quoted string: the value the function reads orders the window
        # (unsafe); rows tied on it give `first_value` the same answer.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                landing = spark.sql(\"\"\"
                SELECT user, first_value(page) OVER w AS landing
                FROM visits WINDOW w AS (PARTITION BY user)
                \"\"\")
                """),
            line=4,
            column=13,
            related_lines=(4,),
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                landing = spark.sql(\"\"\"
                SELECT user, first_value(page) OVER w AS landing
                FROM visits WINDOW w AS (PARTITION BY user ORDER BY page)
                \"\"\")
                """),
        ),
        # A library call that hands the same rows back (Prophecy's metrics tap) does not hide
        # that they are read from a table.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import *
                from pyspark.sql.functions import *
                from prophecy.utils import *
                spark = SparkSession.builder.getOrCreate()
                plants = collectMetrics(spark, spark.read.table("raw.plants"), "graph", "read", "out")
                w = Window.partitionBy("plant").orderBy(col("plant").asc())
                current = plants.withColumn("rn", row_number().over(w)).filter(col("rn") == 1)
                """),
            line=7,
            column=34,
            related_lines=(6,),
            # Another star import may shadow Spark's names: the tie-breaker comes through `F`.
            expected_fix=(
                textwrap.dedent("""\
                    from pyspark.sql import *
                    from pyspark.sql.functions import *
                    from prophecy.utils import *
                    from pyspark.sql import functions as F

                    spark = SparkSession.builder.getOrCreate()
                    plants = collectMetrics(spark, spark.read.table("raw.plants"), "graph", "read", "out")
                    w = (
                        Window.partitionBy("plant")
                        .orderBy(
                            col("plant").asc(),
                            F.to_json(
                                F.struct("*"),
                                {
                                    "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                    "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                },
                            ),
                        )
                    )
                    current = plants.withColumn("rn", row_number().over(w)).filter(col("rn") == 1)
                    """)
            ),
        ),
        # SQL ordered by the partition key: the same whole-row tie-breaker, written into the query,
        # but a one-line string cannot break the line it would take past 100 characters: left.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                kept = spark.sql(
                    "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY user ORDER BY user) AS rn FROM visits) WHERE rn = 1"
                )
                """),
            line=4,
            column=30,
            related_lines=(4,),
            expected_fix=None,
        ),
        # SQL: a constant order in the WINDOW clause gets the tie-breaker there.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                prev = spark.sql(\"\"\"
                SELECT user, page, lag(page) OVER w AS previous
                FROM visits WINDOW w AS (PARTITION BY user ORDER BY 1)
                \"\"\")
                """),
            line=4,
            column=19,
            related_lines=(4,),
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                prev = spark.sql(\"\"\"
                SELECT user, page, lag(page) OVER w AS previous
                FROM visits WINDOW w AS (PARTITION BY user ORDER BY 1, to_json(struct(*),
                                         map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX',
                                         'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS')))
                \"\"\")
                """),
        ),
        # One order column that can tie: which of the tied rows gets number 1 is arrival order.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("order").orderBy(F.desc("discount"))
                best = events.withColumn("rn", F.row_number().over(w)).filter("rn = 1")
                """),
            line=5,
            column=31,
            related_lines=(4,),
            severity=Severity.INFO,
            # The whole row orders the tied rows (unsafe: a unique id may be what was meant).
            expected_fix=textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = (
                    Window.partitionBy("order")
                    .orderBy(
                        F.desc("discount"),
                        F.to_json(
                            F.struct("*"),
                            {
                                "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                            },
                        ),
                    )
                )
                best = events.withColumn("rn", F.row_number().over(w)).filter("rn = 1")
                """),
        ),
        # A helper that gets its order as an argument: reported where it is called with a constant.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def dedup(df, keys, order):
                    w = Window.partitionBy(*keys).orderBy(order)
                    return df.withColumn("rn", F.row_number().over(w)).filter("rn = 1").drop("rn")
                kept = dedup(events, ["user"], F.lit(1))
                fine = dedup(events, ["user"], F.col("event_id"))
                """),
            line=7,
            column=7,
            related_lines=(6, 5),
        ),
        # SQL ordered by a computed total: every unsold item totals 0, so which one is kept per
        # category is arrival order. No fix: the SELECT aggregates, so `*` is not the window's rows.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                INSERT OVERWRITE TABLE best_sellers
                SELECT category, item, sold FROM (
                    SELECT i.category, i.item, COALESCE(SUM(s.qty), 0) AS sold,
                           ROW_NUMBER() OVER (PARTITION BY i.category ORDER BY COALESCE(SUM(s.qty), 0) DESC) AS rn
                    FROM items i LEFT JOIN sales s ON i.item = s.item
                    GROUP BY i.category, i.item
                ) WHERE rn = 1
                \"\"\")
                """),
            line=7,
            column=11,
            related_lines=(7,),
            severity=Severity.INFO,
            expected_fix=None,
        ),
        # An average ties too: two baskets of a store with the same mean price, one kept by arrival.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                INSERT OVERWRITE TABLE best_basket
                SELECT store, basket FROM (
                    SELECT store, basket, ROW_NUMBER() OVER (PARTITION BY store ORDER BY AVG(price) DESC) AS rn
                    FROM lines GROUP BY store, basket
                ) WHERE rn = 1
                \"\"\")
                """),
            line=6,
            column=26,
            related_lines=(6,),
            severity=Severity.INFO,
            expected_fix=None,
        ),
        # A count ties just as easily: the store kept per region follows the shuffle.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sql(\"\"\"
                CREATE TABLE top_store AS
                SELECT * FROM (
                    SELECT region, store, ROW_NUMBER() OVER (PARTITION BY region ORDER BY COUNT(*) DESC) AS rn
                    FROM visits GROUP BY region, store
                ) WHERE rn = 1
                \"\"\")
                """),
            line=6,
            column=26,
            related_lines=(6,),
            severity=Severity.INFO,
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for node in ctx.graph.nodes:
            calls = [call for call in node.columns.calls if call.window is not None]
            if calls and nothing_kept(ctx.graph, node):
                continue  # the numbering is only shown, or bound to a name nobody reads
            for call in calls:
                if _unordered_window_call(call):
                    yield self._finding(ctx, ctx.graph, call)
                elif _order_orders_nothing(ctx.graph, node, call):
                    yield _at_call_site(ctx, node, call, self._no_order_finding(ctx, node, call))
                elif _order_may_tie(ctx.graph, node, call):
                    yield _at_call_site(ctx, node, call, self._tie_finding(ctx, call))

    def awaiting_callers(self, ctx: RuleContext) -> Iterator[Span]:
        """Windows ordered by their own keys over rows of unknown origin (a parameter): the
        callers in other modules say whether those rows are read from storage."""
        for node in ctx.graph.nodes:
            for call in node.columns.calls:
                if _ordered_by_own_keys(call) and not _rows_read_from_source(ctx.graph, node):
                    yield call.span

    def _tie_finding(self, ctx: RuleContext, call: ColumnCall) -> Finding:
        window = _window_of(call)
        column = _computed_order(call) if window.order_opaque else None
        column = column or window.order_by[0]
        related: tuple[RelatedLocation, ...] = ()
        if window.span is not None:
            related = (RelatedLocation(window.span, f"the window is ordered by `{column}` alone here"),)
        how = f"`ORDER BY {column}, <unique key>`" if call.from_sql else "`orderBy(<column>, <unique id>)`"
        message = (
            f"`{call.function}` over a window ordered by `{column}` alone: rows of a partition that "
            f"share a `{column}` tie, and among tied rows the order is the shuffle's, so the result "
            f"can change with partitioning. Add a tie-breaker column ({how}) "
            "unless the column is unique within each partition"
        )
        return self.finding(
            ctx, call.span, message, related=related, severity=Severity.INFO, fix=_tie_broken_fix(ctx.graph, call)
        )

    def _no_order_finding(self, ctx: RuleContext, node: StageNode, call: ColumnCall) -> Finding:
        window = _window_of(call)
        what = "a constant" if window.order_constant else "its own partition keys"
        related: tuple[RelatedLocation, ...] = ()
        if window.span is not None:
            related = (RelatedLocation(window.span, f"the window spec is ordered by {what} here"),)
        made = _constant_order(ctx.graph, node, call)
        if made is not None:
            what = f"`{window.order_by[0]}`, one value on every row"
            related = (RelatedLocation(made.span, f"`{window.order_by[0]}` is set to one value for every row here"),)
        message = (
            f"`{call.function}` over a window ordered by {what}: every row of a partition ties, so "
            "which row comes first is the order the shuffle delivers them and the result changes "
            "with partitioning. Order by a column that tells the rows apart (`orderBy(<sort column>, "
            "<tie-breaker>)`)"
        )
        return self.finding(ctx, call.span, message, related=related, fix=_tie_broken_fix(ctx.graph, call))

    def _finding(self, ctx: RuleContext, graph: StageGraph, call: ColumnCall) -> Finding:
        window = _window_of(call)
        related: tuple[RelatedLocation, ...] = ()
        if window.span is not None:
            related = (RelatedLocation(window.span, "the window spec is built here without `orderBy`"),)
        message = (
            f"`{call.function}` over a window with no `orderBy` sees each partition's rows in the "
            "order the shuffle delivers them; the result changes with partitioning. Add "
            "`orderBy(<sort column>, <tie-breaker>)` to the window spec"
        )
        return self.finding(ctx, call.span, message, related=related, fix=_fix(graph, call))


# With an order and no frame, a window's frame ends at the current row; only these still see the
# partition's first row from every row. Anything else on the spec gets the whole partition back.
_FIRST_ROW = frozenset({"first", "first_value"})


def _fix(graph: StageGraph, call: ColumnCall) -> Fix | NoFix:
    """Order the window spec where it is built: `.orderBy(order, values)`.

    The order is the sort or watermark upstream of every use of the spec (safe), otherwise the
    sequence number taken at the source (unsafe: arrival order is a choice). The order-sensitive
    functions' own value columns break ties: rows tied on the order and on the value give the
    same `first`/`last`/`nth_value`/`collect_list`. Without a frame, ordering would shrink the
    default frame to "up to the current row", so the spec also gets
    `rowsBetween(unboundedPreceding, unboundedFollowing)` unless every use is a `first`.
    """
    window_spec = _window_of(call)
    span = window_spec.span
    uses = [(n, c) for n in graph.nodes for c in n.columns.calls if c.window is not None and c.window.span == span]
    spec_call = _spec_call(graph, span) if span is not None else None
    if any(n.streaming for n, _ in uses):
        return NoFix("a streaming query allows only time windows")
    if call.from_sql:
        # The order written into the query's spec (rules/fixers/sql_window_order.py).
        return window_order_fix(site_of(call.sql)) or NoFix("the SQL is not a string the fixer can edit")
    if spec_call is None:
        return NoFix("the window spec is not built in this module")
    values = _value_columns([c for _, c in uses if c.spec is not None and c.spec.order_sensitive])
    consumers = list({n.id: n for n, _ in uses}.values())
    orders = [_user_order(graph, n) for n in consumers]
    if any(o == [] for o in orders):
        # A sort whose arguments cannot be moved: no guess in its place.
        return NoFix("the upstream sort's arguments cannot be moved (an `ascending=` keyword or a local name)")
    codes = {tuple(cst.Module([]).code_for_node(e) for e in o) if o is not None else None for o in orders}
    if values is None:
        return NoFix("a window function reads an expression, not a column, to break ties with")
    if len(codes) != 1:
        return NoFix("the spec is used on rows in different orders; which one it should take is the author's choice")
    extra: tuple[tuple[cst.CSTNode, Replacement], ...] = ()
    imports: Imports = ()
    if orders[0] is not None:
        names = {column_name(e) for e in orders[0]}
        order = [*orders[0], *(string(v) for v in values if v not in names)]
        safety, what = SAFE, "the order upstream, then " + ", ".join(values)
    else:
        # The sequence must reach every use: they all sit on one chain, and it is dropped after the last.
        last = max(consumers, key=lambda n: n.id)
        chain = {n.id for n in graph.upstream(last)}
        on_one_chain = all(n is last or n.id in chain for n in consumers)
        parts = sequence_parts(graph, last, call.call) if on_one_chain and call.call is not None else None
        if parts is not None:
            (extra, imports), order, safety = parts, [string(SEQUENCE_COLUMN)], UNSAFE
            what = "arrival order (a sequence number taken at the source)"
            if last.spec is not None and last.spec.forwarding == "all" and last.call is not None:
                extra = (*extra, (last.call, append_after("drop", [string(SEQUENCE_COLUMN)])))
        elif window_spec.has_frame:
            # A frame of its own: the author meant an order, which is theirs to name.
            return NoFix("the spec has a frame of its own but no order: the order it was meant to have is the author's")
        else:
            # No order anywhere to read: the whole row decides, one of the orders the job could see.
            tie, imports = whole_row(functions_like(graph))
            order, safety = [tie], UNSAFE
            what = "the whole row (no order to read; one of the orders the rows could arrive in)"
    window, window_imports = window_class(graph)
    frame = None
    if not window_spec.has_frame and not all(c.function in _FIRST_ROW for _, c in uses):
        frame = tuple(
            cst.Attribute(value=window, attr=cst.Name(b)) for b in ("unboundedPreceding", "unboundedFollowing")
        )
    rewrite = partial(_ordered_spec, tuple(order), frame)
    description = f"order the window by {what}" + (" over the whole partition" if frame else "")
    return Fix(safety, description, ((spec_call, rewrite), *extra), imports + (window_imports if frame else ()))


def _ordered_spec(
    order: tuple[cst.BaseExpression, ...], frame: tuple[cst.BaseExpression, ...] | None, spec: cst.Call
) -> cst.Call:
    ordered = method_call(spec, "orderBy", [e.deep_clone() for e in order])
    return method_call(ordered, "rowsBetween", list(frame)) if frame else ordered


def _tie_broken_fix(graph: StageGraph, call: ColumnCall) -> Fix | NoFix:
    """`.orderBy(lit(1))` (or the partition keys, or one column that may tie) →
    `.orderBy(lit(1), F.to_json(F.struct("*")))`.

    Unsafe: among the rows the order leaves tied, the whole row decides, which is one of the
    orders they could arrive in; the author may have meant a time column or a unique id.
    """
    span = _window_of(call).span
    if call.from_sql:
        # The same tie-breaker, written into the query (rules/fixers/sql.py).
        return window_tie_fix(site_of(call.sql)) or NoFix(
            "the SQL is not a string the fixer can edit, its SELECT aggregates or joins (`*` is not the "
            "window's rows there), or a frame-reading function shares the window"
        )
    if call.function not in FRAME_BLIND:
        return NoFix(f"a tie-breaker would change `{call.function}`'s frame, not only the order of tied rows")
    if any(n.streaming for n in graph.nodes for c in n.columns.calls if c.window is not None and c.window.span == span):
        return NoFix("a streaming query allows only time windows")
    order = _order_call(graph, span) if span is not None else None
    # Literal columns and column expressions only: a name may hold a list, which `orderBy` takes
    # only as its sole argument.
    if (
        order is None
        or not order.args
        or any(
            a.keyword is not None or a.star or not isinstance(a.value, (cst.SimpleString, cst.Call, cst.Attribute))
            for a in order.args
        )
    ):
        return NoFix("the spec's `orderBy` is not built here from columns (a name may hold a list)")
    tie, imports = whole_row(functions_like(graph))
    description = "order the window's tied rows by the whole row (no order to read)"
    return Fix(UNSAFE, description, ((order, partial(_with_tie, tie)),), imports)


def _with_tie(tie: cst.BaseExpression, order: cst.Call) -> cst.Call:
    last = order.args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return order.with_changes(args=[*order.args[:-1], last, cst.Arg(tie.deep_clone())])


def _order_call(graph: StageGraph, span: Span) -> cst.Call | None:
    """The spec's `.orderBy(...)` call: a call starting where the spec does, named orderBy."""
    # A call starting where the spec's first call does holds it or is held by it, so it is in the
    # same statement: only that statement's nodes need placing. Of nested ones, the innermost.
    anchor = span.anchor() if isinstance(span, LazySpan) else None
    statement = graph.statement_of(anchor) if anchor is not None else None
    found = None
    for node in walk(statement) if statement is not None else graph.positions:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "orderBy":
            code_range = graph.positions[node]
            if (code_range.start.line, code_range.start.column) == (span.line, span.column):
                if statement is None:
                    return node
                found = node
    return found


def _spec_call(graph: StageGraph, span: Span) -> cst.Call | None:
    """The first call of the spec's chain, `Window.partitionBy(...)`, where an order can follow."""
    if isinstance(span, LazySpan):
        # The builder spans a spec from that very call (a span in SQL text is no call): no need
        # to place every node of the module to find it.
        anchor = span.anchor()
        return anchor if isinstance(anchor, cst.Call) else None
    for node, code_range in graph.positions.items():
        if isinstance(node, cst.Call) and (code_range.start.line, code_range.start.column) == (span.line, span.column):
            if (code_range.end.line, code_range.end.column) == (span.end_line, span.end_column):
                return node
    return None


def _value_columns(calls: list[ColumnCall]) -> list[str] | None:
    """The columns the order-sensitive functions read, in order, or None if one is not a column."""
    values = []
    for use in calls:
        arguments = positional_values(use.call) if use.call is not None else []
        name = column_name(arguments[0]) if arguments else None
        if name is None:
            return None
        values += [name] if name not in values else []
    return values


def _user_order(graph: StageGraph, node: StageNode) -> list[cst.BaseExpression] | None:
    """The order the user gave the rows the window sees: a sort upstream, or the event time.

    `[]` for a sort whose arguments cannot be reused, None for no order at all.
    """
    sort = upstream_sort(graph, node)
    if sort is not None:
        return (sort_arguments(graph, sort) if sort_reaches(graph, sort, node) else None) or []
    event_time = watermark_column(graph, node)
    return [string(event_time)] if event_time else None


def _at_call_site(ctx: RuleContext, node: StageNode, call: ColumnCall, finding: Finding) -> Finding:
    """A helper that got its window order as an argument is at fault where it is called: the
    finding moves to that call, the helper's line becoming a related location. When the helper
    is wrong on its own (its standalone analysis flags the same call), it stays in the helper."""
    if node.call_site is None:
        return finding
    alone = [n for n in ctx.graph.nodes if n.call_site is None and any(c.span == call.span for c in n.columns.calls)]
    if any(
        _order_orders_nothing(ctx.graph, n, c) or _order_may_tie(ctx.graph, n, c)
        for n in alone
        for c in n.columns.calls
        if c.span == call.span
    ):
        return finding
    related = (
        RelatedLocation(finding.span, f"`{call.function}` in the helper uses the order it was given"),
        *finding.related,
    )
    return dataclasses.replace(finding, span=node.call_site.plain(), related=related)


def _order_orders_nothing(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    """An ordered spec whose order ties every row of a partition: `orderBy(lit(1))`, or
    `partitionBy("k").orderBy("k")`, under a function that reads which row comes first.

    Ordering by the keys reads as "one row per key anyway": with a deduplication upstream that
    is taken at its word. A constant order says the author expected duplicates.
    """
    window = call.window
    if window is None or not window.has_order or call.spec is None:
        return False
    if not (call.spec.order_sensitive or call.spec.tie_sensitive):
        return False
    if window.order_constant or _constant_order(graph, node, call) is not None:
        return True
    if not _ordered_by_own_keys(call):
        return False
    # Rows of unknown origin (a helper's parameter) may be unique already: judged at the call,
    # or with the facts every caller in the project passes (`awaiting_callers`).
    return _rows_read_from_source(graph, node) and not deduplicated_on(graph, node, window.partition_by)


def _constant_order(graph: StageGraph, node: StageNode, call: ColumnCall) -> StageNode | None:
    """The stage that set the window's one order column to the same value on every row
    (`withColumn("loaded_at", current_timestamp())`): the order is a constant in disguise."""
    window = call.window
    if window is None or window.order_constant or window.order_opaque or len(window.order_by) != 1:
        return None
    column = window.order_by[0]
    if column in window.partition_by:
        return None
    return constant_column(graph, node, column)


def _ordered_by_own_keys(call: ColumnCall) -> bool:
    """`partitionBy("k").orderBy("k")` under a function that reads which row comes first."""
    window = call.window
    if window is None or not window.has_order or call.spec is None or window.order_constant:
        return False
    if not (call.spec.order_sensitive or call.spec.tie_sensitive):
        return False
    if window.partition_by == ("*",):
        return False  # partitioned by the whole row (`struct("*")`): tied rows are identical copies
    return bool(window.order_by) and not window.order_opaque and set(window.order_by) <= set(window.partition_by)


def _rows_read_from_source(graph: StageGraph, node: StageNode) -> bool:
    return any(
        (n.spec is not None and n.spec.source) or (n.imported is not None and n.imported.sourced)
        for n in [node, *graph.upstream(node)]
    )


# Functions that pick one row of a partition by the order (`row_number() == 1`, the first row),
# or number the rows into buckets (`ntile`): ties decide which. `lag`/`lead` over a time column are
# left alone: series code relies on distinct times, and a tie there shifts a neighbour rather than
# choosing the kept row; over literal rows that visibly tie they are reported too.
_ROW_PICKERS = frozenset({"row_number", "first", "first_value", "last", "last_value", "ntile"})
_NEIGHBOURS = frozenset({"lag", "lead"})
# Totals over a frame of rows: reported where literal rows visibly tie, as `lag`/`lead` are.
_FRAME_TOTALS = frozenset({"sum", "avg", "mean"})
# Row pickers whose answer is the picked row's value of one column.
_END_VALUES = frozenset({"first", "first_value", "last", "last_value"})
# Names that say a column identifies a row (or a Kafka offset, unique per topic partition).
_UNIQUE_NAME = re.compile(r"(^|_)(id|uuid|guid|key|seq|sequence|offset|rownum|row_number)$|[a-z]Id$", re.IGNORECASE)


def _order_may_tie(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    """One order column that nothing says is unique per partition, under a function that reads
    which of the tied rows comes first."""
    window = call.window
    if window is None or not window.has_order or call.spec is None:
        return False
    if call.function not in _ROW_PICKERS | _NEIGHBOURS and not _row_frame_total(call):
        return False
    if current_versions_by(graph, node, window.partition_by):
        return False  # one current version per entity id: each partition holds one row
    if window.order_opaque:
        # SQL ordered by a total or a count: amounts tie like a column of them, unless the
        # partition holds one row (`PARTITION BY customer` over `GROUP BY customer`).
        if call.function not in _ROW_PICKERS or _computed_order(call) is None:
            return False
        return not deduplicated_on(graph, node, window.partition_by)
    if len(window.order_by) != 1:
        return False
    column = window.order_by[0]
    # `*` (a struct of the whole row) and the fixes' own sequence number tell every row apart.
    if column == "*" or column.startswith("_sparkpar") or column in window.partition_by:
        return False
    if _UNIQUE_NAME.search(column.rsplit(".", 1)[-1]):
        return False
    if call.function in _END_VALUES and _value_column(call) == column:
        return False  # rows tied on the order hold the same value: any of them gives the answer
    if _literal_rows_only(graph, node):
        # Rows written out in the code: whether they tie is there to read.
        return _literal_rows_tie(graph, node, window.partition_by, column, call)
    if call.function in _NEIGHBOURS or _row_frame_total(call):
        return False
    rows = graph.input_of(node)
    if rows is not None and is_unique_on(graph, rows, (*window.partition_by, column)):
        # No two rows of a partition share it: `[tool.sparkpar] unique-columns` says so, or the rows
        # were built so (one per `groupBy` key, a `monotonically_increasing_id()`, a `row_number()`).
        return False
    return not deduplicated_on(graph, node, window.partition_by + window.order_by)


def _row_frame_total(call: ColumnCall) -> bool:
    """A sum or average over a frame of rows around the current one (`rowsBetween(0, 1)`, a
    running total from `unboundedPreceding`): tied rows sit at different places in the order and
    take in different neighbours. A frame of the row alone or of the whole partition does not."""
    frame = call.window.rows_frame if call.window is not None else None
    if call.function not in _FRAME_TOTALS or frame is None:
        return False
    return frame != (0.0, 0.0) and frame != (float("-inf"), float("inf"))


def _computed_order(call: ColumnCall) -> str | None:
    """The computed amount a SQL window is ordered by alone (`COALESCE(SUM(amount), 0)`)."""
    site = site_of(call.sql)
    if not call.from_sql or site is None:
        return None
    from sparkpar_lint.sql.computed_order import computed_order  # only with SQL read: the query was parsed

    return computed_order(site.expression)


def _value_column(call: ColumnCall) -> str | None:
    """The column a window function reads as its value (`first("page")`, `first_value(page)`)."""
    if call.call is not None:
        values = positional_values(call.call)
        return column_name(values[0]) if values else None
    site = site_of(call.sql)
    if site is None:
        return None
    from sqlglot import exp  # only with SQL read: the query was parsed

    value = getattr(site.expression, "this", None)
    return value.name if isinstance(value, exp.Column) else None


# Stages that leave the literal rows' values alone (a `withColumn` is checked not to write the
# columns read).
_VALUE_KEEPING = frozenset({"withColumn", "withColumns", "cache", "persist", "alias"})


def _literal_rows_tie(graph: StageGraph, node: StageNode, keys: tuple[str, ...], order: str, call: ColumnCall) -> bool:
    """The literal rows give `call` a different answer when tied rows (different rows sharing
    the partition keys and the order value) arrive the other way round. False when the rows
    cannot be read, or a stage between them and the window may change which rows or values
    reach it."""
    columns = (*keys, order)
    for current in [node, *graph.upstream(node)]:
        found = literal_rows(graph, current)
        if found is not None:
            names, rows = found
            if not set(columns) <= set(names):
                return False
            return _answer_depends_on_ties(names, rows, keys, order, call)
        if current.method not in _VALUE_KEEPING:
            return False
        written = written_columns(current) if current.method != "alias" else []
        if written is None or set(written) & set(columns) or any(c.udf is not None for c in current.columns.calls):
            return False
    return False


def _answer_depends_on_ties(
    names: list[str], rows: list[Row], keys: tuple[str, ...], order: str, call: ColumnCall
) -> bool:
    """Number each partition's rows with the tied rows in arrival order and reversed: do the
    rows get different answers? (`lag(v, 2)` over two tied rows can look back to equal values.)"""
    answer = _answer_by_position(names, call)
    if answer is None:
        return False
    key_at = [names.index(k) for k in keys]
    order_at = names.index(order)
    partitions: dict[Row, list[Row]] = {}
    for row in rows:
        partitions.setdefault(tuple(row[i] for i in key_at), []).append(row)
    try:
        for members in partitions.values():
            forward = sorted(members, key=lambda r: _sortable(r[order_at]))
            # A stable descending sort keeps tied rows in arrival order; reversed, they arrive last-first.
            backward = sorted(members, key=lambda r: _sortable(r[order_at]), reverse=True)[::-1]
            if sorted(map(repr, answer(forward))) != sorted(map(repr, answer(backward))):
                return True
    except TypeError:
        return False  # values that do not compare: unknown
    return False


def _sortable(value: object) -> tuple[bool, object]:
    return (value is not None, value)  # nulls first, as Spark's ascending order


def _answer_by_position(names: list[str], call: ColumnCall) -> Callable[[list[Row]], list[tuple[Row, Any]]] | None:
    """A function from one partition's ordered rows to (row, answer) pairs, for the functions
    whose answer follows the row's position; None when the call cannot be read."""
    arguments = call.call.args if call.call is not None else ()
    positional = [a.value for a in arguments if a.keyword is None]
    keyword = {a.keyword.value: a.value for a in arguments if a.keyword is not None}
    if call.function == "row_number":
        return lambda rows: [(row, i) for i, row in enumerate(rows)]
    if call.function == "ntile":
        buckets = _integer(positional[0] if positional else keyword.get("n"))
        if not buckets:
            return None
        return lambda rows: [(row, _bucket(i, len(rows), buckets)) for i, row in enumerate(rows)]
    if call.function in _NEIGHBOURS:
        column = literal_names(positional[0] if positional else keyword.get("col"))
        offset_expr = positional[1] if len(positional) > 1 else keyword.get("offset")
        offset = _integer(offset_expr) if offset_expr is not None else 1
        if not column or len(column) != 1 or column[0] not in names or offset is None:
            return None
        at, step = names.index(column[0]), -offset if call.function == "lag" else offset
        return lambda rows: [
            (row, rows[i + step][at] if 0 <= i + step < len(rows) else None) for i, row in enumerate(rows)
        ]
    frame = call.window.rows_frame if call.window is not None else None
    if frame is not None and _row_frame_total(call):
        column = literal_names(positional[0] if positional else keyword.get("col"))
        if not column or len(column) != 1 or column[0] not in names:
            return None
        return partial(_frame_totals, names.index(column[0]), frame, call.function)
    # first/last and the rest: the tied rows' own values decide; any two different tied rows count.
    return lambda rows: [(rows[0], 0), (rows[-1], 1)]


def _frame_totals(at: int, frame: tuple[float, float], function: str, rows: list[Row]) -> list[tuple[Row, Any]]:
    """Each row with the sum (or average) of the non-null values in its frame of rows."""
    answers = []
    for i, row in enumerate(rows):
        first = 0 if frame[0] == float("-inf") else max(0, i + int(frame[0]))
        last = len(rows) - 1 if frame[1] == float("inf") else min(len(rows) - 1, i + int(frame[1]))
        values = [r[at] for r in rows[first : last + 1] if r[at] is not None]
        total = sum(values) if values else None
        answers.append((row, total if function == "sum" or total is None else total / len(values)))
    return answers


def _integer(expr: cst.BaseExpression | None) -> int | None:
    return int(expr.value) if isinstance(expr, cst.Integer) else None


def _bucket(position: int, count: int, buckets: int) -> int:
    """Spark's ntile: the first `count % buckets` buckets hold one row more."""
    size, extra = divmod(count, buckets)
    big = (size + 1) * extra
    return position // (size + 1) if position < big else extra + (position - big) // max(size, 1)


def _literal_rows_only(graph: StageGraph, node: StageNode) -> bool:
    sources = [n for n in [node, *graph.upstream(node)] if n.spec is not None and n.spec.source]
    return bool(sources) and all(n.method in ("createDataFrame", "parallelize") for n in sources)


def _window_of(call: ColumnCall) -> WindowSpecValue:
    """The window of a call this rule reports or fixes: `check` only passes calls over one."""
    assert call.window is not None
    return call.window


def _unordered_window_call(call: ColumnCall) -> bool:
    if call.window is None or call.window.has_order:
        return False
    if call.spec is None or not call.spec.order_sensitive:
        return False
    functions = load_catalogue().functions
    return not any(functions[name].order_normalizing for name in call.enclosing if name in functions)
