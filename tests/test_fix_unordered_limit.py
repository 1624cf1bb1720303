"""SPX106's deterministic pick (unsafe): with no sort to restore and no arrival order to number,
the limit gets a total order, the keys its rows are unique on or the whole row; an RDD `take`
becomes `takeOrdered`; SQL text gets `ORDER BY` its GROUP BY keys. Exact output for each layout
a chain is written in, comments kept, and the cases left alone with their reason."""

from __future__ import annotations

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

HEAD = "from pyspark.sql import SparkSession, functions as F\n\nspark = SparkSession.builder.getOrCreate()\n\n\n"


def _fixed(code: str, unsafe: bool = True) -> str:
    outcome = fix_source("job.py", code, {"SPX106"}, unsafe=unsafe)
    assert [f for f in analyze("job.py", outcome.fixed) if f.rule_id == "SPX106"] == [] or not outcome.changed
    return outcome.fixed


def _reason(code: str) -> str:
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX106"]
    assert len(findings) == 1
    assert findings[0].fix is None and findings[0].no_fix is not None
    return findings[0].no_fix.reason


PARENTHESISED = HEAD + (
    "def top_pages(views):\n"
    "    return (\n"
    '        views.groupBy("site", "page")  # one row per page of a site\n'
    "        # how often each was seen\n"
    '        .agg(F.count("*").alias("views"))\n'
    "        .limit(10)  # ten for the dashboard\n"
    "    )\n"
)


def test_parenthesised_chain_gets_the_grouping_keys_on_a_line_of_their_own():
    assert _fixed(PARENTHESISED) == HEAD + (
        "def top_pages(views):\n"
        "    return (\n"
        '        views.groupBy("site", "page")  # one row per page of a site\n'
        "        # how often each was seen\n"
        '        .agg(F.count("*").alias("views"))\n'
        '        .orderBy("site", "page")\n'
        "        .limit(10)  # ten for the dashboard\n"
        "    )\n"
    )


def test_the_fix_is_unsafe_and_tells_the_reviewer_it_is_a_pick():
    assert _fixed(PARENTHESISED, unsafe=False) == PARENTHESISED
    [finding] = [f for f in analyze("job.py", PARENTHESISED) if f.rule_id == "SPX106"]
    assert finding.fix.safety == "unsafe"
    assert "deterministic pick" in finding.fix.description and "order you mean" in finding.fix.description


BACKSLASH = HEAD + (
    "def top_pages(views):\n"
    '    per_page = views.groupBy("page") \\\n'
    '        .agg(F.count("*").alias("views")) \\\n'
    "        .limit(10)\n"
    "    return per_page\n"
)


def test_backslash_chain_keeps_its_continuations():
    assert _fixed(BACKSLASH) == HEAD + (
        "def top_pages(views):\n"
        '    per_page = views.groupBy("page") \\\n'
        '        .agg(F.count("*").alias("views")) \\\n'
        '        .orderBy("page") \\\n'
        "        .limit(10)\n"
        "    return per_page\n"
    )


def test_one_liner_stays_one_line():
    code = HEAD + 'def busiest(views):\n    return views.groupBy("user").count().first()  # any user\n'
    assert _fixed(code) == HEAD + (
        'def busiest(views):\n    return views.groupBy("user").count().orderBy("user").first()  # any user\n'
    )


def test_a_key_overwritten_after_the_aggregation_falls_back_to_the_whole_row():
    # Two pages can both become "home": ordering by page would leave them tied.
    code = HEAD + (
        "def top(views):\n"
        '    per_page = views.groupBy("page").count().withColumn("page", F.lit("home"))\n'
        "    return per_page.limit(3)\n"
    )
    fixed = _fixed(code)
    assert '.orderBy("page")' not in fixed
    assert '.withColumn(\n            "_sparkpar_tie",\n            F.to_json(\n                F.struct("*"),' in fixed
    assert '.orderBy("_sparkpar_tie")\n        .drop("_sparkpar_tie")\n        .limit(3)' in fixed


def test_rows_from_a_parameter_are_ordered_by_the_whole_row_through_the_names_the_module_imports():
    # `struct` and `to_json` imported by name shadow nothing here; `max` stays Python's.
    code = (
        "from pyspark.sql.functions import col\n\n\n"
        "def sample(frame, rows):\n"
        '    picked = frame.select(col("a"), col("b")).repartition(4).limit(rows)\n'
        '    picked.write.parquet("s")\n'
        "    return max(rows, 1)\n"
    )
    fixed = _fixed(code)
    assert set(fixed.splitlines()[0].split("import ")[1].split(", ")) == {"col", "struct", "to_json"}
    assert 'to_json(\n                struct("*"),' in fixed
    assert "return max(rows, 1)" in fixed


def test_a_schema_in_the_file_orders_by_a_struct_of_the_columns():
    code = HEAD + (
        "def sample(rows):\n"
        '    frame = spark.createDataFrame(rows, "user string, n int")\n'
        '    frame.repartition(3).distinct().limit(2).write.parquet("s")\n'
    )
    assert _fixed(code) == HEAD + (
        "def sample(rows):\n"
        '    frame = spark.createDataFrame(rows, "user string, n int")\n'
        '    frame.repartition(3).distinct().orderBy(F.struct("user", "n")).limit(2).write.parquet("s")\n'
    )


