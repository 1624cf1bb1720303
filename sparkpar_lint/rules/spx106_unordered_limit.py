"""SPX106 unordered-limit: `limit`, `take`, `first()`, `collect()[0]` ... after a shuffle, unsorted."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from textwrap import dedent

import libcst as cst

from sparkpar_lint.edits.chain import method_call, wrap_receiver
from sparkpar_lint.edits.code import string
from sparkpar_lint.edits.model import SAFE, UNSAFE, Fix, Imports
from sparkpar_lint.graph.order_flow import unordering_shuffle, upstream_sort
from sparkpar_lint.graph.previews import previewed, previewed_queries, size_read
from sparkpar_lint.graph.result_reach import kept_as_result
from sparkpar_lint.graph.row_bounds import at_most_rows
from sparkpar_lint.graph.sort_ties import tied_sort
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import at_most_one_row
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.fixers.arbitrary_pick import REVIEW, rdd_take_ordered, sql_limit_order, unique_key_order
from sparkpar_lint.rules.fixers.ordering import functions_like, sort_arguments, sort_reaches
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN, sequence_parts
from sparkpar_lint.rules.fixers.tie_breaker import WHOLE_ROW, tie_breaker

# Driver actions that display or count rows: which rows a limit kept changes nothing there.
_PREVIEWS = frozenset({"show", "count", "isEmpty"})
_FIX_BY_RECEIVER = {
    "DataFrame": "add `orderBy(<sort column>, <tie-breaker>)` before it",
    "RDD": "use `takeOrdered(n, key=...)` or `sortBy(...)` before it",
}


class UnorderedLimit(Rule):
    id = "SPX106"
    name = "unordered-limit"
    severity = Severity.ERROR
    summary = "A limit, take or first row is picked from rows a shuffle left in arbitrary order."
    fix_safety = SAFE
    fix_needs = (
        "needs a batch query whose rows Spark can order (a sort the shuffle discarded, the keys the "
        "rows are unique on, or the whole row) or an RDD whose elements compare in Python"
    )
    VALID = [
        # A pick whose size the code calls a sample size: any subset of that size is what is asked.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def orphans(sample_size=1000):
                    keys = spark.read.table("facts").groupBy("product_sk").count().limit(sample_size)
                    return keys.join(spark.read.table("products"), "product_sk", "left_anti").count()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                class Scanner:
                    sample_rows = 100
                    def scan(self, table):
                        picked = spark.read.table(table).join(spark.read.table("tags"), "id").limit(self.sample_rows)
                        picked.write.mode("append").saveAsTable("audit.pii_scan")
                """)
        ),
        # Only counted: any 5 rows are 5 rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                few = events.groupBy("user").count().limit(5).cache()
                print(f"{few.count()} rows")
                """)
        ),
        # A join of two literal RDDs has at most 3*2 pairs, plus 3+2 unmatched rows: take(20) takes all.
        Valid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                prices = sc.parallelize([("apple", 3), ("pear", 4), ("plum", 2)])
                stock = sc.parallelize([("apple", 10), ("pear", 0)])
                matched = prices.join(stock).take(20)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                top_pages = events.groupBy("page").count().orderBy(F.desc("count"), "page").limit(10)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                ranked = counts.sort("count", "page")
                ranked.select("page").take(5)
                """)
        ),
        # A global aggregate is one row: taking it is deterministic.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                latest = events.agg(F.max("ts")).collect()[0][0]
                n = events.groupBy().agg(F.countDistinct("user")).first()
                m = events.select(F.max("ts")).head()
                """)
        ),
        # After `from pyspark.sql.functions import *`, `round` and `max` are Spark's: still one row.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                from pyspark.sql.functions import *
                spark = SparkSession.builder.getOrCreate()
                people = spark.read.parquet("people").join(spark.read.parquet("cities"), "id")
                mean_age = people.select(round(mean("age"))).collect()[0][0]
                oldest = people.select(max("age"), abs(min("age"))).first()
                """)
        ),
        # No shuffle upstream (a source read in order) and whole results are not SPX106's concern.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.limit(20).show()
                events.groupBy("page").count().collect()
                """)
        ),
        # A preview for a person, not a result.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.join(spark.read.parquet("users"), "user").limit(5).show()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.rdd.map(lambda r: (r.page, 1)).reduceByKey(lambda a, b: a + b).takeOrdered(5, key=lambda kv: -kv[1])
                """)
        ),
        # The filter pins the grouping key: one row, whatever the order.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                home = counts.filter("page = 'home'").first()
                n = counts.filter(F.col("page") == "home").collect()[0]
                """)
        ),
        # Printed: a slice of collected rows, and the sizes of the partitions (a layout lesson).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                print(events.groupBy("page").count().collect()[:5])
                print(events.repartition(8, "user").rdd.glom().map(len).collect()[:3])
                """)
        ),
        # A result nobody keeps: a notebook shows it, a script drops it.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.rdd.map(lambda e: (e.page, 1)).reduceByKey(lambda a, b: a + b)
                counts.take(5)
                events.groupBy("page").count().collect()[0]
                """)
        ),
        # Emptiness checks and row counts: how many rows came back, never which.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                if len(counts.head(1)) > 0 and not counts.take(1):
                    pass
                if counts.first() is None:
                    pass
                while counts.limit(1).collect():
                    break
                n = len(counts.take(5))
                """)
        ),
        # `take(n)` of at most n rows (literal rows, an earlier limit): every row, like `collect()`.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                regions = spark.createDataFrame([("eu", 3), ("us", 4), ("eu", 5)], ["region", "n"])
                totals = regions.groupBy("region").agg(F.sum("n").alias("n")).take(10)
                recent = events.orderBy("ts", "id").limit(5).groupBy("page").count().take(5)
                """)
        ),
        # No rows at all, and a notebook preview.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.groupBy("page").count().limit(0).write.saveAsTable("empty_like")
                display(events.groupBy("page").count().limit(10))
                """)
        ),
        # pandas head after a pandas groupby.
        Valid(
            dedent("""\
                import pandas as pd
                pdf = pd.DataFrame()
                pdf.groupby('k').sum().head(5)
                """)
        ),
        # A local list, not a Spark result.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                rows = [1, 2]
                first = rows[0]
                """)
        ),
        # A preview of a read, and a sorted sample that is written, stay clean.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.limit(20).show()
                events.orderBy("ts", "id").limit(1000).write.parquet("s")
                """)
        ),
        # SQL: a total ORDER BY before LIMIT; a global aggregate is one row.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                top = spark.sql("SELECT page, count(*) AS views FROM events GROUP BY page ORDER BY views DESC, page LIMIT 10")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                one = spark.sql("SELECT max(ts) AS latest FROM events LIMIT 1")
                """)
        ),
        # SQL that does not parse (a template) is skipped, never an error.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                rows = spark.sql("SELECT {cols} FROM {{table}} LIMIT").limit(3)
                """)
        ),
        # limit(0): an empty frame with the schema, the same whatever arrives first.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.select("user").limit(0).union(events.select("user")).write.parquet("u")
                """)
        ),
        # A pandas frame indexed by column names picks columns, not rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def save(cols):
                    pdf = events.groupBy("user").count().toPandas()
                    pdf[cols].to_csv("c.csv")
                    pdf[["user", "count"]].to_csv("d.csv")
                """)
        ),
        # Sorted with a tie-breaker the rows are unique on (the grouping key), then returned.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def top_pages(n):
                    views = events.groupBy("page").agg(F.count("*").alias("views"))
                    return views.orderBy(F.desc("views"), "page").limit(n)
                """)
        ),
        # A top ten sorted by a count that ties, only looked at: shown, printed row by row, displayed.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                views = events.groupBy("page").count().orderBy(F.desc("count"))
                views.limit(10).show()
                for row in views.take(10):
                    print(row)
                display(views.limit(10))
                """)
        ),
        # Orders that cannot tie: an id, a global row number, the grouping key.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                from pyspark.sql.window import Window
                def latest():
                    return events.orderBy(F.desc("event_id")).limit(10)
                def ranked():
                    numbered = events.withColumn("n", F.row_number().over(Window.orderBy(F.desc("ts"))))
                    return numbered.orderBy("n").limit(10)
                def busiest():
                    return events.groupBy("page").count().orderBy("page").limit(10)
                """)
        ),
        # Literal rows with no two scores alike: nothing ties.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                scores = spark.createDataFrame([("ann", 90), ("bo", 80), ("cy", 70)], ["name", "score"])
                scores.orderBy(F.desc("score")).limit(1).write.json("winner")
                """)
        ),
        # Only the sorted column reaches the pick: tied rows are the same row there.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def top_counts():
                    return events.groupBy("page").count().orderBy(F.desc("count")).select("count").limit(3)
                """)
        ),
        # A computed key that may tell rows apart (a struct of the key) is not judged as a tie.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def top_pages():
                    views = events.groupBy("page").count()
                    return views.orderBy(F.desc("count"), F.struct("page")).limit(10)
                """)
        ),
        # A column as the source holds it: nothing says how often its values repeat.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def top_referrers():
                    return events.orderBy(F.desc("clicks")).select("referrer", "clicks").limit(10)
                """)
        ),
        # Ordered by the grouping key itself (one row per day); a top five whose rows are only
        # counted or sized.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                daily = events.groupBy("day").count()
                def last_week():
                    return daily.orderBy(F.desc("day")).limit(7)
                totals = events.groupBy("region").agg(F.sum("amount").alias("total"))
                if len(totals.orderBy(F.desc("total")).take(5)) < 5:
                    raise ValueError("fewer than five regions")
                print(totals.orderBy(F.desc("total")).limit(5).count())
                """)
        ),
        # SQL: the grouping key breaks ties on the count.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def top_pages():
                    return spark.sql("SELECT page, count(*) AS views FROM events GROUP BY page ORDER BY views DESC, page LIMIT 10")
                """)
        ),
    ]
    INVALID = [
        # The near miss of the declared sample: nothing calls these 500 keys a sample.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def orphans(batch_size=500):
                    keys = spark.read.table("facts").groupBy("product_sk").count().limit(batch_size)
                    return keys.join(spark.read.table("products"), "product_sk", "left_anti").count()
                """),
            line=4,
            column=67,
            related_lines=(4,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def orphans(batch_size=500):
                    keys = (
                        spark.read.table("facts")
                        .groupBy("product_sk")
                        .count()
                        .orderBy("product_sk")
                        .limit(batch_size)
                    )
                    return keys.join(spark.read.table("products"), "product_sk", "left_anti").count()
                """),
        ),
        # The near miss: two of the up to eleven joined rows.
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                prices = sc.parallelize([("apple", 3), ("pear", 4), ("plum", 2)])
                stock = sc.parallelize([("apple", 10), ("pear", 0)])
                matched = prices.join(stock).take(2)
                """),
            line=5,
            column=29,
            related_lines=(5,),
            expected_fix=None,
        ),
        # The near miss: three of up to five grouped rows.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                recent = events.orderBy("ts", "id").limit(5).groupBy("page").count().take(3)
                """),
            line=4,
            column=69,
            related_lines=(4,),
            # The sort is gone with the aggregation: one row per page, so by page (unsafe).
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                recent = events.orderBy("ts", "id").limit(5).groupBy("page").count().orderBy("page").take(3)
                """),
        ),
        # The near miss: the test reads a value of the row `take` picked, not only whether one came.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                if counts.take(1)[0]["count"] > 3:
                    pass
                """),
            line=5,
            column=10,
            related_lines=(4,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                if counts.orderBy("page").take(1)[0]["count"] > 3:
                    pass
                """),
        ),
        # A near miss: `count` is no key of the grouped rows, so several can match.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                busy = counts.filter("count = 3").first()
                """),
            line=5,
            column=34,
            related_lines=(4,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                busy = counts.filter("count = 3").orderBy("page").first()
                """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                top_pages = events.groupBy("page").count().limit(10)
                """),
            line=4,
            column=43,
            related_lines=(4,),
            # No sort, and the aggregate drops any sequence number: the first ten pages by name, a
            # deterministic pick among the answers the job could give (unsafe: the author may mean
            # the busiest ten).
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                top_pages = events.groupBy("page").count().orderBy("page").limit(10)
                """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ranked = events.orderBy("ts")
                deduped = ranked.dropDuplicates(["user"])
                sample = deduped.take(5)
                """),
            line=6,
            column=17,
            related_lines=(5,),
            # The sort the shuffle discarded, then the whole row, decide the five (safe).
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    events = spark.read.parquet("events")
                    ranked = events.orderBy("ts")
                    deduped = ranked.dropDuplicates(["user"])
                    sample = (
                        deduped.withColumn(
                            "_sparkpar_tie",
                            F.to_json(
                                F.struct("*"),
                                {
                                    "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                                    "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                                },
                            ),
                        )
                        .orderBy("ts", "_sparkpar_tie")
                        .drop("_sparkpar_tie")
                        .take(5)
                    )
                    """)
            ),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def busiest_user(df):
                    per_user = df.groupBy("user").agg(F.count("*").alias("n"))
                    return per_user.collect()[0]["user"]
                busiest_user(events)
                """),
            line=6,
            column=20,
            related_lines=(5,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def busiest_user(df):
                    per_user = df.groupBy("user").agg(F.count("*").alias("n"))
                    return per_user.orderBy("user").collect()[0]["user"]
                busiest_user(events)
                """),
        ),
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                words = sc.textFile("logs").flatMap(str.split).map(lambda w: (w, 1))
                first_word = words.reduceByKey(lambda a, b: a + b).first()
                """),
            line=4,
            column=51,
            related_lines=(4,),
            # `first()` on an RDD: no fix (`takeOrdered(1)[0]` fails another way on an empty RDD).
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                sample = events.repartition(8, "user").limit(5).collect()
                """),
            line=4,
            column=39,
            related_lines=(4,),
            # No sort: the first rows to arrive, by a sequence number taken at the source (unsafe).
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    events = spark.read.parquet("events")
                    sample = (
                        events.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .repartition(8, "user")
                        .orderBy("_sparkpar_seq")
                        .drop("_sparkpar_seq")
                        .limit(5)
                        .collect()
                    )
                    """)
            ),
        ),
        # Straight from a read, no shuffle: the written sample is whichever rows arrive first.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.limit(1000).write.parquet("sample")
                """),
            line=4,
            column=7,
            severity=Severity.WARNING,
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    events = spark.read.parquet("events")
                    (
                        events.withColumn("_sparkpar_seq", F.monotonically_increasing_id())
                        .orderBy("_sparkpar_seq")
                        .drop("_sparkpar_seq")
                        .limit(1000)
                        .write.parquet("sample")
                    )
                    """)
            ),
        ),
        # SQL: LIMIT straight after GROUP BY.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                top = spark.sql("SELECT page, count(*) AS views FROM events GROUP BY page LIMIT 10")
                """),
            line=3,
            column=74,
            related_lines=(3,),
            # One row per page: ordered by page, a deterministic pick (unsafe).
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                top = spark.sql("SELECT page, count(*) AS views FROM events GROUP BY page ORDER BY page LIMIT 10")
                """),
        ),
        # SQL over lines: the order goes on a line of its own, above the LIMIT.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                top = spark.sql(\"\"\"
                    SELECT region, store, sum(amount) AS total FROM sales
                    GROUP BY region, store
                    LIMIT 5
                \"\"\")
                """),
            line=6,
            column=4,
            related_lines=(5,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                top = spark.sql(\"\"\"
                    SELECT region, store, sum(amount) AS total FROM sales
                    GROUP BY region, store
                    ORDER BY region, store
                    LIMIT 5
                \"\"\")
                """),
        ),
        # A temp view read by SQL (a CTE), whose result the Python chain continues.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.createOrReplaceTempView("events")
                busiest = spark.sql(\"\"\"
                    WITH per_page AS (SELECT page, count(*) AS views FROM events GROUP BY page)
                    SELECT * FROM per_page
                \"\"\").limit(5)
                """),
            line=8,
            column=5,
            related_lines=(6,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.createOrReplaceTempView("events")
                busiest = spark.sql(\"\"\"
                    WITH per_page AS (SELECT page, count(*) AS views FROM events GROUP BY page)
                    SELECT * FROM per_page
                \"\"\").orderBy("page").limit(5)
                """),
        ),
        # RDD pairs, one per key: `takeOrdered` by the key, None first (unsafe).
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                words = sc.textFile("logs").flatMap(str.split).map(lambda w: (w, 1))
                counts = words.reduceByKey(lambda a, b: a + b)
                some = counts.mapValues(str).take(3)
                """),
            line=5,
            column=29,
            related_lines=(4,),
            expected_fix=dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                words = sc.textFile("logs").flatMap(str.split).map(lambda w: (w, 1))
                counts = words.reduceByKey(lambda a, b: a + b)
                some = counts.mapValues(str).takeOrdered(3, key=lambda pair: (pair[0] is not None, pair[0]))
                """),
        ),
        # Literal numbers moved between partitions: `takeOrdered` as they are (unsafe).
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                spread = sc.parallelize(range(1, 100, 3)).repartition(4)
                keep = spread.take(5)
                """),
            line=4,
            column=14,
            related_lines=(3,),
            expected_fix=dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                spread = sc.parallelize(range(1, 100, 3)).repartition(4)
                keep = spread.takeOrdered(5)
                """),
        ),
        # A top-n by a count that ties, returned: pages tied at the cut make it by shuffle order.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def top_pages(n):
                    views = events.groupBy("page").agg(F.count("*").alias("views"))
                    return views.orderBy(F.desc("views")).limit(n)
                """),
            line=6,
            column=42,
            related_lines=(6,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # Written: sellers tied on revenue at the twentieth place.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                revenue = events.groupBy("seller").agg(F.sum("amount").alias("revenue"))
                revenue.orderBy(F.col("revenue").desc()).limit(20).write.parquet("top_sellers")
                """),
            line=5,
            column=41,
            related_lines=(5,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # Collected into a returned report: three carriers by a rate that ties.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def worst_carriers():
                    rates = events.groupBy("carrier").agg(F.avg("late").alias("late_rate"))
                    top = rates.sort("late_rate", ascending=False).take(3)
                    return [row.carrier for row in top]
                """),
            line=6,
            column=51,
            related_lines=(6,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # Literal rows that do tie: "ann" or "bo" is written as the winner.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                scores = spark.createDataFrame([("ann", 90), ("bo", 90), ("cy", 70)], ["name", "score"])
                scores.orderBy(F.desc("score")).limit(1).write.json("winner")
                """),
            line=5,
            column=32,
            related_lines=(5,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # Regions tied on their total at the fifth place, written through pandas.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                totals = events.groupBy("region").agg(F.sum("amount").alias("total"))
                totals.orderBy(F.desc("total")).limit(5).toPandas().to_csv("top_regions.csv")
                """),
            line=5,
            column=32,
            related_lines=(5,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # `head(3)` handed to `json.dump`: the three regions saved follow the shuffle among ties.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                import json
                totals = events.groupBy("region").agg(F.sum("amount").alias("total"))
                def save_best(path):
                    best = totals.orderBy(F.desc("total")).head(3)
                    with open(path, "w") as fh:
                        json.dump([row.asDict() for row in best], fh)
                """),
            line=7,
            column=43,
            related_lines=(7,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
        # SQL: ORDER BY a count alone, then LIMIT, returned.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def top_pages():
                    return spark.sql("SELECT page, count(*) AS views FROM events GROUP BY page ORDER BY views DESC LIMIT 10")
                """),
            line=4,
            column=99,
            related_lines=(4,),
            severity=Severity.WARNING,
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if not _picks_rows_by_position(node) or _only_previewed(graph, node) or _empty(node):
                continue
            source = graph.input_of(node)
            if source is not None and at_most_one_row(graph, source):
                continue  # one row has only one order
            if source is not None and not node.indexed and _takes_every_row(graph, node, source):
                continue  # `take(10)` of at most 10 rows: all of them, like `collect()`
            if (node.call is not None and id(node.call) in previewed(graph)) or node.id in previewed_queries(graph):
                continue  # `display(df.limit(10))`, a SQL cell's `LIMIT 10`: a person glances at some rows
            if _size_only(graph, node):
                continue  # `if df.head(1):`, `len(df.limit(5).collect())`: how many rows, never which
            if _declared_sample(node):
                continue  # `limit(sample_size)`: any rows of that many, by intent
            shuffle = unordering_shuffle(graph, node)
            if shuffle is not None:
                yield self._finding(ctx, node, shuffle)
            elif (
                node.method == "limit" and node.input_order.kind != "total" and not node.streaming and not _empty(node)
            ):
                consumer = _result_consumer(graph, node)
                if consumer is not None:
                    yield self._source_finding(ctx, node, consumer)
            elif (tie := tied_sort(graph, node)) is not None and (use := kept_as_result(graph, node)) is not None:
                yield self._tie_finding(ctx, node, *tie, use)

    def _source_finding(self, ctx: RuleContext, node: StageNode, consumer: str) -> Finding:
        message = (
            f"`limit` with no sort before it keeps whichever rows reach it first, and {consumer} "
            "makes that choice the result: the rows of a multi-file or multi-partition input reach "
            "the limit in task-completion order. Sort first (`orderBy(<key>, <tie-breaker>)`), or "
            "use `sample` with a seed for a subset"
        )
        return self.finding(ctx, node.span, message, severity=Severity.WARNING, fix=_fix(ctx.graph, node))

    def _tie_finding(
        self, ctx: RuleContext, node: StageNode, sort: StageNode, columns: tuple[str, ...], seen: bool, use: str
    ) -> Finding:
        names = ", ".join(f"`{c}`" for c in columns)
        what = f"`{node.method}()[...]`" if node.indexed else f"`{node.method}`"
        sorting, how = f"`{sort.method}`", "`orderBy(..., <unique key>)`"
        if node.sql is not None:
            what, sorting, how = "`LIMIT`", "`ORDER BY`", "`ORDER BY ..., <unique key>`"
        message = (
            f"{what} keeps the first rows of an order by {names} alone, and {use} makes them the "
            f"result: rows tied on {names} arrive in the order the shuffle left them, so which of "
            "them make the cut changes with partitioning. Add a column the rows are unique on as "
            f"a tie-breaker ({how})"
        )
        related = (RelatedLocation(sort.span, f"{sorting} by {names}, with no tie-breaker"),)
        outcomes: bool | str = True if seen else f"two rows can share {names} at the cut"
        reason = NoFix(f"no column is known to tell rows tied on {names} apart; the tie-breaker is the author's choice")
        return self.finding(
            ctx, node.span, message, severity=Severity.WARNING, related=related, fix=reason, outcomes=outcomes
        )

    def _finding(self, ctx: RuleContext, node: StageNode, shuffle: StageNode) -> Finding:
        what = f"`{node.method}()[...]`" if node.indexed else f"`{node.method}`"
        fix = _FIX_BY_RECEIVER.get(node.receiver, _FIX_BY_RECEIVER["DataFrame"])
        message = (
            f"{what} keeps whichever rows come first, and `{shuffle.method}` left them in an order "
            f"that changes with partitioning; {fix}"
        )
        related = (RelatedLocation(shuffle.span, f"`{shuffle.method}` shuffles the rows here"),)
        return self.finding(ctx, node.span, message, related=related, fix=_fix(ctx.graph, node))


