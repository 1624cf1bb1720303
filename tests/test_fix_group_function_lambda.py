"""The SPX103 fix for a pandas lambda: each read of its frame reads a sorted copy, and only reads
(not a keyword or an attribute that happens to share the frame's name)."""

from __future__ import annotations

from sparkpar_lint.fixes.engine import fix_source

HEAD = (
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'df = spark.read.parquet("loans").orderBy("id", "day")\n'
)
SORTED = 'rows.sort_values(["day", *rows.columns.difference(["day"])])'


def test_a_keyword_named_like_the_frame_is_not_rewritten():
    code = HEAD + (
        'df.groupby("id").applyInPandas(lambda rows: rows.assign(rows=rows.amount.cumsum()), "id long, rows double")\n'
    )
    fixed = fix_source("job.py", code, {"SPX103"}, unsafe=True).fixed
    assert f".assign(rows={SORTED}.amount.cumsum())" in fixed, fixed
    assert fixed.count("sort_values") == 2
    assert fix_source("job.py", fixed, {"SPX103"}, unsafe=True).fixed == fixed


def test_a_nested_scope_reusing_the_name_or_an_inplace_change_gets_no_fix():
    for body in (
        'rows.assign(n=rows["amount"].cumsum().map(lambda rows: rows))',
        'rows.fillna(0, inplace=True) or rows.assign(n=rows["amount"].cumsum())',
    ):
        code = HEAD + f'df.groupby("id").applyInPandas(lambda rows: {body}, "id long, n double")\n'
        assert fix_source("job.py", code, {"SPX103"}, unsafe=True).fixed == code, body


def test_a_per_partition_lambda_says_why_it_is_left():
    from sparkpar_lint.analysis import analyze

    code = HEAD + (
        "def firsts(rows):\n"
        "    yield next(rows)\n"
        "df.rdd.repartition(4).mapPartitions(lambda rows: firsts(rows)).collect()\n"
    )
    reasons = [f.no_fix.reason for f in analyze("job.py", code) if f.rule_id == "SPX103"]
    assert reasons and all(r and r.startswith("a per-partition lambda") for r in reasons), reasons
