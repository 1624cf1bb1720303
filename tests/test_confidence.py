"""Confidence: each finding says which of its three links the analysis established and which it
assumed, and every output, `--min-confidence`, `[tool.sparkpar] min-confidence` and the editor
follow it. Twins differ in one link only, so the lower confidence comes from that link."""

from __future__ import annotations

import json

from lsprotocol import types as lsp
from test_lsp_server import Session, _run

from sparkpar_lint.analysis import analyze
from sparkpar_lint.confidence import OBSERVED_ASSUMED
from sparkpar_lint.model import Confidence, Finding, Links

HEADER = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
readings = spark.read.parquet("in")
"""
# An order-dependent pick whose result is written: the pick and the write are seen, the data's
# variety is assumed.
FIRST_WRITTEN = (
    HEADER
    + """\
latest = readings.groupBy("meter").agg(F.first("reading"))
latest.write.parquet("out")
"""
)
# The same pick handed to code this file does not show: whether anything observes it is assumed too.
FIRST_HANDED_ON = (
    HEADER
    + """\
latest = readings.groupBy("meter").agg(F.first("reading"))
publish(latest)
"""
)
# A number that differs with the partitioning by construction, written: nothing assumed.
IDS_WRITTEN = (
    HEADER
    + """\
numbered = readings.withColumn("row_id", F.monotonically_increasing_id())
numbered.write.parquet("out")
"""
)
IDS_HANDED_ON = (
    HEADER
    + """\