TIE_COLUMN = "_sparkpar_tie"


def _fix(graph: StageGraph, node: StageNode) -> Fix | NoFix:
    """`x.limit(n)` → `x.orderBy(order).limit(n)`, likewise `take`, `head`, `first`, `tail`, `collect()[i]`.

    The order is a sort the shuffle discarded, when its columns reach the limit unchanged, with
    the whole row as tie-breaker (safe: the rows the user sorted to the front); otherwise the
    sequence number taken at the source (unsafe: arrival order is a choice); otherwise a
    deterministic pick (unsafe, rules/fixers/arbitrary_pick.py): the keys the rows are unique on, or the
    whole row. RDDs: `takeOrdered` where the elements compare; SQL: `ORDER BY` the keys.
    """
    if node.sql is not None:
        # SQL LIMIT: no sort to restore and no arrival order to number; only the keys are left.
        return sql_limit_order(graph, node)
    if node.receiver != "DataFrame":
        return rdd_take_ordered(graph, node)
    if node.call is None or node.call.func is None:
        return NoFix(f"`{node.method}` is not a method call this fix can rewrite")
    like = functions_like(graph)
    sort = upstream_sort(graph, node)
    if sort is not None:
        order = sort_arguments(graph, sort)
        if order is None:
            return NoFix(f"the `{sort.method}` arguments cannot be moved (an `ascending=` keyword or a local name)")
        if not sort_reaches(graph, sort, node):
            # The sort's columns may be gone (an aggregation since): its order can't be restored.
            return _deterministic_order(graph, node, node.call, like)
        tie, imports, how = tie_breaker(graph, graph.input_of(node), tuple(sort.keys), like)
        if how != WHOLE_ROW or tie is None:
            # Written into the sort itself: no helper column to add and drop.
            build = partial(_plain_order, (*order, *([tie] if tie is not None else [])))
        else:
            build = partial(_tied_order, tie, tuple(order))
        description = f"`orderBy` the discarded `{sort.method}` order ({how}) before `{node.method}`"
        return Fix(SAFE, description, ((node.call, wrap_receiver(build)),), imports)
    parts = sequence_parts(graph, node, like)
    if parts is None:
        return _deterministic_order(graph, node, node.call, like)
    extra, imports = parts
    description = f"`orderBy` arrival order (a sequence number taken at the source) before `{node.method}`"
    return Fix(UNSAFE, description, ((node.call, wrap_receiver(_sequence_order)), *extra), imports)


