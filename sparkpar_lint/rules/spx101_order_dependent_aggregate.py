"""SPX101 order-dependent-aggregate: `first`, `collect_list`, ... in an aggregation after a shuffle."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import partial

import libcst as cst

from sparkpar_lint.edits.alias import alias_removal
from sparkpar_lint.edits.chain import drop_call, receiver_of
from sparkpar_lint.edits.code import column_function, column_name, string
from sparkpar_lint.edits.model import SAFE, UNSAFE, Fix
from sparkpar_lint.graph.contexts import holds_in_wider_contexts
from sparkpar_lint.graph.order_consumers import aggregate_alias, order_free_udf, order_never_observed
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import constant_within, literal_names
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.fixers.ordering import sort_reaches
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN, sequence_parts
from sparkpar_lint.rules.fixers.sql import any_answer_fix, lists_in_one_order_fix, ordered_pick_fix

_PRELUDE = "from pyspark.sql import SparkSession, Window, functions as F\nspark = SparkSession.builder.getOrCreate()\n"

_SQL_PRELUDE = "from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n"


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
            _PRELUDE
            + 'firsts = spark.read.parquet("t").groupBy("user").agg(F.first("page"))\n'
            + "if firsts.isEmpty():\n    raise SystemExit(1)\n"
        ),
        # The list reaches a UDF parameter that only sums over it (the other is the row's total).
        Valid(
            _PRELUDE
            + "def spread(secs, total):\n"
            + "    if not secs or total <= 0:\n        return 0.0\n"
            + "    h = 0.0\n    for s in secs:\n        h -= (s / total) * (s / total)\n    return h\n"
            + 'spread_udf = F.udf(spread, "double")\n'
            + 'days = spark.read.parquet("stays").groupBy("user").agg(F.sum("secs").alias("total"), F.collect_list("secs").alias("secs"))\n'
            + 'days.withColumn("h", spread_udf("secs", "total")).drop("secs").write.parquet("o")\n'
        ),
        # Lists collected side by side from non-null columns, zipped and exploded: each pair is
        # one input row's, whatever the order.
        Valid(
            _PRELUDE
            + 'lines = spark.read.parquet("lines").dropna(subset=["item", "price"])\n'
            + 'baskets = lines.groupBy("basket").agg(F.collect_list("item").alias("items"), F.collect_list("price").alias("prices"))\n'
            + 'baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")\n'
        ),
        # The same with filters instead: `isNotNull()` and SQL's `IS NOT NULL`.
        Valid(
            _PRELUDE
            + 'lines = spark.read.parquet("lines").filter(F.col("item").isNotNull()).where("price IS NOT NULL")\n'
            + 'baskets = lines.groupBy("basket").agg(F.collect_list("item").alias("items"), F.collect_list("price").alias("prices"))\n'
            + 'baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")\n'
        ),
        # Collected to the driver and read only through order-free summaries of each row's list.
        Valid(
            "import statistics\n"
            + _PRELUDE
            + 'lat = spark.read.parquet("p").groupBy("k").agg(F.collect_list("ms").alias("ms"))\n'
            + "rows = lat.collect()\n"
            + "mid = {r.k: statistics.median(r.ms) for r in rows}\n"
            + "for r in rows:\n"
            + '    print(r.k, max(r["ms"]), len(set(r.ms)))\n'
        ),
        Valid(_PRELUDE + 'spark.read.parquet("p").groupBy("k").agg(F.min_by("v", "ts"))\n'),
        Valid(_PRELUDE + 'spark.read.parquet("p").groupBy("k").agg(F.sum("v"), F.max("ts"))\n'),
        Valid(
            _PRELUDE
            + 'df = spark.read.parquet("p")\n'
            + 'df.groupBy("k").agg(F.array_sort(F.collect_list(F.struct("ts", "v"))))\n'
        ),
        Valid(_PRELUDE + 'spark.read.parquet("p").groupBy("k").agg(F.size(F.collect_list("v")))\n'),
        # A local function that happens to be called `first` is not Spark's.
        Valid(
            "from pyspark.sql import SparkSession\n"
            "spark = SparkSession.builder.getOrCreate()\n"
            "def first(xs):\n    return xs[0]\n"
            'spark.read.parquet("p").groupBy("k").agg(first(["v"]))\n'
        ),
        # Order-insensitive global aggregates, and a first over an ordered window, in a select.
        Valid(
            _PRELUDE
            + 'df = spark.read.parquet("p")\n'
            + 'df.select(F.max("ts"), F.count("v"), F.sort_array(F.collect_list("v")))\n'
            + 'df.select(F.first("v").over(Window.partitionBy("k").orderBy("ts")))\n'
        ),
        # The name comes from a lookup joined on the group key: one value per group.
        Valid(
            _PRELUDE
            + 'names = spark.read.parquet("orgs").select("org", "org_name").distinct()\n'
            + 'visits = spark.read.parquet("v").join(names, on="org", how="left")\n'
            + 'visits.groupBy("org").agg(F.first("org_name").alias("name"), F.count("*").alias("n"))\n'
        ),
        # A column computed from the group keys alone is the same on every row of a group.
        Valid(
            _PRELUDE
            + 'v = spark.read.parquet("v").withColumn("region", F.substring("zip", 1, 2))\n'
            + 'v.groupBy("zip").agg(F.first("region"), F.sum("amount"))\n'
        ),
        # Groups of one row: the rows are already unique on the keys.
        Valid(
            _PRELUDE
            + 'latest = spark.read.parquet("v").groupBy("user").agg(F.max("ts").alias("ts"))\n'
            + 'latest.groupBy("user").agg(F.first("ts"))\n'
        ),
        # The list only answers "did the session buy?": element order never reaches an output.
        Valid(
            _PRELUDE
            + 'sessions = spark.read.parquet("v").groupBy("session").agg(F.collect_list("action").alias("actions"))\n'
            + 'sessions.withColumn("bought", F.array_contains("actions", "buy")).drop("actions").write.parquet("o")\n'
        ),
        # A UDF that only counts the matching elements: order-free.
        Valid(
            _PRELUDE
            + "def count_buys(actions):\n"
            + "    n = 0\n"
            + "    for a in actions:\n"
            + "        if a == 'buy':\n"
            + "            n += 1\n"
            + "    return n\n"
            + "buys = F.udf(count_buys, 'int')\n"
            + 'spark.read.parquet("v").groupBy("s").agg(buys(F.collect_list("action")).alias("buys"))\n'
        ),
        # pandas, not Spark: a lower-case groupby on a pandas frame.
        Valid("import pandas as pd\nimport pyspark\npdf = pd.DataFrame()\npdf.groupby('k').first()\n"),
        # SQL: max_by names the order; an array sorted after collecting has none to lose.
        Valid(
            _SQL_PRELUDE
            + 'latest = spark.sql("SELECT sensor, max_by(value, ts) AS value FROM readings GROUP BY sensor")\n'
        ),
        Valid(
            _SQL_PRELUDE
            + 'pages = spark.sql("SELECT user, array_sort(collect_list(page)) AS pages FROM visits GROUP BY user")\n'
        ),
    ]
    INVALID = [
        # A descending sort lost by the groupBy: the first row of each group is its latest.
        # The near miss: the driver reads each list's first element.
        Invalid(
            _PRELUDE
            + 'lat = spark.read.parquet("p").groupBy("k").agg(F.collect_list("ms").alias("ms"))\n'
            + "rows = lat.collect()\n"
            + "first = {r.k: r.ms[0] for r in rows}\n",
            line=3,
            column=47,
            related_lines=(3,),
            expected_fix=_PRELUDE
            + "lat = (\n"
            + '    spark.read.parquet("p")\n'
            + '    .withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
            + '    .groupBy("k")\n'
            + "    .agg(\n"
            + "        F.array_compact(\n"
            + '            F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "ms"))).getField("ms"),\n'
            + '        ).alias("ms"),\n'
            + "    )\n"
            + ")\n"
            + "rows = lat.collect()\n"
            + "first = {r.k: r.ms[0] for r in rows}\n",
        ),
        Invalid(
            _PRELUDE
            + 'prices = spark.read.parquet("prices").orderBy(F.col("ts").desc())\n'
            + 'prices.groupBy("item").agg(F.first("price").alias("price")).show()\n',
            line=4,
            column=27,
            related_lines=(3, 4),
            expected_fix=_PRELUDE
            + 'prices = spark.read.parquet("prices")\n'
            + 'prices.groupBy("item").agg(F.max(F.struct("ts", "price")).getField("price").alias("price")).show()\n',
        ),
        # Ignoring nulls over rows sorted by that very column: its largest value.
        Invalid(
            _PRELUDE
            + 'people = spark.read.parquet("people")\n'
            + 'people.sort(F.desc("weight")).groupBy("name").agg(F.first("weight", True).alias("w")).show()\n',
            line=4,
            column=50,
            related_lines=(4, 4),
            expected_fix=_PRELUDE
            + 'people = spark.read.parquet("people")\n'
            + 'people.groupBy("name").agg(F.max("weight").alias("w")).show()\n',
        ),
        # Sorted by that very column with its nulls last: the first row holds the smallest value
        # (null only when every value is), which is `min`.
        Invalid(
            _PRELUDE
            + 'people = spark.read.parquet("people")\n'
            + 'people.sort(F.col("weight").asc_nulls_last()).groupBy("name").agg(F.first("weight").alias("w")).show()\n',
            line=4,
            column=66,
            related_lines=(4, 4),
            expected_fix=_PRELUDE
            + 'people = spark.read.parquet("people")\n'
            + 'people.groupBy("name").agg(F.min("weight").alias("w")).show()\n',
        ),
        # The near miss: the nulls come first, so `first` is null as soon as one weight is.
        Invalid(
            _PRELUDE
            + 'people = spark.read.parquet("people")\n'
            + 'people.sort(F.asc_nulls_first("weight")).groupBy("name").agg(F.first("weight").alias("w")).show()\n',
            line=4,
            column=61,
            related_lines=(4, 4),
            expected_fix=None,
        ),
        # The near miss: that parameter is read by position.
        Invalid(
            _PRELUDE
            + "def first_share(secs, total):\n    return secs[0] / total\n"
            + 'share_udf = F.udf(first_share, "double")\n'
            + 'days = spark.read.parquet("stays").groupBy("user").agg(F.sum("secs").alias("total"), F.collect_list("secs").alias("secs"))\n'
            + 'days.withColumn("f", share_udf("secs", "total")).drop("secs").write.parquet("o")\n',
            line=6,
            column=85,
            related_lines=(6,),
            expected_fix=(
                "from pyspark.sql import SparkSession, Window, functions as F\n"
                "spark = SparkSession.builder.getOrCreate()\n"
                "def first_share(secs, total):\n"
                "    return secs[0] / total\n"
                'share_udf = F.udf(first_share, "double")\n'
                "days = (\n"
                '    spark.read.parquet("stays")\n'
                '    .withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
                '    .groupBy("user")\n'
                "    .agg(\n"
                '        F.sum("secs").alias("total"),\n'
                '        F.array_compact(F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "secs"))).getField("secs")).alias("secs"),\n'
                "    )\n"
                ")\n"
                'days.withColumn("f", share_udf("secs", "total")).drop("secs").write.parquet("o")\n'
            ),
        ),
        # Near misses: one list sorted and the other not, so the pairs no longer match rows (a
        # nullable column shifts its list the same way: fixtures/spx101/bad_zipped_lists_with_nulls.py);
        # and a slice reads positions before the order-free `array_contains`.
        Invalid(
            _PRELUDE
            + 'lines = spark.read.parquet("lines").dropna(subset=["item", "price"])\n'
            + 'baskets = lines.groupBy("basket").agg(F.sort_array(F.collect_list("item")).alias("items"), F.collect_list("price").alias("prices"))\n'
            + 'baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")\n',
            line=4,
            column=91,
            related_lines=(4,),
            # Arrival order for the unsorted list, as the sequential run pairs them (unsafe).
            expected_fix=(
                "from pyspark.sql import SparkSession, Window, functions as F\n"
                "spark = SparkSession.builder.getOrCreate()\n"
                'lines = spark.read.parquet("lines").dropna(subset=["item", "price"])\n'
                "baskets = (\n"
                '    lines.withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
                '    .groupBy("basket")\n'
                "    .agg(\n"
                '        F.sort_array(F.collect_list("item")).alias("items"),\n'
                '        F.array_compact(F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "price"))).getField("price")).alias("prices"),\n'
                "    )\n"
                ")\n"
                'baskets.select("basket", F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")\n'
            ),
        ),
        Invalid(
            _PRELUDE
            + 'firsts = spark.read.parquet("v").groupBy("user").agg(F.collect_list("page").alias("pages"))\n'
            + 'firsts.select("user", F.array_contains(F.slice("pages", 1, 3), "home").alias("early")).write.parquet("o")\n',
            line=3,
            column=53,
            related_lines=(3,),
            expected_fix=(
                "from pyspark.sql import SparkSession, Window, functions as F\n"
                "spark = SparkSession.builder.getOrCreate()\n"
                "firsts = (\n"
                '    spark.read.parquet("v")\n'
                '    .withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
                '    .groupBy("user")\n'
                "    .agg(\n"
                "        F.array_compact(\n"
                '            F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "page"))).getField("page"),\n'
                '        ).alias("pages"),\n'
                "    )\n"
                ")\n"
                'firsts.select("user", F.array_contains(F.slice("pages", 1, 3), "home").alias("early")).write.parquet("o")\n'
            ),
        ),
        # The lookup is joined on another column than the group key: a group can hold several names.
        Invalid(
            _PRELUDE
            + 'names = spark.read.parquet("orgs").select("site", "org_name")\n'
            + 'visits = spark.read.parquet("v").join(names, on="site", how="left")\n'
            + 'visits.groupBy("org").agg(F.first("org_name").alias("name"))\n',
            line=5,
            column=26,
            related_lines=(5,),
            # Any value of the group will do for the author: the smallest is one the data decides (unsafe).
            expected_fix=_PRELUDE
            + 'names = spark.read.parquet("orgs").select("site", "org_name")\n'
            + 'visits = spark.read.parquet("v").join(names, on="site", how="left")\n'
            + 'visits.groupBy("org").agg(F.min("org_name").alias("name"))\n',
        ),
        # A star import makes `first` (and `max`) Spark's; the fix goes through a new `F` alias.
        Invalid(
            "from pyspark.sql import SparkSession\nfrom pyspark.sql.functions import *\n"
            "spark = SparkSession.builder.getOrCreate()\n"
            'visits = spark.read.parquet("v")\n'
            'visits.groupBy("user").agg(first("page").alias("entry"), max("ts").alias("seen")).write.parquet("o")\n',
            line=5,
            column=27,
            related_lines=(5,),
            expected_fix=(
                "from pyspark.sql import SparkSession, functions as F\n"
                "from pyspark.sql.functions import *\n"
                "spark = SparkSession.builder.getOrCreate()\n"
                'visits = spark.read.parquet("v")\n'
                "(\n"
                '    visits.withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
                '    .groupBy("user")\n'
                "    .agg(\n"
                '        F.min(F.struct("_sparkpar_seq", "page")).getField("page").alias("entry"),\n'
                '        max("ts").alias("seen"),\n'
                "    )\n"
                '    .write.parquet("o")\n'
                ")\n"
            ),
        ),
        # The list's order reaches the output through `concat_ws`.
        Invalid(
            _PRELUDE
            + 'sessions = spark.read.parquet("v").groupBy("session").agg(F.collect_list("page").alias("pages"))\n'
            + 'sessions.withColumn("path", F.concat_ws(" > ", "pages")).drop("pages").write.parquet("o")\n',
            line=3,
            column=58,
            related_lines=(3,),
            # No sort: arrival order becomes a sequence number taken at the source (unsafe).
            expected_fix=(
                _PRELUDE
                + "sessions = (\n"
                + '    spark.read.parquet("v")\n'
                + '    .withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
                + '    .groupBy("session")\n'
                + "    .agg(\n"
                + "        F.array_compact(\n"
                + '            F.array_sort(F.collect_list(F.struct("_sparkpar_seq", "page"))).getField("page"),\n'
                + '        ).alias("pages"),\n'
                + "    )\n"
                + ")\n"
                + 'sessions.withColumn("path", F.concat_ws(" > ", "pages")).drop("pages").write.parquet("o")\n'
            ),
        ),
        Invalid(
            _PRELUDE
            + 'df = spark.read.parquet("events")\n'
            + 'latest = df.orderBy("ts").groupBy("user").agg(F.first("page"))\n',
            line=4,
            column=46,
            related_lines=(4, 4),
            expected_fix=_PRELUDE
            + 'df = spark.read.parquet("events")\n'
            + 'latest = df.groupBy("user").agg(F.min(F.struct("ts", "page")).getField("page").alias("first(page)"))\n',
        ),
        Invalid(
            "import pyspark.sql.functions as fn\n"
            "from pyspark.sql import SparkSession\n"
            "spark = SparkSession.builder.getOrCreate()\n"
            'events = spark.readStream.format("kafka").load()\n'
            'pages = fn.collect_list("page")\n'
            'events.groupBy("user").agg(pages)\n',
            line=5,
            column=8,
            related_lines=(6,),
            # No sort and a streaming source: no order to read, so the list is sorted (unsafe).
            expected_fix="import pyspark.sql.functions as fn\n"
            "from pyspark.sql import SparkSession\n"
            "spark = SparkSession.builder.getOrCreate()\n"
            'events = spark.readStream.format("kafka").load()\n'
            'pages = fn.array_sort(fn.collect_list("page"))\n'
            'events.groupBy("user").agg(pages)\n',
        ),
        Invalid(
            "from pyspark.sql.functions import last as final_value\n"
            "def latest(df):\n"
            '    return df.groupBy("user").agg(final_value("page"))\n',
            line=3,
            column=34,
            related_lines=(3,),
            # No order anywhere: `max`, one of the answers `last` can give (unsafe). `max` would
            # shadow the builtin, so it comes through a new `F` alias; the unused import goes.
            expected_fix="from pyspark.sql import functions as F\n"
            "\n"
            "def latest(df):\n"
            '    return df.groupBy("user").agg(F.max("page").alias("last(page)"))\n',
        ),
        Invalid(
            _PRELUDE
            + "def sessions(spark):\n"
            + '    return spark.read.json("e").sort("ts")\n'
            + 'sessions(spark).groupBy("k").agg({"page": "first"})\n',
            line=5,
            column=42,
            related_lines=(4, 5),
            # The aggregate is a string in a dict: nothing to replace it with.
            expected_fix=None,
        ),
        Invalid(
            "from pyspark.sql import functions as F\n"
            "def first_page(spark):\n"
            '    visits = spark.read.parquet("visits").select("user", "page")\n'
            '    return visits.groupBy("user").agg(F.first("page"))\n',
            line=4,
            column=38,
            related_lines=(4,),
            # No sort: arrival order becomes a sequence number taken at the source (unsafe).
            expected_fix=(
                "from pyspark.sql import functions as F\n"
                "def first_page(spark):\n"
                '    visits = spark.read.parquet("visits").select("user", "page")\n'
                "    return (\n"
                '        visits.withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
                '        .groupBy("user")\n'
                '        .agg(F.min(F.struct("_sparkpar_seq", "page")).getField("page").alias("first(page)"))\n'
                "    )\n"
            ),
        ),
        Invalid(
            "from pyspark.sql.functions import collect_list\n"
            "def pages(df):\n"
            '    ordered = df.orderBy("ts")\n'
            '    return ordered.groupBy("user").agg(collect_list("page").alias("pages"))\n',
            line=4,
            column=39,
            related_lines=(3, 4),
            expected_fix=(
                "from pyspark.sql.functions import array_compact, array_sort, collect_list, struct\n"
                "def pages(df):\n"
                "    return (\n"
                '        df.groupBy("user")\n'
                "        .agg(\n"
                "            array_compact(\n"
                '                array_sort(collect_list(struct("ts", "page"))).getField("page"),\n'
                '            ).alias("pages"),\n'
                "        )\n"
                "    )\n"
            ),
        ),
        # A global aggregate in a select: partial results merge in task-completion order.
        Invalid(
            _PRELUDE
            + 'df = spark.read.parquet("runs").orderBy("ts")\n'
            + 'summary = df.select(F.max("ts"), F.last("status"))\n',
            line=4,
            column=33,
            # The sort's order decides, as for a grouped aggregate; the column keeps Spark's name for
            # the original, `last(status)`, which later code, `show()` and writes see.
            expected_fix=_PRELUDE
            + 'df = spark.read.parquet("runs").orderBy("ts")\n'
            + "summary = df.select(\n"
            + '    F.max("ts"),\n'
            + '    F.max(F.struct("ts", "status")).getField("status").alias("last(status)"),\n'
            + ")\n",
        ),
        # SQL: the subquery's ORDER BY is lost by the GROUP BY, as `orderBy` before `groupBy` is.
        Invalid(
            _SQL_PRELUDE + 'spark.read.parquet("readings").createOrReplaceTempView("readings")\n'
            "latest = spark.sql(\n"
            '    "SELECT sensor, last(value) AS value FROM (SELECT * FROM readings ORDER BY ts) GROUP BY sensor"\n'
            ")\n",
            line=5,
            column=20,
            related_lines=(5, 5),
            # The literal is rewritten: the max of (order, value) keeps the alias and breaks ties.
            expected_fix=_SQL_PRELUDE + 'spark.read.parquet("readings").createOrReplaceTempView("readings")\n'
            "latest = spark.sql(\n"
            '    "SELECT sensor, max(struct(ts, value)).value AS value FROM (SELECT * FROM readings ORDER BY ts) '
            'GROUP BY sensor"\n'
            ")\n",
        ),
        # An f-string: the placeholder is an opaque table name; positions are inside the string.
        Invalid(
            _SQL_PRELUDE + 'table = "readings"\n'
            'pages = spark.sql(f"""\n'
            "    SELECT user, collect_list(page) AS pages\n"
            "    FROM (SELECT * FROM {table} ORDER BY ts)\n"
            "    GROUP BY user\n"
            '""")\n',
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
                    if _order_dependent(call) and not _order_harmless(graph, node, call):
                        yield self._finding(ctx, graph, node, call)
            elif node.spec.column_functions == "projection":
                for call in node.columns.calls:
                    if _order_dependent(call) and not call.enclosing and not call.from_sql:
                        yield self._global_finding(ctx, node, call)

    def _global_finding(self, ctx: RuleContext, node: StageNode, call: ColumnCall) -> Finding:
        message = (
            f"`{call.function}` in `{node.method}` with no window is a global aggregate: each partition "
            "computes a partial result and Spark merges them in the order tasks finish, so the result "
            "changes with partitioning and timing. Use `min_by`/`max_by` on an ordering column or "
            "`array_sort` of a `struct(order, value)`"
        )
        return self.finding(
            ctx, call.span, message, fix=_named_as_before(node, call, _global_fix(ctx.graph, node, call))
        )

    def _finding(self, ctx: RuleContext, graph: StageGraph, node: StageNode, call: ColumnCall) -> Finding:
        shuffle = next((n for n in [node, *graph.upstream(node)] if n.is_shuffle), node)
        related = []
        sort = _discarded_sort(graph, node)
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
        fix = _named_as_before(node, call, _fix(graph, node, call, sort))
        return self.finding(ctx, call.span, message, related=tuple(related), fix=fix)


