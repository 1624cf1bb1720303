"""`fix --diff` and `fix --summary` print the checked code: control characters in it must not reach
the terminal or the CI log, code must not run as a GitHub workflow command or write Markdown of its
own, and ordinary code must still come out as a patch that applies."""

from __future__ import annotations

import re
import subprocess

import pytest

HOSTILE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'df = spark.read.parquet("events")\n'
    'NOTE = """\n'
    "::error::owned\n"
    '"""\n'
    'latest = df.orderBy("ts").groupBy("k").agg(F.first("v").alias("\x1b[2J\x1b[31mred"))  # ```x\n'
)
# Ordinary code: tabs in a comment, CRLF line endings, no newline at the end of the file.
PLAIN = (
    "from pyspark.sql import SparkSession, functions as F\r\n"
    "\r\n"
    "spark = SparkSession.builder.getOrCreate()\r\n"
    "# columns:\tk\tv\tts\r\n"
    'df = spark.read.parquet("events")\r\n'
    'latest = df.orderBy("ts").groupBy("k").agg(F.first("v"))'
)
STOP = re.compile(r"\A::stop-commands::([0-9a-f]{32})\n(.*)::\1::\n\Z", re.S)


@pytest.fixture
def cli(sparkpar_cli, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return sparkpar_cli


def git_apply(directory, patch: str) -> None:
    subprocess.run(["git", "init", "-q"], cwd=directory, check=True)
    subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"],
        cwd=directory,
        input=patch.encode(),
        check=True,
        capture_output=True,
    )


def test_control_characters_in_code_are_shown_not_sent(cli, tmp_path):
    (tmp_path / "job.py").write_text(HOSTILE)
    result = cli("fix", "--diff", "job.py")
    assert result.exit_code == 0
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", result.stdout)
    assert (
        '\n+latest = df.groupBy("k").agg(F.min(F.struct("ts", "v")).getField("v").alias("\u241b[2J\u241b[31mred"))'
        in result.stdout
    )
    assert result.stderr.splitlines()[0] == (
        "sparkpar: warning: job.py: the diff shows control characters of the code as visible symbols, "
        "so it will not apply as a patch"
    )


def test_ordinary_code_is_printed_byte_for_byte_and_the_diff_applies(cli, tmp_path):
    (tmp_path / "job.py").write_bytes(PLAIN.encode())
    result = cli("fix", "--diff", "job.py")
    patch = result.stdout_bytes.decode()  # .stdout would turn CRLF into LF
    assert result.exit_code == 0 and "warning" not in result.stderr
    assert "\\ No newline at end of file" in patch and "\t" in patch and "\r\n" in patch
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / "job.py").write_bytes(PLAIN.encode())
    git_apply(fixed, patch)
    assert cli("fix", "job.py").exit_code == 0
    assert (fixed / "job.py").read_bytes() == (tmp_path / "job.py").read_bytes() != PLAIN.encode()


def test_a_code_line_that_github_would_run_is_guarded_there_and_the_diff_still_applies(cli, tmp_path, monkeypatch):
    (tmp_path / "job.py").write_text(HOSTILE.replace("\x1b", "E"))
    plain = cli("fix", "--diff", "job.py").stdout
    assert "\n ::error::owned\n" in plain and "stop-commands" not in plain  # not in Actions: unchanged
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    guarded = cli("fix", "--diff", "job.py").stdout
    match = STOP.match(guarded)
    assert match and match.group(2) == plain
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text(HOSTILE.replace("\x1b", "E"))
    git_apply(work, guarded)  # the guard lines are outside the patch
    assert 'F.min(F.struct("ts", "v"))' in (work / "job.py").read_text()


def test_a_diff_without_such_lines_is_not_wrapped_in_actions(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    (tmp_path / "job.py").write_bytes(PLAIN.encode())
    assert cli("fix", "--diff", "job.py").stdout.startswith("--- a/job.py\n")


def test_summary_keeps_code_inside_its_blocks(cli, tmp_path):
    name = "odd`name.py"
    (tmp_path / name).write_text(HOSTILE)
    result = cli("fix", name, "--summary", "summary.md")
    assert result.exit_code == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "\x1b" not in summary and "\u241b[2J" in summary
    assert "## ``odd`name.py``" in summary.splitlines()
    # A fence of four backticks: the code's own ``` line cannot close it.
    blocks = re.findall(r"^(`{3,})diff\n(.*?)^\1$", summary, re.S | re.M)
    assert [fence for fence, _ in blocks] == ["````"]
    assert "# ```x" in blocks[0][1]
