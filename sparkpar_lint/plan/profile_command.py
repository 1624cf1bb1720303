"""`sparkpar profile JOBFILE`: record a profile (profile.py's format) by running a fixture-style job.

The job module follows the harness convention (tests/spark_harness.py): `INPUTS = {name: [row
dicts]}`, optional `SCHEMA = {name: ddl}`, and `def job(spark, **inputs)` returning a DataFrame.
Inputs are built under the sequential semantics (one partition, one shuffle partition).

Each operator of the job's main chain is measured by prefix slicing: for every stage-graph node on
the chain ending at the value `job` returns, a variant of `job` keeps the statements before the
one holding the node and then returns the node's call, so running the variant yields the
DataFrame up to that operator. `profile_prefixes` times the prefixes; rows are named
`method:line`, as `sparkpar plan JOBFILE --profile` names the operators. A prefix that is not a
DataFrame (GroupedData after groupBy), or a node outside `job` (in a helper it calls), is merged
into the next measured operator.

pyspark is imported only inside the command: the linter never needs it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import click
import libcst as cst

from sparkpar_lint.command_input import InputError, parse_source, read_source
from sparkpar_lint.command_input import fail as _fail

JOB_FUNCTION = "job"
MASTER = "local[2]"
_PYSPARK_ERROR_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")
_SEQUENTIAL_CONF = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false"}


class ProfileError(Exception):
    pass


@dataclass(frozen=True)
class Prefix:
    """One operator of the chain; `source` is the variant of `job` that returns its DataFrame,
    None when the operator cannot be sliced on its own (its call is outside `job`)."""

    name: str
    node_id: int
    source: str | None


@dataclass(frozen=True)
class JobSlices:
    prefixes: tuple[Prefix, ...]
    baseline: str | None  # a variant returning the first operator's input, when it has one
    notes: tuple[str, ...] = ()


@click.command("profile")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the profile here (default: standard output).",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Timed runs per operator prefix; the best one counts.",
)
@click.option(
    "--event-log",
    "event_log",
    type=click.Path(path_type=Path),
    help="Read Spark's own per-stage metrics from the event log of any run (a file or "
    "an eventlog_v2_* directory; run with spark.eventLog.enabled=true) instead of "
    "running FILE.",
)
def profile(file, output, repeats, event_log):
    """Run the fixture-style job in FILE on its INPUTS and record per-operator rows and seconds,
    or read the per-stage metrics of any run from its Spark event log (--event-log).

    The result feeds `sparkpar plan FILE --profile PROFILE`.
    """
    if (file is None) == (event_log is None):
        _fail("give a job FILE to run or --event-log LOG of a run (exactly one)")
    try:
        if event_log is not None:
            recorded, notes = profile_from_event_log(event_log)
        else:
            recorded, notes = record_job_profile(file, repeats=repeats)
    except (ProfileError, InputError) as error:
        _fail(str(error))
    except Exception as error:  # a bug of ours: one line naming it, never a traceback
        _fail(f"{file or event_log}: internal error: {type(error).__name__}: {error}")
    for note in notes:
        click.echo(f"sparkpar: note: {note}", err=True)
    if output is None:
        import json

        click.echo(json.dumps(recorded.to_dict(), indent=2))
    else:
        recorded.write(output)
        what = f"{len(recorded.stages)} stage(s)" if event_log else f"{len(recorded.rows)} operator(s)"
        click.echo(f"sparkpar: wrote {what} to {output}", err=True)


def profile_from_event_log(path: Path):
    """(profile, notes): the stages of every job in the log (pure Python, no Spark needed)."""
    from sparkpar_lint.plan.event_log import EventLogError, read_event_log
    from sparkpar_lint.plan.profile import Profile

    try:
        metrics = read_event_log(path)
    except EventLogError as error:
        raise ProfileError(str(error)) from None
    settings = metrics.settings
    spark = {k: settings[v] for k, v in (("master", "spark.master"), ("app", "spark.app.name")) if v in settings}
    notes = []
    if metrics.jobs and not metrics.stages:
        notes.append("the log has jobs but no completed stage")
    queries = {s.query for s in metrics.stages if s.query}
    if queries:
        batches = len({(s.query, s.batch) for s in metrics.stages if s.query})
        notes.append(f"{len(queries)} streaming quer{'y' if len(queries) == 1 else 'ies'}, {batches} micro-batch(es)")
    wall = metrics.span() or None
    return Profile((), str(path), spark or None, tuple(metrics.stages), len(metrics.jobs), wall), notes


# ------------------------------------------------------------------------------ slicing (no Spark)


def slice_job(source: str, path: str) -> JobSlices:
    """The prefixes of `job`'s main chain, as variant function sources; pure LibCST.
    A file that does not parse is a command_input.InputError."""
    from sparkpar_lint.parsing import with_deep_stack

    return with_deep_stack(_slice_module, parse_source(path, source), path)


def _slice_module(module: cst.Module, path: str) -> JobSlices:
    from sparkpar_lint.graph.builder import build_graph
    from sparkpar_lint.plan.from_graph import from_stage_graph

    function = _job_function(module, path)
    statements = _statements(function)
    where = _statement_of_calls(statements)
    graph = build_graph(module, path)
    inside = [node for node in graph.nodes if node.call is not None and id(node.call) in where]
    if not inside:
        raise ProfileError(f"{path}: no Spark operators found in {JOB_FUNCTION}()")
    chain = _chain(graph, inside, statements)
    planned = {int(op.origin): op.name for op in from_stage_graph(graph)[0]}
    prefixes, notes = [], []
    for node in chain:
        name = planned.get(node.id, f"{node.method}:{node.span.line}")
        index = where.get(id(node.call)) if node.call is not None else None
        if index is None:
            notes.append(f"{name} is outside {JOB_FUNCTION}(): measured with the next operator")
            prefixes.append(Prefix(name, node.id, None))
            continue
        variant = _variant(module, function, statements[:index], node.call)
        prefixes.append(Prefix(name, node.id, variant))
    if set(planned.values()) - {p.name for p in prefixes}:
        notes.append(
            "the planner's main chain is not the chain job() returns; operators of "
            "the planner's chain that are missing here keep static costs"
        )
    return JobSlices(tuple(prefixes), _baseline(module, function, statements, where, chain[0]), tuple(notes))


def _job_function(module: cst.Module, path: str) -> cst.FunctionDef:
    found = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == JOB_FUNCTION]
    if not found:
        raise ProfileError(f"{path}: no top-level `def {JOB_FUNCTION}(spark, **inputs)` to run")
    return found[-1]


def _statements(function: cst.FunctionDef) -> list[cst.BaseStatement]:
    """The body's statements, one per small statement so `a = x; b = a.f()` slices between."""
    body = function.body
    lines: Sequence[cst.BaseStatement]
    if isinstance(body, cst.IndentedBlock):
        lines = body.body
    else:  # the only other suite: `def job(spark): return ...` on one line
        lines = [cst.SimpleStatementLine(cast(cst.SimpleStatementSuite, body).body)]
    statements: list[cst.BaseStatement] = []
    for line in lines:
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) > 1:
            statements.extend(
                line.with_changes(body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]) for small in line.body
            )
        else:
            statements.append(line)
    return statements


