"""Starting the one SparkSession a pytest process gets.

Only one SparkContext can live in a process, so the `spark` fixture and the permuted runs share
one session, and its master is chosen once per run:

* without `--sparkpar-determinism`: `local[2]` — fast ordinary tests (about 1 GB: one JVM).
* with it: `local-cluster[2,1,1024]` — two executor JVMs of 1 GB each plus the driver (about
  3.5 GB resident in all). Reducers there fetch shuffle blocks from the other JVM in random order,
  which is what exposes shuffle-order bugs; `local[N]` reads map outputs in a fixed order and
  hides most of them. It works from the pip package (no SPARK_HOME needed) and costs 15–20 s to
  start cold, then about 0.3–1.5 s per small job. JVMs start from a class-data archive made once
  per machine (pytest_sparkpar.class_archive), which cuts about a third of the start-up CPU.
  Local JVMs also stop at the quick JIT tier (`QUICK_JIT`).
* `--sparkpar-master URL` overrides both; an `sc://` URL builds a Spark Connect session.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

FAST_MASTER = "local[2]"
DETERMINISM_MASTER = "local-cluster[2,1,1024]"

INSTALL_HINT = (
    "sparkpar: Spark could not start{detail}.\n"
    "PySpark needs a Java runtime (17 or 21): install one (e.g. `apt-get install "
    "openjdk-17-jre-headless`, or `brew install openjdk@17`) and make `java` available on PATH "
    "or set JAVA_HOME. A Spark Connect master (`sc://...`) needs `pip install 'sparkpar[connect]'`."
)

BASE_CONFS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
    # No delay scheduling: a task waiting up to 3 s for the executor that holds its shuffle
    # blocks or state store (the default) idles the other of two one-core executors.
    "spark.locality.wait": "0",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.sql.execution.pyspark.udf.faulthandler.enabled": "true",
}


# A task that raises is tried spark.task.maxFailures times: 4 on a cluster master (local-cluster
# too), 1 on local[N]. A test that expects its job to fail paid for four attempts of every task on
# each perturbed run (353 s against 12 s), so other runs try a task once. Runs that kill executors
# (--sparkpar-faults: the plugin sets this) need the retries, and a status tracker that sees each
# task end: by default it sees them every 100 ms (spark.ui.liveUpdate.period), in jumps of several
# tasks, and a small stage ends before the fault injector sees the count it waits for.
KILLS_EXECUTORS = False
FAULT_CONFS = {"spark.ui.liveUpdate.period": "0"}

# Local JVMs compile with the quick (C1) JIT tier only. They run thousands of tiny jobs, each with
# new generated classes, and never a long hot loop: the optimising C2 compiler took 35-40% of all
# the CPU of the permuted runs (bench/plugin_speed.py), far more than its faster code gave back.
# SPARKPAR_QUICK_JIT=off keeps the full JIT (e.g. for tests on big data).
QUICK_JIT = "-XX:TieredStopAtLevel=1"
JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
# Local executors that run this interpreter (the plugin's own) can take their Python workers from
# the plugin's daemon, whose workers' garbage collections skip pandas and pyarrow (see
# pytest_sparkpar.worker_daemon); another PYSPARK_PYTHON may not have the plugin installed.
LOCAL_CONFS = {"spark.python.daemon.module": "pytest_sparkpar.worker_daemon"}


def local_confs(master: str) -> dict[str, str]:
    own_python = os.environ.get("PYSPARK_PYTHON") == sys.executable
    return dict(LOCAL_CONFS) if master.startswith("local") and own_python else {}


class SparkStartError(Exception):
    """Spark (or Java) is missing or failed to start; the message says what to install."""


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return True
    return shutil.which("java") is not None


def start(master: str):
    """A SparkSession on `master`, tuned for many small jobs; raises SparkStartError."""
    remote = master.startswith("sc://")
    if not remote and not java_available():
        raise SparkStartError(INSTALL_HINT.format(detail=": no Java runtime found"))
    # Executors must run this interpreter, which has pyspark, pandas and pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession

        if remote:
            return SparkSession.builder.remote(master).getOrCreate()
        from pytest_sparkpar import class_archive

        builder = SparkSession.builder.master(master).appName("sparkpar")
        java_confs, archive_to_build = class_archive.java_options(master)
        local = master.startswith("local")
        if local and os.environ.get("SPARKPAR_QUICK_JIT", "on") != "off":
            java_confs = {key: f"{java_confs.get(key, '')} {QUICK_JIT}".lstrip() for key in JAVA_OPTION_KEYS}
        confs = dict(
            BASE_CONFS,
            **local_confs(master),
            **java_confs,
            **{
                "spark.sql.warehouse.dir": tempfile.mkdtemp(prefix="sparkpar-wh-"),
                # Executor JVMs (local-cluster) must import the modules the job's functions live in,
                # as this process does: cloudpickle pickles module-level functions by reference.
                "spark.executorEnv.PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
            },
        )
        confs.update(FAULT_CONFS if KILLS_EXECUTORS else {"spark.task.maxFailures": "1"})
        for key, value in confs.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        if archive_to_build is not None:
            class_archive.build_at_exit(session, archive_to_build)
    except Exception as error:  # noqa: BLE001 - any start failure gets the one clear message
        raise SparkStartError(
            INSTALL_HINT.format(
                detail=f" ({type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''})"
            )
        ) from error
    warm_python_workers(session)
    return session


def warm_python_workers(session) -> None:
    """Start every executor's Python workers once: the first UDF otherwise waits about 2 s for
    them. They start without pandas and pyarrow, which a pandas UDF imports in the workers it runs
    on: warming them with one cost 2.6 (local[2]) to 3.8 (local-cluster) CPU-s more at every start,
    and the same CPU in all for tests that use one."""
    import pandas  # noqa: F401 - fail here, clearly, if the pandas APIs cannot work

    slots = 4
    session.sparkContext.parallelize(range(slots), slots).map(lambda value: value).collect()
