"""A file name or a string in checked code never controls what CI or a terminal sees: every
format escapes control characters, no line starts a GitHub workflow command it should not,
SARIF URIs are percent-encoded relative references."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest

from samples import BAD_JOB
from sparkpar_lint.model import Finding, Severity, Span
from sparkpar_lint.output import FORMATS, renderer

HOSTILE = "evil\n::error file=x.py::owned\r::add-mask::secret\x1b[2J\x1b]0;title\x07\u202e.py"
ANNOTATIONS = ("::error ", "::warning ", "::notice ")


def assert_harmless(text: str, fmt: str) -> None:
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text and "\u202e" not in text
    for line in text.splitlines():
        if fmt == "github" and line.startswith(ANNOTATIONS):
            assert "\n" not in line
            continue
        assert not line.startswith("::"), line


@pytest.mark.parametrize("fmt", FORMATS)
def test_hostile_file_name_in_every_format(sparkpar_cli, tmp_path, fmt):
    (tmp_path / HOSTILE).write_text(BAD_JOB)
    result = sparkpar_cli("lint", ".", "--format", fmt, "--select", "SPX101", "--no-cache")
    assert result.exit_code == 1, result.output
    assert_harmless(result.stdout, fmt)
    assert_harmless(result.stderr, fmt)
    if fmt == "github":
        assert len([line for line in result.stdout.splitlines() if line.startswith("::")]) == 1
    if fmt == "json":
        assert json.loads(result.stdout)[0]["path"] == HOSTILE


@pytest.mark.parametrize("fmt", FORMATS)
def test_hostile_text_in_a_message_in_every_format(fmt):
    finding = Finding(
        rule_id="SPX101",
        message="column `a\n::add-mask::b\x1b[31m` is read",
        severity=Severity.ERROR,
        path="::warning::job.py",
        span=Span(1, 0, 1, 3),
    )
    text = renderer(fmt)([finding], sources={"::warning::job.py": "x\x1b[2J = 1\n"}, files_checked=1)
    assert_harmless(text, fmt)


def test_hostile_name_on_stderr_cannot_start_a_workflow_command(sparkpar_cli, tmp_path):
    name = "x\n::add-mask::secret\x1b[31m.py"
    (tmp_path / name).write_bytes(b"# spark\nname = '\xe9'\n")  # not UTF-8: an error naming the file
    result = sparkpar_cli("lint", name, "--format", "concise")
    assert result.exit_code == 2
    assert result.stderr.startswith("sparkpar: error: x\u240a::add-mask::secret\u241b[31m.py: cannot decode")
    assert_harmless(result.stderr, "concise")


def test_sarif_uris_are_percent_encoded_relative_references(sparkpar_cli, tmp_path):
    for name in ("pct%20name.py", "a b#c?.py", "colon:first.py"):
        (tmp_path / name).write_text(BAD_JOB)
    result = sparkpar_cli("lint", ".", "--format", "sarif", "--select", "SPX101", "--no-cache")
    uris = sorted(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(result.stdout)["runs"][0]["results"]
    )
    assert uris == sorted(["pct%2520name.py", "a%20b%23c%3F.py", "colon%3Afirst.py"])
    assert quote("pct%20name.py") == "pct%2520name.py"


# Column names from the checked code reach graph and plan output (keys, orderings, advice).
HOSTILE_COLUMNS_JOB = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
df = spark.read.parquet("events")
latest = df.orderBy("ts\\n::error::by").groupBy("[/k]\\r::add-mask::k\\x1b[2J|\\"").agg(F.first("v"))
"""
GRAPH_NAME = "evil\n::error::x\x1b[31m[b].py"


@pytest.mark.parametrize(
    ("command", "fmt"),
    [
        ("graph", "rich"),
        ("graph", "mermaid"),
        ("graph", "dot"),
        ("graph", "json"),
        ("plan", "rich"),
        ("plan", "concise"),
        ("plan", "json"),
    ],
)
def test_hostile_name_and_columns_in_graph_and_plan(sparkpar_cli, tmp_path, command, fmt):
    # `[/k]` used to be read as rich markup (graph: an internal error; plan: a traceback), and
    # the newlines started lines a CI log runs as workflow commands.
    (tmp_path / GRAPH_NAME).write_text(HOSTILE_COLUMNS_JOB)
    result = sparkpar_cli(command, GRAPH_NAME, "--format", fmt)
    assert result.exit_code == 0, result.output
    assert_harmless(result.stdout, fmt)
    if fmt == "json":
        assert '[/k]\r::add-mask::k\x1b[2J|"' in result.stdout.encode().decode("unicode_escape")
    else:
        assert "[/k]\u240d::add-mask::k\u241b[2J" in result.stdout
    if fmt == "dot":
        # Every quote in a column name is escaped: each line's own quotes still pair up.
        assert '|\\"' in result.stdout
        assert all(re.sub(r"\\.", "", line).count('"') % 2 == 0 for line in result.stdout.splitlines())
    if fmt == "mermaid":
        assert "#124;#quot;" in result.stdout
