"""Existing tests, unchanged: with --sparkpar-determinism, a test that uses a SparkSession
fixture (sparkpar's `spark` or the project's own) runs once as written and then again under
perturbed executions of the same session. Settings the test's builder hard-codes (e.g.
`shuffle.partitions=1`) are overridden for the perturbed runs, and the report says so. A test
without such a fixture is audited when it ran Spark jobs on the process's SparkSession (made with
`builder...getOrCreate()` in the test or its conftest): the job ids before and after tell.

A perturbation is a set of confs: `spark.sql.shuffle.partitions`, adaptive execution on/off,
`spark.sql.leafNodeDefaultParallelism` (how many partitions local data and `range` are split
into), `spark.default.parallelism` (`parallelize` and RDD shuffles without a partition count) and
`spark.sql.files.maxPartitionBytes` (file split size: small values cut a file into several input
partitions and stop small files being packed together). `spark.default.parallelism` is a
SparkContext setting: it is changed on the running context's own SparkConf, which Spark reads each
time a default partition count is needed (not over Spark Connect, which has no context here).
A perturbed run also splits the test's file streams into other micro-batches
(pytest_sparkpar.streams), and gets fresh `tmp_path` / `tmpdir` values. With --sparkpar-faults,
a test that passed every perturbation runs again with an executor killed mid-stage
(pytest_sparkpar.faults); failing only then, it is reported as not retry-safe.
A test that passed as written and fails under a perturbation is reported as order-dependent.
Tests that touch no SparkSession are not re-run; tests that use `sparkpar.check` are skipped
here, since the check permutes them itself. Sessions the test builds itself get the plugin's
master (pytest_sparkpar.builder).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from pytest_sparkpar.interleaving import MAX_INPUT_PARTITIONS, SHUFFLE_PARTITIONS

DEFAULT_PARALLELISM = "spark.default.parallelism"
VARIED = (
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.enabled",
    "spark.sql.leafNodeDefaultParallelism",
    DEFAULT_PARALLELISM,
    "spark.sql.files.maxPartitionBytes",
)
# File split sizes: a few KB splits a small test file into several partitions; 128m is Spark's default.
SPLIT_SIZES = ("2k", "16k", "256k", "128m")


@dataclass(frozen=True)
class Perturbation:
    index: int
    confs: dict[str, str]
    split: float = 0.0  # how file streams are split into micro-batches (pytest_sparkpar.streams)

    def describe(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.confs.items())


def perturbations(seed: int, runs: int, remote: bool = False) -> list[Perturbation]:
    rng = random.Random(seed)
    drawn = []
    for i in range(runs):
        confs = {
            "spark.sql.shuffle.partitions": str(rng.choice(SHUFFLE_PARTITIONS)),
            "spark.sql.adaptive.enabled": rng.choice(("true", "false")),
            "spark.sql.leafNodeDefaultParallelism": str(rng.randint(1, MAX_INPUT_PARTITIONS)),
            DEFAULT_PARALLELISM: str(rng.randint(1, MAX_INPUT_PARTITIONS)),
            "spark.sql.files.maxPartitionBytes": rng.choice(SPLIT_SIZES),
        }
        if remote:
            del confs[DEFAULT_PARALLELISM]
        drawn.append(Perturbation(i, confs, rng.random()))
    return drawn


def fault_perturbations(seed: int, runs: int) -> list[Perturbation]:
    """Perturbations for the runs with an executor killed: adaptive execution off and at least
    `faults.SHUFFLE_PARTITIONS` shuffle partitions, so a stage keeps several tasks and some finish
    before the kill while others are still to start."""
    from pytest_sparkpar import faults

    drawn = perturbations(seed ^ 0x5EED, runs)
    for perturbation in drawn:
        shuffle = max(faults.SHUFFLE_PARTITIONS, int(perturbation.confs["spark.sql.shuffle.partitions"]))
        perturbation.confs.update({"spark.sql.shuffle.partitions": str(shuffle), "spark.sql.adaptive.enabled": "false"})
    return drawn


def is_remote(spark) -> bool:
    """A Spark Connect session (no SparkContext in this process)."""
    return ".connect." in type(spark).__module__


def faultable(spark) -> bool:
    """Whether --sparkpar-faults can kill an executor of this session (a local-cluster here)."""
    from pytest_sparkpar import faults

    return not is_remote(spark) and faults.supported(spark.sparkContext.master)


def conf_get(spark, key: str) -> str | None:
    if key == DEFAULT_PARALLELISM:
        if is_remote(spark):
            return None
        own = spark.sparkContext._jsc.sc().conf()
        return own.get(key) if own.contains(key) else None
    return spark.conf.get(key, None)


class applied:
    """Set a perturbation's confs on the session, and put the previous values back after."""

    def __init__(self, spark, confs: dict[str, str]):
        self.spark, self.confs = spark, confs
        self.before: dict[str, str | None] = {}

    def __enter__(self):
        for key, value in self.confs.items():
            self.before[key] = conf_get(self.spark, key)
            self._set(key, value)

    def __exit__(self, *exc):
        for key, value in self.before.items():
            self._set(key, value)
        return False

    def _set(self, key: str, value: str | None) -> None:
        if key == DEFAULT_PARALLELISM:
            # The running context's own SparkConf (getConf() is a copy); read at each use.
            own = self.spark.sparkContext._jsc.sc().conf()
            own.set(key, value) if value is not None else own.remove(key)
        elif value is None:
            self.spark.conf.unset(key)
        else:
            self.spark.conf.set(key, value)