def _named_as_before(node: StageNode, call: ColumnCall, fix: Fix | NoFix | None) -> Fix | NoFix | None:
    """The fix with its new aggregate aliased to the name Spark gave the old one, where the old one
    is an unnamed argument of the stage (`agg(F.last("page"))` makes a column `last(page)`, which
    later code, `show()` and writes see): the fixed expression would otherwise be named after its
    own text (`max(struct(ts, page)).page`)."""
    if not isinstance(fix, Fix) or call.call is None or node.call is None or call.function not in _NAMED_BY_SPARK:
        return fix
    if not any(arg.value is call.call for arg in node.call.args) or len(call.call.args) < 1:
        return fix
    column = column_name(call.call.args[0].value)
    if column is None or not column.isidentifier():
        return fix
    name = f"{call.function}({column})"
    replacements = tuple(
        (original, partial(_aliased, new, name) if original is call.call else new) for original, new in fix.replacements
    )
    return replace(fix, replacements=replacements)


def _aliased(new, name: str, rewritten: cst.Call) -> cst.Call:
    built = new(rewritten) if callable(new) else new
    return cst.Call(func=cst.Attribute(value=built, attr=cst.Name("alias")), args=[cst.Arg(string(name))])


# Aggregates whose unnamed column Spark names `function(column)` (checked on Spark 4).
_NAMED_BY_SPARK = {"first", "last", "collect_list"}
_FIRST = {"first", "first_value", "any_value"}
_LAST = {"last", "last_value"}
_LISTS = {"collect_list", "array_agg"}


