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
from sparkpar_lint.graph.stage_graph import StageGraph
from sparkpar_lint.model import NoFix
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


def union_job(branches: int) -> bytes:
    query = " UNION ALL ".join(f"SELECT k, first(v) AS v{i} FROM t{i} GROUP BY k" for i in range(branches))
    return f'from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\ndf = spark.sql("""{query}""")\n'.encode()


def sql_script(statements: int) -> bytes:
    view = (
        "CREATE OR REPLACE TEMP VIEW v{i} AS SELECT k, first(v) AS f FROM (SELECT * FROM t ORDER BY ts) GROUP BY k;\n"
    )
    return "".join(view.format(i=i) for i in range(statements)).encode()


def test_a_union_of_n_branches_walks_its_stages_a_bounded_number_of_times_each(tmp_path, monkeypatch):
    # A finding on every branch, each asking whether its result is observed: a walk downstream
    # per finding went down the whole chain of unions after it (N*N/2 steps).
    asked = []
    consumers = StageGraph.consumers
    monkeypatch.setattr(StageGraph, "consumers", lambda graph, node: asked.append(1) or consumers(graph, node))
    steps = {}
    for branches in (40, 160):
        path = tmp_path / f"union_{branches}.py"
        result, _ = check_source(str(path), union_job(branches), RULES)
        assert len([f for f in result.findings if f.rule_id == "SPX101"]) == branches
        steps[branches], asked[:] = len(asked), []
    assert steps[160] <= 6 * steps[40], steps  # four times the branches: linear is about 4x, this was 14x


def test_a_sql_script_is_tokenized_once_and_its_text_not_copied_per_finding(tmp_path, monkeypatch):
    from sqlglot.dialects.spark import Spark

    from sparkpar_lint.sql import literal_edit

    counts = {"tokenize": 0, "segments": 0, "with_body": 0}

    def counted(name, function):
        def call(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(Spark, "tokenize", counted("tokenize", Spark.tokenize))
    monkeypatch.setattr(literal_edit, "_segments", counted("segments", literal_edit._segments))
    monkeypatch.setattr(literal_edit, "_with_body", counted("with_body", literal_edit._with_body))
    path = tmp_path / "views.sql"
    result, _ = check_source(str(path), sql_script(60), RULES)
    fixable = [f for f in result.findings if f.fix_safety is not None]
    assert len(fixable) >= 60, result
    # Per file, not per finding: the script read once (it was read again for column calls, and
    # tokenized twice each time), its literal mapped once; a lint builds no fix's new text, which
    # held a copy of the whole script per finding.
    assert counts == {"tokenize": 1, "segments": 1, "with_body": 0}


@pytest.mark.parametrize(
    ("literal", "old", "new", "refused"),
    [
        # The replacement completes a triple quote with the two before it: the string would close.
        ('"""SELECT x"" FROM t"""', " FROM", '"y', True),
        # A quote the replacement brings, far from any other: still inside the string.
        ('"""SELECT x FROM t WHERE y = 1"""', "x", 'x || "a"', False),
        # An escaped quote away from the edit does not close anything, before or after.
        ('"""SELECT \\"x\\" FROM t, first(v)"""', "first(v)", "min(v)", False),
    ],
)
def test_a_sql_rewrite_is_refused_exactly_when_its_string_would_close_early(literal, old, new, refused):
    # The scan for a closing quote looks only near each replacement (the whole body once per
    # finding was quadratic); what it refuses must stay what a scan of the whole body refuses.
    import libcst as cst

    from sparkpar_lint.sql.literal_edit import rewrite
    from sparkpar_lint.sql.text import sql_text

    node = cst.parse_expression(literal)
    sql = sql_text(node, lambda _: (1, 0), cst.Module([]).code_for_node).text
    start = sql.index(old)
    outcome = rewrite(node, sql, [(start, start + len(old), new)])
    assert isinstance(outcome, NoFix) == refused, outcome
    if not refused:
        assert isinstance(outcome, cst.SimpleString)
        assert outcome.evaluated_value == sql[:start] + new + sql[start + len(old) :]
