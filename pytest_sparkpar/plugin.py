"""pytest-sparkpar: prove a PySpark job gives the same output under every interleaving.

Registered through the `pytest11` entry point; `-p no:sparkpar` disables it. This module imports
nothing heavy at load time (no pyspark, no hypothesis), so `pytest --help` stays fast.

Options (each with an ini key of the same name, dashes as underscores, `sparkpar_` prefix):
  --sparkpar-determinism   also run permuted interleavings in `sparkpar.check`, and re-run
                           ordinary tests that use Spark under perturbed executions, file
                           streams split into other micro-batches (pytest_sparkpar.existing,
                           pytest_sparkpar.streams)
  --sparkpar-runs N        interleavings per check (default 20)
  --sparkpar-seed S        seed for the interleaving choices (default: random, printed in the header)
  --sparkpar-shrink-seconds T  time spent shrinking a failure (default 30; 0 = no shrinking)
  --sparkpar-faults        also runs per check and per existing Spark test with an executor of
                           the local-cluster killed mid-stage, so Spark retries tasks and
                           stages (pytest_sparkpar.faults)
  --sparkpar-fault-runs N  how many such runs per check and per existing test (default 4)
  sparkpar_file_timeout    (ini only) seconds the report's lint may spend on one file (default 120)
  --sparkpar-master URL    Spark master; default local[2], or local-cluster[2,1,1024] with
                           --sparkpar-determinism (see pytest_sparkpar.session); sc://... = Connect
  --sparkpar-only          run only the tests that visibly use Spark (see `uses_spark`)
  --sparkpar-budget T      seconds of perturbed runs per existing test and per check (default: no limit)
"""

from __future__ import annotations

import inspect
import random
import re
import shlex
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_sparkpar import extras

if TYPE_CHECKING:
    from pytest_sparkpar.confirm import Targets, reach  # noqa: F401  # Targets: in TARGETS_KEY's quoted type
    from pytest_sparkpar.report import SparkparFailure

DEFAULT_RUNS = 20
DEFAULT_FAULT_RUNS = 4
OPTIONS = (
    *("determinism", "runs", "seed", "shrink_seconds", "master", "faults", "fault_runs", "only", "budget"),
    *("confirm", "verdicts"),
)
SEED_KEY = pytest.StashKey[int]()
SESSION_KEY = pytest.StashKey[dict]()
WORKER_SEED = "sparkpar_seed"  # the key of the seed in an xdist worker's workerinput
TALLY_KEY = pytest.StashKey["Tally"]()
TARGETS_KEY = pytest.StashKey["Targets"]()
# Under pytest-xdist: the verdicts the workers sent back (workeroutput), merged on the controller.
MERGED_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()
WORKER_VERDICTS = "sparkpar_verdicts"  # the key of a worker's verdicts in its workeroutput


