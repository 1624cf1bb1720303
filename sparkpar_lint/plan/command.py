"""`sparkpar plan`: parallelism advice from the cost model (SPEC §5).

Two inputs: `--model CHAIN.json`, an abstract chain (the model alone, pipelines included; with
`"inputs": [names]` per operator, a graph with joins, unions and fan-out), or a
PySpark job FILE, read into the stage graph and costed by `--profile` (fission only: Spark runs
the stages of one chain one after another, so there is no pipeline parallelism to plan).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from sparkpar_lint.command_input import (
    InputError,
    file_timeout_option,
    parse_source,
    read_cells_source,
    within_budget,
)
from sparkpar_lint.command_input import fail as _fail
from sparkpar_lint.plan.operators import ModelError, PlanModel, load_model
from sparkpar_lint.plan.render import FORMATS, render

BRUTE_FORCE_LIMIT = 12  # operators; the exhaustive search grows exponentially beyond
GRAPH_BRUTE_FORCE_LIMIT = 8  # a graph's search multiplies its segments' configurations


class PlanError(Exception):
    pass


@click.command("plan")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "--model",
    "model_path",
    type=click.Path(path_type=Path),
    help="Plan an abstract operator chain written as JSON instead of a job file.",
)
@click.option(
    "--profile",
    "profile_paths",
    type=click.Path(path_type=Path),
    multiple=True,
    help="Per-operator rows and seconds, or Spark's stage metrics, from a real run (JSON). Give a second "
    "--profile of the same job run at another shuffle-partition setting to separate each stage's work "
    "from its per-task costs.",
)
@click.option(
    "--cores", type=click.IntRange(min=1), help="Cores to plan for (default: the model's, else this machine's)."
)
@click.option(
    "--brute-force", is_flag=True, help=f"Search every configuration exhaustively (chains up to {BRUTE_FORCE_LIMIT})."
)
@click.option(
    "--thread-switch-cost",
    type=click.FloatRange(min=0),
    help="delta: cost per row crossing a thread boundary (overrides the model).",
)
@click.option(
    "--replication-cost",
    type=click.FloatRange(min=0),
    help="c_p: per-row ordering cost, times log2(replicas) (overrides the model).",
)
@click.option(
    "--calibration",
    "calibration_path",
    type=click.Path(path_type=Path),
    help="Spark cost constants (JSON) for a profile with Spark's stage metrics "
    "(default: .sparkpar/calibration.json if present, else built-in values).",
)
@click.option(
    "--calibrate",
    is_flag=True,
    help="Run micro-jobs on Spark, fit the cost constants and write them to "
    "--calibration (default .sparkpar/calibration.json); plans nothing.",
)
@click.option("--master", default=None, help="Spark master for --calibrate (default local-cluster[2,1,1024]).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="rich", show_default=True)
@file_timeout_option
def plan(
    file,
    model_path,
    profile_paths,
    cores,
    brute_force,
    thread_switch_cost,
    replication_cost,
    calibration_path,
    calibrate,
    master,
    fmt,
    file_timeout,
):
    """Advise on parallelism: regions, ordering, replicas, repartition and shuffle partitions."""
    if calibrate:
        _calibrate(calibration_path, master, file, model_path, profile_paths)
        return
    if len(profile_paths) > 2:
        _fail("give at most two --profile files: one run, and one of the same job at another setting")
    if file is not None:
        _load_analysis()
    try:
        # In a worker process: a job file that stalls or crashes the parser costs one clear error.
        arguments = (
            file,
            model_path,
            profile_paths,
            cores,
            brute_force,
            thread_switch_cost,
            replication_cost,
            calibration_path,
        )
        report = within_budget(_plan_arguments, arguments, str(file or model_path), file_timeout, "nothing was planned")
    except (ModelError, PlanError, InputError) as error:
        _fail(str(error))
    except Exception as error:  # a bug of ours: one line naming it, never a traceback
        _fail(f"internal error: {type(error).__name__}: {error}")
    color = fmt == "rich" and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    click.echo(render(report, fmt, color=color), nl=False)


def _load_analysis() -> None:
    """Imports the stage graph and the rules here, before the worker is forked: they take a second
    or two to import, which a process planning many jobs (an editor, a test run) then pays once
    rather than in every worker."""
    import importlib

    try:
        for module in ("sparkpar_lint.graph.builder", "sparkpar_lint.plan.rewrites"):
            importlib.import_module(module)
        from sparkpar_lint.rules import all_rules
    except ImportError:
        return  # the worker says what is missing (_model_from_job)
    all_rules()


def _plan_arguments(arguments: tuple):
    return _plan(*arguments)


def _calibrate(path, master, file, model_path, profile_paths) -> None:
    import importlib.util

    from sparkpar_lint.plan.spark_cost import CALIBRATION_FILE, save_costs

    if file is not None or model_path is not None or profile_paths:
        _fail("--calibrate measures this machine and plans nothing: give no FILE, --model or --profile")
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("numpy") is None:
        _fail(
            "--calibrate runs micro-jobs on Spark and fits them with numpy, which are not "
            "installed here: pip install 'sparkpar[pytest]'"
        )
    from sparkpar_lint.plan.calibrate import DEFAULT_MASTER, calibrate

    target = Path(path) if path is not None else CALIBRATION_FILE
    try:
        costs, runs = calibrate(master or DEFAULT_MASTER, log=lambda line: click.echo(f"sparkpar: {line}", err=True))
        save_costs(costs, target, runs)
    except OSError as error:
        _fail(f"{target}: cannot write the calibration: {error.strerror or error}")
    except Exception as error:  # Spark failing to start, a micro-job failing: one line
        _fail(f"calibration failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    for key, value in costs.to_dict().items():
        click.echo(f"{key} = {value:.6g}")
    click.echo(f"sparkpar: wrote {target}", err=True)


def _plan(file, model_path, profile_paths, cores, brute, delta, cp, calibration_path=None):
    from sparkpar_lint.plan.advice import build_report
    from sparkpar_lint.plan.heuristic import plan_chain

    profile_path = profile_paths[0] if profile_paths else None
    second = None
    if len(profile_paths) == 2:
        from sparkpar_lint.plan.profile import load_profile

        second = load_profile(profile_paths[1])
        if not second.stages:
            raise PlanError(
                f"{profile_paths[1]}: a second profile needs Spark's stage metrics (sparkpar profile --event-log)"
            )

    if (file is None) == (model_path is None):
        raise PlanError("give a job FILE or --model CHAIN.json (exactly one)")
    if model_path is not None:
        if profile_path is not None:
            raise PlanError("--profile applies to a job FILE; a --model chain carries its costs")
        model = load_model(model_path)
        source, notes, spark, stages = str(model_path), (), False, None
    else:
        model, notes, stages, rewrites = _model_from_job(file, profile_path, cores)
        source, spark = str(file), True
    model = PlanModel(
        model.operators,
        cores or model.cores,
        model.thread_switch_cost if delta is None else delta,
        model.replication_cost if cp is None else cp,
        model.max_threads,
        model.inputs,
    )
    unit = "rows/s" if profile_path is not None and not (stages and not stages.rows) else "rows/unit"
    if model.inputs is not None:
        report = _plan_graph(model, source, brute, spark=spark, notes=notes, unit=unit)
    else:
        if brute and len(model.operators) > BRUTE_FORCE_LIMIT:
            raise PlanError(
                f"--brute-force searches every configuration; {len(model.operators)} "
                f"operators is too many (limit {BRUTE_FORCE_LIMIT})"
            )
        result = plan_chain(model, brute=brute, pipelining=not spark)
        report = build_report(model, result, source, spark=spark, notes=notes, unit=unit)
    if stages is not None:
        from sparkpar_lint.plan.spark_advice import with_spark_prediction
        from sparkpar_lint.plan.spark_cost import load_costs

        report = with_spark_prediction(report, stages, load_costs(calibration_path), cores, second)
    elif second is not None:
        raise PlanError(f"{profile_path}: two profiles are compared by their Spark stage metrics; this one has none")
    if model_path is None and rewrites:
        from dataclasses import replace

        report = replace(report, advice=report.advice + rewrites)
    return report


def _plan_graph(
    model: PlanModel,
    source: str,
    brute: bool,
    *,
    spark: bool = False,
    notes: tuple[str, ...] = (),
    unit: str = "rows/unit",
):
    from sparkpar_lint.plan.advice import build_graph_report
    from sparkpar_lint.plan.graph_plan import plan_graph

    if brute and len(model.operators) > GRAPH_BRUTE_FORCE_LIMIT:
        raise PlanError(
            f"--brute-force searches every configuration; {len(model.operators)} "
            f"operators in a graph is too many (limit {GRAPH_BRUTE_FORCE_LIMIT})"
        )
    # Spark runs one stage's operators in one task: fission only, as for a job's chain.
    result = plan_graph(model, brute=brute, pipelining=not spark)
    return build_graph_report(model, result, source, spark=spark, notes=notes, unit=unit)


def _model_from_job(file: Path, profile_path, cores):
    """(model, notes, profile, rewrites): the profile when it carries Spark's stage metrics, else
    None; rewrites, the advice `sparkpar fix` applies (rewrites.py)."""
    from sparkpar_lint.plan.from_graph import from_stage_graph, graph_from_stage_graph

    try:
        from sparkpar_lint.graph.builder import build_graph
    except ImportError as error:
        raise PlanError(
            f"planning a job file needs the stage graph, which is not available in this build ({error}); use --model"
        ) from None
    from sparkpar_lint.parsing import with_deep_stack
    from sparkpar_lint.plan.rewrites import fix_advice

    # A notebook is planned as lint reads it: its cells as one module, magics masked.
    source, _locate = read_cells_source(str(file))

    def graph_operators():
        module = parse_source(str(file), source)
        graph = build_graph(module, str(file))
        # Without per-operator seconds every operator costs the same, so the whole graph can be
        # planned; such a profile times one chain, and seconds must not meet the unit costs of the rest.
        whole = graph_from_stage_graph(graph) if timed is None else None
        return from_stage_graph(graph), whole, fix_advice(str(file), source, module)

    timed, stages = None, None
    if profile_path is not None:
        from sparkpar_lint.plan.profile import load_profile

        recorded = load_profile(profile_path)
        if recorded.rows:
            timed = recorded
        if recorded.stages:
            stages = recorded

    (operators, notes), whole, rewrites = with_deep_stack(graph_operators)
    if not operators:
        raise PlanError(f"{file}: no Spark operators found to plan")
    inputs = None
    if whole is not None:
        operators, inputs = whole
        notes = tuple(n for n in notes if not n.startswith("planned the main chain only"))
    if timed is not None:
        from sparkpar_lint.plan.profile import apply_profile

        operators, more = apply_profile(operators, timed)
        notes += more
    elif stages is not None:
        notes += (
            "the profile has Spark's per-stage metrics, not per-operator seconds: every "
            "operator costs 1 in the region plan; the Spark cost model uses the stages",
        )
    else:
        notes += (
            "no --profile: every operator costs 1 and filters keep half their rows; record a profile for real numbers",
        )
    mean_cost = sum(op.cost for op in operators) / len(operators) or 1.0
    # Overheads relative to the operators' own cost, so seconds-per-row profiles work unscaled.
    return (
        PlanModel(operators, cores or os.cpu_count() or 1, 0.05 * mean_cost, 0.01 * mean_cost, inputs=inputs),
        notes,
        stages,
        rewrites,
    )
