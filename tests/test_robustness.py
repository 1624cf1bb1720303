"""Bad input never loses work; the cache and the parallel path change nothing but speed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from samples import BAD_JOB, BAD_LINE, GOOD_JOB
from sparkpar_lint import runner
from sparkpar_lint.config import Config
from sparkpar_lint.model import ExitStatus

# Pinned: the runner is under test here, and newer rules also fire on BAD_JOB.
ALL_RULES = frozenset({"SPX101", "SPX901"})


def lint(paths, **options) -> runner.RunResult:
    return runner.run([str(p) for p in paths], Config(root=Path.cwd()), ALL_RULES, **options)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD_JOB)
    (tmp_path / "good.py").write_text(GOOD_JOB)
    return tmp_path


def codes(outcome: runner.RunResult) -> list[tuple[str, str, int]]:
    return [(f.path, f.rule_id, f.span.line) for f in outcome.findings]


def test_syntax_error_is_spx901_and_other_files_are_still_checked(pinned_cli, project):
    (project / "broken.py").write_text("from pyspark.sql import functions as F\ndef f(:\n")
    result = pinned_cli("lint", ".", "--format", "concise")
    assert result.exit_code == 1, result.output
    assert [line.split(": ", 1)[0] + " " + line.split()[1] for line in result.stdout.splitlines()] == [
        f"bad.py:{BAD_LINE}:44 SPX101",
        "broken.py:2:7 SPX901",
    ]


def test_non_utf8_file_is_one_clear_error_and_others_are_checked(pinned_cli, project):
    (project / "latin.py").write_bytes(b"# spark job\nname = '\xe9t\xe9'\n")
    result = pinned_cli("lint", ".", "--format", "concise")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "sparkpar: error: latin.py: cannot decode: not valid utf-8 (byte 0xe9 at offset 20); "
        "save it as UTF-8 or declare its encoding with a PEP 263 coding comment"
    ]
    assert result.stdout.startswith("bad.py:")


def test_coding_cookie_is_honoured(project):
    (project / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + BAD_JOB.encode() + b"name = '\xe9t\xe9'\n")
    outcome = lint(["latin.py"])
    assert outcome.all_errors == [] and codes(outcome) == [("latin.py", "SPX101", BAD_LINE + 1)]


def test_empty_file_is_clean(pinned_cli, project):
    (project / "empty.py").write_text("")
    result = pinned_cli("lint", "empty.py")
    assert result.exit_code == 0 and result.stderr == ""


def test_empty_spark_file_that_parses_to_nothing_is_clean(project):
    (project / "only_comment.py").write_text("# spark\n")
    outcome = lint(["only_comment.py"])
    assert outcome.exit_status is ExitStatus.CLEAN and outcome.files_checked == 1


def test_directory_symlink_loop_is_reported_once_and_skipped(pinned_cli, project):
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "pkg" / "job.py").write_text(BAD_JOB)
    os.symlink("..", project / "pkg" / "sub" / "up")
    result = pinned_cli("lint", "pkg", "--format", "concise")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("pkg/job.py:")
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == "sparkpar: warning: pkg/sub/up: directory symlink loop, skipped\n"


def test_self_referencing_symlink_file_is_an_error_naming_it(pinned_cli, project):
    os.symlink("loop.py", project / "loop.py")
    result = pinned_cli("lint", ".", "--format", "concise")
    assert result.exit_code == 2
    assert "loop.py: broken or looping symlink" in result.stderr
    assert "bad.py:" in result.stdout
    result = pinned_cli("lint", "loop.py")
    assert result.exit_code == 2 and "loop.py: cannot access" in result.stderr


def test_unreadable_file_is_an_error_naming_it(project, monkeypatch):
    real_read = runner.read_source_bytes

    def guarded_read(path, *args, **kwargs):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path, *args, **kwargs)

    (project / "secret.py").write_text(BAD_JOB)
    # Tests run as root in CI containers, where chmod 000 does not stop a read; fail the read instead.
    monkeypatch.setattr(runner, "read_source_bytes", guarded_read)
    outcome = lint(["."])
    assert outcome.all_errors == ["secret.py: cannot read: Permission denied"]
    assert codes(outcome) == [("bad.py", "SPX101", BAD_LINE)]


def test_internal_error_in_one_file_names_it_and_others_are_checked(project, monkeypatch):
    from sparkpar_lint import analysis

    real_analyze = analysis.analyze

    def flaky(path, source, rule_ids=None, settings=None):
        if path == "crash.py":
            raise ValueError("boom")
        return real_analyze(path, source, rule_ids, settings)

    (project / "crash.py").write_text(BAD_JOB)
    monkeypatch.setattr(analysis, "analyze", flaky)
    outcome = lint(["."], jobs=1)
    assert outcome.all_errors == ["crash.py: internal error: ValueError: boom"]
    assert codes(outcome) == [("bad.py", "SPX101", BAD_LINE)]
    assert outcome.exit_status is ExitStatus.ERROR


def test_second_run_is_served_from_the_cache(project):
    cache_dir = project / ".sparkpar_cache"
    first = lint(["."], cache_dir=cache_dir)
    entries = sorted(cache_dir.glob("*.json"))
    assert first.cache_hits == 0 and len(entries) == 2  # one per analysed file
    second = lint(["."], cache_dir=cache_dir)
    assert second.cache_hits == 2 and codes(second) == codes(first)
    assert sorted(cache_dir.glob("*.json")) == entries
    # An edit changes the key: that file alone is analysed again.
    (project / "good.py").write_text(GOOD_JOB + "\n")
    third = lint(["."], cache_dir=cache_dir)
    assert third.cache_hits == 1 and len(list(cache_dir.glob("*.json"))) == 3


def test_rule_selection_is_part_of_the_cache_key(project):
    cache_dir = project / ".sparkpar_cache"
    lint(["."], cache_dir=cache_dir)
    narrower = runner.run(["."], Config(root=project), {"SPX901"}, cache_dir=cache_dir)
    assert narrower.cache_hits == 0 and codes(narrower) == []


def test_damaged_cache_entry_is_a_miss(project):
    cache_dir = project / ".sparkpar_cache"
    first = lint(["bad.py"], cache_dir=cache_dir)
    (entry,) = cache_dir.glob("*.json")
    entry.write_text("{not json")
    again = lint(["bad.py"], cache_dir=cache_dir)
    assert again.cache_hits == 0 and codes(again) == codes(first)


def test_no_cache_writes_nothing(pinned_cli, project):
    pinned_cli("lint", ".", "--no-cache")
    assert not (project / ".sparkpar_cache").exists()
    pinned_cli("lint", ".")
    assert (project / ".sparkpar_cache" / ".gitignore").read_text().endswith("*\n")


def test_parallel_run_gives_the_same_results_as_serial(project):
    for i in range(runner.PARALLEL_THRESHOLD + 10):
        source = BAD_JOB if i % 3 else GOOD_JOB
        if i % 7 == 0:
            source += "def broken(:\n"
        (project / f"job_{i:03}.py").write_text(source)
    serial = lint(["."], jobs=1)
    parallel = lint(["."], jobs=2)
    assert serial.findings == parallel.findings and len(serial.findings) > 40
    assert {f.rule_id for f in serial.findings} == {"SPX101", "SPX901"}
    assert serial.all_errors == parallel.all_errors == []


def test_fifo_named_job_py_is_skipped_not_waited_on(pinned_cli, project):
    # A FIFO found by the walk or named on the command line used to block the run forever.
    os.mkfifo(project / "job.py")
    result = pinned_cli("lint", ".", "--format", "concise")
    assert result.exit_code == 1 and result.stdout.startswith("bad.py:")
    assert result.stderr == "sparkpar: warning: job.py: not a regular file; skipped\n"
    result = pinned_cli("lint", "job.py", "bad.py", "--format", "concise")
    assert result.exit_code == 2 and result.stdout.startswith("bad.py:")
    assert result.stderr == "sparkpar: error: job.py: not a regular file (a named pipe); skipped\n"


def test_symlink_to_dev_zero_is_refused(pinned_cli, project):
    # Reading it used to exhaust memory.
    os.symlink("/dev/zero", project / "zero.py")
    result = pinned_cli("lint", "zero.py", "bad.py", "--format", "concise")
    assert result.exit_code == 2 and result.stdout.startswith("bad.py:")
    assert result.stderr == "sparkpar: error: zero.py: not a regular file (a character device); skipped\n"
    result = pinned_cli("graph", "zero.py")
    assert result.exit_code == 2 and "zero.py: not a regular file" in result.stderr


def test_file_over_the_size_limit_is_one_clear_error(project, monkeypatch):
    from sparkpar_lint import discovery

    (project / "huge.py").write_text("# spark\n" + "x = 1\n" * 1000)
    monkeypatch.setattr(runner, "read_source_bytes", lambda path: discovery.read_source_bytes(path, 4096))
    outcome = lint(["."])
    assert outcome.all_errors == ["huge.py: too large to be source code (6,008 bytes, limit 4,096); skipped"]
    assert codes(outcome) == [("bad.py", "SPX101", BAD_LINE)]


def test_graph_of_an_unparsable_file_is_one_error_line(sparkpar_cli, tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = sparkpar_cli("graph", "broken.py")
    assert result.exit_code == 2
    assert result.stderr == "sparkpar: error: broken.py:1:7: cannot parse: invalid syntax\n"


@pytest.mark.parametrize(
    "content",
    [
        "{}",
        "[]",
        '{"findings": {}, "suppressed": []}',
        '{"findings": [1], "suppressed": []}',
        '{"findings": [{"rule_id": 5}], "suppressed": []}',
        '"x"',
        "[" * 100_000,
    ],
)
def test_damaged_cache_entry_is_repaired(project, content):
    cache_dir = project / ".sparkpar_cache"
    first = lint(["bad.py"], cache_dir=cache_dir)
    (entry,) = cache_dir.glob("*.json")
    entry.write_text(content)  # `{}` used to read as "no findings" and stay
    again = lint(["bad.py"], cache_dir=cache_dir)
    assert again.all_errors == [] and codes(again) == codes(first) and again.cache_hits == 0
    assert lint(["bad.py"], cache_dir=cache_dir).cache_hits == 1  # rewritten


def test_cache_entry_replaced_by_a_fifo_is_a_miss(project):
    cache_dir = project / ".sparkpar_cache"
    first = lint(["bad.py"], cache_dir=cache_dir)
    (entry,) = cache_dir.glob("*.json")
    entry.unlink()
    os.mkfifo(entry)  # reading it used to block forever
    again = lint(["bad.py"], cache_dir=cache_dir)
    assert codes(again) == codes(first) and again.all_errors == []


def test_failed_cache_write_leaves_no_temporary_file(project, monkeypatch):
    from sparkpar_lint import cache

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.json, "dump", full_disk)
    cache_dir = project / ".sparkpar_cache"
    lint(["."], cache_dir=cache_dir, jobs=1)
    assert sorted(p.name for p in cache_dir.iterdir()) == [".gitignore", "CACHEDIR.TAG"]
