"""`sparkpar fix` with a verdicts file names the test that proves each fix (the real CLI)."""

from __future__ import annotations

import json

JOB = """\
from pyspark.sql import Window
from pyspark.sql import functions as F


def latest(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v"))


def newest(df):
    w = Window.partitionBy("k").orderBy(F.col("ts").desc())
    return df.withColumn("n", F.row_number().over(w))
"""
REPLAY = "pytest 'tests/test_job.py::test_latest[a b]' --sparkpar-determinism --sparkpar-seed=42 --sparkpar-runs=4"


def _write_verdicts(sparkpar_cli, path, kinds: dict[str, str]) -> None:
    """One verdict per finding of job.py, of the kind `kinds` gives its rule."""
    sarif = json.loads(sparkpar_cli("lint", "--no-cache", "--format", "sarif", "job.py").output)
    entries = {}
    for result in sarif["runs"][0]["results"]:
        kind = kinds.get(result["ruleId"])
        if kind is not None:
            entry = {"verdict": kind, "tests": ["tests/test_job.py::test_latest[a b]"], "runs": 4}
            if kind in ("confirmed", "implicated"):
                entry.update(seed=42, replay=REPLAY)
            entries[result["partialFingerprints"]["sparkparFindingHash/v1"]] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "verdicts": entries}))


def test_a_confirmed_fix_names_the_test_and_seed_that_prove_it(tmp_path, sparkpar_cli):
    (tmp_path / "job.py").write_text(JOB)
    _write_verdicts(sparkpar_cli, tmp_path / "v.json", {"SPX101": "confirmed", "SPX104": "unreached"})
    result = sparkpar_cli("fix", "--unsafe-fixes", "--verdicts", "v.json", "job.py")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Fixed 2 findings in 1 file."
    assert lines[1:] == [
        "job.py:6:46: SPX101 was confirmed by a test: re-run "
        "`pytest 'tests/test_job.py::test_latest[a b]' --sparkpar-confirm --sparkpar-seed=42 --sparkpar-runs=4` "
        "to prove the fix",
        "job.py:11:31: SPX104 no test executes this line: nothing proves its fix yet",
    ]


def test_implicated_is_named_and_not_reproduced_is_not(tmp_path, sparkpar_cli):
    (tmp_path / "job.py").write_text(JOB)
    _write_verdicts(sparkpar_cli, tmp_path / "v.json", {"SPX101": "implicated", "SPX104": "not-reproduced"})
    result = sparkpar_cli("fix", "--unsafe-fixes", "--check", "--verdicts", "v.json", "job.py")
    assert result.exit_code == 1
    (line,) = [line for line in result.output.splitlines() if line.startswith("job.py")]
    assert line.startswith("job.py:6:46: SPX101 was implicated by a failing test that reaches other findings too")
    assert "--sparkpar-confirm --sparkpar-seed=42" in line
    assert (tmp_path / "job.py").read_text() == JOB  # --check writes nothing


def test_the_setting_is_read_and_no_verdicts_means_no_lines(tmp_path, sparkpar_cli):
    (tmp_path / "job.py").write_text(JOB)
    _write_verdicts(sparkpar_cli, tmp_path / ".sparkpar" / "verdicts.json", {"SPX101": "confirmed"})
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nverdicts = ".sparkpar/verdicts.json"\n')
    result = sparkpar_cli("fix", "--diff", "--unsafe-fixes", "job.py")
    assert "SPX101 was confirmed by a test" in result.output
    (tmp_path / "pyproject.toml").unlink()
    result = sparkpar_cli("fix", "--diff", "--unsafe-fixes", "job.py")
    assert "confirmed" not in result.output and "proves" not in result.output


def test_a_bad_verdicts_file_stops_before_anything_is_rewritten(tmp_path, sparkpar_cli):
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / "v.json").write_text("{not json")
    result = sparkpar_cli("fix", "--unsafe-fixes", "--verdicts", "v.json", "job.py")
    assert result.exit_code == 2
    assert result.output.startswith("sparkpar: error: v.json: not a verdicts file (invalid JSON")
    assert "Traceback" not in result.output
    assert (tmp_path / "job.py").read_text() == JOB
