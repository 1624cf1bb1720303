"""What a run does per file stays constant as the files grow in number: trees of files already
linted are freed, the project root is looked up per directory, the cache writes one entry per
analysed file and nothing on a warm run. Counted on real runs, never timed."""

from __future__ import annotations

import gc
import os
import sys

import pytest

from samples import BAD_JOB, GOOD_JOB
from sparkpar_lint import parsing
from sparkpar_lint.config import Config
from sparkpar_lint.project import locate
from sparkpar_lint.rules import all_rules
from sparkpar_lint.runner import check_source, run

RULES = frozenset(rule.id for rule in all_rules())


def project(root, packages: int, files: int) -> list[str]:
    (root / "pyproject.toml").write_text('[project]\nname = "jobs"\n')
    paths = []
    for package in range(packages):
        folder = root / f"pkg{package}"
        folder.mkdir()
        for n in range(files):
            path = folder / f"job_{n}.py"
            path.write_text(BAD_JOB if n % 2 else GOOD_JOB)
            paths.append(str(path))
    return paths


def live_graphs() -> int:
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "StageGraph")


def test_a_worker_frees_the_trees_of_files_it_linted(tmp_path, monkeypatch, request):
    # Each tree is cyclic garbage the collector's own trigger never reaches (see parsing.py), so
    # without the collection every graph of every file stays alive in a worker.
    paths = project(tmp_path, 1, 80)
    lint(paths.pop())  # imports the analysis: allocations that are not one tree's
    thresholds = gc.get_threshold()
    request.addfinalizer(lambda: gc.set_threshold(*thresholds))
    parsing.full_passes_between_files()  # as in a worker: no full pass but ours
    monkeypatch.setattr(parsing, "_next_collection", [sys.getallocatedblocks() + 20_000])
    before = live_graphs()
    full_passes = gc.get_stats()[2]["collections"]
    for n, path in enumerate(paths):  # noqa: B007 (n: where the loop stopped)
        lint(path)
        if gc.get_stats()[2]["collections"] > full_passes:
            break
    else:
        pytest.fail("no full collection while the trees of 80 files piled up")
    assert n > 0 and live_graphs() - before <= 1
    # The next pass waits until the blocks in use have doubled: not one per file, which tripled
    # the analysis's CPU.
    full_passes = gc.get_stats()[2]["collections"]
    for path in paths[n + 1 :][:20]:
        lint(path)
    assert gc.get_stats()[2]["collections"] == full_passes


def lint(path: str) -> None:
    with open(path, "rb") as handle:
        check_source(path, handle.read(), RULES)


def test_the_project_root_is_looked_up_per_directory_not_per_file(tmp_path, monkeypatch):
    paths = project(tmp_path, 3, 30)
    looked_up = []
    is_root = locate._is_root
    monkeypatch.setattr(locate, "_is_root", lambda directory: looked_up.append(directory) or is_root(directory))
    monkeypatch.chdir(tmp_path)
    outcome = run(["."], Config(), RULES, cache_dir=tmp_path / "cache", jobs=1)
    assert outcome.files_checked == len(paths) and not outcome.all_errors
    # Per package: the package, then the root (for its chain, and to confirm it marks the
    # project), whatever the number of files in it; per file, this was 90 files x 3.
    assert len(looked_up) <= 3 * 3


def test_the_cache_writes_one_entry_per_analysed_file_and_nothing_when_warm(tmp_path, monkeypatch):
    paths = project(tmp_path, 2, 30)
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    config = Config()
    run(["."], config, RULES, cache_dir=cache, jobs=1)
    entries = {entry.name: entry.stat().st_mtime_ns for entry in os.scandir(cache) if entry.name.endswith(".json")}
    assert len(entries) == len(paths)
    warm = run(["."], config, RULES, cache_dir=cache, jobs=1)
    assert warm.cache_hits == len(paths)
    after = {entry.name: entry.stat().st_mtime_ns for entry in os.scandir(cache) if entry.name.endswith(".json")}
    assert after == entries
