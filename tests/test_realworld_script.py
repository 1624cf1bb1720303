"""bench/realworld.py on a tiny snapshot written here: its counts, recall and precision, its
matching of findings to cases, and its `--fix` report, with the real `sparkpar` command."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "realworld.py"
COMMIT = "0" * 40

JOB = '''\
"""Sensor readings, written for this test."""
from pyspark.sql import functions as F


def latest(readings):
    return readings.orderBy("ts").groupBy("sensor").agg(F.last("value").alias("value"))


def one_per_sensor(readings):
    return readings.dropDuplicates(["sensor"])


def one_per_sensor_day(readings):
    return readings.dropDuplicates(["sensor", "day"])


def total(readings):
    return readings.groupBy("sensor").agg(F.sum("value"))
'''


def case(line: int, rule: str | None, verdict: str, **extra) -> dict:
    return {
        "repo": "someone/sensors",
        "commit": COMMIT,
        "path": "jobs/daily.py",
        "line": line,
        "rule": rule,
        "verdict": verdict,
        "kind": "batch",
        "reason": f"test {verdict}",
        **extra,
    }


CASES = [
    case(6, "SPX101", "TP", expected_rule="SPX101"),  # reported: a true finding
    case(10, "SPX102", "FP"),  # reported: judged false here
    case(13, "SPX102", "debatable", end_line=14),  # reported on line 14, inside the range
    case(18, None, "FN", expected_rule="SPX101"),  # a plain sum: never reported, a miss
]


@pytest.fixture
def corpus(tmp_path: Path) -> dict:
    job = tmp_path / "snapshots" / "someone+sensors" / "jobs" / "daily.py"
    job.parent.mkdir(parents=True)
    job.write_text(JOB, encoding="utf-8")
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES), encoding="utf-8")
    snapshots = tmp_path / "snapshots.json"
    snapshots.write_text(json.dumps([{"repo": "someone/sensors", "commit": COMMIT}]), encoding="utf-8")
    return {"dir": tmp_path / "snapshots", "cases": cases, "snapshots": snapshots, "job": job}


def run_script(corpus: dict, *extra: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(corpus["dir"]),
            "--cases",
            str(corpus["cases"]),
            "--snapshots",
            str(corpus["snapshots"]),
            "--split",
            "all",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_recall_and_precision_printed_per_rule_and_overall(corpus):
    out = run_script(corpus)
    rows = {
        line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("SPX101 ", "SPX102 ", "ALL "))
    }
    # rule real found recall true false debatable precision unjudged
    assert rows["SPX101"][1:8] == ["2", "1", "50%", "1", "0", "0", "100%"]
    assert rows["SPX102"][1:8] == ["0", "0", "-", "0", "1", "1", "0%"]
    assert rows["ALL"][1:8] == ["2", "1", "50%", "1", "1", "1", "50%"]
    misses = out.split("Misses: real problems not reported now (1)\n")[1]
    assert misses.startswith("  someone/sensors jobs/daily.py:18  SPX101  [batch] test FN")
    false_positives = out.split("False positives still reported (1)\n")[1]
    assert false_positives.startswith("  someone/sensors jobs/daily.py:10  SPX102")


def test_json_figures_and_unjudged_findings(corpus):
    figures = json.loads(run_script(corpus, "--json"))
    assert figures["rules"]["ALL"]["recall"] == 0.5
    assert figures["rules"]["ALL"]["precision"] == 0.5
    assert [c["line"] for c in figures["misses"]] == [18]
    # Every finding now that no case judges is listed, none that a case judges.
    judged_lines = {6, 10, 14}
    assert all(f["line"] not in judged_lines or f["rule"] not in {"SPX101", "SPX102"} for f in figures["unjudged"])
    assert figures["missing_snapshots"] == [] and figures["repos_without_commit"] == []


def test_splits_batches_and_repositories_summarised(corpus):
    realworld = load_script()
    # The fixed hash: this repository falls in test, so the default dev listing leaves it out.
    assert realworld.split("someone/sensors") == "test"
    figures = json.loads(run_script(corpus, "--json"))["summary"]
    groups = figures["groups"]
    assert groups["all"]["precision"] == 0.5 and groups["all"]["precision_debatable_false"] == 1 / 3
    assert groups["test"]["cases"] == 4 and groups["dev"]["cases"] == 0
    assert groups["batch corpus"]["max_findings_per_repo"] == groups["all"]["max_findings_per_repo"]
    row = figures["repos"]["someone/sensors"]
    assert (row["true"], row["false"], row["debatable"]) == (1, 1, 1)
    # Every finding carries a confidence: each level's cases add up to the cases found.
    levels = {name: row for name, row in figures["confidence"].items() if not name.startswith(">=")}
    assert sum(row["true"] + row["false"] + row["debatable"] for row in levels.values()) == 3


def test_confidence_levels_scored_when_findings_carry_them():
    realworld = load_script()
    cases = [{**c, "repo": "a/b"} for c in CASES]
    findings = [
        {"repo": "a/b", "path": "jobs/daily.py", "line": 6, "rule": "SPX101", "confidence": "high"},
        {"repo": "a/b", "path": "jobs/daily.py", "line": 10, "rule": "SPX102", "confidence": "low"},
        {"repo": "a/b", "path": "jobs/daily.py", "line": 14, "rule": "SPX102", "confidence": "medium"},
    ]
    levels = realworld.summary(cases, findings, {"a/b": "fresh-1"})["confidence"]
    assert levels[">= high all"]["precision"] == 1.0 and levels[">= high all"]["recall"] == 0.5
    assert levels[">= medium all"]["precision_debatable_false"] == 0.5
    assert levels["low"]["false"] == 1 and levels["low"]["true"] == 0


def test_a_missing_snapshot_counts_its_problems_as_not_found(corpus, tmp_path):
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    figures = json.loads(run_script({**corpus, "dir": empty}, "--json"))
    assert figures["missing_snapshots"] == ["someone/sensors"]
    assert figures["rules"]["ALL"]["found"] == 0 and figures["rules"]["ALL"]["real"] == 2


def test_fix_report_on_a_copy_leaves_the_snapshot_alone(corpus):
    figures = json.loads(run_script(corpus, "--json", "--fix"))
    fix = figures["fix"]
    assert fix["changed"] == ["someone/sensors jobs/daily.py"]  # the SPX101 fix is safe
    assert fix["before"]["SPX101"] == 1 and fix["after"].get("SPX101", 0) == 0
    assert corpus["job"].read_text(encoding="utf-8") == JOB


def load_script():
    spec = importlib.util.spec_from_file_location("realworld", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["realworld"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_matching_by_line_range_rule_and_cell():
    realworld = load_script()
    nb = {"repo": "a/b", "path": "n.ipynb", "line": 2, "end_line": 3, "cell": 4, "rule": "SPX104", "verdict": "TP"}
    finding = {"repo": "a/b", "path": "n.ipynb", "line": 3, "rule": "SPX104"}
    assert realworld.matches(nb, finding)  # no cell in the finding: tolerated
    assert realworld.matches(nb, {**finding, "cell": 4})
    assert not realworld.matches(nb, {**finding, "cell": 5})
    assert not realworld.matches(nb, {**finding, "line": 4})
    assert not realworld.matches(nb, {**finding, "rule": "SPX101"})
    assert not realworld.matches(nb, {**finding, "path": "m.ipynb"})


def test_parseable_sees_broken_files_and_notebook_cells(tmp_path):
    realworld = load_script()
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("x = 1\n", encoding="utf-8")
    bad.write_text("x = (\n", encoding="utf-8")
    assert realworld.parseable(good) == {0} and realworld.parseable(bad) == set()
    notebook = tmp_path / "n.ipynb"
    cells = [
        {"cell_type": "markdown", "source": ["# title"]},
        {"cell_type": "code", "source": ["%pip install x\n", "y = 2\n"]},
        {"cell_type": "code", "source": "z = (\n"},
    ]
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert realworld.parseable(notebook) == {2}
    notebook.write_text("{not json", encoding="utf-8")
    assert realworld.parseable(notebook) is None
