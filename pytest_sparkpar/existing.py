"""Existing tests, unchanged: with --sparkpar-determinism, a test that uses a SparkSession
fixture (sparkpar's `spark` or the project's own) runs once as written and then again under
perturbed executions of the same session. Settings the test's builder hard-codes (e.g.
`shuffle.partitions=1`) are overridden for the perturbed runs, and the report says so. A test
without such a fixture is audited when it ran Spark jobs on the process's SparkSession (made with
`builder...getOrCreate()` in the test or its conftest): the job ids before and after tell.

A perturbation is a set of runtime SQL confs: `spark.sql.shuffle.partitions`, adaptive execution
on/off, and `spark.sql.leafNodeDefaultParallelism` (how many partitions local data, `range` and
file scans are split into). `spark.default.parallelism` is fixed when the SparkContext starts,
so it is not varied. A test that passed as written and fails under a perturbation is reported as
order-dependent. Tests that request no SparkSession fixture are not re-run; tests that use
`sparkpar.check` are skipped here, since the check permutes them itself.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass

from pytest_sparkpar.interleaving import MAX_INPUT_PARTITIONS, SHUFFLE_PARTITIONS

VARIED = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled", "spark.sql.leafNodeDefaultParallelism")


@dataclass(frozen=True)
class Perturbation:
    index: int
    confs: dict[str, str]

    def describe(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.confs.items())


def perturbations(seed: int, runs: int) -> list[Perturbation]:
    rng = random.Random(seed)
    return [
        Perturbation(
            i,
            {
                "spark.sql.shuffle.partitions": str(rng.choice(SHUFFLE_PARTITIONS)),
                "spark.sql.adaptive.enabled": rng.choice(("true", "false")),
                "spark.sql.leafNodeDefaultParallelism": str(rng.randint(1, MAX_INPUT_PARTITIONS)),
            },
        )
        for i in range(runs)
    ]


class applied:
    """Set a perturbation's confs on the session, and put the previous values back after."""

    def __init__(self, spark, confs: dict[str, str]):
        self.spark, self.confs, self.before = spark, confs, {}

    def __enter__(self):
        for key, value in self.confs.items():
            self.before[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)

    def __exit__(self, *exc):
        for key, value in self.before.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
        return False


class NotRepeatable(Exception):
    """The test fails when merely run again as written (state left by the first run, e.g. a
    file written with mode "error"), so a failure under a perturbation proves nothing."""


def rerun(item, spark, seed: int, runs: int) -> tuple[Perturbation, BaseException] | None:
    """Run the test body again (same fixture values) under each perturbation; the first one that
    raises, with its error. Raises NotRepeatable when the body fails unperturbed too."""
    for perturbation in perturbations(seed, runs):
        with applied(spark, perturbation.confs):
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
        return found
    return None


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
) -> str:
    from pytest_sparkpar.report import lint_findings, section

    detail = f"{type(error).__name__}: {error}".rstrip()
    overridden = ", ".join(f"{key}={own[key]}" for key in VARIED if own.get(key) not in (None, perturbation.confs[key]))
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
