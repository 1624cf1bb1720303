"""The core install, for real: a fresh virtualenv gets sparkpar's wheel with its core dependencies
only (plus pytest, as a project that already uses pytest would have), and then the linter works,
PySpark is nowhere, and the pytest plugin stays dormant until a sparkpar option or fixture asks for
what it lacks.

Slow: it builds the wheel and a virtualenv and pip-installs into it (from pip's cache when warm).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from wheels import build_wheel

pytestmark = [pytest.mark.slow, pytest.mark.network]  # pip may fetch from PyPI on a cold cache

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pyspark", "pandas", "pyarrow", "hypothesis", "numpy", "py4j")


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("core-install")
    wheel = build_wheel(root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel), "pytest"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr
    return venv


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_core_install_has_no_spark_and_the_linter_works(core_venv, tmp_path):
    listed = _run(core_venv, "python", "-m", "pip", "list", "--format=freeze", cwd=tmp_path).stdout.lower()
    names = {line.split("==")[0] for line in listed.split()}
    assert "sparkpar" in names and "libcst" in names
    assert not names & set(HEAVY), listed

    linted = _run(
        core_venv, "sparkpar", "lint", "--no-cache", "--format", "concise", str(REPO / "fixtures"), cwd=tmp_path
    )
    assert linted.returncode == 1, linted.stderr
    assert "SPX101" in linted.stdout and "Traceback" not in linted.stderr

    job = tmp_path / "job.py"
    job.write_text(
        "from pyspark.sql import functions as F\n\n"
        'def latest(df):\n    return df.orderBy("ts").groupBy("k").agg(F.first("v"))\n'
    )
    fixed = _run(core_venv, "sparkpar", "fix", "--diff", str(job), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert '-    return df.orderBy("ts")' in fixed.stdout


def test_fixed_jobs_runtime_imports_without_test_dependencies(core_venv, tmp_path):
    code = (
        "import sys, sparkpar_lint.runtime.pulses as p; "
        "print(p.PULSE_STATE_SCHEMA); print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{HEAVY!r} or m.split('.')[0] in ('pytest', 'pytest_sparkpar')))"
    )
    out = _run(core_venv, "python", "-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["buffered string, inner string", "[]"]


def test_plugin_is_dormant_until_used(core_venv, tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    plain = _run(core_venv, "pytest", "-p", "no:cacheprovider", cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "1 passed" in plain.stdout
    # pytest lists the plugin; the plugin itself adds no header line.
    assert "sparkpar:" not in plain.stdout + plain.stderr

    helped = _run(core_venv, "pytest", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "--sparkpar-determinism" in helped.stdout


def test_plugin_says_what_to_install_when_a_fixture_is_used(core_venv, tmp_path):
    (tmp_path / "test_uses.py").write_text(
        "def test_spark(spark):\n    pass\n\ndef test_sparkpar(sparkpar):\n    pass\n"
    )
    used = _run(core_venv, "pytest", "-p", "no:cacheprovider", cwd=tmp_path)
    assert used.returncode == 1 and "2 errors" in used.stdout, used.stdout
    assert (
        "sparkpar: the `spark` fixture needs pyspark, pandas, pyarrow, not installed here: "
        "pip install 'sparkpar[pytest]'"
    ) in used.stdout
    assert (
        "sparkpar: the `sparkpar` fixture needs hypothesis, not installed here: pip install 'sparkpar[pytest]'"
    ) in used.stdout
    assert "Traceback" not in used.stdout


def test_plugin_says_what_to_install_when_an_option_is_used(core_venv, tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    used = _run(core_venv, "pytest", "--sparkpar-determinism", cwd=tmp_path)
    assert used.returncode == 4, used.stdout + used.stderr  # pytest's usage-error status
    assert (
        "sparkpar: --sparkpar-determinism needs hypothesis, pyspark, pandas, pyarrow, not "
        "installed here: pip install 'sparkpar[pytest]'"
    ) in used.stderr


def test_profile_says_what_to_install(core_venv, tmp_path):
    job = tmp_path / "job.py"
    job.write_text("INPUTS = {'df': [{'k': 1}]}\n\ndef job(spark, df):\n    return df.select('k')\n")
    out = _run(core_venv, "sparkpar", "profile", str(job), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "sparkpar: error: sparkpar profile runs the job on Spark, and PySpark is "
        "not installed here: pip install 'sparkpar[pytest]'"
    )
