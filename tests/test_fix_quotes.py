"""String literals a fix writes take the quotes the file's own literals mostly use, through the
real CLI on real files: a job written with single quotes gets `.alias('first(page)')`, one with
double quotes (or as many of each, or none) gets `"first(page)"`; the author's literals are never
touched, and a name holding a quote is still written as a valid literal."""

from __future__ import annotations

import ast
import re

from sparkpar_lint.fixes.engine import fix_source

SINGLE = """\
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

spark = SparkSession.builder.getOrCreate()
\"\"\"Docstrings are triple-quoted whatever the style: they do not count.\"\"\"


def latest(events):
    ordered = events.orderBy('ts')
    return ordered.groupBy('user').agg(F.first('page'), F.last("o'clock").alias('t'))


def arrival():
    visits = spark.read.parquet('visits')
    return visits.groupBy('user').agg(F.first('page'))


def one_per_user(events):
    return events.dropDuplicates(['user'])
"""


def _fixed(cli, tmp_path, code: str) -> tuple[str, str]:
    path = tmp_path / "job.py"
    path.write_text(code, encoding="utf-8")
    diff = cli("fix", "--unsafe-fixes", "--diff", "job.py")
    assert diff.exit_code in (0, 1), diff.output
    result = cli("fix", "--unsafe-fixes", "job.py")
    assert result.exit_code in (0, 1), result.output
    fixed = path.read_text(encoding="utf-8")
    ast.parse(fixed)
    return fixed, diff.output


def _added(fixed: str, original: str) -> list[str]:
    """The quote of every literal on the fixed file's lines that the original did not have."""
    kept = set(original.splitlines())
    lines = [line for line in fixed.splitlines() if line not in kept]
    return re.findall(r"""(?<![\w'"])(['"])[^'"\n]*\1""", "\n".join(lines))


def test_a_single_quoted_job_gets_single_quoted_literals(sparkpar_cli, tmp_path):
    fixed, diff = _fixed(sparkpar_cli, tmp_path, SINGLE)
    assert ".agg(F.min(F.struct('_sparkpar_seq', 'page')).getField('page').alias('first(page)'))" in fixed
    assert "visits.withColumn('_sparkpar_seq', F.monotonically_increasing_id())" in fixed
    assert "F.min(F.struct('ts', 'page')).getField('page').alias('first(page)')," in fixed
    assert ".filter(F.col('_sparkpar_rn') == 1)" in fixed and "Window.partitionBy('user')" in fixed
    assert "'timestampFormat': 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX'," in fixed
    # A name holding a single quote is written in double quotes, as repr (and anyone) writes it.
    assert "F.max(F.struct('ts', \"o'clock\")).getField(\"o'clock\").alias('t')," in fixed
    assert set(_added(fixed, SINGLE)) == {"'"}
    assert "+        .agg(F.min(F.struct('_sparkpar_seq', 'page')).getField('page').alias('first(page)'))" in diff


def test_a_double_quoted_job_keeps_double_quotes(sparkpar_cli, tmp_path):
    double = SINGLE.replace("'", '"').replace('"o"clock"', '"o\'clock"')
    fixed, _ = _fixed(sparkpar_cli, tmp_path, double)
    assert '.agg(F.min(F.struct("_sparkpar_seq", "page")).getField("page").alias("first(page)"))' in fixed
    assert set(_added(fixed, double)) == {'"'}


def test_as_many_single_as_double_quoted_literals_give_double_quotes(sparkpar_cli, tmp_path):
    tied = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "\n"
        "def latest(events):\n"
        "    return events.orderBy('ts').groupBy(\"user\").agg(F.first('page'), F.max(\"ts\"))\n"
    )
    fixed, _ = _fixed(sparkpar_cli, tmp_path, tied)
    assert 'F.min(F.struct("ts", \'page\')).getField("page").alias("first(page)")' in fixed


def test_a_second_run_changes_nothing(sparkpar_cli, tmp_path):
    fixed, _ = _fixed(sparkpar_cli, tmp_path, SINGLE)
    assert _fixed(sparkpar_cli, tmp_path, fixed)[0] == fixed


def test_a_column_name_holding_a_quote_is_written_as_a_valid_literal():
    code = (
        "from pyspark.sql import functions as F\n"
        "\n"
        "\n"
        "def latest(events):\n"
        '    return events.orderBy("ts").groupBy("user").agg(F.first("o\'clock").alias("at"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}).fixed
    assert 'F.min(F.struct("ts", "o\'clock")).getField("o\'clock").alias("at")' in fixed
