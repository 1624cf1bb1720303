"""The observed link, erased: a choice whose result reaches only row counts it cannot change is no
finding; one whose result reaches only a preview, or nothing, stays at the lowest confidence and
says so. Each case has a twin whose result is kept, so the difference comes from the erasure."""

from __future__ import annotations

import json

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.confidence import ERASED
from sparkpar_lint.model import PREVIEW, UNUSED, Confidence, Finding

HEADER = """\
from pyspark.sql import SparkSession, Window, functions as F

spark = SparkSession.builder.getOrCreate()
readings = spark.read.parquet("in")
"""
DEDUP = 'latest = readings.dropDuplicates(["meter"])\n'
WRITTEN = HEADER + DEDUP + 'latest.write.parquet("out")\n'

# Each keeps or drops rows by their key alone, then only counts them: no count can differ. The
# name bound to the result, for its twin that also writes it.
COUNTED = [
    ("SPX102", "latest", DEDUP + "print(latest.count())\n"),
    ("SPX102", "latest", DEDUP + 'print(f"{latest.count()} meters")\n'),
    ("SPX102", "latest", DEDUP + "if latest.isEmpty():\n    raise SystemExit(1)\n"),
    ("SPX102", "latest", 'latest = readings.dropDuplicates(["meter"]).cache()\nn = latest.distinct().count()\n'),
    ("SPX102", "latest", DEDUP + "latest.printSchema()\nprint(latest.count())\n"),
    (
        "SPX104",
        "numbered",
        'w = Window.partitionBy("meter").orderBy("day")\n'
        'numbered = readings.withColumn("n", F.row_number().over(w)).select("meter", "n")\n'
        "print(numbered.count())\n",
    ),
    (
        "SPX101",
        "firsts",
        'firsts = readings.groupBy("meter").agg(F.first("reading"))\nif firsts.count() == 0:\n    print("none")\n',
    ),
]


def _of(source: str, rule: str) -> list[Finding]:
    return [f for f in analyze("job.py", source) if f.rule_id == rule]


@pytest.mark.parametrize(("rule", "name", "body"), COUNTED, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(COUNTED)])
def test_a_result_only_counted_is_no_finding(rule, name, body):
    assert _of(HEADER + body, rule) == []
    # The same choice, its result also written: the finding is back.
    assert len(_of(HEADER + body + f'{name}.write.parquet("out")\n', rule)) == 1


def test_a_count_that_reads_the_chosen_values_keeps_the_finding():
    (finding,) = _of(HEADER + DEDUP + "print(latest.filter(latest.reading > 3).count())\n", "SPX102")
    assert finding.links.erased is None and not finding.links.observed
    # Not every column is still there: `distinct` can merge rows that differ only in what was chosen.
    (finding,) = _of(HEADER + DEDUP + 'print(latest.select("reading").distinct().count())\n', "SPX102")
    assert finding.links.erased is None


def test_a_name_another_branch_may_bind_is_followed_to_its_later_reads():
    source = HEADER + (
        "import sys\n"
        "if sys.argv[1] == 'dedup':\n"
        '    latest = readings.dropDuplicates(["meter"])\n'
        '    print(latest.select("meter", "reading").count())\n'
        "else:\n"
        "    latest = readings\n"
        "publish(latest)\n"
    )
    (finding,) = _of(source, "SPX102")
    assert finding.links.erased is None


PREVIEWS = [
    DEDUP + "latest.show(5)\n",
    DEDUP + "print(latest.count())\nlatest.show()\n",
    'display(readings.dropDuplicates(["meter"]))\n',
    DEDUP + "latest.toPandas().head()\n",
    DEDUP + "sample = latest.limit(5).toPandas()\nsample.head()\n",
    DEDUP + 'print(", ".join(str(r) for r in latest.take(3)))\n',
    DEDUP + 'rows = latest.take(3)\nprint(f"first rows: {rows}")\n',
]


