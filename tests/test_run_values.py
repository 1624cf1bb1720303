"""Values a notebook gets from the notebook it `%run`s: Databricks runs the other notebook in the
same namespace, so its settings (a subset list, a partition count, a settings dict) are the
caller's values and decide its findings, in source exports, headerless files and `.ipynb`."""

from __future__ import annotations

import json
import os
import subprocess

import libcst as cst
import pytest

from sparkpar_lint.project.constants import module_constants
from sparkpar_lint.sources.run_magic import run_as_import

SETTINGS = """# Databricks notebook source
PARTITIONS = {partitions}
conf = {{"fraction": 0.1, "dedup_keys": {keys}}}
"""
ALL_COLUMNS = '["id", "name", "ts"]'
ID_ONLY = '["id"]'

# The caller's code after its `%run` cell: line 1 is the dedup, lines 2-9 the serial region.
CALLER = """events = spark.read.table("events").select("id", "name", "ts")
events.dropDuplicates(conf["dedup_keys"]).write.parquet("latest")
def sessions(batches):
    last = {}
    for pdf in batches:
        for row in pdf.itertuples():
            last[row.name] = row.ts
        yield pdf
events.coalesce(PARTITIONS).mapInPandas(sessions, "name string, ts long").write.parquet("s")
"""


def _export(run: str) -> str:
    return f"# Databricks notebook source\n# MAGIC %run {run}\n\n# COMMAND ----------\n\n{CALLER}"


def _headerless(run: str) -> str:
    return f"%run {run}\n\n{CALLER}"


def _ipynb(run: str) -> str:
    cells = [[f"%run {run}"], CALLER.splitlines(keepends=True)]
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
                for source in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


FORMS = {"export": ("job.py", _export), "headerless": ("job.py", _headerless), "ipynb": ("job.ipynb", _ipynb)}


def _project(tmp_path, form: str, *, run: str = "./conf/settings", partitions: int = 8, keys: str = ID_ONLY):
    (tmp_path / ".git").mkdir(exist_ok=True)  # the project root
    (tmp_path / "conf").mkdir(exist_ok=True)
    settings = tmp_path / "conf" / "settings.py"
    settings.write_text(SETTINGS.format(partitions=partitions, keys=keys))
    name, render = FORMS[form]
    (tmp_path / name).write_text(render(run))
    return name, settings


def _rules(sparkpar_cli, name: str, *extra: str) -> list[str]:
    result = sparkpar_cli("lint", "--select", "SPX102,SPX202,SPX402", "--format", "json", *extra, name)
    assert result.exit_code in (0, 1), result.output
    return sorted(f["rule"] for f in json.loads(result.stdout))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_dedup_subset_from_the_settings_notebook_decides_the_finding(sparkpar_cli, tmp_path, form):
    name, _ = _project(tmp_path, form, keys=ID_ONLY)
    result = sparkpar_cli("lint", "--no-cache", "--select", "SPX102", "--format", "concise", name)
    # The subset the settings name, not "some subset": the finding says which columns compete.
    assert "keeps one arbitrary row per (id):" in result.stdout, result.output
    _project(tmp_path, form, keys=ALL_COLUMNS)
    # Every column in the subset: duplicates are identical rows, whichever is kept.
    assert _rules(sparkpar_cli, name, "--no-cache") == ["SPX202"]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_partition_count_from_the_settings_notebook_decides_the_finding(sparkpar_cli, tmp_path, form):
    name, _ = _project(tmp_path, form, partitions=1, keys=ALL_COLUMNS)
    # One partition: every name's rows meet, but the region runs on one core.
    assert _rules(sparkpar_cli, name, "--no-cache") == ["SPX402"]
    _project(tmp_path, form, partitions=8, keys=ALL_COLUMNS)
    # Eight partitions: one name's rows are split, and each partition keeps part of its state.
    assert _rules(sparkpar_cli, name, "--no-cache") == ["SPX202"]


def test_without_the_run_target_the_values_stay_unknown(sparkpar_cli, tmp_path):
    name, settings = _project(tmp_path, "export", partitions=1, keys=ALL_COLUMNS)
    settings.unlink()
    # Nothing is known of the subset or the count: a dedup of some subset, no serial region.
    assert _rules(sparkpar_cli, name, "--no-cache") == ["SPX102", "SPX202"]


def test_editing_a_constant_in_the_run_target_reaches_a_warm_cache(sparkpar_cli, tmp_path):
    name, settings = _project(tmp_path, "export", partitions=1, keys=ALL_COLUMNS)
    assert _rules(sparkpar_cli, name) == ["SPX402"]
    assert _rules(sparkpar_cli, name) == ["SPX402"]  # served from the cache
    settings.write_text(SETTINGS.format(partitions=8, keys=ID_ONLY))
    assert _rules(sparkpar_cli, name) == ["SPX102", "SPX202"]


