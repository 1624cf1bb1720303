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
A test that passed as written and fails under a perturbation is reported as order-dependent.
Tests that touch no SparkSession are not re-run; tests that use `sparkpar.check` are skipped
here, since the check permutes them itself. Sessions the test builds itself get the plugin's
master (pytest_sparkpar.builder).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass

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
        drawn.append(Perturbation(i, confs))
    return drawn


def is_remote(spark) -> bool:
    """A Spark Connect session (no SparkContext in this process)."""
    return ".connect." in type(spark).__module__


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
        self.spark, self.confs, self.before = spark, confs, {}

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


@dataclass
class Audit:
    """What `rerun` did: the perturbed runs made, and the first one that failed (with its error)."""

    ran: int = 0
    found: tuple[Perturbation, BaseException] | None = None


def rerun(item, spark, seed: int, runs: int, budget: float | None = None) -> Audit:
    """Run the test body again (same fixture values) under each perturbation until one raises;
    with `budget` seconds, no new run starts once they are spent. Raises NotRepeatable when the
    body fails unperturbed too."""
    from pytest_sparkpar import builder

    builder.new_test()
    audit = Audit()
    deadline = None if budget is None else time.monotonic() + budget
    for perturbation in perturbations(seed, runs, is_remote(spark)):
        if deadline is not None and time.monotonic() >= deadline:
            return audit
        audit.ran += 1
        with applied(spark, perturbation.confs), builder.pinned(perturbation.confs):
            try:
                item.runtest()
            except Exception as error:  # noqa: BLE001 - any changed outcome is the finding
                found = perturbation, error
            else:
                continue
        try:
            item.runtest()  # the same body with the test's own settings: does it still pass?
        except Exception as error:  # noqa: BLE001
            raise NotRepeatable(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None
        audit.found = found
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


def jobs_so_far():
    """The live SparkSession and the ids of the jobs it has run, or None without one."""
    session = _instantiated()
    return None if session is None else (session, _job_ids(session))


def touched_session(before):
    """The SparkSession the test ran jobs on (or created), or None when it never touched Spark."""
    session = _instantiated()
    if session is None:
        return None
    if before is None or before[0] is not session:
        return session
    after = _job_ids(session)
    return session if after and before[1] is not None and after - before[1] else None


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
    perturbation: Perturbation,
    error: BaseException,
    seed: int,
    runs: int,
    replay: str,
    own: dict[str, str | None],
    sources: list[str],
    builder_settings: dict[str, str],
    master: str,
) -> str:
    from pytest_sparkpar.report import lint_findings, section

    detail = f"{type(error).__name__}: {error}".rstrip()
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
    return (
        f"sparkpar: {nodeid} is order-dependent: it passes as written but fails when Spark "
        f"partitions or schedules the same work differently (perturbation {perturbation.index + 1} of {runs}).\n\n"
        + section(
            "failing perturbation",
            perturbation.describe()
            + (f"\n(overrides the test's own session settings: {overridden})" if overridden else ""),
        )
        + "\n"
        + section("assertion diff / error under the perturbation", detail)
        + "\n"
        + section("reproduce", f"seed: {seed}\n{replay}")
        + (
            "\n" + section("likely cause (sparkpar lint on the test and the project modules it imports)", cause)
            if (cause := lint_findings(sources))
            else ""
        )
    )