def _fix(graph: StageGraph, node: StageNode, call: ColumnCall, sort: StageNode | None) -> Fix | NoFix | None:
    """Replace the aggregate with one that reads an order column instead of the arrival order.

    The order is the upstream sort's columns (safe) or, with no sort, a sequence number added at
    the source (unsafe: arrival order is a choice). The value itself ends the struct, so even
    rows tied on the order columns give one answer.
    """
    if call.sql is not None:
        reaches = sort is not None and sort.sql is not None and sort_reaches(graph, sort, node)
        if reaches:
            return ordered_pick_fix(call.sql, sort.sql)
        everyone = _all_siblings(graph, node, call) if sort is None else []
        if everyone:
            siblings = _sql_siblings(graph, node, call)
            if len(siblings) != len(everyone):
                return _SHARED_ORDER  # DataFrame siblings too: no one rewrite reaches them all
            in_order = [c.sql for c in node.columns.calls if c is call or c in siblings]
            return lists_in_one_order_fix(call.sql, in_order) or _SHARED_ORDER
        return any_answer_fix(call.sql) if sort is None else None
    if call.call is None:
        return None
    direction = _direction(sort) if sort is not None else "asc"
    if sort is not None and sort.keys and direction is None:
        return _extreme_past_placed_nulls(graph, node, call, sort) or _SORT_UNREADABLE
    if sort is not None and (not sort.keys or not sort_reaches(graph, sort, node)):
        return None
    dropped, gone = _dropped_sort(graph, sort, node) if sort is not None else ((), "")
    if len(call.call.args) != 1:
        if sort is not None:
            return _extreme_of_the_sort_column(call, sort, direction == "desc", dropped, gone)
        return _one_of_its_answers(graph, node, call) if not _pivoted(graph, node) else None
    if sort is not None:
        keys, safety, extra, imports = sort.keys, SAFE, dropped, ()
    else:
        parts = sequence_parts(graph, node, call.call)
        if parts is None:
            return None if _pivoted(graph, node) else _one_of_its_answers(graph, node, call)
        keys, safety, (extra, imports) = (SEQUENCE_COLUMN,), UNSAFE, parts
    replacement = _ordered_aggregate(call, keys, direction == "desc")
    if replacement is None:
        return None
    new_call, more, what = replacement
    return Fix(safety, what + gone, ((call.call, new_call), *extra), imports + more)


