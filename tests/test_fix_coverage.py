"""Findings with no order anywhere to read (a helper's DataFrame parameter, no sort, no source)
still get an unsafe fix: one of the answers the job can already give, the same under every
partitioning. Each fix parses, silences its rule, and a second run changes nothing."""

from __future__ import annotations

import ast

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

CASES = {
    "SPX101-first-in-helper": (
        "SPX101",
        "from pyspark.sql.functions import count, first\n"
        "\n"
        "def summarise(issues):\n"
        '    return issues.groupBy("dataset", "issue_type").agg(\n'
        '        count("*").alias("count"),\n'
        '        first("severity").alias("severity"),  # same for the whole group\n'
        "    )\n",
        '        F.min("severity").alias("severity"),  # same for the whole group\n',
    ),
    "SPX101-collect-list-in-helper": (
        "SPX101",
        "from pyspark.sql import functions as F\n"
        "\n"
        "def actions(clicks):\n"
        '    return clicks.groupBy("session").agg(F.collect_list("action").alias("actions"))\n',
        '    return clicks.groupBy("session").agg(F.array_sort(F.collect_list("action")).alias("actions"))\n',
    ),
    "SPX102-dedup-in-helper": (
        "SPX102",
        "from pyspark.sql import DataFrame\n"
        "\n"
        "def one_per_key(df: DataFrame) -> DataFrame:\n"
        '    return df.dropDuplicates(["key"])\n',
        '                Window.partitionBy("key").orderBy(\n'
        "                    F.to_json(\n"
        '                        F.struct("*"),\n'
        "                        {\n"
        '                            "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",\n',
    ),
    "SPX104-window-built-in-another-statement": (
        "SPX104",
        "from pyspark.sql import Window, functions as F\n"
        "\n"
        'by_session = Window.partitionBy("session")\n'
        "\n"
        "def entry(views):\n"
        '    return views.withColumn("entry_page", F.first("page").over(by_session))\n',
        "by_session = (\n"
        '    Window.partitionBy("session")\n'
        "    .orderBy(\n"
        "        F.to_json(\n"
        '            F.struct("*"),\n',
    ),
    "SPX104-constant-order-dedup-backslash-chain": (
        "SPX104",
        "from pyspark.sql import DataFrame, Window\n"
        "from pyspark.sql.functions import col, lit, row_number\n"
        "\n"
        "def keep_one(spark, rows: DataFrame) -> DataFrame:\n"
        "    return rows\\\n"
        '        .withColumn("rn", row_number().over(Window.partitionBy("part_no").orderBy(lit(1))))\\\n'
        '        .filter(col("rn") == lit(1))\\\n'
        '        .drop("rn")  # one row per part\n',
        '                Window.partitionBy("part_no").orderBy(\n'
        "                    lit(1),\n"
        "                    to_json(\n"
        '                        struct("*"),\n',
    ),
    "SPX103-grouped-values-listed": (
        "SPX103",
        "def cities(spark):\n"
        '    pairs = spark.sparkContext.textFile("c").map(lambda line: (line[:2], line))\n'
        "    return pairs.groupByKey().mapValues(lambda values: list(values)).collect()\n",
        "    return pairs.groupByKey().mapValues(lambda values: sorted(values, key=repr)).collect()\n",
    ),
    "SPX103-pandas-group-with-no-time-column": (
        "SPX103",
        "def carry_forward(pdf):\n"
        "    # the last known level, row after row\n"
        '    pdf["level"] = pdf["level"].ffill()\n'
        "    return pdf\n"
        "\n"
        "def levels(tanks):\n"
        '    return tanks.groupBy("tank").applyInPandas(carry_forward, schema=tanks.schema)\n',
        "    pdf = pdf.sort_values(list(pdf.columns), ignore_index=True)\n",
    ),
    "SPX103-grouped-rows-with-no-time-column": (
        "SPX103",
        "def chain(rows):\n"
        "    out, prev = [], None\n"
        "    for row in rows:\n"
        "        out.append((prev, row.step))\n"
        "        prev = row.step\n"
        "    return out\n"
        "\n"
        "def steps(runs):\n"
        "    return runs.rdd.map(lambda r: (r.run, r)).groupByKey().mapValues(chain)\n",
        "    rows = sorted(rows, key=repr)\n",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_no_order_to_read_still_gets_a_deterministic_fix(case: str):
    rule, code, expected_line = CASES[case]
    findings = [f for f in analyze("job.py", code) if f.rule_id == rule]
    assert findings and all(f.fix is not None and f.fix.safety == "unsafe" for f in findings)
    assert not fix_source("job.py", code, {rule}).changed  # unsafe: not applied by default
    fixed = fix_source("job.py", code, {rule}, unsafe=True).fixed
    compile(fixed, "job.py", "exec")
    assert expected_line in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == rule] == []
    assert fix_source("job.py", fixed, {rule}, unsafe=True).fixed == fixed
    assert "import min" not in fixed and "import max" not in fixed


def test_a_global_first_and_an_ignorenulls_first_get_min():
    code = (
        "from pyspark.sql.functions import first\n"
        "def report(df):\n"
        '    df.select(first("department").alias("first_department")).show()\n'
        '    return df.groupBy("org").agg(first("name", ignorenulls=True).alias("name"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert 'df.select(F.min("department").alias("first_department")).show()' in fixed
    assert 'agg(F.min("name").alias("name"))' in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []


def test_sql_with_no_order_gets_one_of_its_answers():
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'spark.read.parquet("t").createOrReplaceTempView("tab")\n'
        'pages = spark.sql("""\n'
        "    SELECT userid, collect_list(page) AS pages\n"
        "    FROM tab\n"
        "    GROUP BY userid\n"
        '""")\n'
        'pages.write.parquet("out")\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert "    SELECT userid, array_sort(collect_list(page)) AS pages\n" in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed
    # `first(ref)` is the ref of the row whose page leads the list: sorting the list and taking
    # `min(ref)` apart would break that; a shared order is left to the author.
    both = code.replace("collect_list(page) AS pages", "collect_list(page) AS pages, first(ref) AS ref")
    assert fix_source("job.py", both, {"SPX101"}, unsafe=True).fixed == both
    findings = [f for f in analyze("job.py", both) if f.rule_id == "SPX101"]
    assert len(findings) == 2 and all("one arrival order together" in f.no_fix.reason for f in findings)


def test_a_pivot_gets_no_min_fix():
    # Pivot cells often hold maps, which `min` cannot order: Spark would reject the fixed query
    # (seen in koalas' DataFrame.transpose by the ecosystem check).
    code = (
        "from pyspark.sql import functions as F\n"
        "def cells(df):\n"
        '    return df.groupBy("g").pivot("c").agg(F.first("v"))\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX101"]
    assert findings and all(f.fix is None for f in findings)


def test_firsts_of_one_stage_still_come_from_one_row():
    # `first("food")` and `first("price")` read one arrival order: both come from one row. Two
    # independent `min`s could pair a food with another row's price, which the job never gives.
    code = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "def latest(df):\n"
        '    return df.groupBy("name").agg(F.first("food").alias("food"), F.first("price").alias("price"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert 'F.min(F.struct("food", "price")).getField("food").alias("food"),' in fixed
    assert 'F.min(F.struct("food", "price")).getField("price").alias("price"),' in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed


def test_lists_of_one_stage_that_line_up_still_line_up():
    # Two `collect_list`s of one stage read one arrival order: item i of one list belongs with item
    # i of the other (when neither is null). Sorting each on its own would pair values of different
    # rows; one sorted list of structs keeps them together, nulls still left out per list.
    code = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "def baskets(df):\n"
        "    return (\n"
        '        df.groupBy("name")  # one row per customer\n'
        '        .agg(F.collect_list("food").alias("foods"), F.collect_list("price").alias("prices"))\n'
        "    )\n"
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    compile(fixed, "job.py", "exec")
    for name in ("food", "price"):
        assert f'F.array_sort(F.collect_list(F.struct("food", "price"))).getField("{name}")' in fixed
    assert fixed.count("F.array_compact(") == 2 and "# one row per customer\n" in fixed
    assert max(len(line) for line in fixed.splitlines()) <= 100
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed


def test_a_list_and_a_first_of_one_stage_are_left_with_a_reason():
    code = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "def baskets(df):\n"
        '    return df.groupBy("name").agg(F.collect_list("food"), F.first("price"))\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX101"]
    assert len(findings) == 2 and all(f.fix is None for f in findings)
    assert all("several order-dependent aggregates" in f.no_fix.reason for f in findings)


def test_an_id_over_many_rows_with_no_key_is_hashed_with_its_copy_number():
    code = (
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'products = spark.read.parquet("silver/products")\n'
        'dim = products.withColumn("product_key", F.monotonically_increasing_id())\n'
        'dim.write.parquet("gold/dim_product")\n'
    )
    outcome = fix_source("job.py", code, {"SPX105"}, unsafe=True)
    assert [f.rule_id for f in outcome.applied] == ["SPX105"]
    assert (
        'F.xxhash64("*", F.row_number().over(Window.partitionBy(F.struct("*")).orderBy(F.struct("*")))),\n)\n'
        in outcome.fixed
    )
    # On a stream no window can number the copies: left, saying why.
    streamed = code.replace("spark.read.parquet", "spark.readStream.parquet").replace(
        'dim.write.parquet("gold/dim_product")', 'dim.writeStream.format("parquet").start("gold/dim_product")'
    )
    findings = [f for f in analyze("job.py", streamed) if f.rule_id == "SPX105"]
    assert findings and all(f.fix is None for f in findings)
    assert all("come from a stream" in f.no_fix.reason for f in findings)


_STAGED_CUSTOMERS = (
    "from pyspark.sql import SparkSession\n"
    "from pyspark.sql import functions as F\n"
    "\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    "customers = spark.createDataFrame(\n"
    '    [(1, "Alice", "Gold"), (2, "Bob", "Silver"), (2, "Bob", "Silver")],\n'
    '    "customer_id int, name string, tier string",\n'
    ")\n"
)


def test_an_id_over_a_few_literal_rows_is_numbered_by_their_content():
    code = _STAGED_CUSTOMERS + (
        "dim = (\n"
        "    customers  # the staged rows\n"
        '    .withColumn("customer_sk", F.monotonically_increasing_id())  # surrogate key\n'
        '    .withColumn("is_current", F.lit(True))\n'
        ")\n"
        'dim.write.saveAsTable("dim_customer")\n'
    )
    outcome = fix_source("job.py", code, {"SPX105"}, unsafe=True)
    fixed = outcome.fixed
    assert [f.rule_id for f in outcome.applied] == ["SPX105"]
    assert "from pyspark.sql import SparkSession, Window\n" in fixed
    assert (
        "    customers  # the staged rows\n"
        "    .withColumn(\n"
        '        "customer_sk",\n'
        '        F.row_number().over(Window.orderBy("customer_id", "name", "tier")),\n'
        "    )  # surrogate key\n"
        '    .withColumn("is_current", F.lit(True))\n'
    ) in fixed
    assert max(len(line) for line in fixed.splitlines()) <= 100
    # The numbering window is over a few literal rows: SPX401 has nothing to say either.
    assert [f.rule_id for f in analyze("job.py", fixed) if f.rule_id in ("SPX105", "SPX401")] == []
    assert fix_source("job.py", fixed, {"SPX105"}, unsafe=True).fixed == fixed


def test_an_id_over_untyped_literal_rows_is_numbered_by_the_row_as_json():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import *\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'staged = spark.createDataFrame([(1, "Alice"), (2, "Bob")], ["CustomerID", "Name"])\n'
        "dim = staged.withColumn(\n"
        '    "CustomerSK", monotonically_increasing_id()\n'
        ").withColumn(\n"
        '    "IsCurrent", lit(True)\n'
        ")\n"
    )
    fixed = fix_source("job.py", code, {"SPX105"}, unsafe=True).fixed
    assert (
        '    "CustomerSK", F.row_number().over(\n'
        "        Window.orderBy(\n"
        "            F.to_json(\n"
        '                F.struct("*"),\n'
        "                {\n"
        '                    "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",\n'
    ) in fixed
    assert "from pyspark.sql import SparkSession, Window, functions as F\n" in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id in ("SPX105", "SPX401")] == []


def test_a_whole_row_dedup_of_named_columns_identifies_the_rows():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import *\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'course_dim = spark.table("silver.students").select(\n'
        '    "course",\n'
        '    "year",  # academic year\n'
        ").dropDuplicates() \\\n"
        ' .withColumn("course_sk", monotonically_increasing_id())\n'
        'course_dim.write.saveAsTable("gold.dim_course")\n'
    )
    fixed = fix_source("job.py", code, {"SPX105"}, unsafe=True).fixed
    assert ').dropDuplicates() \\\n .withColumn("course_sk", F.xxhash64("course", "year"))\n' in fixed
    assert '    "year",  # academic year\n' in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX105"] == []


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        # A stream: no window numbers its rows.
        ('spark.readStream.table("staged")', "they come from a stream or from outside this module"),
        # Unshuffled literal rows whose ids a later sort reads as their order.
        (
            'spark.createDataFrame([(1, "a")], "n int, s string")',
            "the ids follow the source's row order and a later stage sorts",
        ),
    ],
)
def test_ids_that_content_cannot_number_say_why(rows: str, why: str):
    code = (
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        f"staged = {rows}\n"
        'numbered = staged.withColumn("line_id", F.monotonically_increasing_id())\n'
        'numbered.orderBy("line_id").write.saveAsTable("lines")\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX105"]
    assert findings and all(f.fix is None and why in f.no_fix.reason for f in findings)


def test_a_streaming_deduplication_says_why_it_is_left():
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'pays = spark.readStream.table("payments").withWatermark("event_time", "30 minutes")\n'
        'booked = pays.dropDuplicatesWithinWatermark(["payment_id"])\n'
        'booked.writeStream.toTable("booked")\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX102"]
    assert findings and all(f.fix is None for f in findings)
    assert all(f.no_fix.reason.startswith("a streaming deduplication keeps the first copy") for f in findings)


def test_a_partition_id_used_as_a_key_says_why_it_is_left():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql import functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'readings = spark.read.parquet("readings")\n'
        'batched = readings.withColumn("batch", F.spark_partition_id())\n'
        "def label(pdf):\n"
        "    return pdf.assign(label=range(len(pdf)))\n"
        'labelled = batched.groupBy("batch").applyInPandas(label, "sensor string, label long")\n'
        'labelled.write.parquet("out")\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX105"]
    assert findings and all(f.fix is None for f in findings)
    assert all(f.no_fix.reason.startswith("`spark_partition_id()` batches rows for a function") for f in findings)
    # Joined on rather than handed to a function: the generic reason.
    joined = code.replace(
        'labelled = batched.groupBy("batch").applyInPandas(label, "sensor string, label long")\n',
        'labelled = batched.join(batched.groupBy("batch").count(), "batch")\n',
    )
    findings = [f for f in analyze("job.py", joined) if f.rule_id == "SPX105"]
    assert findings and all(
        f.no_fix.reason.startswith("`spark_partition_id()` says where a row sits") for f in findings
    )


def test_lists_in_expr_strings_that_line_up_share_one_struct():
    code = (
        "from pyspark.sql.functions import expr\n"
        "\n"
        "def baskets(df):\n"
        "    return df.groupBy('name').agg(expr('collect_list(food) as food'), expr('collect_list(price) as price'))\n"
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    compile(fixed, "job.py", "exec")
    assert "expr('array_compact(array_sort(collect_list(struct(food, price))).food) as food')" in fixed
    assert "expr('array_compact(array_sort(collect_list(struct(food, price))).price) as price')" in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed


def test_lists_split_between_python_and_sql_text_are_left():
    # No one rewrite reaches both: fixing each alone would sort them apart.
    code = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "def baskets(df):\n"
        "    return df.groupBy('name').agg(F.collect_list('food'), F.expr('collect_list(price)'))\n"
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX101"]
    assert len(findings) == 2 and all(f.fix is None for f in findings)
    assert all("one arrival order together" in f.no_fix.reason for f in findings)


def test_lists_in_a_query_with_escapes_are_fixed_between_them():
    code = (
        "def statuses(spark, in0):\n"
        '    in0.createOrReplaceTempView("in0")\n'
        "    return spark.sql(\n"
        '        "SELECT \\r\\n    id, \\r\\n    CAST(collect_list(all stat) AS string) AS s,\\r\\n"\n'
        '        "    CAST(collect_list(all txt) AS string) AS t\\r\\nFROM in0 \\r\\nGROUP BY id"\n'
        "    )\n"
    )
    outcome = fix_source("job.py", code, {"SPX101"}, unsafe=True)
    fixed = outcome.fixed
    assert [f.rule_id for f in outcome.applied] == ["SPX101"]  # one fix sorts both lists together
    lists = "array_sort(collect_list(struct(stat, txt)))"
    # The first literal would pass 100 characters: each query line becomes a literal of its own.
    assert (
        '        "SELECT \\r\\n"\n'
        '        "    id, \\r\\n"\n'
        f'        "    CAST(array_compact({lists}.stat) AS string) AS s,\\r\\n"\n'
        f'        "    CAST(array_compact({lists}.txt) AS string) AS t\\r\\n"\n'
        '        "FROM in0 \\r\\n"\n'
        '        "GROUP BY id"\n'
    ) in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed
    # The query it spells is the one the fix writes where the SQL has no escapes (proved on Spark).
    query = _sql_argument(code).replace("\r\n", "\n")
    plain = f'def statuses(spark, in0):\n    return spark.sql("""{query}""")\n'
    written = fix_source("job.py", plain, {"SPX101"}, unsafe=True).fixed
    assert _sql_argument(fixed).replace("\r\n", "\n") == _sql_argument(written) != query


def _sql_argument(code: str) -> str:
    call = next(
        n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "sql"
    )
    return ast.literal_eval(call.args[0])


def test_random_draws_with_no_row_hash_say_why_they_are_left():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql import functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "def split(labelled):\n"
        "    train, test = labelled.randomSplit([0.8, 0.2])\n"
        '    train.saveAsTextFile("train")\n'
        'salted = spark.read.parquet("t").withColumn("_salt", (F.randn(seed=7) * 8).cast("int"))\n'
        'salted.groupBy("key", "_salt").count().write.parquet("counts")\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX105"]
    assert len(findings) == 2 and all(f.fix is None for f in findings)
    reasons = sorted(f.no_fix.reason for f in findings)
    assert reasons[0].startswith("`randn` is not derived from the row")
    assert reasons[1].startswith("the split rows come from outside this module")


def test_a_first_ignoring_nulls_over_its_own_descending_sort_becomes_max():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import col, first, lower, trim\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'people_df = spark.read.parquet("people")\n'
        "# Sort weightInLbs column in desc order then find records\n"
        "people_df\\\n"
        "    .sort(col('weightInLbs').desc())\\\n"
        "    .groupBy(trim(lower(col('firstName'))))\\\n"
        "    .agg(first('weightInLbs', True))\\\n"
        "    .show(truncate=False)\n"
        "print(max(1, 2))\n"
    )
    outcome = fix_source("job.py", code, {"SPX101"})  # safe: the sequential answer itself
    fixed = outcome.fixed
    assert [f.rule_id for f in outcome.applied] == ["SPX101"]
    assert (
        "people_df\\\n"
        "    .groupBy(trim(lower(col('firstName'))))\\\n"
        "    .agg(F.max('weightInLbs').alias('first(weightInLbs)'))\\\n"
        "    .show(truncate=False)\n"
    ) in fixed
    # `max` stays Python's; the replaced `first` import goes, `col` stays.
    assert "from pyspark.sql.functions import col, lower, trim\n" in fixed and "print(max(1, 2))\n" in fixed
    assert "# Sort weightInLbs column in desc order then find records\n" in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}).fixed == fixed


