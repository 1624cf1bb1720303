"""The SPX101 fix drops a sort the shuffle discarded; a variable that would then only rename
another (`ordered = views`) goes with it where nothing can tell, and stays everywhere else."""

from __future__ import annotations

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

HEAD = "from pyspark.sql import functions as F\n\n\n"
PICK = 'F.min(F.struct("ts", "page")).getField("page")'


def _fixed(body: str) -> str:
    code = HEAD + body
    outcome = fix_source("job.py", code, {"SPX101"})
    assert outcome.applied, code
    assert [f for f in analyze("job.py", outcome.fixed) if f.rule_id == "SPX101"] == []
    assert fix_source("job.py", outcome.fixed, {"SPX101"}).fixed == outcome.fixed
    return outcome.fixed[len(HEAD) :]


def test_an_alias_read_once_goes_and_its_reader_reads_the_frame():
    body = (
        "def entry(views, day):\n"
        "    views = views.filter(F.col('day') == day)\n"
        '    ordered = views.orderBy("ts")\n'
        "\n"
        '    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n'
    )
    assert _fixed(body) == (
        "def entry(views, day):\n"
        "    views = views.filter(F.col('day') == day)\n"
        "\n"
        f'    return views.groupBy("user").agg({PICK}.alias("page"))\n'
    )


def test_a_self_assignment_left_by_the_dropped_sort_goes():
    body = 'def entry(views):\n    views = views.orderBy("ts")\n    return views.groupBy("user").agg(F.first("page").alias("page"))\n'
    assert _fixed(body) == f'def entry(views):\n    return views.groupBy("user").agg({PICK}.alias("page"))\n'


@pytest.mark.parametrize(
    "body",
    [
        # `views` names another frame by the time the alias is read.
        'def entry(views, other):\n    ordered = views.orderBy("ts")\n    views = other\n'
        '    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n',
        # Rebound in a loop header between the two.
        'def entry(views, days):\n    ordered = views.orderBy("ts")\n    for views in days:\n        pass\n'
        '    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n',
        # The alias is read again (a later statement, a nested function).
        'def entry(views):\n    ordered = views.orderBy("ts")\n    out = ordered.groupBy("user").agg(F.first("page").alias("page"))\n'
        "    return out, ordered.columns\n",
        'def entry(views):\n    ordered = views.orderBy("ts")\n    out = ordered.groupBy("user").agg(F.first("page").alias("page"))\n'
        "    def columns():\n        return ordered.columns\n    return out, columns\n",
        # A comment on the alias's line would have nowhere to go.
        'def entry(views):\n    ordered = views.orderBy("ts")  # by time\n'
        '    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n',
        # `VIEWS` is a module name a call in between could rebind.
        'def entry():\n    ordered = VIEWS.orderBy("ts")\n    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n',
        # At module level another module (or a notebook's %run) may read `ordered`.
        'views = spark.read.parquet("v")\nordered = views.orderBy("ts")\n'
        'top = ordered.groupBy("user").agg(F.first("page").alias("page"))\n',
        # Declared nonlocal by a nested function: it may rebind `views`.
        'def entry(views):\n    ordered = views.orderBy("ts")\n    def swap():\n        nonlocal views\n'
        '        views = None\n    swap()\n    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n',
    ],
    ids=["rebound", "loop-target", "read-again", "closure", "comment", "global", "module", "nonlocal"],
)
def test_the_alias_stays_where_removing_it_could_change_something(body: str):
    fixed = _fixed(body)
    assert "    ordered = " in fixed or "\nordered = " in fixed
    assert "ordered.groupBy" in fixed


def test_the_summary_says_the_sort_and_the_alias_went(tmp_path, sparkpar_cli):
    (tmp_path / "job.py").write_text(
        HEAD + 'def entry(views):\n    ordered = views.orderBy("ts")\n'
        '    return ordered.groupBy("user").agg(F.first("page").alias("page"))\n'
    )
    result = sparkpar_cli("fix", "--summary", "summary.md", "job.py")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "summary.md").read_text()
    assert (
        "SPX101, line 6: `first` → `min` of `struct(ts, page)`; the `orderBy` above is removed (the shuffle "
        "discarded its order), and so is `ordered`, which only renamed `views`, because"
    ) in text
    assert '-    ordered = views.orderBy("ts")' in text and "+    return views.groupBy" in text
