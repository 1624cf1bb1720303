"""What a run does per file stays constant as the files grow in number: trees of files already
linted are freed, the project root is looked up per directory, the cache writes one entry per
analysed file and nothing on a warm run. Counted on real runs, never timed."""

from __future__ import annotations

import gc
import os

import libcst as cst
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


def live_trees() -> int:
    return sum(1 for o in gc.get_objects() if type(o) in (StageGraph, cst.Module))


# A top-level function with a finding inside: its module is analysed twice (the second time with
# the callers' facts), and its scope holds the function's value, which holds the scope.
HELPER_JOB = """\
from pyspark.sql import functions as F


def latest(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v"))
"""


def test_a_worker_frees_the_trees_of_files_it_linted(tmp_path, monkeypatch, request):
    # Scopes and graphs are emptied once a lint has its findings, so no reference cycle keeps a
    # tree: each goes with its last reference, where a worker kept every tree it had linted
    # until a full pass of the collector walked them all.
    paths = project(tmp_path, 1, 12)
    for n in range(4):
        (tmp_path / "pkg0" / f"helper_{n}.py").write_text(HELPER_JOB)
        paths.append(str(tmp_path / "pkg0" / f"helper_{n}.py"))
    lint(paths.pop(0))  # imports the analysis: allocations that are not one tree's
    monkeypatch.setattr(parsing, "_next_collection", [2**62])  # no collection between files
    gc.collect()
    before = live_trees()
    gc.disable()
    request.addfinalizer(gc.enable)
    for path in paths:
        lint(path)
    assert live_trees() - before <= 1  # edits.alias keeps the last module it was asked about


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