def test_a_sort_by_an_expression_with_nulls_placed_or_mixed_directions_is_left():
    # `length(name)` orders otherwise than `name`: a struct of the sort's columns would not do.
    for sort in (
        'F.length("name")',
        'F.desc(F.length("name"))',
        'F.col("ts").desc_nulls_first()',
        '"day", F.col("ts").desc()',
    ):
        code = (
            "from pyspark.sql import SparkSession, functions as F\n"
            "spark = SparkSession.builder.getOrCreate()\n"
            f'rows = spark.read.parquet("prices").orderBy({sort})\n'
            'rows.groupBy("item").agg(F.first("price").alias("price")).show()\n'
        )
        findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX101"]
        assert findings and all(f.fix is None for f in findings), sort
        assert all(f.no_fix.reason.startswith("the sort orders by an expression") for f in findings), sort


def test_a_list_of_a_frame_attribute_column_is_numbered_at_its_source():
    code = (
        "from pyspark.sql import SparkSession\n"
        "import pyspark.sql.functions as f\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'lines = spark.createDataFrame([("a.txt", "hello"), ("a.txt", "world")], ["filename", "text"])\n'
        "# Concat all text for the same file\n"
        'per_file = lines.groupby(lines.filename).agg(f.concat_ws(" ", f.collect_list(lines["text"])).alias("text"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert 'lines.withColumn("_sparkpar_seq", f.monotonically_increasing_id())' in fixed
    assert 'f.array_sort(f.collect_list(f.struct("_sparkpar_seq", lines["text"]))).getField("text")' in fixed
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed


def test_ids_over_sorted_rows_are_numbered_only_where_one_task_may_number_them():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql import functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'events = spark.read.parquet("events").orderBy("ts", "seq")\n'
        'numbered = events.withColumn("event_id", F.monotonically_increasing_id())\n'
        'numbered.join(spark.read.parquet("pages"), "event_id").write.parquet("out")\n'
    )
    # Many rows: row_number over the sort would be one task, a new SPX401 finding. Left, saying so.
    (finding,) = [f for f in analyze("job.py", code) if f.rule_id == "SPX105"]
    assert finding.fix is None and "(SPX401)" in finding.no_fix.reason
    assert not fix_source("job.py", code, {"SPX105"}, unsafe=True).changed
    # A small limit first: numbered in the sort's order, and SPX401 has nothing to say.
    few = code.replace('.orderBy("ts", "seq")', '.limit(1000).orderBy("ts", "seq")')
    fixed = fix_source("job.py", few, {"SPX105"}, unsafe=True).fixed
    assert 'F.row_number().over(Window.orderBy("ts", "seq"))' in fixed
    assert [f.rule_id for f in analyze("job.py", fixed) if f.rule_id in ("SPX105", "SPX401")] == []