def _global_fix(graph: StageGraph, node: StageNode, call: ColumnCall) -> Fix | NoFix | None:
    """A global aggregate reads the order of the sort above it, if any (safe), else takes one of
    its answers."""
    sort = _discarded_sort(graph, node)
    if sort is None:
        return _one_of_its_answers(graph, node, call)
    direction = _direction(sort)
    if call.call is None or len(call.call.args) != 1 or not sort.keys or direction is None:
        return None
    if not sort_reaches(graph, sort, node):
        return None
    replacement = _ordered_aggregate(call, sort.keys, direction == "desc")
    if replacement is None:
        return None
    new_call, imports, what = replacement
    return Fix(SAFE, what, ((call.call, new_call),), imports)


def _pivoted(graph: StageGraph, node: StageNode) -> bool:
    """A pivot's cells often hold maps and structs of maps, which `min`/`max`/`array_sort`
    cannot order (Spark rejects the query), and often hold one value each."""
    source = graph.input_of(node)
    return source is not None and source.method == "pivot"


def _one_of_its_answers(graph: StageGraph, node: StageNode, call: ColumnCall) -> Fix | NoFix | None:
    """With no order anywhere to take (no sort, rows not straight from a source), the answer
    that is one of those the aggregate can already give, whatever the partitioning: `first` →
    `min`, `last` → `max` (a value of one of the group's rows, null only when all are), and
    `collect_list` → `array_sort(collect_list)` (one of its orders). Unsafe: it picks the
    smallest, which may not be the row the author meant.
    """
    if call.from_sql or call.call is None or not call.call.args or not _ignores_nulls_at_most(call.call):
        return None
    siblings = _order_dependent_siblings(graph, node, call)
    if len(siblings) != len(_all_siblings(graph, node, call)):
        return _SHARED_ORDER  # SQL-text siblings too: no one rewrite reaches them all
    if siblings:
        return _one_row_for_all(call, siblings, list(node.columns.calls))
    value = call.call.args[0].value.deep_clone()
    if call.function in _FIRST | _LAST:
        chooser = "min" if call.function in _FIRST else "max"
        replacement, imports = column_function(call.call, chooser, [value])
        what = f"`{call.function}` → `{chooser}`: no order to read, so the {'smallest' if chooser == 'min' else 'largest'} value"
    elif call.function in _LISTS:
        collected, imports = column_function(call.call, call.function, [value])
        replacement, more = column_function(call.call, "array_sort", [collected])
        imports += more
        what = f"`{call.function}` → `array_sort({call.function})`: no order to read, so sorted values"
    else:
        return None
    return Fix(UNSAFE, what + ", one of the answers the job could already give", ((call.call, replacement),), imports)


