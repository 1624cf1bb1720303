"""SARIF from a real `sparkpar lint` run: fixes that really fix, noqa as suppressions (on request),
and fingerprints that survive unrelated edits — all valid against the full SARIF 2.1.0 schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from test_output_formats import SARIF_SCHEMA

JOB = """\
from pyspark.sql import functions as F


def latest(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v"))


def quiet(df):
    return df.groupBy("k").agg(F.first("v"))  # noqa: SPX101
"""


def _sarif(sparkpar_cli, *paths: str) -> dict:
    result = sparkpar_cli(
        "lint", "--no-cache", "--select", "SPX101", "--format", "sarif", "--include-suppressed", *paths
    )
    log = json.loads(result.output)
    jsonschema.validate(log, SARIF_SCHEMA)
    return log["runs"][0]


def _apply(source: str, fix: dict) -> str:
    (change,) = fix["artifactChanges"]
    for replacement in sorted(change["replacements"], key=lambda r: -r["deletedRegion"]["charOffset"]):
        region = replacement["deletedRegion"]
        start, end = region["charOffset"], region["charOffset"] + region["charLength"]
        source = source[:start] + replacement.get("insertedContent", {}).get("text", "") + source[end:]
    return source


def test_fix_suppression_and_fingerprint_are_valid_sarif(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    run = _sarif(sparkpar_cli, "job.py")
    assert run["columnKind"] == "unicodeCodePoints"
    reported, silenced = run["results"]
    assert reported["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert "suppressions" not in reported
    assert silenced["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    assert silenced["suppressions"] == [{"kind": "inSource"}] and "fixes" not in silenced
    (fix,) = reported["fixes"]
    assert fix["properties"]["safety"] == "safe"
    assert fix["artifactChanges"][0]["artifactLocation"]["uri"] == "job.py"
    fingerprints = {r["partialFingerprints"]["sparkparFindingHash/v1"] for r in run["results"]}
    assert len(fingerprints) == 2


def test_the_sarif_fix_makes_the_finding_go_away(sparkpar_cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    (reported, _) = _sarif(sparkpar_cli, "job.py")["results"]
    fixed = _apply(JOB, reported["fixes"][0])
    assert 'F.min(F.struct("ts", "v")).getField("v")' in fixed
    job.write_text(fixed)
    run = _sarif(sparkpar_cli, "job.py")
    assert [r.get("suppressions") for r in run["results"]] == [[{"kind": "inSource"}]]


def test_fingerprints_survive_edits_that_move_the_finding(sparkpar_cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    before = [r["partialFingerprints"] for r in _sarif(sparkpar_cli, "job.py")["results"]]
    job.write_text(
        '"""Daily jobs."""\n\nimport os\n' + JOB.replace("def latest(df):", "def latest(df):\n    os.getcwd()")
    )
    after = _sarif(sparkpar_cli, "job.py")["results"]
    assert after[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    assert [r["partialFingerprints"] for r in after] == before


def test_identical_findings_get_distinct_fingerprints(sparkpar_cli, tmp_path):
    twice = JOB + '\n\ndef again(df):\n    return df.orderBy("ts").groupBy("k").agg(F.first("v"))\n'
    (tmp_path / "job.py").write_text(twice)
    run = _sarif(sparkpar_cli, "job.py")
    prints = [r["partialFingerprints"]["sparkparFindingHash/v1"] for r in run["results"]]
    assert len(prints) == 3 and len(set(prints)) == 3


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: r["suppressions"][0].update(kind="inline"),
        lambda r: r["partialFingerprints"].update(x=1),
        lambda r: r.setdefault("fixes", [{"artifactChanges": []}]),
    ],
)
def test_schema_rejects_malformed_fix_suppression_and_fingerprint(sparkpar_cli, tmp_path, damage):
    (tmp_path / "job.py").write_text(JOB)
    result = sparkpar_cli(
        "lint", "--no-cache", "--select", "SPX101", "--format", "sarif", "--include-suppressed", "job.py"
    )
    log = json.loads(result.output)
    damage(log["runs"][0]["results"][1])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SARIF_SCHEMA)


def test_suppressed_findings_are_cached_too(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    first = sparkpar_cli("lint", "--select", "SPX101", "--format", "sarif", "--include-suppressed", "job.py").output
    assert any(Path(tmp_path, ".sparkpar_cache").glob("*.json"))
    second = sparkpar_cli("lint", "--select", "SPX101", "--format", "sarif", "--include-suppressed", "job.py").output
    assert json.loads(second)["runs"][0]["results"] == json.loads(first)["runs"][0]["results"]


def test_suppressed_findings_are_left_out_unless_asked_for(sparkpar_cli, tmp_path):
    # Code scanning shows a result with `suppressions` as an open alert: by default they are not sent.
    (tmp_path / "job.py").write_text(JOB)
    result = sparkpar_cli("lint", "--no-cache", "--select", "SPX101", "--format", "sarif", "job.py")
    log = json.loads(result.output)
    jsonschema.validate(log, SARIF_SCHEMA)
    (reported,) = log["runs"][0]["results"]
    assert reported["locations"][0]["physicalLocation"]["region"]["startLine"] == 5


def test_the_comments_reason_is_the_suppressions_justification(sparkpar_cli, tmp_path):
    reasons = JOB.replace("# noqa: SPX101", "# sparkpar: ignore[SPX101] -- one row per key: upstream deduplicates") + (
        '\n\ndef bare(df):\n    return df.groupBy("k").agg(F.first("v"))  # noqa: SPX101 --   \n'
    )
    (tmp_path / "job.py").write_text(reasons)
    _, justified, bare = _sarif(sparkpar_cli, "job.py")["results"]
    assert justified["suppressions"] == [
        {"kind": "inSource", "justification": "one row per key: upstream deduplicates"}
    ]
    assert bare["suppressions"] == [{"kind": "inSource"}]  # ` -- ` with no text is no reason


def test_the_run_is_one_code_scanning_analysis_of_its_own(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    assert _sarif(sparkpar_cli, "job.py")["automationDetails"] == {"id": "sparkpar/lint/"}


def test_every_fix_over_the_fixtures_is_valid_sarif(sparkpar_cli):
    # The fixtures draw fixes of every kind; the full schema rejects a fix that changes nothing
    # (`artifactChanges` and `replacements` need at least one entry; finding_fixes drops those).
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    result = sparkpar_cli("lint", "--no-cache", "--format", "sarif", str(fixtures))
    log = json.loads(result.output)
    jsonschema.validate(log, SARIF_SCHEMA)
    assert sum("fixes" in r for r in log["runs"][0]["results"]) > 20


def test_the_sarif_fix_uses_the_projects_settings(sparkpar_cli, tmp_path):
    # The fix SARIF carries is the one `sparkpar fix` writes: the configured watermark delay, not
    # the default.
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nwatermark-delay = "2 hours"\n')
    (tmp_path / "job.py").write_text(COUNTS_ON_CONSOLE)
    result = sparkpar_cli("lint", "--no-cache", "--select", "SPX204", "--format", "sarif", "job.py")
    (reported,) = json.loads(result.output)["runs"][0]["results"]
    fixed = _apply(COUNTS_ON_CONSOLE, reported["fixes"][0])
    assert 'withWatermark("timestamp", "2 hours")' in fixed, fixed


COUNTS_ON_CONSOLE = """\
from pyspark.sql import SparkSession
from pyspark.sql.functions import window

spark = SparkSession.builder.getOrCreate()
counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
counts.writeStream.outputMode("complete").format("console").start()
"""