def test_a_stream_gets_no_fix_and_says_why():
    code = HEAD + (
        'events = spark.readStream.format("rate").load()\n'
        'events.groupBy("value").count().limit(5).writeStream.format("console").start()\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX106"]
    assert findings and all(f.fix is None and "stream" in f.no_fix.reason for f in findings)


RDD = (
    "from pyspark import SparkContext\n\n"
    "sc = SparkContext.getOrCreate()\n"
    'codes = sc.textFile("logs").map(lambda line: (line.split()[0], 1))\n'
)


def test_rdd_take_after_reduce_by_key_is_take_ordered_by_the_key_none_first():
    code = RDD + "top = codes.reduceByKey(lambda a, b: a + b).filter(lambda kv: kv[1] > 2).take(5)\n"
    assert _fixed(code) == RDD + (
        "top = (\n"
        "    codes.reduceByKey(lambda a, b: a + b)\n"
        "    .filter(lambda kv: kv[1] > 2)\n"
        "    .takeOrdered(5, key=lambda pair: (pair[0] is not None, pair[0]))\n"
        ")\n"
    )


def test_the_key_function_takes_a_name_the_module_does_not_use():
    code = RDD + "pair = 2\ncounts = codes.reduceByKey(lambda a, b: a + b)\ntop = counts.take(pair)\n"
    assert _fixed(code).endswith("top = counts.takeOrdered(pair, key=lambda kv: (kv[0] is not None, kv[0]))\n")


def test_rdd_elements_that_may_not_compare_get_no_fix():
    code = RDD + "top = codes.reduceByKey(lambda a, b: a + b).map(lambda kv: kv[1]).take(5)\n"
    assert "may not compare" in _reason(code)
    shadowed = RDD + "def range(n):\n    return [None, 1]\n\n\ntop = sc.parallelize(range(9)).repartition(3).take(2)\n"
    assert "may not compare" in _reason(shadowed)
    mixed = RDD + 'top = sc.parallelize([b"x", "y", "z"]).repartition(3).take(2)\n'
    assert "may not compare" in _reason(mixed)


def test_rdd_of_literal_strings_is_take_ordered_as_they_are():
    code = RDD + 'top = sc.parallelize(["x", "y", "z"]).repartition(3).take(2)\n'
    assert _fixed(code) == RDD + 'top = sc.parallelize(["x", "y", "z"]).repartition(3).takeOrdered(2)\n'


SQL = "from pyspark.sql import SparkSession\n\nspark = SparkSession.builder.getOrCreate()\n"


def test_sql_limit_on_its_own_line_gets_the_order_above_it_comment_kept():
    code = SQL + (
        'top = spark.sql("""\n'
        "    WITH per_page AS (SELECT site, page, count(*) AS n FROM views GROUP BY site, page)\n"
        "    SELECT site, page, n FROM per_page\n"
        "    LIMIT 10 -- for the dashboard\n"
        '""")\n'
    )
    assert _fixed(code) == SQL + (
        'top = spark.sql("""\n'
        "    WITH per_page AS (SELECT site, page, count(*) AS n FROM views GROUP BY site, page)\n"
        "    SELECT site, page, n FROM per_page\n"
        "    ORDER BY site, page\n"
        "    LIMIT 10 -- for the dashboard\n"
        '""")\n'
    )


def test_sql_key_that_is_no_plain_output_column_gets_no_fix():
    # `ORDER BY page` would read the output alias, and two pages can share a lower-case name.
    code = SQL + 'top = spark.sql("SELECT lower(page) AS page, count(*) AS n FROM views GROUP BY page LIMIT 3")\n'
    assert "no plain column" in _reason(code)
    # A key the output lacks could name a column of both joined tables.
    joined = SQL + 'top = spark.sql("SELECT count(*) AS n FROM a JOIN b ON a.id = b.id GROUP BY a.page LIMIT 3")\n'
    assert "no plain column" in _reason(joined)
    # A key computed over in an outer query is no key of the LIMIT's rows.
    outer = SQL + (
        'top = spark.sql("WITH p AS (SELECT page, count(*) AS n FROM views GROUP BY page) '
        'SELECT lower(page) AS page, n FROM p LIMIT 3")\n'
    )
    assert "unique on no columns" in _reason(outer)


DISTINCT_PICK = HEAD + (
    'def some_users(path):\n    return spark.read.parquet(path).select("user_id").distinct().limit(10)\n'
)


def test_a_pick_after_distinct_is_ordered_after_it_never_numbered_before_it():
    # A sequence number taken before `distinct()` would make every row distinct: nothing removed.
    fixed = _fixed(DISTINCT_PICK)
    assert "_sparkpar_seq" not in fixed
    assert fixed.index(".distinct()") < fixed.index(".orderBy(") < fixed.index(".limit(10)")