def _order_dependent_siblings(graph: StageGraph, node: StageNode, call: ColumnCall) -> list[ColumnCall]:
    """The other order-dependent aggregates of the same stage: in the original they all read the
    same arrival order (`first("a")` and `first("b")` come from one row; two `collect_list`s line
    up), which fixes that each choose on their own would break."""
    return [
        other
        for other in node.columns.calls
        if other is not call
        and other.call is not None
        and not other.from_sql
        and _order_dependent(other)
        and not _order_harmless(graph, node, other)
    ]


def _all_siblings(graph: StageGraph, node: StageNode, call: ColumnCall) -> list[ColumnCall]:
    """The other order-dependent aggregates of the stage, in Python or in SQL text."""
    return [
        other
        for other in node.columns.calls
        if other is not call and _order_dependent(other) and not _order_harmless(graph, node, other)
    ]


def _sql_siblings(graph: StageGraph, node: StageNode, call: ColumnCall) -> list[ColumnCall]:
    """The other order-dependent aggregates of the same SQL query: `min`/`array_sort` each on its
    own would split values the query takes from the same rows."""
    return [
        other
        for other in node.columns.calls
        if other is not call and other.from_sql and _order_dependent(other) and not _order_harmless(graph, node, other)
    ]


_SHARED_ORDER = NoFix(
    "the stage has several order-dependent aggregates that read one arrival order together "
    "(their values come from the same rows); one shared order is the author's to choose"
)