@dataclass
class Tally:
    """What the audit of existing tests did, for the summary line CI budgets by."""

    tests: int = 0
    runs: int = 0
    seconds: float = 0.0
    failed: int = 0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sparkpar", "sparkpar: determinism of PySpark jobs under parallelism")
    group.addoption(
        "--sparkpar-determinism",
        action="store_true",
        default=None,
        help="run permuted interleavings in sparkpar.check and fail when outputs differ",
    )
    group.addoption(
        "--sparkpar-runs",
        type=int,
        default=None,
        metavar="N",
        help=f"permuted interleavings per check (default {DEFAULT_RUNS})",
    )
    group.addoption(
        "--sparkpar-seed",
        type=int,
        default=None,
        metavar="S",
        help="seed of the interleaving choices (default: random, shown in the header)",
    )
    group.addoption(
        "--sparkpar-shrink-seconds",
        type=float,
        default=None,
        metavar="T",
        help="wall-clock budget for shrinking a failure to a minimal one; 0 reports "
        "the first failing interleaving as found (default 30)",
    )
    group.addoption(
        "--sparkpar-master",
        default=None,
        metavar="URL",
        help="Spark master (default local[2]; local-cluster[2,1,1024] with "
        "--sparkpar-determinism); an sc:// URL uses Spark Connect",
    )
    group.addoption(
        "--sparkpar-faults",
        action="store_true",
        default=None,
        help="retry safety: more runs per check and per existing Spark test, each killing an executor "
        "JVM of the local-cluster mid-stage; fails when the answer or the outcome changes (implies "
        "--sparkpar-determinism; needs a local-cluster master)",
    )
    group.addoption(
        "--sparkpar-fault-runs",
        type=int,
        default=None,
        metavar="N",
        help=f"runs with an executor killed, per check and per existing test (default {DEFAULT_FAULT_RUNS})",
    )
    group.addoption(
        "--sparkpar-confirm",
        action="store_true",
        default=None,
        help="directed audit: lint the modules the tests import, re-run under perturbations only the "
        "tests that execute a finding's line, and write a verdict for every finding (implies "
        "--sparkpar-determinism)",
    )
    group.addoption(
        "--sparkpar-verdicts",
        default=None,
        metavar="PATH",
        help="where --sparkpar-confirm writes its verdicts (default .sparkpar/verdicts.json under the rootdir)",
    )
    group.addoption(
        "--sparkpar-only",
        action="store_true",
        default=None,
        help="run only the tests that use Spark: those requesting the spark or sparkpar fixture, or "
        "whose own code or fixtures' code mentions Spark; the others are deselected",
    )
    group.addoption(
        "--sparkpar-budget",
        type=float,
        default=None,
        metavar="T",
        help="seconds of perturbed runs per existing test and per sparkpar.check: no new run starts "
        "after T (default: no limit; --sparkpar-runs still caps the count)",
    )
    parser.addini(
        "sparkpar_determinism", "run permuted interleavings (like --sparkpar-determinism)", type="bool", default=False
    )
    parser.addini(
        "sparkpar_runs", f"permuted interleavings per check (default {DEFAULT_RUNS})", default=str(DEFAULT_RUNS)
    )
    parser.addini("sparkpar_seed", "seed of the interleaving choices (default random)", default="")
    parser.addini("sparkpar_shrink_seconds", "shrinking budget in seconds (default 30)", default="30")
    parser.addini("sparkpar_master", "Spark master URL (see --sparkpar-master)", default="")
    parser.addini(
        "sparkpar_faults", "kill executors mid-stage in extra runs (like --sparkpar-faults)", type="bool", default=False
    )
    parser.addini("sparkpar_only", "run only the tests that use Spark", type="bool", default=False)
    parser.addini("sparkpar_confirm", "directed audit (like --sparkpar-confirm)", type="bool", default=False)
    parser.addini("sparkpar_verdicts", "verdicts file of --sparkpar-confirm", default="")
    parser.addini(
        "sparkpar_budget", "seconds of perturbed runs per existing test and per check (default: none)", default=""
    )
    parser.addini(
        "sparkpar_file_timeout",
        "seconds the linter may spend on one file for a report's likely cause (default 120; 0 = no limit)",
        default="120",
    )
    parser.addini(
        "sparkpar_fault_runs",
        f"fault-injected runs per check and per existing test (default {DEFAULT_FAULT_RUNS})",
        default=str(DEFAULT_FAULT_RUNS),
    )


def _option(config: pytest.Config, name: str):
    value = config.getoption(f"sparkpar_{name}")
    return value if value is not None else config.getini(f"sparkpar_{name}")


def determinism(config: pytest.Config) -> bool:
    return bool(_option(config, "determinism")) or fault_runs(config) > 0 or confirming(config)


def confirming(config: pytest.Config) -> bool:
    return bool(_option(config, "confirm"))


def verdicts_path(config: pytest.Config) -> Path:
    return config.rootpath / (_option(config, "verdicts") or ".sparkpar/verdicts.json")


def fault_runs(config: pytest.Config) -> int:
    """Runs with an executor killed, per check and per existing test; 0 without --sparkpar-faults."""
    return int(_option(config, "fault_runs") or DEFAULT_FAULT_RUNS) if _option(config, "faults") else 0


def budget(config: pytest.Config) -> float | None:
    value = _option(config, "budget")
    return None if value in (None, "") else float(value)


def runs(config: pytest.Config) -> int:
    return int(_option(config, "runs") or DEFAULT_RUNS)