@pytest.mark.parametrize("body", PREVIEWS)
def test_a_result_only_previewed_is_low_and_says_so(body):
    findings = _of(HEADER + body, "SPX102")
    assert [f.links.erased for f in findings] == [PREVIEW]
    assert findings[0].confidence is Confidence.LOW
    assert findings[0].message.endswith(f"({ERASED[PREVIEW]})")


def test_a_preview_lowers_even_a_finding_that_assumed_nothing_else():
    """Row ids differ by construction: written, the finding is high; shown, it is low."""
    numbered = 'numbered = readings.withColumn("row_id", F.monotonically_increasing_id())\n'
    (written,) = _of(HEADER + numbered + 'numbered.write.parquet("out")\n', "SPX105")
    (shown,) = _of(HEADER + numbered + "display(numbered)\n", "SPX105")
    assert written.confidence is Confidence.HIGH
    assert shown.confidence is Confidence.LOW and shown.links.outcomes and shown.links.erased == PREVIEW
    assert "holds if" not in shown.message


def test_rows_collected_and_used_in_code_are_observed():
    (finding,) = _of(HEADER + DEDUP + "rows = latest.toPandas()\nrows.to_csv('out.csv')\n", "SPX102")
    assert finding.links.observed and finding.links.erased is None


def test_an_unused_result_is_low_and_says_so():
    """A deduplication whose only `show()` is commented out: it matters as soon as it is back."""
    (finding,) = _of(HEADER + DEDUP + "# latest.show()\n", "SPX102")
    assert finding.links.erased == UNUSED and finding.confidence is Confidence.LOW
    assert finding.message.endswith(f"({ERASED[UNUSED]})")


def test_erased_links_survive_the_cache_round_trip():
    (finding,) = _of(HEADER + DEDUP + "latest.show(5)\n", "SPX102")
    assert Finding.from_dict(json.loads(json.dumps(finding.to_dict()))).links == finding.links


def test_the_cli_reports_the_erasure(sparkpar_cli, tmp_path):
    (tmp_path / "counted.py").write_text(HEADER + COUNTED[3][2])
    (tmp_path / "shown.py").write_text(HEADER + DEDUP + "latest.show(5)\n")
    (tmp_path / "unused.py").write_text(HEADER + DEDUP)
    (tmp_path / "written.py").write_text(WRITTEN)

    result = sparkpar_cli(
        "lint", ".", "--format", "json", "--no-cache", "--min-confidence", "low", "--select", "SPX102"
    )
    assert result.exit_code == 1, result.output
    findings = {f["path"]: f for f in json.loads(result.stdout)}
    assert sorted(findings) == ["shown.py", "unused.py", "written.py"]
    shown, unused = findings["shown.py"], findings["unused.py"]
    assert (shown["confidence"], shown["links"]["observed"], shown["links"]["erased_by"]) == (
        "low",
        "erased",
        "preview",
    )
    assert shown["message"].endswith(
        "(only shown in a preview: another run may show other rows, nothing computed from them changes)"
    )
    assert (unused["confidence"], unused["links"]["observed"], unused["links"]["erased_by"]) == (
        "low",
        "erased",
        "unused",
    )
    assert unused["message"].endswith("(its result is not used: it matters once something reads it)")
    assert findings["written.py"]["confidence"] == "medium" and "erased_by" not in findings["written.py"]["links"]

    medium = sparkpar_cli(
        "lint", ".", "--format", "json", "--no-cache", "--min-confidence", "medium", "--select", "SPX102"
    )
    assert [f["path"] for f in json.loads(medium.stdout)] == ["written.py"]
    assert "2 findings below medium confidence not shown" in medium.stderr


def test_a_function_local_is_followed_only_in_its_function():
    """`latest` in another function is another variable: it neither keeps nor shows this one."""
    source = HEADER + (
        "def look():\n"
        '    latest = readings.dropDuplicates(["meter"])\n'
        "    latest.show(5)\n"
        "\n"
        "\n"
        "def keep(latest):\n"
        "    publish(latest)\n"
    )
    assert [f.links.erased for f in _of(source, "SPX102")] == [PREVIEW]
