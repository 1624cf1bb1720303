"""`sparkpar fix` reads the configuration `sparkpar lint` reads: the same file walk (exclude), the
same selection (select/ignore) and the same per-file-ignores; and `--show-unfixed` says, one
line per finding, why a finding was left in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkpar_lint.cli import main

JOB = (
    "from pyspark.sql import functions as F\n"
    "\n"
    "def latest(orders):\n"
    '    return orders.orderBy("ts").groupBy("order").agg(F.last("status"))\n'
)
UNFIXABLE = (
    "from pyspark import SparkContext\n"
    "sc = SparkContext.getOrCreate()\n"
    'counts = sc.textFile("logs").map(lambda line: (line[:4], 1)).reduceByKey(lambda a, b: a + b)\n'
    "first_code = counts.first()\n"
)


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "legacy").mkdir()
    (tmp_path / "jobs" / "a.py").write_text(JOB)
    (tmp_path / "legacy" / "b.py").write_text(JOB)
    (tmp_path / "jobs" / "c.py").write_text(JOB)
    return tmp_path


def configure(root: Path, table: str) -> Path:
    path = root / "pyproject.toml"
    path.write_text("[tool.sparkpar]\n" + table)
    return path


def lint_and_fix_touch_the_same_files(root: Path, config: Path) -> set[str]:
    linted = run("lint", "--config", str(config), "--format", "concise", "--no-cache", str(root))
    flagged = {line.split(":")[0] for line in linted.output.splitlines() if "SPX101" in line}
    run("fix", "--config", str(config), str(root))
    fixed = {str(p) for p in root.rglob("*.py") if p.read_text() != JOB}
    assert flagged == fixed
    return fixed


def test_exclude_applies_to_fix(project: Path):
    config = configure(project, 'exclude = ["legacy"]\n')
    fixed = lint_and_fix_touch_the_same_files(project, config)
    assert fixed == {str(project / "jobs" / "a.py"), str(project / "jobs" / "c.py")}


def test_per_file_ignores_apply_to_fix(project: Path):
    config = configure(project, '[tool.sparkpar.per-file-ignores]\n"jobs/c.py" = ["SPX1"]\n')
    fixed = lint_and_fix_touch_the_same_files(project, config)
    assert str(project / "jobs" / "c.py") not in fixed and str(project / "jobs" / "a.py") in fixed


def test_ignore_in_the_config_applies_to_fix(project: Path):
    config = configure(project, 'ignore = ["SPX101"]\n')
    assert lint_and_fix_touch_the_same_files(project, config) == set()


def test_show_unfixed_says_why_one_line_per_finding(tmp_path: Path):
    job = tmp_path / "top.py"
    job.write_text(UNFIXABLE)
    result = run("fix", "--show-unfixed", str(job))
    lines = [line for line in result.output.splitlines() if "not fixed" in line]
    assert lines == [
        f"{job}:4:21: SPX106 not fixed: no automatic fix here: `first` on an RDD: only `take(n)` becomes "
        "`takeOrdered(n)`"
    ]
    assert job.read_text() == UNFIXABLE


def test_show_unfixed_names_the_reason_of_this_finding(tmp_path: Path):
    job = tmp_path / "codes.py"
    job.write_text(
        "def job(spark, lines):\n"
        "    counts = lines.rdd.map(lambda r: (r.code, 1)).reduceByKey(lambda a, b: a + b).values()\n"
        "    return counts.take(5)\n"
    )
    result = run("fix", "--unsafe-fixes", "--show-unfixed", str(job))
    assert (
        f"{job}:3:19: SPX106 not fixed: no automatic fix here: `take` on an RDD whose elements may not compare "
        "in Python (None and a value, mixed types): `takeOrdered` needs a key"
    ) in result.output, result.output


def test_show_unfixed_points_to_unsafe_fixes(tmp_path: Path):
    job = tmp_path / "seq.py"
    job.write_text(
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'firsts = spark.read.parquet("v").groupBy("user").agg(F.first("page"))\n'
    )
    result = run("fix", "--show-unfixed", str(job))
    assert "SPX101 not fixed: an unsafe fix is available" in result.output
    assert "rerun with --unsafe-fixes" in result.output


def test_exclude_on_the_command_line_applies_to_fix(project: Path):
    run("fix", "--exclude", "legacy", str(project))
    assert (project / "legacy" / "b.py").read_text() == JOB
    assert (project / "jobs" / "a.py").read_text() != JOB


def test_select_in_the_config_applies_to_fix(project: Path):
    config = configure(project, 'select = ["SPX2"]\n')
    assert lint_and_fix_touch_the_same_files(project, config) == set()


def test_severities_are_read_once_for_both_and_gate_neither(project: Path):
    # A severity changes how a finding is reported, not whether it is: lint still reports it (at
    # the configured level) and fix still fixes it.
    config = configure(project, '[tool.sparkpar.severity]\nSPX101 = "info"\n')
    linted = run("lint", "--config", str(config), "--format", "json", "--no-cache", str(project / "jobs" / "a.py"))
    assert [f["severity"] for f in json.loads(linted.output) if f["rule"] == "SPX101"] == ["info"]
    assert run("fix", "--config", str(config), str(project / "jobs" / "a.py")).exit_code == 0
    assert (project / "jobs" / "a.py").read_text() != JOB
    # A bad level is the same usage error, in the same words, from either command.
    configure(project, '[tool.sparkpar.severity]\nSPX101 = "loud"\n')
    lint, fix = (run(command, "--config", str(config), str(project)) for command in ("lint", "fix"))
    assert lint.exit_code == fix.exit_code == 2
    assert "severity.SPX101: expected error, warning or info, got 'loud'" in fix.output
    assert fix.output == lint.output
    assert (project / "jobs" / "c.py").read_text() == JOB


def test_a_notebook_is_fixed_with_the_projects_settings(tmp_path: Path):
    # The watermark delay reaches a notebook's fix as it reaches a .py file's.
    configure(tmp_path, 'watermark-delay = "2 hours"\n')
    cell = (
        "from pyspark.sql import functions as F\n"
        'counts = spark.readStream.format("rate").load().groupBy(F.window("timestamp", "1 minute")).count()\n'
        'counts.writeStream.outputMode("complete").format("console").start()\n'
    )
    notebook = tmp_path / "stream.ipynb"
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": cell}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = run("fix", "--unsafe-fixes", "--config", str(tmp_path / "pyproject.toml"), str(notebook))
    assert result.exit_code == 0, result.output
    fixed = "".join(json.loads(notebook.read_text())["cells"][0]["source"])
    assert 'withWatermark("timestamp", "2 hours")' in fixed, fixed


def test_show_unfixed_says_a_stream_cannot_be_sorted_before_the_pick(tmp_path: Path):
    job = tmp_path / "sample.py"
    job.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'pages = spark.readStream.table("views").groupBy("page").count().limit(5)\n'
        'pages.writeStream.outputMode("complete").format("memory").queryName("p").start()\n'
    )
    result = run("fix", "--unsafe-fixes", "--show-unfixed", "--select", "SPX106", str(job))
    assert (
        f"{job}:3:65: SPX106 not fixed: no automatic fix here: no sort to restore, and the rows come from a "
        "stream, which cannot be sorted before the pick"
    ) in result.output, result.output
