"""Directory symlinks in a checked tree: one that leads outside it (to `/`, `/proc/self`, a
sibling checkout) is not walked unless `--follow-links` asks for it."""

from __future__ import annotations

import os

import pytest

BAD = (
    "from pyspark.sql import functions as F\n"
    "out = spark.read.parquet('p').orderBy('ts').groupBy('k').agg(F.first('v'))\n"
)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "other.py").write_text(BAD)
    root = tmp_path / "tree"
    (root / "jobs").mkdir(parents=True)
    (root / "jobs" / "job.py").write_text(BAD)
    os.symlink(tmp_path / "outside", root / "elsewhere")
    os.symlink("jobs", root / "alias")  # inside the tree: still walked, reported once
    return root


@pytest.fixture
def sparkpar(sparkpar_cli, tree, monkeypatch):
    """`sparkpar ARGS...` in-process from the tree: the walk is the same code a subprocess runs."""
    monkeypatch.chdir(tree)
    return sparkpar_cli


def _lint(sparkpar, *args):
    return sparkpar("lint", "--no-cache", "--format", "concise", *args)


def test_directory_link_leaving_the_tree_is_skipped_with_a_warning(sparkpar, tree):
    result = _lint(sparkpar, ".")
    assert result.exit_code == 1, result.stderr
    assert "other.py" not in result.stdout and "job.py:2" in result.stdout
    assert f"elsewhere: directory symlink leads outside {tree}; skipped (--follow-links)" in result.stderr


def test_follow_links_walks_into_it(sparkpar):
    result = _lint(sparkpar, ".", "--follow-links")
    assert "elsewhere/other.py:2" in result.stdout, result.stderr
    assert "leads outside" not in result.stderr


@pytest.mark.parametrize("target", ["/", "/proc/self"])
def test_link_to_the_file_system_root_or_proc_is_not_walked(sparkpar, tree, target):
    os.symlink(target, tree / "trap")
    result = _lint(sparkpar, ".")
    assert result.exit_code == 1, result.stderr
    assert "trap: directory symlink leads outside" in result.stderr
    assert {os.path.basename(line.split(":")[0]) for line in result.stdout.splitlines()} == {"job.py"}


def test_fix_does_not_follow_it_either(sparkpar, tree):
    result = sparkpar("fix", "--unsafe-fixes", ".")
    assert result.exit_code == 0, result.stderr
    assert (tree.parent / "outside" / "other.py").read_text() == BAD
    assert (tree / "jobs" / "job.py").read_text() != BAD