class NotRepeatable(Exception):
    """The test fails when merely run again as written (state left by the first run, e.g. a
    file written with mode "error"), so a failure under a perturbation proves nothing."""

    def __init__(self, message: str, collected: list[list[Any]]):
        super().__init__(message)
        self.collected = collected  # what each DataFrame.collect() returned in that run


@dataclass
class Finding:
    """A perturbed run that failed: its error, the file streams it split into micro-batches and,
    with --sparkpar-faults, the executor it killed (None: it failed with no executor lost)."""

    perturbation: Perturbation
    error: BaseException
    splits: list[str]
    fault: str | None = None
    collected: list[list[Any]] = field(default_factory=list)  # what each DataFrame.collect() returned
    rows: tuple[str, int] | None = None  # row_capture.compare against a run as written
    # Run again with no perturbation at all, the test failed too, its rows changed: the job gives
    # other answers on the same settings (shuffle blocks arrive in another order on a cluster).
    unperturbed: bool = False


@dataclass
class Audit:
    """What `rerun` did: the perturbed runs made, and the first one that failed."""

    ran: int = 0
    fault_ran: int = 0
    found: Finding | None = None


class fresh_tmp_paths:
    """Each re-run gets new `tmp_path` / `tmpdir` values, as a new run of the test would: a
    streaming test's checkpoint left there by the last run would make its query resume and read
    nothing. Other fixture values are shared by the runs."""

    def __init__(self, item):
        self.item, self.saved = item, {}

    def __enter__(self):
        funcargs = getattr(self.item, "funcargs", None) or {}
        factory = getattr(self.item.config, "_tmp_path_factory", None)
        for name in ("tmp_path", "tmpdir"):
            if name in funcargs and factory is not None:
                self.saved[name] = funcargs[name]
                funcargs[name] = type(funcargs[name])(str(factory.mktemp("sparkpar-rerun")))

    def __exit__(self, *exc):
        self.item.funcargs.update(self.saved)
        return False


def failed_as_recorded(item) -> bool:
    """Whether the test body failed without raising: pytest runs a `unittest.TestCase` with the item
    as its result object, which records the failure on the item for the report instead."""
    return bool(getattr(item, "_excinfo", None))


def run_body(item) -> None:
    """Run the test body once and raise what it failed with, as pytest would report it: a
    `unittest.TestCase`'s recorded failure is taken off the item (the run as written keeps its own)
    and raised."""
    recorded = getattr(item, "_excinfo", None)
    before = len(recorded) if recorded else 0
    item.runtest()
    recorded = getattr(item, "_excinfo", None)
    if recorded and len(recorded) > before:
        failures = recorded[before:]
        del recorded[before:]
        raise failures[0].value


