"""`sparkpar lint / rules / explain / graph` through click, on real files in tmp_path."""

from __future__ import annotations

import json

import pytest

from samples import BAD_COLUMN, BAD_JOB, BAD_LINE, GOOD_JOB
from sparkpar_lint.rules import all_rules


@pytest.fixture
def jobs(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "bad.py").write_text(BAD_JOB)
    (tmp_path / "jobs" / "good.py").write_text(GOOD_JOB)
    return tmp_path / "jobs"


def test_clean_code_exits_0(pinned_cli, jobs):
    result = pinned_cli("lint", "jobs/good.py")
    assert result.exit_code == 0, result.output
    assert "All checks passed in 1 file." in result.stdout


def test_findings_exit_1_and_name_file_line_and_column(pinned_cli, jobs):
    result = pinned_cli("lint", "jobs", "--format", "concise")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        f"jobs/bad.py:{BAD_LINE}:{BAD_COLUMN + 1}: SPX101 " + result.stdout.split(" SPX101 ", 1)[1].strip()
    ]


def test_exit_zero_keeps_findings_but_exits_0(pinned_cli, jobs):
    result = pinned_cli("lint", "jobs", "--format", "concise", "--exit-zero")
    assert result.exit_code == 0 and "SPX101" in result.stdout


def test_missing_path_exits_2_and_still_checks_the_rest(pinned_cli, jobs):
    result = pinned_cli("lint", "nope.py", "jobs", "--format", "concise")
    assert result.exit_code == 2
    assert "nope.py: no such file or directory" in result.stderr
    assert "jobs/bad.py" in result.stdout


def test_unknown_format_and_unknown_rule_are_usage_errors(pinned_cli, jobs):
    assert pinned_cli("lint", "jobs", "--format", "xml").exit_code == 2
    result = pinned_cli("lint", "jobs", "--select", "SPX999")
    assert result.exit_code == 2 and "SPX999" in result.output and "--select" in result.output


def test_select_and_ignore_work_by_prefix(pinned_cli, jobs):
    (jobs / "broken.py").write_text("import pyspark\nx = (\n")

    def rules_reported(*options):
        return {
            line.split()[1] for line in pinned_cli("lint", "jobs", "--format", "concise", *options).stdout.splitlines()
        }

    assert rules_reported() == {"SPX101", "SPX901"}
    family = rules_reported("--select", "SPX1")
    assert "SPX101" in family and all(code.startswith("SPX1") for code in family)
    assert rules_reported("--select", "spx9") == {"SPX901"}
    assert rules_reported("--ignore", "SPX101,SPX9") == set()


def test_json_output_is_pure_json(pinned_cli, jobs):
    result = pinned_cli("lint", "jobs", "--format", "json")
    data = json.loads(result.stdout)
    assert [(d["rule"], d["line"], d["column"]) for d in data] == [("SPX101", BAD_LINE, BAD_COLUMN)]
    assert data[0]["related"], "the orderBy should be a related location"


def test_sarif_and_github_outputs_from_the_cli(pinned_cli, jobs):
    sarif = json.loads(pinned_cli("lint", "jobs", "--format", "sarif").stdout)
    assert sarif["runs"][0]["results"][0]["ruleId"] == "SPX101"
    github = pinned_cli("lint", "jobs", "--format", "github").stdout
    assert github.startswith(f"::error file=jobs/bad.py,line={BAD_LINE},col={BAD_COLUMN + 1},")


def test_rich_output_in_a_pipe_has_no_colours_or_progress(pinned_cli, jobs):
    result = pinned_cli("lint", "jobs")
    assert "\x1b[" not in result.output
    assert f"{BAD_LINE} | latest = " in result.stdout
    assert result.stdout.rstrip().endswith(
        "Found 1 finding (1 error, 1 low confidence) in 2 files.\n[*] 1 fixable with `sparkpar fix`."
    )


def test_exclude_option_and_skipped_directories(pinned_cli, tmp_path, jobs):
    for skipped in (".venv", "venv", "node_modules", "build", "custom_env"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "job.py").write_text(BAD_JOB)
    (tmp_path / "custom_env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    result = pinned_cli("lint", ".", "--format", "concise")
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["jobs/bad.py"]
    result = pinned_cli("lint", ".", "--format", "concise", "--exclude", "jobs/bad.py")
    assert result.exit_code == 0, result.output


def test_files_that_never_mention_spark_are_not_parsed(pinned_cli, tmp_path):
    (tmp_path / "plain.py").write_text("def broken(:\n")
    (tmp_path / "sparky.py").write_text("# SPARK job\ndef broken(:\n")
    result = pinned_cli("lint", ".", "--format", "concise")
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["sparky.py"]


def test_rules_lists_every_registered_rule(pinned_cli):
    rows = json.loads(pinned_cli("rules", "--format", "json").stdout)
    assert [row["id"] for row in rows] == [rule.id for rule in all_rules()]
    assert {"id", "name", "severity", "fix"} <= set(rows[0])
    table = pinned_cli("rules").stdout
    for rule in all_rules():
        assert rule.id in table and rule.name in table


def test_explain_prints_the_doc_and_rejects_unknown_ids(pinned_cli):
    result = pinned_cli("explain", "spx901")
    assert result.exit_code == 0
    assert "## Why is this bad?" in result.stdout  # raw Markdown when not on a terminal
    result = pinned_cli("explain", "SPX000")
    assert result.exit_code == 2 and "unknown rule 'SPX000'" in result.stderr


def test_graph_reports_a_missing_file_with_exit_2(pinned_cli):
    result = pinned_cli("graph", "nowhere.py")
    assert result.exit_code == 2 and "nowhere.py" in result.stderr


def test_version_and_help(pinned_cli):
    assert pinned_cli("--version").exit_code == 0
    help_text = pinned_cli("--help").stdout
    for command in ("lint", "rules", "explain", "graph"):
        assert command in help_text
