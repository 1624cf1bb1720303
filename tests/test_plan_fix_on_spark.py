"""`sparkpar fix --select SPX4` applies the plan's advice that needs no profile (plan/rewrites.py),
and the fixed job runs on Spark: on every fixture the fix changes, the fixed job writes the rows
the serial original writes, from more than one task."""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkpar_lint.fixes.command import fix
from sparkpar_lint.plan.rewrites import PLAN_RULES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_T0 = datetime.datetime(2024, 3, 5, 9)

# Inputs of the fixtures the fix changes, by the path the job reads: (DDL schema, rows). Clicks of
# eight users with gaps on both sides of the half-hour session cut.
INPUTS = {
    "spx402/bad_serial_sessions.py": {
        "s3://lake/clicks": (
            "user string, ts long, click_id long",
            [(f"u{i % 8}", 600 * i + (2400 if i % 5 == 0 else 0), i) for i in range(48)],
        ),
    },
}


def _fixed_by_plan_rules() -> list[str]:
    """Fixtures `sparkpar fix --select SPX401,SPX402 --unsafe-fixes --check` would change."""
    changed = []
    for path in sorted(FIXTURES.rglob("*.py")):
        result = CliRunner().invoke(fix, ["--select", ",".join(PLAN_RULES), "--unsafe-fixes", "--check", str(path)])
        assert result.exit_code in (0, 1), result.output
        if result.exit_code == 1:
            changed.append(str(path.relative_to(FIXTURES)))
    return changed


def test_every_fixture_the_plan_rules_fix_has_inputs_here():
    assert _fixed_by_plan_rules() == sorted(INPUTS)


def _run(spark, source: str, inputs: dict, where: Path) -> tuple[list, int]:
    """Runs the job's code on `inputs` written as parquet: (rows it wrote, part files written)."""
    for index, (path, (schema, rows)) in enumerate(inputs.items()):
        local = where / f"in{index}"
        spark.createDataFrame(rows, schema).write.parquet(str(local))
        source = source.replace(f'read.parquet("{path}")', f'read.parquet("{local}")')
    out = where / "out"
    source, writes = re.subn(r'\.write\.parquet\("[^"]+"\)', f'.write.mode("overwrite").parquet("{out}")', source)
    assert writes == 1, "the job writes one output"
    exec(compile(source, "job.py", "exec"), {"__name__": "fixture_job"})  # noqa: S102 - our own fixture
    rows = sorted(tuple(r) for r in spark.read.parquet(str(out)).collect())
    return rows, len(list(out.glob("part-*")))


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_fixed_job_writes_the_serial_answer_in_parallel(cluster_spark, tmp_path, name):
    job = tmp_path / "job.py"
    shutil.copy(FIXTURES / name, job)
    original = job.read_text("utf-8")
    result = CliRunner().invoke(fix, ["--select", "SPX4", "--unsafe-fixes", str(job)])
    assert result.exit_code == 0, result.output
    fixed = job.read_text("utf-8")
    assert fixed != original
    assert "shuffle.partitions" not in fixed  # a count needs a profile: never part of the fix
    (tmp_path / "original").mkdir()
    (tmp_path / "fixed").mkdir()
    expected, serial_files = _run(cluster_spark, original, INPUTS[name], tmp_path / "original")
    rows, files = _run(cluster_spark, fixed, INPUTS[name], tmp_path / "fixed")
    assert rows == expected
    assert serial_files == 1 and files > 1
