"""Plugin behaviour that needs no Spark: registration, options, disabling, missing Java."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]


def test_plugin_module_imports_nothing_heavy(tmp_path):
    code = "import sys, pytest_sparkpar.plugin; print(sorted(m for m in ('pyspark', 'hypothesis', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert out.strip() == "[]"


def test_options_and_ini_keys_are_in_one_group(pytester):
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    assert "sparkpar: determinism of PySpark jobs under parallelism:" in text
    for name in (
        "--sparkpar-determinism",
        "--sparkpar-runs=N",
        "--sparkpar-seed=S",
        "--sparkpar-master=URL",
        "sparkpar_determinism",
        "sparkpar_runs",
        "sparkpar_seed",
        "sparkpar_master",
    ):
        assert name in text


def test_marker_registered(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.sparkpar(runs=N)*"])


def test_ini_keys_configure_the_run(pytester):
    pytester.makeini(
        "[pytest]\nsparkpar_determinism = true\nsparkpar_runs = 3\nsparkpar_seed = 99\nsparkpar_master = local[1]\n"
    )
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["sparkpar: determinism on, 3 runs per check, seed 99, master local[1]"])


def test_disabled_with_p_no_sparkpar(pytester):
    pytester.makepyfile("def test_uses(sparkpar): pass\ndef test_plain(): pass")
    result = pytester.runpytest("-p", "no:sparkpar")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'sparkpar' not found*"])
    assert "sparkpar: determinism" not in result.stdout.str()


def test_missing_java_gives_one_clear_message(pytester):
    pytester.makepyfile("def test_a(spark): pass\ndef test_b(spark): pass")
    env = dict(os.environ, PATH="/nonexistent", JAVA_HOME="/nonexistent")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(pytester.path)],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "2 errors" in proc.stdout, proc.stdout
    assert "sparkpar: Spark could not start: no Java runtime found" in proc.stdout
    assert "install" in proc.stdout and "JAVA_HOME" in proc.stdout
    assert "Traceback" not in proc.stdout


def test_check_combiner_in_process(pytester):
    pytester.makepyfile(
        """
        import operator
        from hypothesis import strategies as st

        def test_sub(sparkpar):
            sparkpar.check_combiner(lambda a, b: a - b, values=st.integers())

        def test_add(sparkpar):
            sparkpar.check_combiner(operator.add, values=st.integers())

        def test_max_of_lists(sparkpar):
            sparkpar.check_combiner(lambda a, b: a + b, values=st.lists(st.integers(), max_size=3), commutative=False)
        """
    )
    result = pytester.runpytest("--sparkpar-seed=5")
    result.assert_outcomes(passed=2, failed=1)
    text = result.stdout.str()
    assert "combiner `test_sub.<locals>.<lambda>` breaks" in text
    assert "pytest test_check_combiner_in_process.py::test_sub --sparkpar-determinism --sparkpar-seed=5" in text
    assert "pyspark" not in text.lower()


def test_faults_need_a_local_cluster_master(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--sparkpar-faults", "--sparkpar-master=local[2]")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--sparkpar-faults kills executor processes of a local-cluster master*the master is local[[]2]"]
    )


def test_faults_option_in_the_header(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(
        "--sparkpar-faults", "--sparkpar-fault-runs=2", "--sparkpar-runs=3", "--sparkpar-seed=1"
    )
    result.stdout.fnmatch_lines(
        [
            "sparkpar: determinism on, 3 runs per check + 2 with an executor killed mid-stage, "
            "seed 1, master local-cluster[[]2,1,1024]"
        ]
    )


def test_sparkpar_only_keeps_the_tests_that_visibly_use_spark(pytester):
    pytester.makeconftest(
        """
import pytest

@pytest.fixture
def session():
    from pyspark.sql import SparkSession
    return SparkSession.builder.getOrCreate()

@pytest.fixture
def numbers():
    return [1, 2, 3]
"""
    )
    pytester.makepyfile(
        """
from helpers import get_spark

def test_fixture(spark): pass
def test_own_fixture(session): pass
def test_builder_in_body():
    from pyspark.sql import SparkSession
    SparkSession.builder.getOrCreate()
def test_helper():
    get_spark().range(1).count()
def test_never_spark(numbers, tmp_path):
    assert sum(numbers) == 6
def test_plain():
    assert "sparkle".upper() == "SPARKLE"
"""
    )
    pytester.makepyfile(helpers="def get_spark(): pass")
    result = pytester.runpytest("--collect-only", "-q", "--sparkpar-only")
    listed = [line.split("::")[1] for line in result.stdout.lines if "::" in line]
    assert listed == ["test_fixture", "test_own_fixture", "test_builder_in_body", "test_helper"], result.stdout.str()
    result.stdout.fnmatch_lines(["*4/6 tests collected (2 deselected)*"])


def test_a_quarter_of_inputs_are_split_into_the_default_parallelism():
    import random

    from pytest_sparkpar import interleaving as il
    from pytest_sparkpar.orders import bag

    spec = {"df": ([(i,) for i in range(50)], ["v"], bag())}

    def share_split_in(parts: int, default_parallelism: int | None) -> float:
        rng = random.Random(0)
        draws = [il.draw(il.RandomChooser(rng), spec, False, default_parallelism) for _ in range(800)]
        return sum(d.placements["df"].partitions == parts for d in draws) / len(draws)

    # 1/4 + 3/4 * 1/8 with the default parallelism preferred; 1/8 without (Spark Connect)
    assert 0.29 < share_split_in(4, 4) < 0.37
    assert 0.09 < share_split_in(4, None) < 0.16
    assert 0.05 < share_split_in(6, 4) < 0.13  # 3/4 * 1/8: the other counts are still drawn