def master(config: pytest.Config) -> str:
    from pytest_sparkpar.session import DETERMINISM_MASTER, FAST_MASTER

    chosen = _option(config, "master")
    return chosen or (DETERMINISM_MASTER if determinism(config) else FAST_MASTER)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sparkpar(runs=N): a determinism check of a PySpark job; `runs` overrides "
        "--sparkpar-runs for this test (select them with -m sparkpar)",
    )
    seed = _option(config, "seed")
    # An xdist worker takes the controller's seed (pytest_configure_node), so the seed in the
    # header and in every replay command is the one each worker used, as pytest-randomly does.
    shared = getattr(config, "workerinput", {}).get(WORKER_SEED)
    if shared is not None:
        config.stash[SEED_KEY] = shared
    else:
        config.stash[SEED_KEY] = int(seed) if seed not in (None, "") else random.Random().getrandbits(32)
    config.stash[SESSION_KEY] = {}
    from pytest_sparkpar import report

    timeout = config.getini("sparkpar_file_timeout")
    try:
        seconds = float(timeout or 0)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise pytest.UsageError(f"sparkpar_file_timeout must be a number of seconds (0 = no limit), not {timeout!r}")
    report.LINT_FILE_TIMEOUT = seconds or None
    given = [name for name in OPTIONS if config.getoption(f"sparkpar_{name}") is not None]
    absent = extras.missing()
    if given and absent:
        option = "--sparkpar-" + given[0].replace("_", "-")
        raise pytest.UsageError(extras.message(option, absent))
    if fault_runs(config):
        from pytest_sparkpar import session
        from pytest_sparkpar.faults import supported

        session.KILLS_EXECUTORS = True

        if not supported(master(config)):
            raise pytest.UsageError(
                f"--sparkpar-faults kills executor processes of a local-cluster master on this "
                f"machine (Linux); the master is {master(config)}"
            )


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, absent without it
def pytest_configure_node(node) -> None:
    node.workerinput[WORKER_SEED] = node.config.stash[SEED_KEY]


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if determinism(config) and not master(config).startswith("sc://") and not extras.missing(extras.SPARK):
        from pytest_sparkpar import builder, streams

        builder.install(master(config))
        streams.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    import sys

    for name in ("pytest_sparkpar.builder", "pytest_sparkpar.streams"):
        if name in sys.modules:
            sys.modules[name].uninstall()


# Spark named in code: an import, the session and context classes, `spark`, `spark_session`,
# `get_spark()`; not a word that merely holds the letters (`sparkle`).
SPARK_WORD = re.compile(r"pyspark|sparksession|sparkcontext|\bspark\b|\bspark_\w|_spark\b", re.I)


def _body(function) -> str:
    """A function's source without its `def` line (a test named `test_no_spark` says nothing)."""
    lines = inspect.getsource(function).splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))), 0)
    return "\n".join(lines[start + 1 :])