@pytest.mark.parametrize(
    ("body", "fixed"),
    [
        ("    if subset:\n        return df.dropDuplicates(subset)\n    return df\n", True),
        ("    if keys:\n        return df.dropDuplicates(subset=keys)\n    return df\n", True),
        # Rebound under the check, or checked in another name: it may be empty or None there.
        ("    if subset:\n        subset = None\n        return df.dropDuplicates(subset)\n    return df\n", False),
        ("    if keys:\n        return df.dropDuplicates(subset)\n    return df\n", False),
        ("    return df if subset else df.dropDuplicates(subset)\n", False),
    ],
    ids=["if-block", "keyword", "rebound", "other-name", "else-branch"],
)
def test_a_subset_parameter_is_partitioned_by_only_where_the_code_checked_it(body: str, fixed: bool):
    code = "from pyspark.sql import functions as F\n\n\ndef dedup(df, subset=None, keys=()):\n" + body
    (finding,) = [f for f in analyze("job.py", code) if f.rule_id == "SPX102"]
    outcome = fix_source("job.py", code, {"SPX102"}, unsafe=True)
    assert outcome.changed is fixed
    if fixed:
        assert "Window.partitionBy(*" in outcome.fixed and "dropDuplicates(" not in outcome.fixed
        assert [f for f in analyze("job.py", outcome.fixed) if f.rule_id == "SPX102"] == []
    else:
        assert "nor a name the code checks is non-empty" in finding.no_fix.reason


