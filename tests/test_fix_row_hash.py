"""SPX105's row-hash fixes, exact output: a draw, a random split and ids with no key become
values hashed from the row's columns, written in the chain's own layout and import dialect."""

from __future__ import annotations

from sparkpar_lint.fixes.engine import fix_source


def _fixed(code: str) -> str:
    outcome = fix_source("job.py", code, {"SPX105"}, unsafe=True)
    assert [f.rule_id for f in outcome.applied] == ["SPX105"] * len(outcome.applied)
    return outcome.fixed


def _reasons(code: str) -> list[str]:
    outcome = fix_source("job.py", code, {"SPX105"}, unsafe=True)
    assert outcome.fixed == code
    return [f.no_fix.reason if f.no_fix else "" for f in outcome.remaining]


def test_a_draw_in_a_parenthesised_chain_keeps_its_lines_and_comments():
    code = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "\n"
        "def sample(events):\n"
        "    return (\n"
        "        events  # the raw events\n"
        '        .withColumn("r", F.rand())  # a draw per row\n'
        '        .filter("r < 0.1")\n'
        "    )\n"
    )
    assert _fixed(code) == code.replace("F.rand()", 'F.pmod(F.xxhash64("*"), 2**53) / 2**53')


def test_a_seeded_draw_as_an_operand_keeps_its_seed_and_is_bracketed():
    code = (
        "from pyspark.sql import functions as F\n"
        "def salt(df, n):\n"
        '    return df.withColumn("s", (F.rand(seed=13) * n).cast("int"))\n'
    )
    assert _fixed(code) == code.replace("F.rand(seed=13)", '(F.pmod(F.xxhash64("*", F.lit(13)), 2**53) / 2**53)')


def test_a_one_line_random_split_becomes_one_filter_a_line():
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'df = spark.read.parquet("labelled")\n'
        "train, test = df.randomSplit([8, 2])\n"
        'train.write.parquet("train")\n'
    )
    assert _fixed(code) == (
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'df = spark.read.parquet("labelled")\n'
        "train, test = [\n"
        '    df.filter(F.pmod(F.xxhash64("*"), 100) < 80),\n'
        '    df.filter(F.pmod(F.xxhash64("*"), 100) >= 80),\n'
        "]\n"
        'train.write.parquet("train")\n'
    )


def test_a_three_way_split_filters_the_middle_share_with_between():
    code = (
        "from pyspark.sql import SparkSession, functions as F\n"
        "def split(spark: SparkSession):\n"
        '    df = spark.read.csv("tweets", header=True)\n'
        "    return df.randomSplit([0.8, 0.1, 0.1])\n"
    )
    fixed = _fixed(code)
    assert '        df.filter(F.pmod(F.xxhash64("*"), 100).between(80, 89)),\n' in fixed
    assert '        df.filter(F.pmod(F.xxhash64("*"), 100) >= 90),\n    ]\n' in fixed


def test_functions_imported_by_name_next_to_builtin_use_get_bare_names():
    code = (
        "from pyspark.sql.functions import col, rand\n"
        "def noisy(df):\n"
        "    top = max(df.columns)\n"
        '    return df.withColumn("r", rand(7)).filter(col("r") < round(0.25, 2))\n'
    )
    # `rand` goes with its last use; the long line breaks one call a line.
    assert _fixed(code) == (
        "from pyspark.sql.functions import col, lit, pmod, xxhash64\n"
        "def noisy(df):\n"
        "    top = max(df.columns)\n"
        "    return (\n"
        '        df.withColumn("r", pmod(xxhash64("*", lit(7)), 2**53) / 2**53)\n'
        '        .filter(col("r") < round(0.25, 2))\n'
        "    )\n"
    )


def test_a_local_name_that_would_be_shadowed_sends_the_fix_through_an_alias():
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import rand\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "pmod = 0.25  # the share of rows kept\n"
        'spark.read.parquet("t").filter(rand() < pmod).write.parquet("s")\n'
    )
    assert _fixed(code) == (
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "pmod = 0.25  # the share of rows kept\n"
        'spark.read.parquet("t").filter((F.pmod(F.xxhash64("*"), 2**53) / 2**53) < pmod).write.parquet("s")\n'
    )


def test_ids_of_distinct_rows_become_a_hash_of_the_row():
    code = (
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'people = spark.read.parquet("p").select(F.col("pid").cast("string"), "age").dropDuplicates()\n'
        'people = people.withColumn("age_band", F.floor(F.col("age") / 10))\n'
        'dim = people.withColumn("person_sk", F.monotonically_increasing_id())\n'
        'dim.write.parquet("dim")\n'
    )
    assert _fixed(code) == code.replace("F.monotonically_increasing_id()", 'F.xxhash64("*")')


def test_ids_of_rows_with_copies_number_the_copies_in_a_backslash_chain():
    code = (
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'dim = spark.read.parquet("c") \\\n'
        '    .filter(F.col("current")) \\\n'
        '    .withColumn("customer_key", F.monotonically_increasing_id()) \\\n'
        '    .withColumn("loaded", F.lit(1))\n'
        'dim.write.parquet("dim")\n'
    )
    assert _fixed(code) == (
        "from pyspark.sql import SparkSession, Window, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'dim = spark.read.parquet("c") \\\n'
        '    .filter(F.col("current")) \\\n'
        "    .withColumn(\n"
        '        "customer_key",\n'
        "        F.xxhash64(\n"
        '            "*",\n'
        '            F.row_number().over(Window.partitionBy(F.struct("*")).orderBy(F.struct("*"))),\n'
        "        ),\n"
        "    ) \\\n"
        '    .withColumn("loaded", F.lit(1))\n'
        'dim.write.parquet("dim")\n'
    )


def test_unfixed_draws_and_splits_say_why():
    prelude = "from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\n"
    assert (
        "outside this module"
        in _reasons(prelude + 'def split(rows):\n    a, b = rows.randomSplit([0.5, 0.5])\n    a.saveAsTextFile("a")\n')[
            0
        ]
    )
    assert (
        "whole percents"
        in _reasons(
            prelude + 'rows = spark.read.parquet("t")\na, b = rows.randomSplit([1, 2])\na.write.parquet("a")\n'
        )[0]
    )
    assert (
        "not held in a variable"
        in _reasons(prelude + 'a, b = spark.read.parquet("t").randomSplit([0.5, 0.5])\na.write.parquet("a")\n')[0]
    )
    assert (
        "does not expand"
        in _reasons(prelude + 'spark.read.parquet("t").orderBy(F.rand()).limit(5).write.parquet("s")\n')[0]
    )


def test_an_rdd_split_filters_on_each_values_checksum():
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'lines = spark.sparkContext.textFile("points")  # one point a line\n'
        "train, val, test = lines.randomSplit([8, 1, 1])\n"
        'train.saveAsTextFile("train")\n'
    )
    assert _fixed(code) == (
        "from pyspark.sql import SparkSession\n"
        "import zlib\n"
        "\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'lines = spark.sparkContext.textFile("points")  # one point a line\n'
        "train, val, test = [\n"
        "    lines.filter(lambda value: zlib.crc32(repr(value).encode()) % 100 < 80),\n"
        "    lines.filter(lambda value: 80 <= zlib.crc32(repr(value).encode()) % 100 < 90),\n"
        "    lines.filter(lambda value: zlib.crc32(repr(value).encode()) % 100 >= 90),\n"
        "]\n"
        'train.saveAsTextFile("train")\n'
    )
    # A module that already uses the name `value` gets another lambda parameter.
    assert "lambda item: " in _fixed(code.replace("# one point a line", "# value: one point a line"))
