"""`sparkpar fix` writes the file at its real path: symlinks, hard links, owner, mode, read-only
files, signals, and the summary path are all handled without losing or misplacing an edit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkpar_lint.cli import main
from sparkpar_lint.fixes.diff_text import diff_name

BAD = (
    "from pyspark.sql import functions as F\n\n"
    "def latest(orders):\n"
    '    ordered = orders.orderBy("ts")\n'
    '    return ordered.groupBy("order").agg(F.last("status"))\n'
)


def fix(*args: str):
    return CliRunner().invoke(main, ["fix", "--unsafe-fixes", *args], catch_exceptions=False)


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    (root / "job.py").write_text(BAD)
    return root


def test_plain_file_is_fixed(tree):
    result = fix(".")
    assert result.exit_code == 0, result.output
    assert (tree / "job.py").read_text() != BAD


def test_symlink_inside_the_tree_fixes_its_target_and_stays_a_link(tree):
    (tree / "real").mkdir()
    (tree / "job.py").rename(tree / "real" / "job.py")
    os.symlink("real/job.py", tree / "job.py")
    result = fix("job.py")
    assert result.exit_code == 0, result.output
    assert (tree / "job.py").is_symlink()
    assert (tree / "real" / "job.py").read_text() != BAD


def test_symlink_out_of_the_tree_is_skipped_with_a_warning(tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.py").write_text(BAD)
    os.symlink(outside / "shared.py", tree / "link.py")
    (outside / "sub").mkdir()
    (outside / "sub" / "other.py").write_text(BAD)
    os.symlink(outside / "sub", tree / "linked_dir")
    result = fix(".")
    assert result.exit_code == 0, result.output
    assert (outside / "shared.py").read_text() == BAD  # used to be rewritten
    assert (tree / "link.py").is_symlink()
    assert (
        f"sparkpar: warning: link.py: symlink to {outside / 'shared.py'}, outside the checked tree; not fixed"
        in result.stderr
    )
    # A directory link leaving the tree is not walked at all (--follow-links walks it).
    assert "linked_dir: directory symlink leads outside" in result.stderr
    assert (outside / "sub" / "other.py").read_text() == BAD
    assert (tree / "job.py").read_text() != BAD


def test_hard_links_all_see_the_fix(tree):
    os.link(tree / "job.py", tree / "alias.py")
    inode = os.stat(tree / "job.py").st_ino
    result = fix("job.py")
    assert result.exit_code == 0, result.output
    assert os.stat(tree / "job.py").st_ino == inode and os.stat(tree / "job.py").st_nlink == 2
    assert (tree / "alias.py").read_text() == (tree / "job.py").read_text() != BAD


def test_mode_is_kept(tree):
    os.chmod(tree / "job.py", 0o640)
    assert fix("job.py").exit_code == 0
    assert os.stat(tree / "job.py").st_mode & 0o777 == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_owner_is_kept(tree):
    os.chown(tree / "job.py", 4321, 4321)
    assert fix("job.py").exit_code == 0
    st = os.stat(tree / "job.py")
    assert (st.st_uid, st.st_gid) == (4321, 4321)
    assert (tree / "job.py").read_text() != BAD


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
@pytest.mark.parametrize("mode", [0o4755, 0o2750, 0o6711])
def test_setuid_and_setgid_bits_survive_the_owner_being_restored(tree, mode):
    os.chown(tree / "job.py", 4321, 4321)
    os.chmod(tree / "job.py", mode)
    assert fix("job.py").exit_code == 0
    st = os.stat(tree / "job.py")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (4321, 4321, mode)
    assert (tree / "job.py").read_text() != BAD


def test_read_only_file_is_refused(tree):
    os.chmod(tree / "job.py", 0o444)
    result = fix("job.py")
    assert result.exit_code == 2
    assert "sparkpar: error: job.py: read-only file; not fixed" in result.stderr
    assert (tree / "job.py").read_text() == BAD


def test_summary_into_a_missing_directory_fails_before_anything_is_rewritten(tree):
    result = fix(".", "--summary", "no/such/dir/summary.md")
    assert result.exit_code == 2
    assert (
        result.stderr == "sparkpar: error: no/such/dir/summary.md: cannot write the summary: no directory no/such/dir\n"
    )
    assert (tree / "job.py").read_text() == BAD


def test_diff_headers_quote_hostile_names(tree):
    name = "evil\n+++ other.py\t\x1b[31m.py"
    (tree / name).write_text(BAD)
    result = fix(name, "--diff")
    headers = [line for line in result.stdout.splitlines() if line.startswith(("---", "+++"))]
    assert headers == [
        '--- "a/evil\\n+++ other.py\\t\\033[31m.py"',
        '+++ "b/evil\\n+++ other.py\\t\\033[31m.py"',
    ]
    assert diff_name("a/", "plain name.py") == "a/plain name.py"


def test_sigterm_during_fix_leaves_no_temporary_file_and_no_half_file(tmp_path):
    # A real process, killed at many points of a run over many files.
    root = tmp_path / "many"
    root.mkdir()
    fixed_text = None
    for i in range(120):
        (root / f"job_{i:03}.py").write_text(BAD)
    for delay in (0.8, 1.2, 1.6, 2.0, 2.5):
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "sparkpar"), "fix", "--unsafe-fixes", str(root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        assert list(root.glob(".sparkpar-*")) == []
        for path in root.glob("*.py"):
            text = path.read_text()
            if text != BAD:
                fixed_text = fixed_text or text
                assert text == fixed_text
