"""`sparkpar fix` through the real CLI on real files: writes, diffs, checks, summaries, safety."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkpar_lint.cli import main

BAD = (
    "# -*- coding: latin-1 -*-\n"
    "# Caf\xe9 orders: latest status per order.\n"
    "from pyspark.sql import functions as F  # the usual alias\n"
    "\n"
    "def latest(orders):\n"
    '    ordered = orders.orderBy("ts")\n'
    '    return ordered.groupBy("order").agg(\n'
    '        F.last("status").alias("status"),  # keep this comment\n'
    "    )\n"
)
# The sort goes too: once the aggregate reads "ts", the shuffle would only throw the sort's work away;
# and with it `ordered`, which would only be another name for `orders`.
FIXED = (
    BAD.replace('F.last("status")', 'F.max(F.struct("ts", "status")).getField("status")')
    .replace('    ordered = orders.orderBy("ts")\n', "")
    .replace("return ordered.groupBy", "return orders.groupBy")
)


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "job.py"
    path.write_bytes(BAD.encode("latin-1"))
    return path


def test_fix_rewrites_in_place_keeping_encoding_comments_and_layout(job: Path):
    result = run("fix", str(job))
    assert result.exit_code == 0
    assert job.read_bytes() == FIXED.encode("latin-1")
    assert "Fixed 1 finding in 1 file." in result.stderr


def test_fix_keeps_windows_line_endings(tmp_path: Path):
    path = tmp_path / "job.py"
    path.write_bytes(BAD.replace("\n", "\r\n").encode("latin-1"))
    assert run("fix", str(path)).exit_code == 0
    assert path.read_bytes() == FIXED.replace("\n", "\r\n").encode("latin-1")


def test_second_run_changes_nothing(job: Path):
    run("fix", str(job))
    result = run("fix", "--check", str(job))
    assert result.exit_code == 0
    assert "Would fix 0 findings in 0 files." in result.stderr


def test_diff_prints_and_writes_nothing(job: Path):
    result = run("fix", "--diff", str(job))
    assert result.exit_code == 0
    assert f"--- a/{job}" in result.stdout
    assert '-        F.last("status").alias("status"),  # keep this comment' in result.stdout
    assert '+        F.max(F.struct("ts", "status")).getField("status").alias("status"),  # keep this comment' in (
        result.stdout
    )
    assert job.read_bytes() == BAD.encode("latin-1")


def test_check_exits_1_when_something_would_change(job: Path):
    result = run("fix", "--check", str(job))
    assert result.exit_code == 1
    assert job.read_bytes() == BAD.encode("latin-1")


def test_select_and_ignore_limit_what_is_fixed(job: Path):
    assert run("fix", "--ignore", "SPX101", str(job)).exit_code == 0
    assert job.read_bytes() == BAD.encode("latin-1")
    assert run("fix", "--select", "SPX1", str(job)).exit_code == 0
    assert job.read_bytes() == FIXED.encode("latin-1")


def test_suppressed_findings_are_not_fixed(tmp_path: Path):
    path = tmp_path / "job.py"
    source = BAD.replace("# keep this comment", "# noqa: SPX101")
    path.write_bytes(source.encode("latin-1"))
    assert run("fix", str(path)).exit_code == 0
    assert path.read_bytes() == source.encode("latin-1")


def test_summary_is_markdown_for_a_pull_request(job: Path, tmp_path: Path):
    summary = tmp_path / "summary.md"
    assert run("fix", "--summary", str(summary), str(job)).exit_code == 0
    text = summary.read_text()
    assert text.startswith("# sparkpar fix\n")
    assert f"## `{job}`" in text
    # Each hunk: one sentence on why, then the hunk itself.
    sentence = (
        "SPX101, line 8: `last` → `max` of `struct(ts, status)`; the `orderBy` above is removed (the shuffle "
        "discarded its order), and so is `ordered`, which only renamed `orders`, because an aggregate whose "
        "result depends"
    )
    assert sentence in text
    hunk = text[text.index(sentence) :]
    assert (
        "```diff\n@@ " in hunk
        and '+        F.max(F.struct("ts", "status")).getField("status").alias("status"),  # keep this comment' in hunk
    )


def test_bad_inputs_are_reported_and_the_rest_still_fixed(job: Path, tmp_path: Path):
    broken = tmp_path / "broken.py"
    broken.write_text("import pyspark\ndef f(:\n")
    result = run("fix", str(tmp_path), str(tmp_path / "missing.py"))
    assert result.exit_code == 2
    assert "missing.py" in result.stderr
    assert broken.read_text() == "import pyspark\ndef f(:\n"
    assert job.read_bytes() == FIXED.encode("latin-1")


def test_unknown_rule_is_a_usage_error(job: Path):
    result = CliRunner().invoke(main, ["fix", "--select", "SPX999", str(job)])
    assert result.exit_code == 2
    assert "SPX999" in result.output


def test_file_mode_is_kept(job: Path):
    os.chmod(job, 0o640)
    run("fix", str(job))
    assert (job.stat().st_mode & 0o777) == 0o640


def test_lint_marks_which_findings_are_fixable_and_how_safely(tmp_path: Path):
    safe = tmp_path / "safe.py"
    safe.write_text(BAD.encode("latin-1").decode("latin-1"), encoding="latin-1")
    unsafe = tmp_path / "unsafe.py"
    unsafe.write_text(
        "from pyspark.sql import functions as F\n"
        "def first_page(spark):\n"
        '    return spark.read.parquet("v").groupBy("user").agg(F.first("page"))\n'
    )
    result = run("lint", "--no-cache", "--select", "SPX101", str(tmp_path))
    assert result.exit_code == 1
    assert "SPX101 [error, medium confidence] [*] `last`" in result.stdout
    assert re.search(r"SPX101 \[error, (high|medium|low) confidence\] \[\*unsafe\] `first`", result.stdout)
    assert "[*] 1 fixable with `sparkpar fix`." in result.stdout
    assert "[*unsafe] 1 more with `sparkpar fix --unsafe-fixes`." in result.stdout


def test_summary_gives_each_file_its_hunks_each_with_its_own_sentence(tmp_path: Path):
    two_fixes = tmp_path / "a.py"
    two_fixes.write_text(
        "from pyspark.sql import functions as F\n\n\n"
        "def latest(orders):\n"
        '    return orders.orderBy("ts").groupBy("order").agg(F.last("status"))\n\n\n'
        "def spacer():\n    return 1\n\n\n"
        "def earliest(orders):\n"
        '    return orders.orderBy("ts").groupBy("order").agg(F.first("status"))\n'
    )
    by_name = tmp_path / "b.py"
    by_name.write_text(
        "from pyspark.sql.functions import last\n\n\n"
        "def newest(orders):\n"
        "    total = max(1, 2)  # the builtin: `max` may not be imported from Spark\n"
        '    return orders.orderBy("ts").groupBy("order").agg(last("status"))\n'
    )
    summary = tmp_path / "summary.md"
    assert run("fix", "--summary", str(summary), str(two_fixes), str(by_name)).exit_code == 0
    text = summary.read_text()
    assert "3 fixes in 2 files." in text
    first, second = text.split(f"## `{two_fixes}`")[1].split(f"## `{by_name}`")
    # One sentence per hunk, right above it, naming the line it explains.
    assert first.count("```diff\n") == 2 and first.count("SPX101, line") == 2
    assert first.index("SPX101, line 5: `last` → `max`") < first.index("@@ -4,3") < first.index("SPX101, line 13:")
    assert first.index("SPX101, line 13: `first` → `min`") < first.index("@@ -12,3")
    # The import hunk says it is one, and the fix's own hunk keeps its sentence.
    assert second.index("Imports the fixes below need, and imports they left unused removed.") < second.index(
        "+from pyspark.sql import functions as F"
    )
    assert second.index("SPX101, line 6: `last` → `max`") < second.index("@@ -5,3")
