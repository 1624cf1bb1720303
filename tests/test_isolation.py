"""One file's crash, hang or memory blow-up costs that file, never the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samples import BAD_JOB, BAD_LINE
from sparkpar_lint import analysis, runner
from sparkpar_lint.config import Config

RULES = frozenset({"SPX101", "SPX901"})


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD_JOB)
    return tmp_path


def lint(**options) -> runner.RunResult:
    return runner.run(["."], Config(root=Path.cwd()), RULES, **options)


def codes(outcome):
    return [(f.path, f.rule_id, f.span.line) for f in outcome.findings]


def test_file_that_hangs_the_parser_is_stopped_at_the_timeout(sparkpar_cli, project):
    # 5,000 nested conditional expressions: LibCST's parser takes minutes.
    (project / "hang.py").write_text("# spark\nx = " + "a if b else " * 5000 + "c\n")
    result = sparkpar_cli("lint", ".", "--format", "concise", "--select", "SPX101", "--file-timeout", "3", "--no-cache")
    assert result.exit_code == 2
    assert result.stdout.startswith(f"bad.py:{BAD_LINE}:")
    assert result.stderr == (
        "sparkpar: error: hang.py: analysis stopped after 3 s (--file-timeout); the file was not checked\n"
    )


@pytest.mark.parametrize("jobs", [1, 2])
def test_worker_killed_by_a_signal_costs_one_file(project, monkeypatch, jobs):
    real_analyze = analysis.analyze

    def crashing(path, source, rule_ids=None, settings=None):
        if path.endswith("crash.py"):
            os.kill(os.getpid(), signal.SIGSEGV)  # what LibCST's native parser did on deep nesting
        return real_analyze(path, source, rule_ids, settings)

    for i in range(6):
        (project / f"job{i}.py").write_text(BAD_JOB)
    (project / "crash.py").write_text(BAD_JOB)
    monkeypatch.setattr(analysis, "analyze", crashing)
    outcome = lint(jobs=jobs)
    assert outcome.all_errors == ["crash.py: the analyser crashed on this file (SIGSEGV); the file was not checked"]
    assert len(codes(outcome)) == 7 and ("bad.py", "SPX101", BAD_LINE) in codes(outcome)


def test_a_crash_among_more_than_50_files_costs_one_file(project, monkeypatch):
    # Past 50 files the old run used a process pool: the dead worker broke the pool, and the
    # parent re-analysed the file itself and died too.
    real_analyze = analysis.analyze

    def crashing(path, source, rule_ids=None, settings=None):
        if path.endswith("crash.py"):
            os.kill(os.getpid(), signal.SIGSEGV)
        return real_analyze(path, source, rule_ids, settings)

    for i in range(60):
        (project / f"job{i:02}.py").write_text(BAD_JOB)
    (project / "crash.py").write_text(BAD_JOB)
    monkeypatch.setattr(analysis, "analyze", crashing)
    outcome = lint(jobs=2)
    assert outcome.all_errors == ["crash.py: the analyser crashed on this file (SIGSEGV); the file was not checked"]
    assert len(codes(outcome)) == 61


def test_memory_blow_up_is_one_error_naming_the_file(project, monkeypatch):
    real_analyze = analysis.analyze

    def greedy(path, source, rule_ids=None, settings=None):
        if path.endswith("greedy.py"):
            hoard = bytearray(64 * 1024**3)  # beyond the worker's budget: MemoryError, not the OOM killer
            del hoard
        return real_analyze(path, source, rule_ids, settings)

    (project / "greedy.py").write_text(BAD_JOB)
    monkeypatch.setattr(analysis, "analyze", greedy)
    outcome = lint(jobs=1)
    assert outcome.all_errors == [
        "greedy.py: analysis needed more than its 6 GiB memory budget; the file was not checked"
    ]
    assert codes(outcome) == [("bad.py", "SPX101", BAD_LINE)]


def _children(parent: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(int(entry))
    return pids


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_workers_end_when_the_run_is_killed_by_sigterm(tmp_path):
    # SIGTERM ends the parent without cleanup; its workers, the idle one and the one stalled in
    # the parser, used to wait on their pipes forever, holding the run's stdout open.
    for i in range(7):  # two workers need eight files
        (tmp_path / f"bad_{i}.py").write_text(BAD_JOB)
    (tmp_path / "hang.py").write_text("# spark\nx = " + "a if b else " * 5000 + "c\n")
    command = [str(Path(sys.executable).parent / "sparkpar"), "lint", ".", "-j", "2", "--file-timeout", "0"]
    parent = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers := _children(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2
        time.sleep(1)  # one stalled in the parser, the other through the small files
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == -signal.SIGTERM
        deadline = time.monotonic() + 20
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in workers if _running(pid)] == []
    finally:  # leave nothing running for the next test, whatever failed
        for pid in [parent.pid, *workers]:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        parent.wait()