def _deterministic_order(graph: StageGraph, node: StageNode, call: cst.Call, like: cst.Call) -> Fix | NoFix:
    """With neither a sort nor an arrival order: the keys the rows are unique on, or else the
    whole row, a total order and one of the answers the pick could already give (unsafe)."""
    if node.streaming or any(stage.streaming for stage in graph.upstream(node)):
        return NoFix("no sort to restore, and the rows come from a stream, which cannot be sorted before the pick")
    keys = unique_key_order(graph, node)
    imports: Imports
    if keys is not None:
        build, imports, how = partial(_plain_order, tuple(string(k) for k in keys)), (), f"the keys ({', '.join(keys)})"
    else:
        tie, imports, how = tie_breaker(graph, graph.input_of(node), (), like)
        if tie is None:
            return NoFix("no sort to restore, and the rows have no columns to order by")
        whole = how == WHOLE_ROW
        build = partial(_tied_order, tie, ()) if whole else partial(_plain_order, (tie,))
        how = "the whole row" if whole else "every column"
    description = f"`orderBy` {how} before `{node.method}`: {REVIEW}"
    return Fix(UNSAFE, description, ((call, wrap_receiver(build)),), imports)


def _tied_order(
    tie: cst.BaseExpression, order: tuple[cst.BaseExpression, ...], frame: cst.BaseExpression
) -> cst.BaseExpression:
    """`frame.withColumn(tie, row).orderBy(*order, tie).drop(tie)`: `orderBy` cannot expand `*`."""
    tied = method_call(frame, "withColumn", [string(TIE_COLUMN), tie.deep_clone()])
    ordered = method_call(tied, "orderBy", [*(e.deep_clone() for e in order), string(TIE_COLUMN)])
    return method_call(ordered, "drop", [string(TIE_COLUMN)])