@pytest.mark.parametrize(
    "run", ["/Repos/ana@example.com/etl/conf/settings", "/Workspace/Repos/ana@example.com/etl/conf/settings"]
)
@pytest.mark.parametrize("form", ["export", "ipynb"])
def test_a_workspace_path_into_the_repository_is_followed(sparkpar_cli, tmp_path, run, form):
    name, _ = _project(tmp_path, form, run=run, partitions=1, keys=ALL_COLUMNS)
    assert _rules(sparkpar_cli, name, "--no-cache") == ["SPX402"]


@pytest.mark.parametrize(
    "run",
    [
        "/Users/ana@example.com/settings",  # a workspace folder: not in the checkout
        "/Repos/ana@example.com/etl/conf/missing",  # in the repository, but no such file
        "/Repos/ana@example.com/etl/../conf/settings",  # leaves the repository
    ],
)
def test_a_workspace_path_outside_the_checkout_is_skipped(sparkpar_cli, tmp_path, run):
    name, _ = _project(tmp_path, "export", run=run, partitions=1, keys=ALL_COLUMNS)
    assert _rules(sparkpar_cli, name, "--no-cache") == ["SPX102", "SPX202"]


def test_a_workspace_path_reads_the_repository_path_as_an_import():
    assert run_as_import("M", "%run /Repos/ana@example.com/etl/conf/settings") == "from conf.settings import *  M"
    assert run_as_import("M", "# MAGIC %run /Workspace/Repos/a/etl/setup.py") == "from setup import *  M"
    # No import spells a notebook named `01-setup`, nor a folder outside a Git folder.
    assert run_as_import("M", "%run /Repos/a/etl/nb/01-setup") == "M"
    assert run_as_import("M", "%run /Shared/setup") == "M"


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "sparkpar tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "sparkpar tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}


def _git(cwd, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


def test_changed_since_checks_the_notebooks_running_a_changed_settings_file(sparkpar_cli, tmp_path):
    (tmp_path / "jobs").mkdir()
    name, settings = _project(tmp_path, "export", run="/Repos/ana@example.com/etl/conf/settings", partitions=1)
    (tmp_path / name).rename(tmp_path / "jobs" / name)
    (tmp_path / "jobs" / "other.py").write_text(_export("./elsewhere"))
    os.rmdir(tmp_path / ".git")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "base")
    settings.write_text(SETTINGS.format(partitions=8, keys=ID_ONLY))
    _git(tmp_path, "commit", "-qam", "more partitions")
    result = sparkpar_cli(
        "lint", "--no-cache", "--select", "SPX202", "--format", "json", "--changed-since", "HEAD~1", "."
    )
    assert result.exit_code == 1, result.output
    assert {f["path"] for f in json.loads(result.stdout)} == {"jobs/job.py"}


def test_constants_are_the_top_level_literals_set_once():
    module = cst.parse_module(
        "A = 1\n"
        "B = -0.5\n"
        'C = {"keys": ["id", ("a", "b")], "on": True, "none": None}\n'
        "D = compute()\n"  # not a literal
        "E = 1\nE = [E]\n"  # rebound to something else
        "F = 1\nif debug:\n    F = 2\n"  # one of two values
        "G = 1\nG += 1\n"
        "for H in range(3):\n    pass\n"
        "def I():\n    J = 1\n"  # a function's own names
        "K = 'x'\nK = 'y'\n"  # the last literal wins
        "L = {1: 'a'}\n"  # keys other than strings are not kept
        f"M = {list(range(300))}\n"  # data, not a setting
    )
    assert module_constants(module) == {
        "A": 1,
        "B": -0.5,
        "C": {"keys": ["id", ["a", "b"]], "on": True, "none": None},
        "K": "y",
    }


def test_a_star_imported_settings_module_brings_its_values(sparkpar_cli, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "settings.py").write_text(SETTINGS.format(partitions=1, keys=ID_ONLY))
    (tmp_path / "job.py").write_text(f"from conf.settings import *\n{CALLER}")
    assert _rules(sparkpar_cli, "job.py", "--no-cache") == ["SPX102", "SPX402"]


def test_the_same_values_set_in_the_notebook_itself(sparkpar_cli, tmp_path):
    # What a `%run` brings is read as these same-file names are.
    (tmp_path / "job.py").write_text(SETTINGS.format(partitions=1, keys=ALL_COLUMNS) + CALLER)
    assert _rules(sparkpar_cli, "job.py", "--no-cache") == ["SPX402"]
