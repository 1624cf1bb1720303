"""Fixes on code formatted the way PySpark jobs are written: parenthesised and backslash-continued
chains with comments, functions imported by name next to Python's builtins, other aliases.

Each fixed file must parse, keep every comment and the chain's layout, add no line longer than
max(the file's longest line, 100), and import nothing that shadows a builtin or a binding.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from click.testing import CliRunner

from sparkpar_lint.cli import main
from sparkpar_lint.fixes.engine import fix_source

PARENTHESISED = """\
from pyspark.sql import SparkSession
from pyspark.sql.functions import first, lit

spark = SparkSession.builder.getOrCreate()


def spread(values):
    return max(values) - min(values)


def landing_pages(events):
    return (
        events
        # oldest event first
        .orderBy("ts")
        .groupBy("user")  # one row per user
        .agg(
            first("page").alias("landing"),  # where they came in
        )
    )
"""

PARENTHESISED_FIXED = """\
from pyspark.sql import SparkSession, functions as F
from pyspark.sql.functions import lit

spark = SparkSession.builder.getOrCreate()


def spread(values):
    return max(values) - min(values)


def landing_pages(events):
    return (
        events
        # oldest event first
        .groupBy("user")  # one row per user
        .agg(
            F.min(F.struct("ts", "page")).getField("page").alias("landing"),  # where they came in
        )
    )
"""

BACKSLASHED = """\
import pyspark.sql.functions as sf
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
clicks = spark.read.parquet("clicks")
latest = clicks \\
    .orderBy(sf.col("ts").desc()) \\
    .dropDuplicates(["user"])  # one click per user
latest.write.parquet("out")
"""

BACKSLASHED_FIXED = """\
import pyspark.sql.functions as sf
from pyspark.sql import SparkSession, Window

