"""`plan` reads job files as Python does and refuses hostile models with one clear message."""

from __future__ import annotations

import os

from click.testing import CliRunner

from sparkpar_lint.plan.command import plan

LATIN_JOB = (
    "# -*- coding: latin-1 -*-\n"
    "# Caf\xe9 orders\n"
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    "spark.read.parquet('orders').groupBy('k').count().write.parquet('out')\n"
)


def run(*args):
    return CliRunner().invoke(plan, [str(a) for a in args])


def test_plan_honours_a_pep_263_coding_comment(tmp_path):
    job = tmp_path / "job.py"
    job.write_bytes(LATIN_JOB.encode("latin-1"))
    result = run(job, "--format", "json")
    assert result.exit_code == 0, result.output


def test_model_nested_100k_deep_is_one_clear_error(tmp_path):
    model = tmp_path / "model.json"
    model.write_text("[" * 100_000 + "]" * 100_000)
    result = run("--model", model)
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"sparkpar: error: {model}: nested too deeply to be a model (a model is a list of operator objects)"
    )


def test_model_that_is_a_fifo_is_an_error_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "model.json")
    result = run("--model", tmp_path / "model.json")
    assert result.exit_code == 2 and "not a regular file (a named pipe)" in result.output


def test_job_nested_past_the_limit_is_one_clear_error(tmp_path):
    job = tmp_path / "deep.py"
    job.write_text("# spark\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    result = run(job)
    assert result.exit_code == 2
    assert "deep.py:2:205: too deeply nested to analyse" in result.output
