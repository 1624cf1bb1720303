"""SPX101 order-dependent-aggregate: the rule, its examples and what it flags."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.edits.model import SAFE
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx101.aggregates import discarded_sort, order_dependent, order_harmless
from sparkpar_lint.rules.spx101.fix import global_fix, grouped_fix, named_as_before

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