def _attempt(
    item, spark, perturbation: Perturbation, killer_seed: int | None = None, fault_run: int = 0
) -> Finding | None:
    """One run of the test body under `perturbation` (and with an executor killed mid-stage when
    `killer_seed` is given, aimed as fault run number `fault_run` is); the Finding when it raises."""
    from pytest_sparkpar import builder, faults, row_capture, streams

    with (
        fresh_tmp_paths(item),
        applied(spark, perturbation.confs),
        builder.pinned(perturbation.confs),
        streams.splitting(perturbation.split) as split,
        row_capture.recording() as rows,
    ):
        killer = None
        if killer_seed is not None:
            faults.wait_for_executors(spark, faults.executor_count(spark.sparkContext.master))
            killer = faults.ExecutorKiller(spark, random.Random(killer_seed), faults.reads_side(fault_run))
            killer.start()
        try:
            run_body(item)
        except Exception as error:  # noqa: BLE001 - any changed outcome is the finding
            fault = killer.stop() if killer is not None else None
            return Finding(perturbation, error, split.applied, fault.describe() if fault else None, rows.results)
        if killer is not None:
            killer.stop()
    return None


def _repeatable(item) -> list[list[Any]]:
    """What each DataFrame.collect() returned when the test ran again with its own settings; raise
    NotRepeatable when it fails so."""
    from pytest_sparkpar import row_capture

    try:
        with fresh_tmp_paths(item), row_capture.recording() as rows:
            run_body(item)
    except Exception as error:  # noqa: BLE001
        first = str(error).splitlines()[0] if str(error) else ""
        raise NotRepeatable(f"{type(error).__name__}: {first}", rows.results) from None
    return rows.results


def _diagnosed(item, found: Finding, as_written: list[list[Any]] | None) -> Finding:
    """`found`, with its collects compared to a run as written. That run must pass, or fail with
    other rows than the first run as written returned (`as_written`): the job itself is
    nondeterministic, which is the finding too. Or it fails with those rows in another order: the
    job's row order is not even stable unperturbed (shuffle blocks arrive in another order on a
    busy cluster) and the test compares it, so the perturbed run is judged against the first run
    as written instead. Any other failure raises NotRepeatable."""
    from pytest_sparkpar import row_capture

    try:
        found.rows = row_capture.compare(_repeatable(item), found.collected)
    except NotRepeatable as why:
        changed = row_capture.compare(as_written or [], why.collected)
        if changed is None:
            raise
        if changed[0] == row_capture.CHANGED:
            found.rows, found.unperturbed = changed, True
            return found
        found.rows = row_capture.compare(as_written or [], found.collected)
        if found.rows is None:
            raise
    return found


def rerun(
    item,
    spark,
    seed: int,
    runs: int,
    budget: float | None = None,
    fault_runs: int = 0,
    as_written: list[list[Any]] | None = None,
) -> Audit:
    """Run the test body again (same fixture values, fresh temporary directories) under each
    perturbation until one raises, then, with `fault_runs`, that many times more with an executor
    killed mid-stage; with `budget` seconds, no new run starts once they are spent. Raises
    NotRepeatable when the body fails unperturbed too, unless its rows changed from `as_written`
    (what each DataFrame.collect() returned in the first run as written)."""
    from pytest_sparkpar import builder

    builder.new_test()
    audit = Audit()
    deadline = None if budget is None else time.monotonic() + budget
    for perturbation in perturbations(seed, runs, is_remote(spark)):
        if deadline is not None and time.monotonic() >= deadline:
            return audit
        audit.ran += 1
        found = _attempt(item, spark, perturbation)
        if found is not None:
            audit.found = _diagnosed(item, found, as_written)
            return audit
    rng = random.Random(seed)
    for index, perturbation in enumerate(fault_perturbations(seed, fault_runs)):
        if deadline is not None and time.monotonic() >= deadline:
            return audit
        audit.fault_ran += 1
        found = _attempt(item, spark, perturbation, killer_seed=rng.getrandbits(32), fault_run=index)
        if found is None:
            continue
        if found.fault is not None and _attempt(item, spark, perturbation) is not None:
            found.fault = None  # it fails under these settings with no executor lost too
        audit.found = _diagnosed(item, found, as_written) if found.fault is None else found
        return audit
    return audit


def session_of(item):
    """The SparkSession among the test's fixture values, if any (checked by class name, so a
    test without Spark never imports pyspark here)."""
    for value in (getattr(item, "funcargs", None) or {}).values():
        if type(value).__name__ == "SparkSession" and type(value).__module__.startswith("pyspark."):
            return value
    return None


def _instantiated():
    if "pyspark.sql" not in sys.modules:  # never import pyspark for a test that did not
        return None
    from pyspark.sql import SparkSession

    return getattr(SparkSession, "_instantiatedSession", None)