def _one_row_for_all(call: ColumnCall, siblings: list[ColumnCall], node_calls: list[ColumnCall]) -> Fix | NoFix:
    """`first("a")`, `first("b")` → `F.min(F.struct("a", "b")).getField("a")`, `...getField("b")`:
    every value from the one row that is smallest over all of them, so they still come from one
    row, as in the original. Lists that line up (`collect_list` of two columns) keep no such
    simple form and are left to the author."""
    # One order of the struct's fields for every aggregate of the stage, so all pick the same row.
    calls = [c for c in node_calls if c is call or c in siblings]
    if all(c.function in _LISTS for c in calls):
        return _lists_in_one_order(call, calls)
    kinds = {c.function in _FIRST for c in calls}
    if any(c.function not in _FIRST | _LAST for c in calls) or len(kinds) != 1:
        return _SHARED_ORDER
    names = []
    for c in calls:
        name = column_name(c.call.args[0].value) if c.call.args else None
        if name is None or "." in name or not _ignores_nulls_at_most(c.call):
            return NoFix("the stage's first/last aggregates read expressions, not plain columns, to take from one row")
        names += [name] if name not in names else []
    chooser = "min" if call.function in _FIRST else "max"
    row, imports = column_function(call.call, "struct", [string(n) for n in names])
    picked, more = column_function(call.call, chooser, [row])
    own = column_name(call.call.args[0].value)
    replacement = cst.Call(func=cst.Attribute(value=picked, attr=cst.Name("getField")), args=[cst.Arg(string(own))])
    what = (
        f"`{call.function}({own})` → `{own}` of the {'smallest' if chooser == 'min' else 'largest'} row "
        f"over ({', '.join(names)}): no order to read, and the stage's values still come from one row"
    )
    return Fix(
        UNSAFE, what + ", one of the answers the job could already give", ((call.call, replacement),), imports + more
    )


def _lists_in_one_order(call: ColumnCall, calls: list[ColumnCall]) -> Fix | NoFix:
    """`collect_list("a")`, `collect_list("b")` → `array_compact(array_sort(collect_list(struct("a",
    "b"))).getField("a"))`, and the same for `b`: both lists in the one order of the sorted rows, each
    without its nulls, which is what the original gives when the rows arrive in that order."""
    names = []
    for c in calls:
        name = column_name(c.call.args[0].value) if len(c.call.args) == 1 else None
        if name is None or "." in name or c.call.args[0].keyword is not None or c.call.args[0].star:
            return NoFix("the stage's lists that line up collect expressions, not plain columns, to sort as one row")
        names += [name] if name not in names else []
    row, imports = column_function(call.call, "struct", [string(n) for n in names])
    collected, more = column_function(call.call, call.function, [row])
    ordered, sort_imports = column_function(call.call, "array_sort", [collected])
    own = column_name(call.call.args[0].value)
    values = cst.Call(func=cst.Attribute(value=ordered, attr=cst.Name("getField")), args=[cst.Arg(string(own))])
    # The struct is never null, so the nulls collect_list skips come back unless dropped again.
    replacement, compact_imports = column_function(call.call, "array_compact", [values])
    what = (
        f"`{call.function}({own})` → `{own}` of the rows sorted by ({', '.join(names)}), nulls left out as "
        "before: no order to read, and the stage's lists still line up"
    )
    return Fix(
        UNSAFE,
        what + ", one of the answers the job could already give",
        ((call.call, replacement),),
        imports + more + sort_imports + compact_imports,
    )