def _statement_of_calls(statements) -> dict[int, int]:
    """id(call) -> index of the statement holding it, for every call in the body."""
    where: dict[int, int] = {}

    class Calls(cst.CSTVisitor):
        def __init__(self, index: int) -> None:
            self.index = index

        def visit_Call(self, call: cst.Call) -> None:
            where[id(call)] = self.index

    for index, statement in enumerate(statements):
        statement.visit(Calls(index))  # a visitor keeps the nodes: ids are the graph's calls
    return where


def _chain(graph, inside, statements) -> list:
    """The main-input chain ending at the node `job` returns, source first."""
    by_call = {id(node.call): node for node in inside}
    sink = None
    returned = _returned_expression(statements)
    for _ in range(8):  # follow `return name` through `name = ...` a few times
        if isinstance(returned, cst.Call):
            sink = by_call.get(id(returned))
            break
        if not isinstance(returned, cst.Name):
            break
        returned = _assigned(statements, returned.value)
    if sink is None:  # the longest chain among job's nodes that no other node of job consumes
        consumed = {i for node in inside for i in node.inputs}
        ends = [node for node in inside if node.id not in consumed]
        sink = max(ends or inside, key=lambda node: len(list(graph.upstream(node))))
    return [*reversed(list(graph.upstream(sink))), sink]


def _returned_expression(statements) -> cst.BaseExpression | None:
    for statement in reversed(statements):
        if isinstance(statement, cst.SimpleStatementLine):
            small = statement.body[0]
            if isinstance(small, cst.Return):
                return small.value
    return None


def _assigned(statements, name: str) -> cst.BaseExpression | None:
    for statement in reversed(statements):
        if isinstance(statement, cst.SimpleStatementLine):
            small = statement.body[0]
            if isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
            ):
                return small.value
    return None


def _variant(module: cst.Module, function: cst.FunctionDef, kept, value: cst.BaseExpression) -> str:
    """`job` with body `kept` then `return value`, as source text."""
    if not value.lpar:  # a call cut out of a multi-line chain needs brackets to parse alone
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    body = cst.IndentedBlock(body=[*kept, cst.SimpleStatementLine([cst.Return(value)])])
    return module.code_for_node(function.with_changes(body=body, leading_lines=[]))