def _plain_order(order: tuple[cst.BaseExpression, ...], frame: cst.BaseExpression) -> cst.BaseExpression:
    return method_call(frame, "orderBy", [e.deep_clone() for e in order])


def _sequence_order(frame: cst.BaseExpression) -> cst.BaseExpression:
    return method_call(method_call(frame, "orderBy", [string(SEQUENCE_COLUMN)]), "drop", [string(SEQUENCE_COLUMN)])


def _empty(node: StageNode) -> bool:
    """`limit(0)`: no rows at all, whichever arrive first (an empty frame with the schema)."""
    args = node.call.args if node.call is not None else ()
    return bool(args) and isinstance(args[0].value, cst.Integer) and args[0].value.value == "0"


def _result_consumer(graph: StageGraph, node: StageNode) -> str | None:
    """What downstream makes the limited rows a result: a write, a join, or model training."""
    for later in [node, *graph.downstream(node)]:
        if later.id in graph.training_inputs:
            return "model training on it"
        if later is node:
            continue
        if later.spec is not None and later.spec.sink:
            return f"`{later.method}` writing it"
        if later.method in _COMBINING:
            return f"`{later.method}`"
    return None


_COMBINING = frozenset({"join", "crossJoin", "union", "unionByName", "intersect", "subtract", "exceptAll"})