numbered = readings.withColumn("row_id", F.monotonically_increasing_id())
publish(numbered)
"""
)


def _only(source: str, rule: str) -> Finding:
    found = [f for f in analyze("job.py", source) if f.rule_id == rule]
    assert len(found) == 1, found
    return found[0]


def test_an_assumed_observation_lowers_confidence_against_its_twin():
    written, handed_on = _only(FIRST_WRITTEN, "SPX101"), _only(FIRST_HANDED_ON, "SPX101")
    assert written.links == Links(outcomes=False, assumed=("a `meter` group can hold rows that differ",))
    assert written.confidence is Confidence.MEDIUM
    assert not handed_on.links.observed and handed_on.confidence is Confidence.LOW
    assert handed_on.links.assumed[-1] == OBSERVED_ASSUMED


def test_values_that_differ_by_construction_need_no_assumption():
    written, handed_on = _only(IDS_WRITTEN, "SPX105"), _only(IDS_HANDED_ON, "SPX105")
    assert written.links == Links() and written.confidence is Confidence.HIGH
    assert "holds if" not in written.message
    assert handed_on.confidence is Confidence.MEDIUM


def test_the_message_says_what_was_assumed():
    message = _only(FIRST_HANDED_ON, "SPX101").message
    assert message.endswith(f"(holds if a `meter` group can hold rows that differ, and if {OBSERVED_ASSUMED})"), message


def test_a_returned_result_is_observed():
    source = HEADER + 'def latest(df):\n    return df.groupBy("meter").agg(F.first("reading"))\n'
    assert _only(source, "SPX101").links.observed


def test_links_survive_the_cache_round_trip():
    finding = _only(FIRST_HANDED_ON, "SPX101")
    assert Finding.from_dict(json.loads(json.dumps(finding.to_dict()))).links == finding.links


def _jobs(tmp_path):
    (tmp_path / "written.py").write_text(FIRST_WRITTEN)
    (tmp_path / "handed_on.py").write_text(FIRST_HANDED_ON)
    (tmp_path / "ids.py").write_text(IDS_WRITTEN)


def test_json_carries_confidence_and_links_and_min_confidence_hides_with_a_note(sparkpar_cli, tmp_path):
    _jobs(tmp_path)
    shown = sparkpar_cli(
        "lint", ".", "--format", "json", "--no-cache", "--min-confidence", "medium", "--select", "SPX101,SPX105"
    )
    assert shown.exit_code == 1, shown.output
    findings = json.loads(shown.stdout)
    assert sorted((f["path"], f["confidence"]) for f in findings) == [("ids.py", "high"), ("written.py", "medium")]
    assert findings[0]["links"] == {
        "choice": "established",
        "outcomes": "established",
        "observed": "established",
        "assumed": [],
    }
    assert "1 finding below medium confidence not shown; `--min-confidence low` shows it" in shown.stderr

    everything = sparkpar_cli(
        "lint", ".", "--format", "json", "--no-cache", "--min-confidence", "low", "--select", "SPX101,SPX105"
    )
    assert sorted(f["confidence"] for f in json.loads(everything.stdout)) == ["high", "low", "medium"]
    assert "not shown" not in everything.stderr


def test_only_hidden_findings_exit_clean_and_rich_says_how_many(sparkpar_cli, tmp_path):
    (tmp_path / "handed_on.py").write_text(FIRST_HANDED_ON)
    result = sparkpar_cli("lint", "handed_on.py", "--no-cache", "--min-confidence", "medium", "--select", "SPX101")
    assert result.exit_code == 0, result.output
    assert "All checks passed in 1 file.\n1 finding below medium confidence not shown" in result.stdout


def test_rich_and_concise_show_confidence(sparkpar_cli, tmp_path):
    _jobs(tmp_path)
    rich = sparkpar_cli("lint", ".", "--no-cache", "--min-confidence", "low", "--select", "SPX101,SPX105")
    assert "SPX101 [error, medium confidence]" in rich.stdout
    assert "1 high confidence, 1 medium confidence, 1 low confidence" in rich.stdout
    concise = sparkpar_cli(
        "lint", ".", "--no-cache", "--format", "concise", "--min-confidence", "low", "--select", "SPX101,SPX105"
    )
    marks = sorted(line.split(": ", 1)[1].split(" ", 2)[1] for line in concise.stdout.splitlines())
    assert marks[:2] == ["[low]", "[medium]"] and not marks[2].startswith("["), marks


def test_sarif_rank_and_precision(sparkpar_cli, tmp_path):
    _jobs(tmp_path)
    result = sparkpar_cli(
        "lint", ".", "--format", "sarif", "--no-cache", "--min-confidence", "low", "--select", "SPX101,SPX105"
    )
    run = json.loads(result.stdout)["runs"][0]
    by_path = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in run["results"]}
    assert (by_path["ids.py"]["rank"], by_path["ids.py"]["properties"]["precision"]) == (90.0, "high")
    assert (by_path["written.py"]["rank"], by_path["written.py"]["properties"]["precision"]) == (60.0, "medium")
    assert by_path["handed_on.py"]["properties"]["precision"] == "low"
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["SPX101"]["properties"]["precision"] == "medium"
    assert rules["SPX105"]["properties"]["precision"] == "high"


def test_a_plain_run_shows_high_confidence_and_the_environment_can_choose(sparkpar_cli, tmp_path, monkeypatch):
    _jobs(tmp_path)
    monkeypatch.delenv("SPARKPAR_MIN_CONFIDENCE")
    plain = sparkpar_cli("lint", ".", "--format", "json", "--no-cache", "--select", "SPX101,SPX105")
    assert [f["path"] for f in json.loads(plain.stdout)] == ["ids.py"]
    assert "2 findings below high confidence not shown; `--min-confidence low` shows them" in plain.stderr

    monkeypatch.setenv("SPARKPAR_MIN_CONFIDENCE", "medium")
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nmin-confidence = "high"\n')
    chosen = sparkpar_cli("lint", ".", "--format", "json", "--no-cache", "--select", "SPX101,SPX105")
    assert sorted(f["path"] for f in json.loads(chosen.stdout)) == ["ids.py", "written.py"]
    # The command line wins over the environment.
    flag = sparkpar_cli("lint", ".", "--format", "json", "--no-cache", "--min-confidence", "low", "--select", "SPX101")
    assert len(json.loads(flag.stdout)) == 2

    monkeypatch.setenv("SPARKPAR_MIN_CONFIDENCE", "sure")
    bad = sparkpar_cli("lint", ".")
    assert bad.exit_code == 2 and "expected high, medium or low, got 'sure'" in bad.output
    assert "SPARKPAR_MIN_CONFIDENCE" in bad.output


# A window ordered over every row, written: one task computes it, and the result is the same
# whatever the partitioning, so nothing about it can be wrong, only slow.
SERIAL_WINDOW = (
    HEADER
    + """\
from pyspark.sql import Window