def _ignores_nulls_at_most(call: cst.Call) -> bool:
    """`first(x)` or `first(x, ignorenulls=True)`: `min(x)` is one of the answers of either."""
    rest = call.args[1:]
    if call.args[0].keyword is not None or call.args[0].star:
        return False
    return (
        all(
            (a.keyword is None or a.keyword.value == "ignorenulls")
            and isinstance(a.value, cst.Name)
            and a.value.value == "True"
            for a in rest
        )
        and len(rest) <= 1
    )


def _ordered_aggregate(call: ColumnCall, keys: tuple[str, ...], descending: bool = False):
    """`descending`: every sort column runs from high to low (nulls last, where a struct holding
    a null sorts first: `max` picks the rows a descending sort puts first)."""
    value = call.call.args[0].value
    name = column_name(value) or _frame_column(value)
    if name is None or (descending and call.function in _LISTS):
        return None
    # A value that is a sort column already ends nothing: a second field of that name would make
    # `getField` ambiguous (Spark rejects the query), and ties on the keys are ties on the value.
    fields = [*(string(k) for k in keys), *([] if name in keys else [value.deep_clone()])]
    struct, imports = column_function(call.call, "struct", fields)
    shown = ", ".join(keys if name in keys else (*keys, name))
    if call.function in _FIRST | _LAST:
        # min/max of struct(order, value), then the value: what min_by/max_by over that struct
        # would give, measured 1.3x faster on Spark 4.3 (bench/fix_overhead.py).
        chooser = "min" if (call.function in _FIRST) != descending else "max"
        extreme, more = column_function(call.call, chooser, [struct])
        replacement = cst.Call(
            func=cst.Attribute(value=extreme, attr=cst.Name("getField")), args=[cst.Arg(string(name))]
        )
        what = f"`{call.function}` → `{chooser}` of `struct({shown})`"
        return replacement, imports + more, what
    if call.function in _LISTS:
        collected, more = column_function(call.call, "collect_list", [struct])
        ordered, sort_imports = column_function(call.call, "array_sort", [collected])
        values = cst.Call(func=cst.Attribute(value=ordered, attr=cst.Name("getField")), args=[cst.Arg(string(name))])
        # The struct is never null, so a null value would be kept where collect_list skips it.
        replacement, compact_imports = column_function(call.call, "array_compact", [values])
        what = f"`{call.function}` → `array_sort` of `struct({shown})`, nulls left out as before"
        return replacement, imports + more + sort_imports + compact_imports, what
    return None


def _dropped_sort(graph: StageGraph, sort: StageNode, node: StageNode) -> tuple[tuple, str]:
    """(replacements, words for the description) that remove the sort: once the aggregate reads
    the sort columns, it is work the shuffle throws away. A variable it leaves naming another
    (`ordered = views`) goes too, where nothing else reads it (edits/alias.py)."""
    if sort.call is None or not _sort_only_feeds(graph, sort, node):
        return (), ""
    gone = f"; the `{sort.method}` above is removed (the shuffle discarded its order)"
    receiver = receiver_of(sort.call)
    alias = alias_removal(graph.module, sort.call, receiver) if receiver is not None else None
    if alias is None:
        return ((sort.call, drop_call),), gone
    statement = alias[0][0].body[0]
    name, aliased = statement.targets[0].target.value, receiver.value
    if name == aliased:
        return alias, gone + f", and so is the `{name} = {aliased}` it would leave"
    return alias, gone + f", and so is `{name}`, which only renamed `{aliased}`"


def _sort_only_feeds(graph: StageGraph, sort: StageNode, node: StageNode) -> bool:
    """Nothing but this one order-dependent aggregate reads the sorted rows."""
    if sum(_order_dependent(c) for c in node.columns.calls) != 1:
        return False
    for upstream in graph.upstream(node):
        if len(graph.consumers(upstream)) != 1:
            return False
        if upstream is sort:
            return True
    return False


def _frame_column(value: cst.BaseExpression) -> str | None:
    """`df.text` or `df["text"]`: a DataFrame's column, named in the struct as `text`."""
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
        return value.attr.value
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and len(value.slice) == 1:
        index = value.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            name = index.value.evaluated_value
            return name if isinstance(name, str) and name.isidentifier() else None
    return None


_SORT_UNREADABLE = NoFix(
    "the sort orders by an expression, in mixed directions or with its nulls placed explicitly: "
    "no struct of its columns gives that order (use `min_by`/`max_by` on that expression)"
)


def _direction(sort: StageNode) -> str | None:
    """ "asc" or "desc" when every argument of the sort is a plain column (`"ts"`, `col("ts")`)
    running that way (`col("ts").desc()`, `F.desc("ts")`) with the default null placement, and
    they are the sort's keys; None for expressions (`length("name")` orders otherwise than
    `name`), a mix, `ascending=`, or nulls placed explicitly."""
    if sort.call is None or any(a.keyword is not None or a.star for a in sort.call.args):
        return None
    directions, names = set(), []
    for arg in sort.call.args:
        value = arg.value
        elements = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
        for element in elements:
            direction, column = "asc", element
            if isinstance(element, cst.Call) and isinstance(element.func, cst.Attribute) and not element.args:
                if element.func.attr.value in ("desc", "asc"):  # col("ts").desc()
                    direction, column = element.func.attr.value, element.func.value
            elif isinstance(element, cst.Call) and len(element.args) == 1:
                func = element.func
                named = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
                if named in ("desc", "asc"):  # F.desc("ts")
                    direction, column = named, element.args[0].value
            names.append(column_name(column) or _frame_column(column))
            directions.add(direction)
    if None in names or tuple(names) != tuple(sort.keys) or len(directions) != 1:
        return None
    return directions.pop()


