"""Shared test fixtures. Spark starts once per test process (once per pytest-xdist worker), only
for tests that ask for it."""

from __future__ import annotations

import os
import sys

import pytest

# Shuffle blocks are fetched between two executor JVMs in random order, which exposes the
# reorder bugs that local[N] hides (its reducers read map outputs in a fixed order).
CLUSTER_MASTER = "local-cluster[2,1,1024]"

# The tests check what the rules find at every confidence, and most fixture findings assume a link;
# a plain `sparkpar lint` shows only `high` ones. Set before any CLI runs, so subprocesses inherit
# it; tests of the default itself remove it (monkeypatch.delenv).
os.environ["SPARKPAR_MIN_CONFIDENCE"] = "low"


@pytest.fixture(scope="session")
def cluster_spark():
    from pyspark.sql import SparkSession

    from pytest_sparkpar import class_archive, session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The plugin's start-up tuning, for the same reasons (pytest_sparkpar.session): the class-data
    # archive and the quick JIT cut each JVM's CPU, no locality wait keeps both one-core executors
    # busy, and the worker daemon's Python workers start without pandas' garbage.
    java_confs, archive_to_build = class_archive.java_options(CLUSTER_MASTER)
    confs = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.adaptive.enabled": "false",
        "spark.executor.memory": "700m",
        "spark.driver.memory": "1g",
        "spark.python.worker.reuse": "true",
        "spark.locality.wait": "0",
        # Fixture jobs are a few rows each: compiling generated code for every plan (Janino, on the
        # driver and each executor) costs more than interpreting it; without it the fixture and
        # fix-proof runs took 16% less CPU.
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        **session.local_confs(CLUSTER_MASTER),
        **{key: f"{java_confs.get(key, '')} {session.QUICK_JIT}".lstrip() for key in session.JAVA_OPTION_KEYS},
    }
    builder = SparkSession.builder.master(CLUSTER_MASTER).appName("sparkpar-fixtures")
    for key, value in confs.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # PySpark keeps the driver JVM after a session stops, and a later session runs in it: one
    # started first without this tuning (a test's own local session) left the driver on the full
    # JIT for the rest of the worker's tests, a fifth more CPU for all of them.
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    if session.QUICK_JIT not in list(runtime.getInputArguments()):
        pytest.fail("a SparkSession started before cluster_spark left the driver JVM without its tuning")
    if archive_to_build is not None:
        class_archive.build_at_exit(spark, archive_to_build)
    yield spark
    spark.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Tests that share a fixture their module defines with a wider scope than one test (a pytest
    run in a subprocess, a server) go to one pytest-xdist worker (`--dist loadgroup`), so the
    fixture is built once, not once on each worker that gets one of them. First among the hooks:
    a worker's pytest-xdist reads the `xdist_group` marks in its own hook, and one run before this
    would find none (tests/test_xdist_groups.py).

    pytest-xdist hands out work in collection order (addopts turns off its own reordering by group
    size), so the long units go first: the slow groups (a pytest run with executor kills, a
    cluster, a virtualenv; the longest ones), the other groups and the slow tests, then the other
    Spark tests, then the rest. In file order a group of several minutes could start last and
    leave the other worker idle; started first, the many quick tests fill in around them."""
    shared_modules = set()
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        shared = any(
            definition.scope != "function" and definition.baseid == module
            for definitions in item._fixtureinfo.name2fixturedefs.values()
            for definition in definitions
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(module))
            shared_modules.add(module)

    def length(item) -> int:
        grouped = item.nodeid.split("::", 1)[0] in shared_modules
        slow = item.get_closest_marker("slow") is not None
        if grouped or slow:
            return 0 if grouped and slow else 1
        return 2 if item.get_closest_marker("spark") else 3

    items.sort(key=length)


@pytest.fixture
def sparkpar_cli(tmp_path, monkeypatch):
    """Run `sparkpar ARGS...` in-process from `tmp_path`; returns click's Result."""
    from click.testing import CliRunner

    from sparkpar_lint.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def pinned_cli(sparkpar_cli):
    """`sparkpar_cli` with `lint` pinned to SPX101 and SPX901 unless the test selects rules itself:
    the CLI tests check exact output for samples.BAD_JOB, which newer rules also flag."""

    def invoke(*args: str):
        if args and args[0] == "lint" and "--select" not in args:
            args = (*args, "--select", "SPX101,SPX901")
        return sparkpar_cli(*args)

    return invoke
