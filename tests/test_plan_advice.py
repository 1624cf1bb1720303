"""`sparkpar plan` advice is code that runs: for every fixture job, each code snippet in the
advice parses, names only what the job has (its imports, `spark`, the DataFrame it applies to)
and partitions only by the job's columns or the job's own key expressions; and it runs on Spark."""

import ast
import functools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkpar_lint.plan.command import plan

ROOT = Path(__file__).resolve().parent.parent
JOBS = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))
# A job's two tests run on one pytest-xdist worker, so the second reads the advice the first
# computed (`_advice` keeps it): planning a job costs more than running its advice on Spark.
PATHS = [
    pytest.param(p, id=str(p.relative_to(ROOT)), marks=pytest.mark.xdist_group(f"advice:{p.relative_to(ROOT)}"))
    for p in JOBS
]


@functools.cache
def _advice(path: Path, *args: str) -> list[str] | None:
    result = CliRunner().invoke(plan, [str(path), "--format", "json", *args])
    if result.exit_code == 2:  # not a plannable job (no operators, not Python): said, not planned
        assert "sparkpar: error:" in result.output
        return None
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["advice"]


def _snippets(advice: list[str]) -> list[str]:
    """Code is written in backticks and starts with `.` (a DataFrame method) or `spark.`."""
    found = []
    for line in advice:
        for index, part in enumerate(line.split("`")):
            if index % 2 and part.startswith((".", "spark.")):
                found.append(part)
    return found


def _function_names() -> set[str]:
    import pyspark.sql.functions as functions

    return {name for name in dir(functions) if not name.startswith("_")} - {"col", "column"}