def _only_previewed(graph: StageGraph, node: StageNode) -> bool:
    """`limit(n).show()`: a person glances at some rows; nothing is computed from which ones."""
    consumers = graph.consumers(node)
    return bool(consumers) and all(c.method in _PREVIEWS for c in consumers)


def _takes_every_row(graph: StageGraph, node: StageNode, source: StageNode) -> bool:
    if node.method not in ("limit", "take", "head", "tail") or node.call is None or len(node.call.args) != 1:
        return False
    count = node.call.args[0].value
    bound = at_most_rows(graph, source)
    return isinstance(count, cst.Integer) and bound is not None and bound <= int(count.value)


def _size_only(graph: StageGraph, node: StageNode) -> bool:
    """The rows picked are only counted or tested for emptiness, directly or once collected."""
    sized = size_read(graph)
    if node.call is not None and id(node.call) in sized:
        return True
    consumers = graph.consumers(node)
    return bool(consumers) and all(c.call is not None and id(c.call) in sized for c in consumers)


def _declared_sample(node: StageNode) -> bool:
    """The count of rows to pick is a name calling it a sample size (`limit(sample_size)`,
    `take(self.sample_rows)`): any subset of that size is what the author asked for, as with
    `sample()` itself. (Rows merely bound to a name like `sample` are not: a first few rows kept as
    "a sample" of a result still come out differently with partitioning.)"""
    count = node.call.args[0].value if node.call is not None and node.call.args else None
    if isinstance(count, cst.Attribute):
        return _says_sample(count.attr.value)
    return isinstance(count, cst.Name) and _says_sample(count.value)


def _says_sample(name: str) -> bool:
    return "sample" in name.lower()


def _picks_rows_by_position(node: StageNode) -> bool:
    if node.spec is None:
        return False
    if node.spec.order_requirement == "total":
        return True
    return node.indexed and node.spec.returns == "driver"