def _job_ids(session) -> set[int] | None:
    try:
        return set(session.sparkContext.statusTracker().getJobIdsForGroup())
    except Exception:  # noqa: BLE001 - a stopped context: nothing to audit through it
        return None


def _streams_defined() -> int:
    streams = sys.modules.get("pytest_sparkpar.streams")
    return streams.DEFINED if streams is not None else 0


def jobs_so_far():
    """The live SparkSession, the ids of the jobs it has run and the count of streams defined, or
    None without one."""
    session = _instantiated()
    return None if session is None else (session, _job_ids(session), _streams_defined())


def touched_session(before):
    """The SparkSession the test ran jobs on, defined a stream on (a streaming query's jobs belong
    to its own job group, which the job ids here leave out) or created; None when it never
    touched Spark."""
    session = _instantiated()
    if session is None:
        return None
    if before is None or before[0] is not session:
        return session
    after = _job_ids(session)
    ran_jobs = after and before[1] is not None and after - before[1]
    return session if ran_jobs or _streams_defined() > before[2] else None


def project_sources(item) -> list[str]:
    """The test's module and the project modules it imports (names it holds that are modules, or
    functions and classes defined in one), under the rootdir and outside installed packages."""
    import inspect

    module = getattr(item, "module", None)
    if module is None or not getattr(module, "__file__", None):
        return []
    root = str(item.config.rootpath)
    paths = [module.__file__]
    for value in vars(module).values():
        source = value if inspect.ismodule(value) else sys.modules.get(getattr(value, "__module__", None) or "")
        path = getattr(source, "__file__", None) or ""
        if path.endswith(".py") and path.startswith(root) and "site-packages" not in path and path not in paths:
            paths.append(path)
    return paths


def report(
    nodeid: str,
    found: Finding,
    seed: int,
    runs: int,
    replay: str,
    own: dict[str, str | None],
    sources: list[str],
    builder_settings: dict[str, str],
    master: str,
) -> str:
    from pytest_sparkpar.report import lint_findings, section
    from pytest_sparkpar.row_capture import REORDERED, explain

    perturbation, error = found.perturbation, found.error
    # A Spark error carries the JVM's stack: its frames say nothing about the test.
    message = "\n".join(line for line in str(error).splitlines() if not line.startswith("\tat "))
    detail = f"{type(error).__name__}: {message}".rstrip()
    from pytest_sparkpar.session import BASE_CONFS

    # The session's settings after the run as written (not the plugin's own defaults, which the
    # test never chose), then what its builder asked for and lost.
    replaced = {
        key: value
        for key, value in own.items()
        if value not in (None, BASE_CONFS.get(key), perturbation.confs.get(key, value))
    }
    replaced.update(builder_settings)
    overridden = ", ".join(f"{key}={value}" for key, value in replaced.items() if key != "master")
    if "master" in builder_settings:
        overridden += (", " if overridden else "") + f"master {builder_settings['master']} -> {master}"
    if found.fault is not None:
        headline = (
            f"sparkpar: {nodeid} is not retry-safe: it passes as written, under every plain perturbation and "
            f"under the same settings with no executor lost, but fails when an executor is killed mid-stage "
            f"(--sparkpar-faults) and Spark re-runs the lost tasks and map outputs "
            f"(fault-injected run {perturbation.index + 1})."
        )
    else:
        what = "partitions, splits into micro-batches" if found.splits else "partitions"
        where = ", in the test rather than the job" if found.rows and found.rows[0] == REORDERED else ""
        headline = (
            f"sparkpar: {nodeid} is order-dependent{where}: it passes as written but fails when Spark "
            f"{what} or schedules the same work differently (perturbation {perturbation.index + 1} of {runs})."
        )
    described = [perturbation.describe(), *(f"micro-batches: {split}" for split in found.splits)]
    if found.fault is not None:
        described.append(f"fault: {found.fault}")
    if overridden:
        described.append(f"(overrides the test's own session settings: {overridden})")
    return (
        headline
        + "\n\n"
        + section("failing perturbation", "\n".join(described))
        + "\n"
        + (section("diagnosis", diagnosis) + "\n" if (diagnosis := explain(found.rows, found.unperturbed)) else "")
        + section("assertion diff / error under the perturbation", detail)
        + "\n"
        + section("reproduce", f"seed: {seed}\n{replay}")
        + (
            "\n" + section("likely cause (sparkpar lint on the test and the project modules it imports)", cause)
            if (cause := lint_findings(sources))
            else ""
        )
    )
