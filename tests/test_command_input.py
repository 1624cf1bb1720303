"""`graph`, `plan` and `profile` read and parse their one file the same way, as `lint` does: the
same decoder, the same nesting check, and the same one escaped line naming the file, exit 2."""

from __future__ import annotations

import os

import pytest

COMMANDS = ("graph", "plan", "profile")
LATIN_BROKEN = "# -*- coding: latin-1 -*-\n# Caf\xe9\ndef job(:\n    pass\n"


def errors_of(sparkpar_cli, name: str) -> dict[str, tuple[int, str]]:
    """{command: (exit code, stderr)} for every command run on `name`."""
    results = {command: sparkpar_cli(command, name) for command in COMMANDS}
    return {command: (r.exit_code, r.stderr) for command, r in results.items()}


def test_a_syntax_error_is_the_same_line_as_lints_finding(sparkpar_cli, tmp_path):
    (tmp_path / "broken.py").write_text("# spark\ndef job(:\n    pass\n")
    lint_line = sparkpar_cli("lint", "broken.py", "--no-cache", "--format", "concise").stdout.splitlines()[0]
    assert lint_line == "broken.py:2:9: SPX901 cannot parse: invalid syntax"
    expected = "sparkpar: error: broken.py:2:9: cannot parse: invalid syntax\n"
    assert errors_of(sparkpar_cli, "broken.py") == dict.fromkeys(COMMANDS, (2, expected))


def test_nesting_past_the_limit_is_refused_before_the_parser_by_every_command(sparkpar_cli, tmp_path):
    # 5,000 brackets crash LibCST's native parser; profile used to hand them to it unchecked.
    (tmp_path / "deep.py").write_text("# spark\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    expected = "sparkpar: error: deep.py:2:205: too deeply nested to analyse (more than 200 nested brackets)\n"
    assert errors_of(sparkpar_cli, "deep.py") == dict.fromkeys(COMMANDS, (2, expected))


def test_a_pep_263_coding_comment_is_honoured_by_every_command(sparkpar_cli, tmp_path):
    # profile read UTF-8 only and said "cannot read" instead of reaching the parser.
    (tmp_path / "latin.py").write_bytes(LATIN_BROKEN.encode("latin-1"))
    expected = "sparkpar: error: latin.py:3:9: cannot parse: invalid syntax\n"
    assert errors_of(sparkpar_cli, "latin.py") == dict.fromkeys(COMMANDS, (2, expected))


def test_a_fifo_is_refused_not_waited_on(sparkpar_cli, tmp_path):
    # profile opened it with read_text and blocked forever waiting for a writer.
    os.mkfifo(tmp_path / "job.py")
    expected = "sparkpar: error: job.py: not a regular file (a named pipe); skipped\n"
    assert errors_of(sparkpar_cli, "job.py") == dict.fromkeys(COMMANDS, (2, expected))


def test_undecodable_and_missing_files(sparkpar_cli, tmp_path):
    (tmp_path / "binary.py").write_bytes(b"# spark\nx = '\xff'\n")
    results = errors_of(sparkpar_cli, "binary.py")
    assert {code for code, _ in results.values()} == {2}
    assert len(set(results.values())) == 1
    assert results["graph"][1].startswith(
        "sparkpar: error: binary.py: cannot decode: 'utf-8' codec can't decode byte 0xff"
    )
    assert errors_of(sparkpar_cli, "absent.py") == dict.fromkeys(
        COMMANDS, (2, "sparkpar: error: absent.py: no such file\n")
    )


@pytest.mark.parametrize("name", ["x\n::error::owned.py", "x\x1b[31mred.py"])
def test_a_hostile_file_name_is_escaped_on_one_line(sparkpar_cli, tmp_path, name):
    (tmp_path / name).write_text("# spark\ndef job(:\n")
    shown = name.replace("\n", "\u240a").replace("\x1b", "\u241b")
    for code, stderr in errors_of(sparkpar_cli, name).values():
        assert code == 2
        assert stderr == f"sparkpar: error: {shown}:2:9: cannot parse: invalid syntax\n"
