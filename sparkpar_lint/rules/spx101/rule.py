"""SPX101 order-dependent-aggregate: the rule, its examples and what it flags."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

from sparkpar_lint.edits.model import SAFE
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx101.aggregates import discarded_sort, order_dependent, order_harmless
from sparkpar_lint.rules.spx101.fix import global_fix, grouped_fix, named_as_before


class OrderDependentAggregate(Rule):
    id = "SPX101"
    name = "order-dependent-aggregate"
    severity = Severity.ERROR
    summary = "An aggregate whose result depends on row order runs after a shuffle that loses it."
    fix_safety = SAFE
    fix_needs = (
        "needs a sort above the aggregate whose columns reach it, or a batch source with no shuffle "
        "before it, and a plain column as the aggregate's argument"
    )
    VALID = [
        # Only tested for emptiness: which value came first cannot change that.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                firsts = spark.read.parquet("t").groupBy("user").agg(F.first("page"))
                if firsts.isEmpty():
                    raise SystemExit(1)
                """)
        ),
        # The list reaches a UDF parameter that only sums over it (the other is the row's total).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                def spread(secs, total):
                    if not secs or total <= 0:
                        return 0.0
                    h = 0.0
                    for s in secs:
                        h -= (s / total) * (s / total)
                    return h
                spread_udf = F.udf(spread, "double")
                days = spark.read.parquet("stays").groupBy("user").agg(F.sum("secs").alias("total"), F.collect_list("secs").alias("secs"))
                days.withColumn("h", spread_udf("secs", "total")).drop("secs").write.parquet("o")
                """)
        ),
        # Lists collected side by side from non-null columns, zipped and exploded: each pair is
        # one input row's, whatever the order.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                lines = spark.read.parquet("lines").dropna(subset=["item", "price"])
                baskets = lines.groupBy("basket").agg(F.collect_list("item").alias("items"), F.collect_list("price").alias("prices"))
                baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")
                """)
        ),
        # The same with filters instead: `isNotNull()` and SQL's `IS NOT NULL`.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                lines = spark.read.parquet("lines").filter(F.col("item").isNotNull()).where("price IS NOT NULL")
                baskets = lines.groupBy("basket").agg(F.collect_list("item").alias("items"), F.collect_list("price").alias("prices"))
                baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")
                """)
        ),
        # Collected to the driver and read only through order-free summaries of each row's list.
        Valid(
            dedent("""\
                import statistics
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                lat = spark.read.parquet("p").groupBy("k").agg(F.collect_list("ms").alias("ms"))
                rows = lat.collect()
                mid = {r.k: statistics.median(r.ms) for r in rows}
                for r in rows:
                    print(r.k, max(r["ms"]), len(set(r.ms)))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("p").groupBy("k").agg(F.min_by("v", "ts"))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("p").groupBy("k").agg(F.sum("v"), F.max("ts"))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                df = spark.read.parquet("p")
                df.groupBy("k").agg(F.array_sort(F.collect_list(F.struct("ts", "v"))))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("p").groupBy("k").agg(F.size(F.collect_list("v")))
                """)
        ),
        # A local function that happens to be called `first` is not Spark's.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def first(xs):
                    return xs[0]
                spark.read.parquet("p").groupBy("k").agg(first(["v"]))
                """)
        ),
        # Order-insensitive global aggregates, and a first over an ordered window, in a select.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                df = spark.read.parquet("p")
                df.select(F.max("ts"), F.count("v"), F.sort_array(F.collect_list("v")))
                df.select(F.first("v").over(Window.partitionBy("k").orderBy("ts")))
                """)
        ),
        # The name comes from a lookup joined on the group key: one value per group.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                names = spark.read.parquet("orgs").select("org", "org_name").distinct()
                visits = spark.read.parquet("v").join(names, on="org", how="left")
                visits.groupBy("org").agg(F.first("org_name").alias("name"), F.count("*").alias("n"))
                """)
        ),
        # A column computed from the group keys alone is the same on every row of a group.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                v = spark.read.parquet("v").withColumn("region", F.substring("zip", 1, 2))
                v.groupBy("zip").agg(F.first("region"), F.sum("amount"))
                """)
        ),
        # Groups of one row: the rows are already unique on the keys.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                latest = spark.read.parquet("v").groupBy("user").agg(F.max("ts").alias("ts"))
                latest.groupBy("user").agg(F.first("ts"))
                """)
        ),
        # The list only answers "did the session buy?": element order never reaches an output.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                sessions = spark.read.parquet("v").groupBy("session").agg(F.collect_list("action").alias("actions"))
                sessions.withColumn("bought", F.array_contains("actions", "buy")).drop("actions").write.parquet("o")
                """)
        ),
        # A UDF that only counts the matching elements: order-free.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                def count_buys(actions):
                    n = 0
                    for a in actions:
                        if a == 'buy':
                            n += 1
                    return n
                buys = F.udf(count_buys, 'int')
                spark.read.parquet("v").groupBy("s").agg(buys(F.collect_list("action")).alias("buys"))
                """)
        ),
        # pandas, not Spark: a lower-case groupby on a pandas frame.
        Valid(
            dedent("""\
                import pandas as pd
                import pyspark
                pdf = pd.DataFrame()
                pdf.groupby('k').first()
                """)
        ),
        # SQL: max_by names the order; an array sorted after collecting has none to lose.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                latest = spark.sql("SELECT sensor, max_by(value, ts) AS value FROM readings GROUP BY sensor")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pages = spark.sql("SELECT user, array_sort(collect_list(page)) AS pages FROM visits GROUP BY user")
                """)
        ),
    ]
    INVALID = [
        # A descending sort lost by the groupBy: the first row of each group is its latest.
        # The near miss: the driver reads each list's first element.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                lat = spark.read.parquet("p").groupBy("k").agg(F.collect_list("ms").alias("ms"))
                rows = lat.collect()
                first = {r.k: r.ms[0] for r in rows}
                """),
            line=3,
            column=47,
            related_lines=(3,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             lat = (
                                 spark.read.parquet("p")
                                 .withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                 .groupBy("k")
                                 .agg(
                                     F.array_compact(
                                         F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "ms"))).getField("ms"),
                                     ).alias("ms"),
                                 )
                             )
                             rows = lat.collect()
                             first = {r.k: r.ms[0] for r in rows}
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                prices = spark.read.parquet("prices").orderBy(F.col("ts").desc())
                prices.groupBy("item").agg(F.first("price").alias("price")).show()
                """),
            line=4,
            column=27,
            related_lines=(3, 4),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             prices = spark.read.parquet("prices")
                             prices.groupBy("item").agg(F.max(F.struct("ts", "price")).getField("price").alias("price")).show()
                             """),
        ),
        # Ignoring nulls over rows sorted by that very column: its largest value.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                people = spark.read.parquet("people")
                people.sort(F.desc("weight")).groupBy("name").agg(F.first("weight", True).alias("w")).show()
                """),
            line=4,
            column=50,
            related_lines=(4, 4),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             people = spark.read.parquet("people")
                             people.groupBy("name").agg(F.max("weight").alias("w")).show()
                             """),
        ),
        # Sorted by that very column with its nulls last: the first row holds the smallest value
        # (null only when every value is), which is `min`.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                people = spark.read.parquet("people")
                people.sort(F.col("weight").asc_nulls_last()).groupBy("name").agg(F.first("weight").alias("w")).show()
                """),
            line=4,
            column=66,
            related_lines=(4, 4),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             people = spark.read.parquet("people")
                             people.groupBy("name").agg(F.min("weight").alias("w")).show()
                             """),
        ),
        # The near miss: the nulls come first, so `first` is null as soon as one weight is.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                people = spark.read.parquet("people")
                people.sort(F.asc_nulls_first("weight")).groupBy("name").agg(F.first("weight").alias("w")).show()
                """),
            line=4,
            column=61,
            related_lines=(4, 4),
            expected_fix=None,
        ),
        # The near miss: that parameter is read by position.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                def first_share(secs, total):
                    return secs[0] / total
                share_udf = F.udf(first_share, "double")
                days = spark.read.parquet("stays").groupBy("user").agg(F.sum("secs").alias("total"), F.collect_list("secs").alias("secs"))
                days.withColumn("f", share_udf("secs", "total")).drop("secs").write.parquet("o")
                """),
            line=6,
            column=85,
            related_lines=(6,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def first_share(secs, total):
                                 return secs[0] / total
                             share_udf = F.udf(first_share, "double")
                             days = (
                                 spark.read.parquet("stays")
                                 .withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                 .groupBy("user")
                                 .agg(
                                     F.sum("secs").alias("total"),
                                     F.array_compact(F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "secs"))).getField("secs")).alias("secs"),
                                 )
                             )
                             days.withColumn("f", share_udf("secs", "total")).drop("secs").write.parquet("o")
                             """),
        ),
        # Near misses: one list sorted and the other not, so the pairs no longer match rows (a
        # nullable column shifts its list the same way: fixtures/spx101/bad_zipped_lists_with_nulls.py);
        # and a slice reads positions before the order-free `array_contains`.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                lines = spark.read.parquet("lines").dropna(subset=["item", "price"])
                baskets = lines.groupBy("basket").agg(F.sort_array(F.collect_list("item")).alias("items"), F.collect_list("price").alias("prices"))
                baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")
                """),
            line=4,
            column=91,
            related_lines=(4,),
            # Arrival order for the unsorted list, as the sequential run pairs them (unsafe).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             lines = spark.read.parquet("lines").dropna(subset=["item", "price"])
                             baskets = (
                                 lines.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                 .groupBy("basket")
                                 .agg(
                                     F.sort_array(F.collect_list("item")).alias("items"),
                                     F.array_compact(F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "price"))).getField("price")).alias("prices"),
                                 )
                             )
                             baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                firsts = spark.read.parquet("v").groupBy("user").agg(F.collect_list("page").alias("pages"))
                firsts.select("user", F.array_contains(F.slice("pages", 1, 3), "home").alias("early")).write.parquet("o")
                """),
            line=3,
            column=53,
            related_lines=(3,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             firsts = (
                                 spark.read.parquet("v")
                                 .withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                 .groupBy("user")
                                 .agg(
                                     F.array_compact(
                                         F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "page"))).getField("page"),
                                     ).alias("pages"),
                                 )
                             )
                             firsts.select("user", F.array_contains(F.slice("pages", 1, 3), "home").alias("early")).write.parquet("o")
                             """),
        ),
        # The lookup is joined on another column than the group key: a group can hold several names.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                names = spark.read.parquet("orgs").select("site", "org_name")
                visits = spark.read.parquet("v").join(names, on="site", how="left")
                visits.groupBy("org").agg(F.first("org_name").alias("name"))
                """),
            line=5,
            column=26,
            related_lines=(5,),
            # Any value of the group will do for the author: the smallest is one the data decides (unsafe).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             names = spark.read.parquet("orgs").select("site", "org_name")
                             visits = spark.read.parquet("v").join(names, on="site", how="left")
                             visits.groupBy("org").agg(F.min("org_name").alias("name"))
                             """),
        ),
        # A star import makes `first` (and `max`) Spark's; the fix goes through a new `F` alias.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                from pyspark.sql.functions import *
                spark = SparkSession.builder.getOrCreate()
                visits = spark.read.parquet("v")
                visits.groupBy("user").agg(first("page").alias("entry"), max("ts").alias("seen")).write.parquet("o")
                """),
            line=5,
            column=27,
            related_lines=(5,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             from pyspark.sql.functions import *
                             spark = SparkSession.builder.getOrCreate()
                             visits = spark.read.parquet("v")
                             (
                                 visits.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                 .groupBy("user")
                                 .agg(
                                     F.min(F.struct("_sparkpar_seq", "page")).getField("page").alias("entry"),
                                     max("ts").alias("seen"),
                                 )
                                 .write.parquet("o")
                             )
                             """),
        ),
        # The list's order reaches the output through `concat_ws`.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                sessions = spark.read.parquet("v").groupBy("session").agg(F.collect_list("page").alias("pages"))
                sessions.withColumn("path", F.concat_ws(" > ", "pages")).drop("pages").write.parquet("o")
                """),
            line=3,
            column=58,
            related_lines=(3,),
            # No sort: arrival order becomes a sequence number taken at the source (unsafe).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             sessions = (
                                 spark.read.parquet("v")
                                 .withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                 .groupBy("session")
                                 .agg(
                                     F.array_compact(
                                         F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "page"))).getField("page"),
                                     ).alias("pages"),
                                 )
                             )
                             sessions.withColumn("path", F.concat_ws(" > ", "pages")).drop("pages").write.parquet("o")
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                df = spark.read.parquet("events")
                latest = df.orderBy("ts").groupBy("user").agg(F.first("page"))
                """),
            line=4,
            column=46,
            related_lines=(4, 4),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             df = spark.read.parquet("events")
                             latest = df.groupBy("user").agg(F.min(F.struct("ts", "page")).getField("page").alias("first(page)"))
                             """),
        ),
        Invalid(
            dedent("""\
                import pyspark.sql.functions as fn
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                events = spark.readStream.format("kafka").load()
                pages = fn.collect_list("page")
                events.groupBy("user").agg(pages)
                """),
            line=5,
            column=8,
            related_lines=(6,),
            # No sort and a streaming source: no order to read, so the list is sorted (unsafe).
            expected_fix=dedent("""\
                             import pyspark.sql.functions as fn
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             events = spark.readStream.format("kafka").load()
                             pages = fn.array_sort(fn.collect_list("page"))
                             events.groupBy("user").agg(pages)
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql.functions import last as final_value
                def latest(df):
                    return df.groupBy("user").agg(final_value("page"))
                """),
            line=3,
            column=34,
            related_lines=(3,),
            # No order anywhere: `max`, one of the answers `last` can give (unsafe). `max` would
            # shadow the builtin, so it comes through a new `F` alias; the unused import goes.
            expected_fix=dedent("""\
                             from pyspark.sql import functions as F

                             def latest(df):
                                 return df.groupBy("user").agg(F.max("page").alias("last(page)"))
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                def sessions(spark):
                    return spark.read.json("e").sort("ts")
                sessions(spark).groupBy("k").agg({"page": "first"})
                """),
            line=5,
            column=42,
            related_lines=(4, 5),
            # The aggregate is a string in a dict: nothing to replace it with.
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import functions as F
                def first_page(spark):
                    visits = spark.read.parquet("visits").select("user", "page")
                    return visits.groupBy("user").agg(F.first("page"))
                """),
            line=4,
            column=38,
            related_lines=(4,),
            # No sort: arrival order becomes a sequence number taken at the source (unsafe).
            expected_fix=dedent("""\
                             from pyspark.sql import functions as F
                             def first_page(spark):
                                 visits = spark.read.parquet("visits").select("user", "page")
                                 return (
                                     visits.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                                     .groupBy("user")
                                     .agg(F.min(F.struct("_sparkpar_seq", "page")).getField("page").alias("first(page)"))
                                 )
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql.functions import collect_list
                def pages(df):
                    ordered = df.orderBy("ts")
                    return ordered.groupBy("user").agg(collect_list("page").alias("pages"))
                """),
            line=4,
            column=39,
            related_lines=(3, 4),
            expected_fix=dedent("""\
                             from pyspark.sql.functions import array_compact, array_sort, collect_list, struct
                             def pages(df):
                                 return (
                                     df.groupBy("user")
                                     .agg(
                                         array_compact(
                                             array_sort(collect_list(struct("ts", "page"))).getField("page"),
                                         ).alias("pages"),
                                     )
                                 )
                             """),
        ),
        # A global aggregate in a select: partial results merge in task-completion order.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                df = spark.read.parquet("runs").orderBy("ts")
                summary = df.select(F.max("ts"), F.last("status"))
                """),
            line=4,
            column=33,
            # The sort's order decides, as for a grouped aggregate; the column keeps Spark's name for
            # the original, `last(status)`, which later code, `show()` and writes see.
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, Window, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             df = spark.read.parquet("runs").orderBy("ts")
                             summary = df.select(
                                 F.max("ts"),
                                 F.max(F.struct("ts", "status")).getField("status").alias("last(status)"),
                             )
                             """),
        ),
        # SQL: the subquery's ORDER BY is lost by the GROUP BY, as `orderBy` before `groupBy` is.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("readings").createOrReplaceTempView("readings")
                latest = spark.sql(
                    "SELECT sensor, last(value) AS value FROM (SELECT * FROM readings ORDER BY ts) GROUP BY sensor"
                )
                """),
            line=5,
            column=20,
            related_lines=(5, 5),
            # The literal is rewritten: the max of (order, value) keeps the alias and breaks ties.
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             spark.read.parquet("readings").createOrReplaceTempView("readings")
                             latest = spark.sql(
                                 "SELECT sensor, max(struct(ts, value)).value AS value FROM (SELECT * FROM readings ORDER BY ts) GROUP BY sensor"
                             )
                             """),
        ),
        # An f-string: the placeholder is an opaque table name; positions are inside the string.
        Invalid(
            dedent('''\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                table = "readings"
                pages = spark.sql(f"""
                    SELECT user, collect_list(page) AS pages
                    FROM (SELECT * FROM {table} ORDER BY ts)
                    GROUP BY user
                """)
                '''),
            line=5,
            column=17,
            related_lines=(6, 7),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is None:
                continue
            if node.spec.column_functions == "aggregate":
                for call in node.columns.calls:
                    if order_dependent(call) and not order_harmless(graph, node, call):
                        yield self._finding(ctx, graph, node, call)
            elif node.spec.column_functions == "projection":
                for call in node.columns.calls:
                    if order_dependent(call) and not call.enclosing and not call.from_sql:
                        yield self._global_finding(ctx, node, call)

    def _global_finding(self, ctx: RuleContext, node: StageNode, call: ColumnCall) -> Finding:
        message = (
            f"`{call.function}` in `{node.method}` with no window is a global aggregate: each partition "
            "computes a partial result and Spark merges them in the order tasks finish, so the result "
            "changes with partitioning and timing. Use `min_by`/`max_by` on an ordering column or "
            "`array_sort` of a `struct(order, value)`"
        )
        return self.finding(ctx, call.span, message, fix=named_as_before(node, call, global_fix(ctx.graph, node, call)))

    def _finding(self, ctx: RuleContext, graph: StageGraph, node: StageNode, call: ColumnCall) -> Finding:
        shuffle = next((n for n in [node, *graph.upstream(node)] if n.is_shuffle), node)
        related = []
        sort = discarded_sort(graph, node)
        if sort is not None:
            related.append(RelatedLocation(sort.span, f"`{sort.method}` orders the rows here ..."))
        related.append(RelatedLocation(shuffle.span, f"... but `{shuffle.method}` shuffles them"))
        message = (
            f"`{call.function}` depends on the order rows reach the aggregation, and "
            f"`{shuffle.method}` shuffles them"
            + (f": the `{sort.method}` before it is lost" if sort is not None else "")
            + "; the result changes with partitioning. Use `min_by`/`max_by` on an ordering column "
            "or `array_sort` of a `struct(order, value)`"
        )
        fix = named_as_before(node, call, grouped_fix(graph, node, call, sort))
        return self.finding(ctx, call.span, message, related=tuple(related), fix=fix)
