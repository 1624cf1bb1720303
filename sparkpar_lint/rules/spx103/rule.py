"""SPX103 order-dependent-group-function: the rule, its examples and what it flags."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

import libcst as cst

from sparkpar_lint.edits.model import SAFE
from sparkpar_lint.graph.listed_groups import listed_in_arrival_order, listed_on_driver
from sparkpar_lint.graph.order_sensitivity import find_order_dependence
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx103.fix import ON_DRIVER, function_fix, sorted_list_fix
from sparkpar_lint.rules.spx103.messages import listed_in_arrival, read_on_driver, unordered_rows
from sparkpar_lint.rules.spx103.parameters import parameter_data


class OrderDependentGroupFunction(Rule):
    id = "SPX103"
    name = "order-dependent-group-function"
    severity = Severity.ERROR
    summary = "A grouped or per-partition function depends on the order its rows arrive in."
    fix_safety = SAFE
    fix_needs = "needs the order the function reads its rows in (a sort upstream or its event time)"
    VALID = [
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def fill_gaps(pdf):
                    pdf = pdf.sort_values(["ts", "seq"])
                    pdf["temp"] = pdf["temp"].interpolate()
                    return pdf
                readings = spark.read.parquet("readings")
                readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)
                """)
        ),
        # The group key is constant within a group: its first row is as good as any.
        # `shape[0]`, `size` and `columns` describe the group, not one of its rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def profile(pdf):
                    rows, width = pdf.shape[0], pdf.shape[1]
                    return pdf.assign(n=rows, k=width, cells=pdf.size, first_col=pdf.columns[0])
                spark.read.parquet("r").groupBy("device").applyInPandas(profile, "n long, k long")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def summarize(pdf):
                    device = pdf["device"].iloc[0]
                    return pdf.assign(device_id=device, n=len(pdf), total=pdf["temp"].sum())
                spark.read.parquet("r").groupBy("device").applyInPandas(summarize, "device string, n long")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def gaps(rows):
                    prev = None
                    for r in sorted(rows, key=lambda r: (r.ts, r.id)):
                        if prev is not None:
                            yield (r.user, r.ts - prev)
                        prev = r.ts
                spark.read.parquet("c").rdd.mapPartitions(gaps)
                """)
        ),
        # Order-free folds and an arg-max loop.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def latest(rows):
                    best, total = None, 0
                    for r in rows:
                        total += r.amount
                        if best is None or r.ts > best.ts:
                            best = r
                    return [(best, total)]
                spark.read.parquet("c").rdd.mapPartitions(latest)
                """)
        ),
        # A first-row flag only initialises an extreme the other rows then compare against.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def min_max(values):
                    first = True
                    for v in values:
                        if first:
                            low = v
                            high = v
                            first = False
                        else:
                            if v < low:
                                low = v
                            if v > high:
                                high = v
                    return [(low, high)]
                spark.sparkContext.textFile("t").map(float).mapPartitions(min_max)
                """)
        ),
        # `next(it)` only seeds running extremes the rest of the partition is folded into.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def bounds(values):
                    try:
                        first = next(values)
                    except StopIteration:
                        return []
                    low = high = first
                    n = 1
                    for v in values:
                        low = min(low, v)
                        if v > high:
                            high = v
                        n += 1
                    return [(low, high, n)]
                spark.sparkContext.textFile("t").map(float).mapPartitions(bounds)
                """)
        ),
        # Slices of a driver-side list, in list order: every run hands over the same rows in the same order.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def firsts(rows):
                    yield list(rows)[:1]
                spark.sparkContext.parallelize(range(100), 4).mapPartitions(firsts).collect()
                """)
        ),
        # pandas on the driver, not a function Spark runs per group.
        Valid(
            dedent("""\
                import pandas as pd
                pdf = pd.read_csv('x.csv')
                pdf['v'] = pdf['v'].ffill()
                print(pdf.iloc[0])
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sparkContext.textFile("t").map(lambda l: l.split(",")).groupByKey().mapValues(len)
                """)
        ),
        # Literal pairs whose values under each key are equal: every order lists them alike.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                votes = spark.sparkContext.parallelize([("ann", 1), ("bo", 1), ("ann", 1)])
                print(votes.groupByKey().mapValues(list).collect())
                """)
        ),
        # Sorted values, a list that a later stage sums, and a split after a sort.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:2], int(l[2:])))
                pairs.groupByKey().mapValues(sorted).collect()
                pairs.groupByKey().mapValues(list).mapValues(sum).collect()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                from sklearn.model_selection import train_test_split
                def holdout(pdf):
                    train, test = train_test_split(pdf.sort_values(["ts", "id"]), test_size=0.2, random_state=7)
                    return test
                spark.read.parquet("s").groupBy("store").applyInPandas(holdout, "store long, v double")
                """)
        ),
        # The row holding the group's largest value, by label (the group's frame is indexed
        # 0..n-1 afresh) or by position: chosen by value, not by arrival (ties as for a sort).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                import numpy as np
                def top_score(pdf):
                    best = pdf["score"].idxmax()
                    return pdf.iloc[best : best + 1]
                def lowest(pdf):
                    return pdf.iloc[[np.argmin(pdf["score"].values)]]
                scores = spark.read.parquet("scores")
                scores.groupBy("player").applyInPandas(top_score, scores.schema)
                scores.groupBy("player").applyInPandas(lowest, scores.schema)
                """)
        ),
        # The series sorted before a time-series model reads it; a mean of the same values.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                import numpy as np
                from statsmodels.tsa.api import ExponentialSmoothing
                def forecast(pdf):
                    pdf = pdf.sort_values("week")
                    fitted = ExponentialSmoothing(np.asarray(pdf["units"]), trend="add").fit()
                    return pdf.head(1).assign(next_units=fitted.forecast(1)[0], mean_units=np.asarray(pdf["units"]).mean())
                spark.read.parquet("sales").groupBy("shop").applyInPandas(forecast, "shop long, next_units double")
                """)
        ),
        # Groups read on the driver in an order of their own, or only counted; `mapValues(sorted)`.
        Valid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                for letter, group in names.groupBy(lambda n: n[0]).collect():
                    print(letter, ", ".join(sorted(group)), len(group))
                print(names.groupBy(len).mapValues(sorted).collect())
                groups = names.groupBy(len).collect()
                sizes = {size: len(group) for size, group in groups}
                """)
        ),
        # The largest name and the set of names per length: no order of the values survives; the
        # lists counted by a later stage, and lists sorted before they are saved.
        Valid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                for size, group in names.groupBy(len).collect():
                    print(size, max(group), set(group))
                print(names.groupBy(len).mapValues(list).map(lambda kv: (kv[0], len(kv[1]))).collect())
                names.groupBy(len).mapValues(lambda vs: sorted(vs)).saveAsTextFile("by_length")
                """)
        ),
        # Every value under a key is the literal 1: any order lists them alike.
        Valid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                words = names.flatMap(str.split).map(lambda w: (w, 1))
                print(words.groupByKey().mapValues(list).collect())
                """)
        ),
    ]
    INVALID = [
        # A time-series model fitted on the values in arrival order: `set_index` does not sort.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                import numpy as np
                import statsmodels.tsa.api as tsa
                def forecast(pdf):
                    pdf = pdf.set_index("week")
                    fitted = tsa.ExponentialSmoothing(np.asarray(pdf["units"]), trend="add").fit()
                    return pdf.iloc[:0].assign(next_units=fitted.forecast(1)[0])
                spark.read.parquet("sales").groupBy("shop").applyInPandas(forecast, "shop long, next_units double")
                """),
            line=7,
            column=13,
            related_lines=(9,),
            # Repeatable, though in the order of every column rather than of the weeks (doc).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             import numpy as np
                             import statsmodels.tsa.api as tsa
                             def forecast(pdf):
                                 pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)
                                 pdf = pdf.set_index("week")
                                 fitted = tsa.ExponentialSmoothing(np.asarray(pdf["units"]), trend="add").fit()
                                 return pdf.iloc[:0].assign(next_units=fitted.forecast(1)[0])
                             spark.read.parquet("sales").groupBy("shop").applyInPandas(forecast, "shop long, next_units double")
                             """),
        ),
        # After a filter the index labels are arrival positions with gaps: `iloc` of a label then
        # reads whichever row arrived at that position.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def top_score(pdf):
                    pdf = pdf[pdf["score"] > 0]
                    return pdf.iloc[[pdf["score"].idxmax()]]
                scores = spark.read.parquet("scores")
                scores.groupBy("player").applyInPandas(top_score, scores.schema)
                """),
            line=5,
            column=11,
            related_lines=(7,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def top_score(pdf):
                                 pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)
                                 pdf = pdf[pdf["score"] > 0]
                                 return pdf.iloc[[pdf["score"].idxmax()]]
                             scores = spark.read.parquet("scores")
                             scores.groupBy("player").applyInPandas(top_score, scores.schema)
                             """),
        ),
        # Near miss of the shape read: a value taken from the first row by position.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def profile(pdf):
                    rows = pdf.shape[0]
                    return pdf.assign(n=rows, first=pdf["temp"].values[0])
                spark.read.parquet("r").groupBy("device").applyInPandas(profile, "n long, first double")
                """),
            line=5,
            column=36,
            related_lines=(6,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def profile(pdf):
                                 pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)
                                 rows = pdf.shape[0]
                                 return pdf.assign(n=rows, first=pdf["temp"].values[0])
                             spark.read.parquet("r").groupBy("device").applyInPandas(profile, "n long, first double")
                             """),
        ),
        # The row `next` takes is kept as it is, not folded with the others.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def head_and_total(values):
                    first = next(values)
                    total = first
                    for v in values:
                        total += v
                    return [(first, total)]
                spark.sparkContext.textFile("t").map(float).mapPartitions(head_and_total)
                """),
            line=4,
            column=12,
            expected_fix=None,
        ),
        # The same flag, but nothing ever replaces the first row it keeps.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sample(rows):
                    first = True
                    for r in rows:
                        if first:
                            kept = r
                            first = False
                    return [kept]
                spark.read.parquet("c").rdd.mapPartitions(sample)
                """),
            line=7,
            column=12,
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def fill_gaps(pdf):
                    pdf["temp"] = pdf["temp"].interpolate()
                    return pdf
                readings = spark.read.parquet("readings")
                readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)
                """),
            line=4,
            column=18,
            related_lines=(7,),
            # No sort, watermark or time-like column to read the order from: every column, in the
            # frame's order, decides (unsafe).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def fill_gaps(pdf):
                                 pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)
                                 pdf["temp"] = pdf["temp"].interpolate()
                                 return pdf
                             readings = spark.read.parquet("readings")
                             readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def first_page(pdf):
                    return pdf.head(1)
                spark.read.parquet("c").groupby("user").applyInPandas(first_page, "user string, page string")
                """),
            line=4,
            column=11,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def first_page(pdf):
                                 pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)
                                 return pdf.head(1)
                             spark.read.parquet("c").groupby("user").applyInPandas(first_page, "user string, page string")
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def gaps(rows):
                    prev = None
                    for r in rows:
                        if prev is not None:
                            yield (r.user, r.ts - prev)
                        prev = r.ts
                spark.read.parquet("c").rdd.mapPartitions(gaps)
                """),
            line=6,
            column=11,
            # The loop reads `r.ts`: a time-like field, so the rows are sorted by it (unsafe guess).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def gaps(rows):
                                 rows = sorted(rows, key=lambda row: (row.ts, repr(row)))
                                 prev = None
                                 for r in rows:
                                     if prev is not None:
                                         yield (r.user, r.ts - prev)
                                     prev = r.ts
                             spark.read.parquet("c").rdd.mapPartitions(gaps)
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: tuple(l.split(",")))
                pairs.groupByKey().mapValues(lambda pages: list(pages)[0])
                """),
            line=4,
            column=43,
            expected_fix=None,  # a lambda over grouped values: no frame to read sorted
        ),
        # A pandas lambda has no statement to sort in: each read of its frame reads a sorted copy
        # (the index is kept, so the copies line up); `len(pdf)` needs no order.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                loans = spark.read.parquet("loans").orderBy("customer", "day")
                loans.groupBy("customer").applyInPandas(lambda pdf: pdf.assign(n=range(len(pdf))), loans.schema)
                """),
            line=4,
            column=65,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             loans = spark.read.parquet("loans").orderBy("customer", "day")
                             (
                                 loans.groupBy("customer")
                                 .applyInPandas(lambda pdf: (
                                     pdf.sort_values(["day", *pdf.columns.difference(["day"])])
                                     .assign(n=range(len(pdf)))
                                 ), loans.schema)
                             )
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def smooth(x):
                    return x.rolling(3).mean()
                def per_device(pdf):
                    pdf["smooth"] = smooth(pdf["temp"])
                    return pdf
                spark.readStream.table("r").groupBy("device").applyInPandas(per_device, "d string")
                """),
            line=4,
            column=11,
            expected_fix=None,  # a stream without a watermark: no event time to order by
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def first_batch_rows(batches):
                    yield next(batches)
                spark.read.parquet("c").mapInPandas(first_batch_rows, "user string")
                """),
            line=4,
            column=10,
            expected_fix=None,  # an iterator of batches: sorting it would need the whole partition
        ),
        # The job sorted before the shuffle: that order, with the other columns breaking ties (safe).
        Invalid(
            dedent('''\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def fill_gaps(key, pdf):
                    """Carry the last temperature forward."""
                    pdf["temp"] = pdf["temp"].ffill()
                    return pdf
                readings = spark.read.parquet("readings").orderBy("ts")
                readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)
                '''),
            line=5,
            column=18,
            related_lines=(8,),
            expected_fix=dedent('''\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def fill_gaps(key, pdf):
                                 """Carry the last temperature forward."""
                                 pdf = pdf.sort_values(["ts", *pdf.columns.difference(["ts"])], ignore_index=True)
                                 pdf["temp"] = pdf["temp"].ffill()
                                 return pdf
                             readings = spark.read.parquet("readings").orderBy("ts")
                             readings.groupBy("device").applyInPandas(fill_gaps, readings.schema)
                             '''),
        ),
        # No sort, but the function diffs a time-like column: sort by it (unsafe guess).
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def rate(pdf):
                    pdf["rate"] = pdf["temp"].diff() / pdf["event_time"].diff()
                    return pdf
                spark.read.parquet("r").groupBy("device").applyInPandas(rate, "device string, rate double")
                """),
            line=4,
            column=18,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def rate(pdf):
                                 pdf = pdf.sort_values(
                                     ["event_time", *pdf.columns.difference(["event_time"])],
                                     ignore_index=True,
                                 )
                                 pdf["rate"] = pdf["temp"].diff() / pdf["event_time"].diff()
                                 return pdf
                             spark.read.parquet("r").groupBy("device").applyInPandas(rate, "device string, rate double")
                             """),
        ),
        # Cogrouped frames: only the frame whose time column the function diffs is sorted.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def merge(left, right):
                    left["gap"] = left["event_time"].diff()
                    return left.merge(right, on="k")
                a, b = spark.read.parquet("a"), spark.read.parquet("b")
                a.groupBy("k").cogroup(b.groupBy("k")).applyInPandas(merge, "k string, gap double")
                """),
            line=4,
            column=18,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             def merge(left, right):
                                 left = left.sort_values(
                                     ["event_time", *left.columns.difference(["event_time"])],
                                     ignore_index=True,
                                 )
                                 left["gap"] = left["event_time"].diff()
                                 return left.merge(right, on="k")
                             a, b = spark.read.parquet("a"), spark.read.parquet("b")
                             a.groupBy("k").cogroup(b.groupBy("k")).applyInPandas(merge, "k string, gap double")
                             """),
        ),
        # A watermarked stream: the rows wait in the group state and are released in event-time
        # order once the watermark passes them (unsafe: output comes a watermark delay later).
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def track(key, pdfs, state):
                    for pdf in pdfs:
                        yield pdf.head(1)
                events = spark.readStream.table("e").withWatermark("ts", "10 minutes")
                events.groupBy("device").applyInPandasWithState(track, "d string", "n long", "Append", "NoTimeout")
                """),
            line=5,
            column=14,
            related_lines=(7,),
            # The import and the call would pass 100 characters: one name, one argument a line.
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             from sparkpar_lint.runtime.pulses import (
                                 PULSE_STATE_SCHEMA,
                                 PULSE_TIMEOUT,
                                 release_in_event_time_order,
                             )

                             spark = SparkSession.builder.getOrCreate()
                             def track(key, pdfs, state):
                                 for pdf in pdfs:
                                     yield pdf.head(1)
                             events = spark.readStream.table("e").withWatermark("ts", "10 minutes")
                             (
                                 events.groupBy("device")
                                 .applyInPandasWithState(
                                     release_in_event_time_order(track, "ts"),
                                     "d string",
                                     PULSE_STATE_SCHEMA,
                                     "Append",
                                     PULSE_TIMEOUT,
                                 )
                             )
                             """),
        ),
        # Near miss of the equal literal values: "ann" has two different values.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                votes = spark.sparkContext.parallelize([("ann", 1), ("bo", 1), ("ann", 2)])
                print(votes.groupByKey().mapValues(list).collect())
                """),
            line=4,
            column=35,
            related_lines=(4,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             votes = spark.sparkContext.parallelize([("ann", 1), ("bo", 1), ("ann", 2)])
                             print(votes.groupByKey().mapValues(lambda values: sorted(values, key=repr)).collect())
                             """),
        ),
        # Each key's values listed as they arrived, and collected.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:2], l[2:]))
                print(pairs.groupByKey().mapValues(lambda vs: list(vs)).collect())
                """),
            line=4,
            column=35,
            related_lines=(4,),
            # The values in one order of their own (unsafe).
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:2], l[2:]))
                             print(pairs.groupByKey().mapValues(lambda vs: sorted(vs, key=repr)).collect())
                             """),
        ),
        # A group's rows numbered by their position, and split by position.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                loans = spark.read.parquet("loans")
                loans.groupBy("client").applyInPandas(lambda g: g.assign(n=range(len(g))), "client long, n long")
                """),
            line=4,
            column=59,
            # No order to read: the whole row, column by column (unsafe), as for a `def`.
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             loans = spark.read.parquet("loans")
                             (
                                 loans.groupBy("client")
                                 .applyInPandas(lambda g: (
                                     g.sort_values(list(g.columns))
                                     .assign(n=range(len(g)))
                                 ), "client long, n long")
                             )
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                from sklearn.model_selection import train_test_split
                def holdout(pdf):
                    train, test = train_test_split(pdf, test_size=0.2, random_state=7)
                    return test
                spark.read.parquet("s").groupBy("store").applyInPandas(holdout, "store long, v double")
                """),
            line=5,
            column=18,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession
                             spark = SparkSession.builder.getOrCreate()
                             from sklearn.model_selection import train_test_split
                             def holdout(pdf):
                                 pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)
                                 train, test = train_test_split(pdf, test_size=0.2, random_state=7)
                                 return test
                             spark.read.parquet("s").groupBy("store").applyInPandas(holdout, "store long, v double")
                             """),
        ),
        # A transformWithState processor: its rows per key arrive in shuffle order.
        Invalid(
            dedent("""\
                from pyspark.sql.streaming.stateful_processor import StatefulProcessor
                class FirstVisit(StatefulProcessor):
                    def handleInputRows(self, key, rows, timer_values):
                        for pdf in rows:
                            yield pdf.head(1)
                def run(stream):
                    return stream.groupBy("user").transformWithStateInPandas(FirstVisit(), "u string", "append", "None")
                """),
            line=5,
            column=18,
            related_lines=(7,),
            expected_fix=None,
        ),
        # `RDD.groupBy` gathers its groups as `groupByKey` does: listed as they arrived, printed.
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                print(names.groupBy(lambda n: n[0]).mapValues(list).collect())
                """),
            line=4,
            column=46,
            related_lines=(4,),
            expected_fix=dedent("""\
                             from pyspark import SparkContext
                             sc = SparkContext.getOrCreate()
                             names = sc.textFile("names.txt")
                             print(names.groupBy(lambda n: n[0]).mapValues(lambda values: sorted(values, key=repr)).collect())
                             """),
        ),
        # The pairs mapped whole, their values listed.
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                pairs = names.map(lambda n: (n[0], n))
                print(pairs.groupByKey().map(lambda kv: (kv[0], list(kv[1]))).collect())
                """),
            line=5,
            column=29,
            related_lines=(5,),
            expected_fix=None,
        ),
        # Collected groups joined into text on the driver, in a loop and in a comprehension.
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                for letter, group in names.groupBy(lambda n: n[0]).collect():
                    print(letter, ", ".join(group))
                """),
            line=5,
            column=18,
            related_lines=(4, 4),
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                groups = names.groupBy(len).collect()
                print([(size, list(group)) for size, group in groups])
                """),
            line=5,
            column=14,
            related_lines=(4, 4),
            expected_fix=None,
        ),
        # Collected groups joined into a report file on the driver.
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                counts = names.map(lambda n: (len(n), n)).groupByKey().collect()
                with open("report.txt", "w") as out:
                    for size, group in counts:
                        out.write(f"{size}: {' | '.join(group)}\\n")
                """),
            line=7,
            column=29,
            related_lines=(4, 4),
            expected_fix=None,
        ),
        # Each group made a tuple as it arrived and saved.
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                names = sc.textFile("names.txt")
                names.groupBy(len).map(lambda kv: (kv[0], tuple(kv[1]))).saveAsTextFile("by_length")
                """),
            line=4,
            column=23,
            related_lines=(4,),
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        helpers = {n.name.value: n for n in graph.definitions if isinstance(n, cst.FunctionDef)}
        for node in graph.nodes:
            for function in node.functions:
                kinds = parameter_data(graph, node, function)
                if not kinds:
                    continue
                dependence = find_order_dependence(function.node, kinds, node.keys, helpers)
                if dependence is not None:
                    message, related = unordered_rows(node, function, dependence)
                    fix = function_fix(graph, node, function, kinds, helpers)
                    yield self.finding(ctx, graph.span_of(dependence.node), message, related=related, fix=fix)
            upstream = graph.input_of(node)  # where the groups come from: both finders need one
            listed = listed_in_arrival_order(graph, node)
            if listed is not None and upstream is not None:
                message, related = listed_in_arrival(upstream)
                yield self.finding(ctx, graph.span_of(listed), message, related=related, fix=sorted_list_fix(listed))
            iterated = listed_on_driver(graph, node)
            if iterated is not None and upstream is not None:
                message, related = read_on_driver(node, upstream)
                yield self.finding(ctx, graph.span_of(iterated), message, related=related, fix=ON_DRIVER)