@pytest.mark.parametrize(
    ("query", "fixed"),
    [
        ("SELECT offer_id, price FROM offers ORDER BY price, rand(7) LIMIT 5", "ORDER BY price, offer_id LIMIT 5"),
        ("SELECT shop, offer_id, price FROM offers ORDER BY price DESC, RAND() LIMIT 3", "DESC, shop, offer_id LIMIT"),
        # Nothing before the draw, a row it cannot list, or a draw not last: no columns to say.
        ("SELECT offer_id, price FROM offers ORDER BY rand(7) LIMIT 5", None),
        ("SELECT * FROM offers ORDER BY price, rand(7) LIMIT 5", None),
        ("SELECT offer_id, price * 2 AS doubled FROM offers ORDER BY price, rand(7) LIMIT 5", None),
        ("SELECT offer_id, price FROM offers ORDER BY price, rand(7), offer_id LIMIT 5", None),
    ],
    ids=["ties", "desc-and-three-columns", "only-key", "star", "expression", "not-last"],
)
def test_a_random_draw_breaking_sql_sort_ties_becomes_the_selected_columns(query: str, fixed: str | None):
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        f'cheapest = spark.sql("{query}")\n'
        'cheapest.write.parquet("out")\n'
    )
    (finding,) = [f for f in analyze("job.py", code) if f.rule_id == "SPX105"]
    outcome = fix_source("job.py", code, {"SPX105"}, unsafe=True)
    if fixed is None:
        assert not outcome.changed and finding.no_fix
        return
    assert fixed in outcome.fixed and "rand" not in outcome.fixed.lower().replace("random", "")
    assert [f for f in analyze("job.py", outcome.fixed) if f.rule_id == "SPX105"] == []
    assert not fix_source("job.py", code, {"SPX105"}).changed  # unsafe: it drops a random pick