def _extreme_of_the_sort_column(
    call: ColumnCall, sort: StageNode, descending: bool, dropped: tuple, gone: str
) -> Fix | None:
    """`first(x, True)` / `last(x, True)` over rows sorted by x first: the first non-null x in
    that order is its smallest (ascending) or largest (descending): `min(x)` / `max(x)`."""
    value = call.call.args[0].value
    if (
        call.function not in _FIRST | _LAST
        or not _ignores_nulls_at_most(call.call)
        or column_name(value) != sort.keys[0]
    ):
        return None
    chooser = "min" if (call.function in _FIRST) != descending else "max"
    replacement, imports = column_function(call.call, chooser, [value.deep_clone()])
    what = f"`{call.function}` ignoring nulls after a sort by `{sort.keys[0]}` → `{chooser}({sort.keys[0]})`"
    return Fix(SAFE, what + gone, ((call.call, replacement), *dropped), imports)


_PLACED_NULLS = {
    "asc_nulls_first": (False, True),
    "asc_nulls_last": (False, False),
    "desc_nulls_first": (True, True),
    "desc_nulls_last": (True, False),
}


def _extreme_past_placed_nulls(graph: StageGraph, node: StageNode, call: ColumnCall, sort: StageNode) -> Fix | None:
    """`first(x)` after a sort by x alone with its nulls placed (`col("x").asc_nulls_last()`):
    the first row holds the smallest x, or null only when every x is, which is `min(x)`; the
    same for `last` with the nulls first, and for either ignoring nulls. Not where the picked end
    holds the nulls (the answer is null as soon as one x is)."""
    placed = _nulls_placed(sort)
    if placed is None or call.call is None or not call.call.args or not sort_reaches(graph, sort, node):
        return None
    descending, nulls_first = placed
    value = call.call.args[0].value
    if (
        call.function not in _FIRST | _LAST
        or not _ignores_nulls_at_most(call.call)
        or column_name(value) != sort.keys[0]
    ):
        return None
    front = call.function in _FIRST
    if len(call.call.args) == 1 and front == nulls_first:
        return None
    dropped, gone = _dropped_sort(graph, sort, node)
    chooser = "min" if front != descending else "max"
    replacement, imports = column_function(call.call, chooser, [value.deep_clone()])
    what = f"`{call.function}` after a sort by `{sort.keys[0]}` with its nulls placed → `{chooser}({sort.keys[0]})`"
    return Fix(SAFE, what + gone, ((call.call, replacement), *dropped), imports)


def _nulls_placed(sort: StageNode) -> tuple[bool, bool] | None:
    """(descending, nulls first) for a sort by one plain column with its nulls placed
    (`col("x").asc_nulls_last()`, `F.desc_nulls_first("x")`), else None."""
    if sort.call is None or len(sort.call.args) != 1 or len(sort.keys) != 1:
        return None
    arg = sort.call.args[0]
    element = arg.value
    if arg.keyword is not None or arg.star or not isinstance(element, cst.Call):
        return None
    func = element.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    if name not in _PLACED_NULLS:
        return None
    if isinstance(func, cst.Attribute) and not element.args:
        column = func.value  # col("x").asc_nulls_last()
    elif len(element.args) == 1 and element.args[0].keyword is None:
        column = element.args[0].value  # F.asc_nulls_last("x")
    else:
        return None
    if (column_name(column) or _frame_column(column)) != sort.keys[0]:
        return None
    return _PLACED_NULLS[name]


def _order_dependent(call: ColumnCall) -> bool:
    if call.spec is None or not call.spec.order_sensitive or call.window is not None:
        return False
    from sparkpar_lint.catalogue import load_catalogue

    functions = load_catalogue().functions
    return not any(functions[name].order_normalizing for name in call.enclosing if name in functions)


def _order_harmless(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    if _harmless_here(graph, node, call):
        return True
    # A helper analysed on its own sees less than its call sites: let them decide.
    return holds_in_wider_contexts(graph, node, lambda other: _harmless_here(graph, other, _same_call(other, call)))


def _same_call(node: StageNode, call: ColumnCall) -> ColumnCall:
    return next((c for c in node.columns.calls if c.call is call.call), call)


def _harmless_here(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    """The arrival order cannot change what anyone sees: every row of a group holds the same value
    (`first` of a key, of a column derived from the keys or joined in on them, or groups of one
    row), or the collected list only reaches order-free consumers (`array_contains`, `size`, ...)."""
    if call.call is None or call.from_sql:
        return False
    grouping = graph.input_of(node)
    if node.receiver != "GroupedData" or grouping is None or not grouping.keys:
        return False
    source = graph.input_of(grouping)
    if call.function in _FIRST | _LAST:
        arguments = [a.value for a in call.call.args if a.keyword is None]
        column = literal_names(arguments[0]) if arguments else None
        if column and len(column) == 1 and source is not None:
            return constant_within(graph, source, grouping.keys, column[0]) is not None
        return False
    if call.function in _LISTS:
        # Passed straight to a UDF that only counts, sums or sets the list.
        wrapper = next(
            (
                c
                for c in node.columns.calls
                if c.udf is not None and c.call is not None and any(a.value is call.call for a in c.call.args)
            ),
            None,
        )
        if wrapper is not None:
            position = next(i for i, a in enumerate(wrapper.call.args) if a.value is call.call)
            return wrapper.call.args[position].keyword is None and order_free_udf(wrapper.udf.node, position)
        if call.enclosing:
            return False
        alias = aggregate_alias(node, call.call)
        return alias is not None and order_never_observed(graph, node, alias)
    return False


def _discarded_sort(graph: StageGraph, node: StageNode) -> StageNode | None:
    """The nearest upstream sort whose order a shuffle between it and `node` throws away."""
    for upstream in graph.upstream(node):
        if upstream.order_effect in ("establishes-total", "sorts-within-partitions", "establishes-per-key"):
            return upstream
    return None