ranked = readings.withColumn("n", F.row_number().over(Window.orderBy("at")))
ranked.write.parquet("out")
"""
)


def test_a_performance_finding_is_low_and_says_the_result_is_the_same(sparkpar_cli, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARKPAR_MIN_CONFIDENCE")
    (tmp_path / "serial.py").write_text(SERIAL_WINDOW)
    plain = sparkpar_cli("lint", "serial.py", "--format", "json", "--no-cache", "--select", "SPX401")
    assert plain.exit_code == 0 and json.loads(plain.stdout) == [], plain.output
    assert "1 finding below high confidence not shown; `--min-confidence low` shows it" in plain.stderr

    shown = sparkpar_cli("lint", "serial.py", "--format", "json", "--no-cache", "--min-confidence", "low")
    (finding,) = [f for f in json.loads(shown.stdout) if f["rule"] == "SPX401"]
    assert finding["confidence"] == "low"
    assert finding["links"] == {"choice": "none", "outcomes": "none", "observed": "none", "assumed": [], "cost": True}
    assert finding["message"].endswith("(performance only: the result is the same, it is computed in one task)")
    sarif = sparkpar_cli("lint", "serial.py", "--format", "sarif", "--no-cache", "--min-confidence", "low")
    run = json.loads(sarif.stdout)["runs"][0]
    assert {r["ruleId"]: r["rank"] for r in run["results"]}["SPX401"] == 30.0
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["SPX401"]["properties"]["precision"] == rules["SPX402"]["properties"]["precision"] == "low"


# Seeded test data: the same input and configuration draw the same values, so that they differ
# needs another partitioning. The same seeded draw deciding which rows a sample keeps is reported
# as before.
SEEDED = (
    HEADER
    + """\
people = spark.range(1000).withColumn("age", (F.rand(seed=7) * 80).cast("int"))
people.write.parquet("people")
picked = readings.withColumn("r", F.rand(seed=7)).filter("r < 0.1")
picked.write.parquet("picked")
"""
)


def test_a_seeded_value_column_assumes_the_partitioning_changes(sparkpar_cli, tmp_path):
    (tmp_path / "seeded.py").write_text(SEEDED)
    result = sparkpar_cli("lint", "seeded.py", "--format", "json", "--no-cache", "--select", "SPX105")
    found = {f["line"]: f for f in json.loads(result.stdout)}
    assert sorted((line, f["confidence"]) for line, f in found.items()) == [(5, "medium"), (7, "high")]
    assert found[5]["links"]["outcomes"] == "assumed"
    assert found[5]["message"].endswith(
        "(holds if the values must repeat on a run whose input has another partition count or row order)"
    )


def test_config_min_confidence_and_bad_values(sparkpar_cli, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARKPAR_MIN_CONFIDENCE")
    _jobs(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nmin-confidence = "high"\n')
    result = sparkpar_cli("lint", ".", "--format", "json", "--no-cache", "--select", "SPX101,SPX105")
    assert [f["path"] for f in json.loads(result.stdout)] == ["ids.py"]
    assert "2 findings below high confidence not shown" in result.stderr
    # The command line wins over the file.
    result = sparkpar_cli(
        "lint", ".", "--format", "json", "--no-cache", "--min-confidence", "medium", "--select", "SPX101,SPX105"
    )
    assert len(json.loads(result.stdout)) == 2

    bad = sparkpar_cli("lint", ".", "--min-confidence", "sure")
    assert bad.exit_code == 2 and "expected high, medium or low, got 'sure'" in bad.output
    (tmp_path / "pyproject.toml").write_text("[tool.sparkpar]\nmin-confidence = 3\n")
    bad = sparkpar_cli("lint", ".")
    assert bad.exit_code == 2
    assert "pyproject.toml: [tool.sparkpar] min-confidence: expected high, medium or low, got '3'" in bad.output
    assert "Traceback" not in bad.output


def test_the_editor_shows_findings_below_the_threshold_as_hints(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARKPAR_MIN_CONFIDENCE")  # the server inherits the environment
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nselect = ["SPX101"]\nmin-confidence = "medium"\n')

    async def scenario():
        async with Session(tmp_path) as session:
            written = session.open(tmp_path / "written.py", FIRST_WRITTEN)
            first = await session.diagnostics(written)
            handed_on = session.open(tmp_path / "handed_on.py", FIRST_HANDED_ON)
            second = await session.diagnostics(handed_on)
            return first, second

    first, second = _run(scenario())
    (shown,) = first
    (hint,) = second
    assert shown.severity == lsp.DiagnosticSeverity.Error and shown.data["confidence"] == "medium"
    assert hint.severity == lsp.DiagnosticSeverity.Hint and hint.data["confidence"] == "low"
    assert "holds if" in hint.message
