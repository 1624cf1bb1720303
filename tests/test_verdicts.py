"""`sparkpar lint --verdicts` and the `verdicts` setting: what `pytest --sparkpar-confirm` found is
said on each finding, in every format and in the editor, matched by fingerprint (the real CLI, a
real LSP session)."""

from __future__ import annotations

import json

import pytest
from test_lsp_server import Session, _run

JOB = """\
from pyspark.sql import functions as F


def latest(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v"))
"""


def _fingerprint(sparkpar_cli, rule: str) -> str:
    sarif = json.loads(sparkpar_cli("lint", "--no-cache", "--format", "sarif", "job.py").output)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == rule]
    return result["partialFingerprints"]["sparkparFindingHash/v1"]


def _write_verdicts(path, key: str, **entry) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    verdict = {"verdict": "confirmed", "tests": ["tests/test_job.py::test_latest"], "runs": 3, "seed": 42}
    verdict["replay"] = "pytest tests/test_job.py::test_latest --sparkpar-determinism --sparkpar-seed=42"
    path.write_text(json.dumps({"version": 1, "verdicts": {key: {**verdict, **entry}}}))


@pytest.fixture
def project(tmp_path, sparkpar_cli):
    (tmp_path / "job.py").write_text(JOB)
    _write_verdicts(tmp_path / ".sparkpar" / "verdicts.json", _fingerprint(sparkpar_cli, "SPX101"))
    return tmp_path


def test_a_confirmed_finding_says_which_test_and_seed(project, sparkpar_cli):
    result = sparkpar_cli("lint", "--no-cache", "--format", "json", "--verdicts", ".sparkpar/verdicts.json", "job.py")
    assert result.exit_code == 1, result.output
    by_rule = {f["rule"]: f for f in json.loads(result.output)}
    assert by_rule["SPX101"]["verdict"] == "confirmed"
    assert by_rule["SPX101"]["message"].endswith(
        "[confirmed by test `tests/test_job.py::test_latest` with seed 42 (replay: pytest "
        "tests/test_job.py::test_latest --sparkpar-determinism --sparkpar-seed=42)]"
    )
    assert "verdict" not in by_rule["SPX107"]  # no verdict for it: nothing said


def test_verdicts_follow_the_finding_when_lines_move_above_it(project, sparkpar_cli):
    (project / "job.py").write_text('"""Daily jobs."""\n\nimport os\n' + JOB)
    result = sparkpar_cli("lint", "--no-cache", "--format", "json", "--verdicts", ".sparkpar/verdicts.json", "job.py")
    (spx101,) = [f for f in json.loads(result.output) if f["rule"] == "SPX101"]
    assert spx101["line"] == 8 and spx101["verdict"] == "confirmed"


def test_not_reproduced_and_unreached_are_said_never_hidden(project, sparkpar_cli):
    key = _fingerprint(sparkpar_cli, "SPX101")
    path = project / ".sparkpar" / "verdicts.json"
    _write_verdicts(path, key, verdict="not-reproduced", runs=8, perturbations=["adaptive execution"])
    result = sparkpar_cli("lint", "--no-cache", "--format", "concise", "--verdicts", str(path), "job.py")
    assert "not reproduced: 8 targeted runs (adaptive execution) of `tests/test_job.py::test_latest`" in result.output
    _write_verdicts(path, key, verdict="unreached", tests=[], runs=0)
    result = sparkpar_cli("lint", "--no-cache", "--format", "concise", "--verdicts", str(path), "job.py")
    assert "SPX101" in result.output and "no test executes this line" in result.output


def test_the_setting_names_the_file_relative_to_the_config(project, sparkpar_cli):
    (project / "pyproject.toml").write_text('[tool.sparkpar]\nverdicts = ".sparkpar/verdicts.json"\n')
    result = sparkpar_cli("lint", "--no-cache", "--format", "json", "job.py")
    assert [f.get("verdict") for f in json.loads(result.output) if f["rule"] == "SPX101"] == ["confirmed"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not a verdicts file (invalid JSON"),
        ('{"version": 7, "verdicts": {}}', "not a verdicts file (expected"),
        ('{"version": 1, "verdicts": {"abc": {"verdict": "maybe"}}}', "verdict 'abc': `verdict` must be one of"),
        ('{"version": 1, "verdicts": {"abc": {"verdict": "confirmed", "runs": "3"}}}', "must be whole numbers"),
    ],
)
def test_a_bad_verdicts_file_is_one_message_and_exit_2(project, sparkpar_cli, content, why):
    (project / "bad.json").write_text(content)
    result = sparkpar_cli("lint", "--no-cache", "--verdicts", "bad.json", "job.py")
    assert result.exit_code == 2
    assert why in result.output and "bad.json" in result.output and "Traceback" not in result.output


def test_a_bad_setting_names_the_key(project, sparkpar_cli):
    (project / "pyproject.toml").write_text("[tool.sparkpar]\nverdicts = 3\n")
    result = sparkpar_cli("lint", "--no-cache", "job.py")
    assert (
        result.exit_code == 2
        and "verdicts" in result.output
        and "expected the path of a verdicts file" in result.output
    )


def test_the_editor_shows_the_verdict(project):
    (project / "pyproject.toml").write_text('[tool.sparkpar]\nverdicts = ".sparkpar/verdicts.json"\n')

    async def scenario():
        async with Session(project) as session:
            uri = session.open(project / "job.py", JOB)
            return await session.diagnostics(uri)

    messages = [d.message for d in _run(scenario()) if d.code == "SPX101"]
    assert len(messages) == 1 and "confirmed by test `tests/test_job.py::test_latest` with seed 42" in messages[0]


def test_confirmed_is_high_confidence_and_very_high_sarif_precision(project, sparkpar_cli):
    result = sparkpar_cli("lint", "--no-cache", "--format", "json", "--verdicts", ".sparkpar/verdicts.json", "job.py")
    (spx101,) = [f for f in json.loads(result.output) if f["rule"] == "SPX101"]
    assert spx101["confidence"] == "high"
    sarif = json.loads(
        sparkpar_cli(
            "lint", "--no-cache", "--format", "sarif", "--verdicts", ".sparkpar/verdicts.json", "job.py"
        ).output
    )
    (confirmed,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "SPX101"]
    assert confirmed["properties"]["precision"] == "very-high" and confirmed["rank"] == 100.0
    assert confirmed["properties"]["verdict"] == "confirmed"


def test_not_reproduced_drops_a_confidence_level(project, sparkpar_cli):
    before = json.loads(sparkpar_cli("lint", "--no-cache", "--format", "json", "job.py").output)
    (plain,) = [f["confidence"] for f in before if f["rule"] == "SPX101"]
    path = project / ".sparkpar" / "verdicts.json"
    _write_verdicts(path, _fingerprint(sparkpar_cli, "SPX101"), verdict="not-reproduced", runs=8)
    result = sparkpar_cli("lint", "--no-cache", "--format", "json", "--verdicts", str(path), "job.py")
    (lowered,) = [f["confidence"] for f in json.loads(result.output) if f["rule"] == "SPX101"]
    assert (plain, lowered) in {("high", "medium"), ("medium", "low"), ("low", "low")}, (plain, lowered)
    assert plain != "low"