def uses_spark(item: pytest.Item) -> bool:
    """Whether a test visibly uses Spark: it requests the `spark` or `sparkpar` fixture, or the
    source of its function or of a fixture it requests mentions Spark (a session builder, a
    fixture named `spark_session`, a `pyspark` import). A test that reaches Spark only through
    helpers with other names is not seen; select it with -m instead."""
    names = set(getattr(item, "fixturenames", ()))
    if names & {"spark", "sparkpar"} or any(SPARK_WORD.search(name) for name in names):
        return True
    info = getattr(item, "_fixtureinfo", None)
    functions = [getattr(item, "function", None)]
    for name in names:
        definitions = info.name2fixturedefs.get(name) if info is not None else None
        # The project's fixtures, not pytest's own (tmp_path, capsys, ...).
        if definitions and definitions[-1].func.__module__.split(".")[0] not in ("_pytest", "pytest"):
            functions.append(definitions[-1].func)
    for function in functions:
        try:
            if function is not None and SPARK_WORD.search(_body(function)):
                return True
        except (OSError, TypeError):
            continue
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _option(config, "only"):
        return
    kept = [item for item in items if uses_spark(item)]
    dropped = [item for item in items if not uses_spark(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str | None:
    if extras.missing():
        return None  # dormant: a core install of sparkpar that happens to share pytest's venv
    mode = f"on, {runs(config)} runs per check" if determinism(config) else "off (sequential runs only)"
    if fault_runs(config):
        mode += f" + {fault_runs(config)} with an executor killed mid-stage"
    if determinism(config) and budget(config) is not None:
        mode += f", at most {budget(config):g} s of re-runs per existing test and per check"
    return f"sparkpar: determinism {mode}, seed {config.stash[SEED_KEY]}, master {master(config)}"


def _conclude(item: pytest.Item, reached: list, audit, faulted: bool) -> None:
    """What one targeted audit says of the findings its test reached (pytest_sparkpar.confirm)."""
    from pytest_sparkpar.confirm import FAULT_PERTURBATION, PLAIN_PERTURBATIONS, one_chain
    from pytest_sparkpar.row_capture import REORDERED
    from sparkpar_lint import verdicts

    found = audit.found
    # Rows only reordered: the test compares an order the job never promised; the finding is not shown.
    shown = found is not None and not (found.rows and found.rows[0] == REORDERED)
    verdict = (verdicts.CONFIRMED if one_chain(reached) else verdicts.IMPLICATED) if shown else verdicts.NOT_REPRODUCED
    seed = item.config.stash[SEED_KEY]
    for target in reached:
        target.tests.append(item.nodeid)
        target.runs += audit.ran + audit.fault_ran
        target.perturbations.update(PLAIN_PERTURBATIONS)
        if faulted and audit.fault_ran:
            target.perturbations.add(FAULT_PERTURBATION)
        target.conclude(verdict, seed if shown else None, replay_command(item.config, item.nodeid) if shown else None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """--sparkpar-confirm: lint the test modules and the project modules they import, once."""
    config = session.config
    if not confirming(config) or extras.missing(extras.SPARK):
        return
    from pytest_sparkpar import report
    from pytest_sparkpar.confirm import Targets
    from pytest_sparkpar.existing import project_sources

    paths = {path for item in session.items for path in project_sources(item)}
    config.stash[TARGETS_KEY] = Targets.lint(paths, config.rootpath, report.LINT_FILE_TIMEOUT)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        targets = config.stash.get(TARGETS_KEY, None)
        if targets is not None:  # the controller merges and writes them (pytest_testnodedown)
            config.workeroutput[WORKER_VERDICTS] = targets.entries()  # type: ignore[attr-defined]  # set by xdist on workers
        return
    entries = _verdict_entries(config)
    if entries is not None:
        from sparkpar_lint import verdicts

        verdicts.dump(verdicts_path(config), entries)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, absent without it
def pytest_testnodedown(node, error) -> None:
    entries = getattr(node, "workeroutput", {}).get(WORKER_VERDICTS)
    if entries is not None:
        from pytest_sparkpar.confirm import merge

        merge(node.config.stash.setdefault(MERGED_KEY, {}), entries)


def _verdict_entries(config: pytest.Config) -> dict[str, dict[str, Any]] | None:
    """The verdicts of --sparkpar-confirm: this process's, or under xdist the workers' merged."""
    targets = config.stash.get(TARGETS_KEY, None)
    return targets.entries() if targets is not None else config.stash.get(MERGED_KEY, None)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """One line on what the audit of existing tests cost, printed with -q too: CI budgets by it."""
    entries = _verdict_entries(config)
    if entries is not None:
        from collections import Counter

        counts = Counter(entry["verdict"] for entry in entries.values())
        shown = ", ".join(
            f"{counts[kind]} {kind}" for kind in ("confirmed", "implicated", "not-reproduced", "unreached")
        )
        terminalreporter.write_line(
            f"sparkpar: {len(entries)} lint finding{'s' * (len(entries) != 1)} in the tested "
            f"modules: {shown}; verdicts in {verdicts_path(config)}"
        )
    tally = config.stash.get(TALLY_KEY, None)
    if tally is None:
        return
    terminalreporter.write_line(
        f"sparkpar: audited {tally.tests} existing Spark test{'s' * (tally.tests != 1)} with {tally.runs} "
        f"perturbed run{'s' * (tally.runs != 1)} in {tally.seconds:.1f} s (seed {config.stash[SEED_KEY]}): "
        f"{tally.failed} order-dependent or not retry-safe"
    )


def replay_command(config: pytest.Config, nodeid: str) -> str:
    args = ["pytest", nodeid, "--sparkpar-determinism", f"--sparkpar-seed={config.stash[SEED_KEY]}"]
    if runs(config) != DEFAULT_RUNS:
        args.append(f"--sparkpar-runs={runs(config)}")
    if fault_runs(config):
        args += ["--sparkpar-faults", f"--sparkpar-fault-runs={fault_runs(config)}"]
    if _option(config, "master"):
        args.append(f"--sparkpar-master={_option(config, 'master')}")
    return shlex.join(args)


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config):
    """The test session's one SparkSession (see pytest_sparkpar.session for the master chosen).

    Tuned for small fast jobs: 4 shuffle partitions, UI off, 1 GB driver, Python workers warmed.
    """
    absent = extras.missing(extras.SPARK)
    if absent:
        pytest.fail(extras.message("the `spark` fixture", absent), pytrace=False)
    from pytest_sparkpar.session import SparkStartError, start

    try:
        session = start(master(pytestconfig))
    except SparkStartError as error:
        pytest.fail(str(error), pytrace=False)
    yield session
    session.stop()


@pytest.fixture
def sparkpar(request: pytest.FixtureRequest):
    """Determinism checks: `check(job, inputs, input_order, output, streaming=False)`,
    `check_combiner(fn, values)`, and the order types `bag()`, `per_key(key, by)`, `sequence()`.
    Spark starts only when `check` first needs it."""
    absent = extras.missing(("hypothesis",))
    if absent:
        pytest.fail(extras.message("the `sparkpar` fixture", absent), pytrace=False)
    from pytest_sparkpar.api import Sparkpar
    from pytest_sparkpar.check import Settings

    config = request.config
    marker = request.node.get_closest_marker("sparkpar")
    settings = Settings(
        determinism=determinism(config),
        runs=runs(config),
        seed=config.stash[SEED_KEY],
        master=master(config),
        nodeid=request.node.nodeid,
        shrink_seconds=float(_option(config, "shrink_seconds")),
        replay=replay_command(config, request.node.nodeid),
        faults=fault_runs(config),
        budget=budget(config),
    )
    return Sparkpar(
        settings, lambda: request.getfixturevalue("spark"), runs_override=marker.kwargs.get("runs") if marker else None
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """With --sparkpar-determinism, a test that passed using a SparkSession fixture (sparkpar's
    `spark` or the project's own) or that ran Spark jobs on a `getOrCreate()` session is re-run
    under perturbed executions (see
    pytest_sparkpar.existing); a changed outcome fails it."""
    audit = determinism(item.config) and "sparkpar" not in getattr(item, "fixturenames", ())
    targets = item.config.stash.get(TARGETS_KEY, None) if audit else None
    if not audit:
        return (yield)
    from pytest_sparkpar import row_capture
    from pytest_sparkpar.existing import jobs_so_far, session_of, touched_session

    before = jobs_so_far()
    tracing: AbstractContextManager[reach | None] = nullcontext(None)
    if targets is not None:
        from pytest_sparkpar.confirm import reach

        tracing = reach(targets)
    with row_capture.recording() as as_written, tracing as reached:
        result = yield
    if reached is not None and not reached.found():
        return result  # --sparkpar-confirm: a test that reaches no finding runs once
    from pytest_sparkpar.existing import failed_as_recorded

    if failed_as_recorded(item):  # a unittest.TestCase that failed as written: nothing to audit
        return result
    spark = session_of(item) or touched_session(before)
    if spark is None:
        return result
    from pytest_sparkpar import builder
    from pytest_sparkpar.check import derive_seed
    from pytest_sparkpar.existing import VARIED, NotRepeatable, conf_get, faultable, project_sources, report, rerun
    from pytest_sparkpar.report import SparkparFailure

    marker = item.get_closest_marker("sparkpar")
    count = (marker.kwargs.get("runs") if marker else None) or runs(item.config)
    seed = derive_seed(item.config.stash[SEED_KEY], item.nodeid, 0)
    own = {key: conf_get(spark, key) for key in VARIED}
    tally = item.config.stash.setdefault(TALLY_KEY, Tally())
    started = time.monotonic()
    try:
        faults = fault_runs(item.config) if faultable(spark) else 0
        rerun_result = rerun(item, spark, seed, count, budget(item.config), faults, as_written.results)
    except NotRepeatable as why:
        tally.seconds += time.monotonic() - started
        item.warn(
            pytest.PytestWarning(
                f"sparkpar: not audited for order dependence: the test fails when run "
                f"again in place, without any perturbation ({why})"
            )
        )
        return result
    tally.tests += 1
    tally.runs += rerun_result.ran + rerun_result.fault_ran
    if reached is not None:  # as `targets is not None`: only then is there a tracer
        _conclude(item, reached.found(), rerun_result, faultable(spark))
    tally.seconds += time.monotonic() - started
    tally.failed += rerun_result.found is not None
    if rerun_result.found is None and rerun_result.ran < count:
        item.warn(
            pytest.PytestWarning(
                f"sparkpar: {rerun_result.ran} of {count} perturbed runs fitted in the --sparkpar-budget of "
                f"{budget(item.config):g} s; the rest were not run"
            )
        )
    if rerun_result.found is not None:
        raise SparkparFailure(
            report(
                item.nodeid,
                rerun_result.found,
                item.config.stash[SEED_KEY],
                count,
                replay_command(item.config, item.nodeid),
                own,
                project_sources(item),
                builder.overridden(),
                master(item.config),
            )
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.excinfo is not None and report.failed and type(call.excinfo.value).__name__ == "SparkparFailure":
        # The report is the whole story; the plugin's own frames would only hide it.
        # cast: the type's name is checked above (the class is imported only when a check runs).
        report.longrepr = cast("SparkparFailure", call.excinfo.value).report
    return report