def _baseline(module, function, statements, where, first) -> str | None:
    call = first.call
    if call is None or id(call) not in where or not isinstance(call.func, cst.Attribute):
        return None
    return _variant(module, function, statements[: where[id(call)]], call.func.value)


# ----------------------------------------------------------------------------- measuring (Spark)


def record_job_profile(file: Path, *, repeats: int = 3):
    """(profile, notes) of the job in `file`, on the active session or a new local[2] one."""
    from sparkpar_lint.plan.profile import profile_prefixes

    if importlib.util.find_spec("pyspark") is None:  # the core install is the linter alone
        raise ProfileError(
            "sparkpar profile runs the job on Spark, and PySpark is not installed here: pip install 'sparkpar[pytest]'"
        )
    slices = slice_job(read_source(str(file)), str(file))
    module = _load(file)
    inputs = getattr(module, "INPUTS", None)
    if not isinstance(inputs, dict) or not inputs:
        raise ProfileError(f"{file}: no INPUTS = {{name: [row dicts]}} to run the job on")
    with _sequential_session() as spark:
        from pyspark.sql import DataFrame

        frames = _input_frames(spark, module, file)
        try:
            result = module.job(spark, **frames)
            if isinstance(result, DataFrame):
                result.write.format("noop").mode("overwrite").save()
        except Exception as error:
            raise ProfileError(f"{file}: the job failed: {_one_line(error)}") from None
        if not isinstance(result, DataFrame):
            raise ProfileError(
                f"{file}: {JOB_FUNCTION}() returned {type(result).__name__}, "
                f"not a DataFrame; sparkpar profile measures DataFrame jobs"
            )
        notes = list(slices.notes)
        prefixes = []
        for prefix in slices.prefixes:
            build = _builder(module, file, prefix.source, spark, frames, DataFrame)
            if build is None and prefix.source is not None:
                notes.append(f"{prefix.name} does not yield a DataFrame on its own: measured with the next operator")
            prefixes.append((prefix.name, build))
        baseline = _builder(module, file, slices.baseline, spark, frames, DataFrame)
        try:
            recorded = profile_prefixes(prefixes, baseline=baseline, repeats=repeats, job=str(file))
        except Exception as error:
            raise ProfileError(f"{file}: the job failed while profiling: {_one_line(error)}") from None
    return recorded, tuple(notes)


def _load(file: Path):
    name = f"sparkpar_profiled_{abs(hash(str(file.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None  # narrowing: a source file has both
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))  # the job may import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ProfileError(f"{file}: cannot import: {_one_line(error)}") from None
    finally:
        sys.path.remove(str(file.resolve().parent))
    if not callable(getattr(module, JOB_FUNCTION, None)):
        raise ProfileError(f"{file}: no `def {JOB_FUNCTION}(spark, **inputs)` to run")
    return module


def _input_frames(spark, module, file: Path) -> dict:
    schema = getattr(module, "SCHEMA", None) or {}
    frames = {}
    for name, rows in module.INPUTS.items():
        try:
            frames[name] = spark.createDataFrame(list(rows), schema.get(name)).coalesce(1)
        except Exception as error:
            raise ProfileError(f"{file}: cannot build input {name!r}: {_one_line(error)}") from None
    return frames


def _builder(module, file: Path, source: str | None, spark, frames, frame_class):
    """A no-argument callable running the variant, or None when it yields no DataFrame."""
    if source is None:
        return None
    namespace = dict(vars(module))
    try:
        exec(compile(source, str(file), "exec"), namespace)  # noqa: S102 - the user's own job
        variant = namespace[JOB_FUNCTION]
        if not isinstance(variant(spark, **frames), frame_class):
            return None
    except Exception:  # a prefix that cannot stand alone is merged like GroupedData
        return None
    return lambda: variant(spark, **frames)


@contextmanager
def _sequential_session():
    """The active session (a test's, say) with sequential settings, restored after; else a new
    local[2] session, stopped after."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    created = active is None
    if active is None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.master(MASTER).appName("sparkpar-profile")
        builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        for key, value in _SEQUENTIAL_CONF.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    else:
        spark = active
    saved = {key: spark.conf.get(key, None) for key in _SEQUENTIAL_CONF}
    for key, value in _SEQUENTIAL_CONF.items():
        spark.conf.set(key, value)
    # pyspark logs every analysis error it raises; ours is the one line the user should see.
    loggers = [logging.getLogger(name) for name in _PYSPARK_ERROR_LOGGERS]
    was_disabled = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield spark
    finally:
        for logger, disabled in zip(loggers, was_disabled):
            logger.disabled = disabled
        if created:
            spark.stop()
        else:
            for key, before in saved.items():
                if before is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, before)


def _one_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