spark = SparkSession.builder.getOrCreate()
clicks = spark.read.parquet("clicks")
latest = clicks \\
    .withColumn(
        "_sparkpar_rn",
        sf.row_number().over(
            Window.partitionBy("user").orderBy(
                sf.col("ts").desc(),
                sf.to_json(
                    sf.struct("*"),
                    {
                        "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
                        "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                    },
                ),
            ),
        ),
    ) \\
    .filter(sf.col("_sparkpar_rn") == 1) \\
    .drop("_sparkpar_rn")  # one click per user
latest.write.parquet("out")
"""

INSERTED = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
sample = (
    spark.read.parquet("events")
    .orderBy("ts")  # by event time
    # a reshuffle by user
    .repartition(8, "user")
    .limit(10)
    .collect()
)
"""

INSERTED_FIXED = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
sample = (
    spark.read.parquet("events")
    .orderBy("ts")  # by event time
    # a reshuffle by user
    .repartition(8, "user")
    .withColumn(
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
    .limit(10)
    .collect()
)
"""

BOUND_NAME = """\
from pyspark.sql.functions import collect_list

struct = {"kind": "record"}


def pages(df):
    ordered = (
        df.orderBy("ts")  # by time
        .filter("page IS NOT NULL")
    )
    return ordered.groupBy("user").agg(collect_list("page").alias("pages"))
"""

BOUND_NAME_FIXED = """\
from pyspark.sql import functions as F

struct = {"kind": "record"}


def pages(df):
    ordered = (
        df  # by time
        .filter("page IS NOT NULL")
    )
    return (
        ordered.groupBy("user")
        .agg(
            F.array_compact(
                F.array_sort(F.collect_list(F.struct("ts", "page"))).getField("page"),
            ).alias("pages"),
        )
    )
"""


def comments(code: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT]


def check_fixed(original: str, fixed: str) -> None:
    compile(fixed, "job.py", "exec")
    assert sorted(comments(fixed)) == sorted(comments(original))
    limit = max(100, *(len(line) for line in original.splitlines()))
    assert max(len(line) for line in fixed.splitlines()) <= limit


def test_parenthesised_chain_keeps_parentheses_comments_and_builtins():
    outcome = fix_source("job.py", PARENTHESISED, {"SPX101"})
    assert outcome.fixed == PARENTHESISED_FIXED
    check_fixed(PARENTHESISED, outcome.fixed)
    # `min`/`max` are not imported from pyspark.sql.functions: the builtins still work, and the
    # replaced `first` import is gone while the unrelated unused `lit` stays.
    namespace: dict = {}
    exec(
        compile(outcome.fixed.replace("spark = SparkSession.builder.getOrCreate()\n", ""), "job.py", "exec"), namespace
    )
    assert namespace["spread"]([3, 9, 4]) == 6
    assert "min" not in namespace and "max" not in namespace and "first" not in namespace


def test_backslash_chain_gets_new_calls_one_per_line():
    outcome = fix_source("job.py", BACKSLASHED, {"SPX102"})
    assert outcome.fixed == BACKSLASHED_FIXED
    check_fixed(BACKSLASHED, outcome.fixed)


def test_calls_inserted_in_a_chain_follow_its_layout_and_comments_stay_on_their_lines():
    outcome = fix_source("job.py", INSERTED, {"SPX106"})
    assert outcome.fixed == INSERTED_FIXED
    check_fixed(INSERTED, outcome.fixed)


def test_names_bound_in_the_module_are_not_imported_over():
    outcome = fix_source("job.py", BOUND_NAME, {"SPX101"})
    assert outcome.fixed == BOUND_NAME_FIXED
    check_fixed(BOUND_NAME, outcome.fixed)
    namespace: dict = {}
    exec(compile(outcome.fixed, "job.py", "exec"), namespace)
    assert namespace["struct"] == {"kind": "record"}


def test_names_imported_bare_when_they_shadow_nothing():
    code = (
        "from pyspark.sql.functions import collect_list\n"
        "def pages(df):\n"
        '    return df.orderBy("ts").groupBy("user").agg(collect_list("page"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}).fixed
    assert fixed.splitlines()[0] == "from pyspark.sql.functions import array_compact, array_sort, collect_list, struct"
    assert 'array_sort(collect_list(struct("ts", "page"))).getField("page"),\n' in fixed
    assert ').alias("collect_list(page)"),\n' in fixed  # the column keeps the name Spark gave it


def test_a_free_alias_is_chosen_when_f_is_taken():
    code = (
        "from pyspark.sql.functions import first\n"
        "F = 32  # degrees\n"
        "def landing(df):\n"
        '    return df.orderBy("ts").groupBy("user").agg(first("page"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}).fixed
    assert "from pyspark.sql import functions as sf" in fixed
    assert 'sf.min(sf.struct("ts", "page"))' in fixed
    assert "F = 32  # degrees" in fixed


def test_cli_fix_writes_the_formatted_result(tmp_path: Path):
    job = tmp_path / "job.py"
    job.write_text(PARENTHESISED, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", str(job)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert job.read_text(encoding="utf-8") == PARENTHESISED_FIXED
    again = CliRunner().invoke(main, ["fix", "--check", str(job)], catch_exceptions=False)
    assert again.exit_code == 0


REPLACED_LINK = """\
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

spark = SparkSession.builder.getOrCreate()
heartbeats = spark.read.parquet("landing/heartbeats")
latest = (
    heartbeats.orderBy(F.col("ts").desc())  # newest first
    .dropDuplicates(["device"])
)
latest.write.parquet("silver/latest")
"""


def test_a_link_replaced_by_several_keeps_the_parentheses_and_each_comment_once():
    # The SPX102 fix replaces the chain's outer call with three new links. Their parentheses were
    # lost, and LibCST's shared default `Dot` gave every new link the comment meant for the first:
    # the result did not compile and the fix was undone.
    outcome = fix_source("job.py", REPLACED_LINK, {"SPX102"})
    assert [f.rule_id for f in outcome.applied] == ["SPX102"]
    check_fixed(REPLACED_LINK, outcome.fixed)
    # The sort goes too (the window carries its order); its line's comment stays on that line.
    assert "latest = (\n    heartbeats  # newest first\n    .withColumn(\n" in outcome.fixed
    assert '    .filter(F.col("_sparkpar_rn") == 1)\n    .drop("_sparkpar_rn")\n)\n' in outcome.fixed


def test_a_line_continued_with_a_backslash_is_wrapped_with_backslashes():
    # The watermark makes the first line too long: its chain breaks in the chain's own style, not
    # in parentheses that would leave `) \` before `.writeStream`.
    code = (
        "from pyspark.sql.functions import window\n"
        "def start(spark):\n"
        '    rate = spark.readStream.format("rate").load()\n'
        '    per_ten_seconds_query = rate.groupBy(window("timestamp", "10 seconds")).count() \\\n'
        "        .writeStream \\\n"
        '        .outputMode("complete") \\\n'
        '        .format("console") \\\n'
        "        .start()  # watched by hand\n"
        "    return per_ten_seconds_query\n"
    )
    outcome = fix_source("job.py", code, {"SPX204"}, unsafe=True)
    assert outcome.fixed == code.replace(
        '    per_ten_seconds_query = rate.groupBy(window("timestamp", "10 seconds")).count() \\\n',
        '    per_ten_seconds_query = rate.withWatermark("timestamp", "10 minutes") \\\n'
        '        .groupBy(window("timestamp", "10 seconds")) \\\n'
        "        .count() \\\n",
    ).replace('"complete"', '"update"')
    check_fixed(code, outcome.fixed)


def test_an_import_the_fix_lengthens_past_the_limit_takes_one_name_a_line_and_the_chain_is_wrapped_too():
    # The import comes first in the file; a line nothing can break used to stop the wrapping, so
    # the one-line chain further down stayed 180 characters long.
    code = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import collect_list\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'rows = spark.createDataFrame([("ann", "maths")], ["student", "subject"])\n'
        'rows.groupBy("student").agg(collect_list("subject").alias("subjects")).show(truncate=False)\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert fixed.startswith(
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import (\n"
        "    array_compact,\n"
        "    array_sort,\n"
        "    collect_list,\n"
        "    monotonically_increasing_id,\n"
        "    struct,\n"
        ")\n"
    ), fixed
    assert '(\n    rows.withColumn("_sparkpar_seq", monotonically_increasing_id())\n    .groupBy("student")\n' in fixed
    check_fixed(code, fixed)


def test_a_one_line_sql_string_the_fix_lengthens_is_split_after_its_line_breaks():
    # A query kept on one line with `\r\n` escapes, already the file's longest line: the fix's
    # `array_sort(...)` would take it further, so it becomes one literal per query line, which
    # Python joins back into the same text.
    code = (
        "def statuses(spark):\n"
        "    return spark.sql(\n"
        '        "SELECT \\r\\n    order_ref, \\r\\n    CAST(collect_list(status) AS string) AS history'
        '\\r\\nFROM \\r\\n    status_changes \\r\\nGROUP BY order_ref"\n'
        "    )\n"
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert fixed == (
        "def statuses(spark):\n"
        "    return spark.sql(\n"
        '        "SELECT \\r\\n"\n'
        '        "    order_ref, \\r\\n"\n'
        '        "    CAST(array_sort(collect_list(status)) AS string) AS history\\r\\n"\n'
        '        "FROM \\r\\n"\n'
        '        "    status_changes \\r\\n"\n'
        '        "GROUP BY order_ref"\n'
        "    )\n"
    ), fixed
    check_fixed(code, fixed)
    assert fix_source("job.py", fixed, {"SPX101"}, unsafe=True).fixed == fixed