def _job_names_and_columns(source: str) -> tuple[set[str], set[str]]:
    """Names the job binds, and the strings it uses as columns (not as a function's argument,
    such as the "10 minutes" of `window("t", "10 minutes")`)."""
    tree = ast.parse(source)
    names = {"spark", "df"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    functions = _function_names()
    not_columns = set()
    strings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if callee in functions:
                not_columns |= {
                    a.value for a in node.args[1:] if isinstance(a, ast.Constant) and isinstance(a.value, str)
                }
    return names, strings - not_columns


def _python_source(path) -> str:
    """The job's text, its notebook magic lines (`%pip install ...`) masked as lint masks them."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(f"# {line}" if line.startswith(("%", "!")) else line for line in lines)


@pytest.mark.parametrize("path", PATHS)
def test_advice_is_valid_code_over_the_jobs_names(path):
    advice = _advice(path)
    if advice is None:
        return
    source = _python_source(path)
    names, columns = _job_names_and_columns(source)
    for snippet in _snippets(advice):
        code = f"df{snippet}" if snippet.startswith(".") else snippet
        tree = ast.parse(code, mode="eval")  # a SyntaxError fails the test
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert used <= names, (snippet, used - names)
        call = tree.body
        assert isinstance(call, ast.Call)
        if call.func.attr == "repartition":
            count, *keys = call.args
            assert isinstance(count, ast.Constant) and count.value >= 1
            for key in keys:
                if isinstance(key, ast.Constant):
                    assert key.value in columns, (snippet, key.value)
                else:  # an expression: the job's own text, so it names the job's columns
                    assert ast.unparse(key) in ast.unparse(ast.parse(source)), snippet
        elif call.func.attr == "set":
            assert ast.literal_eval(call.args[0]) == "spark.sql.shuffle.partitions"
            assert int(ast.literal_eval(call.args[1])) >= 1


def test_window_key_is_one_expression_and_stateful_stream_keeps_its_partitions():
    advice = _advice(ROOT / "fixtures/clean/state_stream_watermarked_join.py", "--cores", "8")
    text = " ".join(advice)
    assert "'10 minutes'" not in text
    assert "spark.conf.set" not in text  # state partitions are fixed by the checkpoint
    assert "checkpoint" in text and "new checkpointLocation" in text


def test_expression_key_is_written_as_the_job_wrote_it(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "df = spark.read.parquet('/data/clicks')\n"
        "df.groupBy(F.window('ts', '10 minutes'), 'ad').count().write.parquet('/out')\n"
    )
    advice = _advice(job)
    snippets = [s for s in _snippets(advice) if s.startswith(".repartition(")]
    assert snippets, advice
    tree = ast.parse(f"df{snippets[0]}", mode="eval")
    keys = [ast.unparse(k) for k in tree.body.args[1:]]
    assert keys == ["F.window('ts', '10 minutes')", "'ad'"]
    assert any('spark.conf.set("spark.sql.shuffle.partitions"' in a for a in advice)


def test_rdd_jobs_are_not_told_about_sql_shuffle_partitions():
    advice = _advice(ROOT / "fixtures/clean/state_pair_rdd_partitioner.py", "--cores", "8")
    assert not any("spark.conf.set" in a for a in advice)
    assert any("numPartitions" in a for a in advice)


def _columns(snippets: list[str]) -> dict[str, str]:
    """The columns the advice's `repartition` keys read, with a type: a plain key is a string
    column; a name inside an expression key (a date function's argument) a timestamp column."""
    types = {}
    for snippet in snippets:
        call = ast.parse(f"df{snippet}" if snippet.startswith(".") else snippet, mode="eval").body
        if call.func.attr != "repartition":
            continue
        for key in call.args[1:]:
            if isinstance(key, ast.Constant):
                types.setdefault(key.value, "string")
            for node in ast.walk(key):
                if isinstance(node, ast.Call):
                    for arg in node.args:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.isidentifier():
                            types[arg.value] = "timestamp"
    return types or {"id": "string"}


def _rows(types: dict[str, str]) -> list[tuple]:
    import datetime

    start = datetime.datetime(2024, 3, 5, 10)
    return [
        tuple(start + datetime.timedelta(days=40 * i) if kind == "timestamp" else f"v{i}" for kind in types.values())
        for i in range(6)
    ]


# Snippets already run on Spark in this process, keyed by what their run depends on: the code,
# the columns of the rows it runs on, and the imports binding the names it reads. Most fixture
# jobs get the same few snippets (`.repartition(2)` over one string column); the same code on the
# same rows gives the same result, so a repeat is proven by the first run.
_RAN_ON_SPARK: set[tuple] = set()


def _imports_of(path: Path) -> list[ast.stmt]:
    """The job's own pyspark imports: an expression key is written with the job's names (`F.date_trunc`)."""
    tree = ast.parse(_python_source(path))
    return [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("pyspark")
        or isinstance(node, ast.Import)
        and all(a.name.startswith("pyspark") for a in node.names)
    ]


def _run_key(snippets: list[str], types: dict[str, str], imports: list[ast.stmt]) -> tuple:
    read = {
        node.id
        for snippet in snippets
        for node in ast.walk(ast.parse(f"df{snippet}" if snippet.startswith(".") else snippet, mode="eval"))
        if isinstance(node, ast.Name)
    }
    binding = sorted(
        ast.unparse(node)
        for node in imports
        if any((alias.asname or alias.name).split(".")[0] in read for alias in node.names)
    )
    return tuple(snippets), tuple(types.items()), tuple(binding)


@pytest.mark.spark
@pytest.mark.parametrize("path", PATHS)
def test_advice_runs_on_spark(cluster_spark, path):
    """Every snippet of every fixture job's advice, executed on Spark against rows with the columns
    it names: a `repartition` gives its count of partitions and keeps every row; a setting takes
    effect on the next shuffle."""
    snippets = _snippets(_advice(path) or [])
    if not snippets:
        return  # not plannable, or advice in words only (a stateful stream's, an RDD job's)
    types = _columns(snippets)
    imports = _imports_of(path)
    key = _run_key(snippets, types, imports)
    if key in _RAN_ON_SPARK:
        return
    df = cluster_spark.createDataFrame(_rows(types), ", ".join(f"{name} {kind}" for name, kind in types.items()))
    namespace = {"df": df, "spark": cluster_spark}
    exec(compile(ast.Module(imports, []), str(path), "exec"), namespace)  # noqa: S102 - the fixture's imports
    namespace["spark"] = cluster_spark
    before = cluster_spark.conf.get("spark.sql.shuffle.partitions")
    try:
        for snippet in snippets:
            code = f"df{snippet}" if snippet.startswith(".") else snippet
            result = eval(code, namespace)  # noqa: S307 - the planner's own advice, on test data
            call = ast.parse(code, mode="eval").body
            if call.func.attr == "repartition":
                assert result.rdd.getNumPartitions() == ast.literal_eval(call.args[0])
                assert sorted(result.collect()) == sorted(df.collect())
            else:  # the setting: the next shuffle (adaptive execution is off here) has that many tasks
                partitions = int(ast.literal_eval(call.args[1]))
                assert df.groupBy(next(iter(types))).count().rdd.getNumPartitions() == partitions
    finally:
        cluster_spark.conf.set("spark.sql.shuffle.partitions", before)
    _RAN_ON_SPARK.add(key)


def test_a_rewrite_that_needs_no_profile_is_named_with_its_fix_command():
    advice = _advice(ROOT / "fixtures/spx402/bad_serial_sessions.py")
    named = [a for a in advice if "sparkpar fix" in a]
    assert len(named) == 1, advice
    assert named[0].startswith("line 20: ") and 'repartition("user")' in named[0]
    assert "`sparkpar fix --select SPX402 --unsafe-fixes " in named[0]
    assert not any("sparkpar fix" in a for a in _advice(ROOT / "fixtures/spx402/fixed_serial_sessions.py"))
