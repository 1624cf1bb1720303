"""Two profiles of one job at different settings (stage_fit.py), and the noise band that keeps
Spark's defaults when the predicted gain is too small to show.

The profiles are real: bench/plan_jobs/chain_selective.py on local-cluster[2,1,1024], 400k rows,
at Spark's defaults (200 partitions, adaptive execution) and at 16 partitions, as
bench/plan_vs_spark.py --keep-log wrote them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from sparkpar_lint.plan.profile import load_profile
from sparkpar_lint.plan.spark_advice import spark_prediction
from sparkpar_lint.plan.spark_cost import SPARK_DEFAULTS, Settings, SparkCosts, predict
from sparkpar_lint.plan.stage_fit import fit_stage, fit_stages, mismatch

DATA = Path(__file__).parent / "data" / "plan"
AT_200 = DATA / "chain_selective_at200.profile.json"
AT_16 = DATA / "chain_selective_at16.profile.json"
OTHER_JOB = DATA / "union_dedup_at200.profile.json"
JOB = Path(__file__).parents[1] / "bench" / "plan_jobs" / "chain_selective.py"
SPARKPAR = [sys.executable, "-c", "from sparkpar_lint.cli import main; main()"]
# The calibration made on this machine before the bench run these profiles come from.
COSTS = SparkCosts(
    cores=2,
    job_overhead=0.352,
    stage_overhead=0.00011,
    task_overhead=0.0278,
    task_run=0.0227,
    shuffle_row=7.8e-7,
    shuffle_block=0.00095,
    shuffle_fetch=0.00063,
    state_task=0.083,
    batch_overhead=0.44,
)


def sparkpar(*args):
    return subprocess.run(
        [*SPARKPAR, *map(str, args)], capture_output=True, text=True, cwd=tempfile.gettempdir(), check=False
    )


def test_two_runs_give_each_stage_its_work_and_the_scale_of_its_per_task_costs():
    # m = k * d + W * s at both runs: two equations, two unknowns.
    fit = fit_stage((2.0, 0.5), (0.5, 0.5), (2.0 * 0.3 + 1.0 * 0.5, 0.5 * 0.3 + 1.0 * 0.5))
    assert fit.scale == pytest.approx(0.3) and fit.work == pytest.approx(1.0)
    # The per-task costs did not show (the cheaper setting measured slower): the work alone.
    noisy = fit_stage((2.0, 0.5), (0.5, 0.5), (1.0, 1.2))
    assert noisy.scale == 0.0 and noisy.work == pytest.approx(2.2)
    # The per-task costs explain more than was measured at the cheaper setting (the work would
    # be negative): the costs alone, least squares through the origin.
    no_work = fit_stage((2.0, 0.5), (0.5, 0.5), (2.0, 0.2))
    assert no_work.work == 0.0 and no_work.scale == pytest.approx((2.0 * 2.0 + 0.5 * 0.2) / (4.0 + 0.25))
    # Nothing differs between the runs (a scan): its mean.
    same = fit_stage((0.1, 0.1), (0.5, 0.5), (1.0, 1.4))
    assert same.scale == 0.0 and same.work * 0.5 == pytest.approx(1.2)


def test_a_fit_reproduces_both_profiled_runs_and_predicts_between():
    first, second = load_profile(AT_200), load_profile(AT_16)
    assert mismatch(first.stages, second.stages) is None
    run = fit_stages(first.stages, first.wall_seconds, second.stages, second.wall_seconds, COSTS)
    assert run.settings == (SPARK_DEFAULTS, Settings(16))
    # Each stage is fitted exactly; the time no stage explains is the runs' mean, so the two
    # runs are predicted within half the difference of their remainders, in opposite directions.
    off = (
        run.predict(SPARK_DEFAULTS, COSTS) - first.wall_seconds,
        run.predict(Settings(16), COSTS) - second.wall_seconds,
    )
    assert off[0] == pytest.approx(-off[1])
    # What the stages do not cover is taken from the measurements, not from the fits.
    uncovered = [p.wall_seconds - sum(s.wall_seconds for s in p.stages) for p in (first, second)]
    assert run.remainder == pytest.approx(sum(uncovered) / 2)
    assert abs(off[0]) < 0.05 * first.wall_seconds
    # Fewer partitions cost less per task and per block: monotone down to the cores.
    at = [run.predict(Settings(p), COSTS) for p in (200, 64, 16, 2)]
    assert at == sorted(at, reverse=True)


def test_the_plan_uses_a_second_profile_through_the_cli(tmp_path):
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"constants": COSTS.to_dict()}), encoding="utf-8")
    done = sparkpar(
        "plan", JOB, "--profile", AT_200, "--profile", AT_16, "--calibration", calibration, "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    spark = json.loads(done.stdout)["spark"]
    assert spark["two_profiles"] is True and spark["second_profile_unused"] is None
    assert spark["default"]["seconds"] == pytest.approx(load_profile(AT_200).wall_seconds, rel=0.05)
    assert spark["recommended"]["shuffle_partitions"] < 16
    assert [s["stage"] for s in spark["fitted_stages"]] == [s.stage_id for s in load_profile(AT_200).stages]
    # One profile alone: the calibrated model anchored to the run, a different figure.
    alone = json.loads(
        sparkpar("plan", JOB, "--profile", AT_200, "--calibration", calibration, "--format", "json").stdout
    )["spark"]
    assert alone["two_profiles"] is False and alone["fitted_stages"] is None
    assert alone["recommended"]["seconds"] != spark["recommended"]["seconds"]


def test_a_second_profile_of_another_job_is_not_used_and_says_why(tmp_path):
    done = sparkpar("plan", JOB, "--profile", AT_200, "--profile", OTHER_JOB, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["spark"]["two_profiles"] is False
    assert "the profiles ran 2 and 3 stages" in report["spark"]["second_profile_unused"]
    assert any(n.startswith("the second profile was not used: the profiles ran 2 and 3") for n in report["notes"])
    same = json.loads(sparkpar("plan", JOB, "--profile", AT_200, "--profile", AT_200, "--format", "json").stdout)
    assert same["spark"]["second_profile_unused"] == "both profiles ran at the same setting"


def test_bad_profile_arguments_are_usage_errors(tmp_path):
    done = sparkpar("plan", JOB, "--profile", AT_200, "--profile", AT_16, "--profile", AT_16)
    assert done.returncode == 2 and "at most two --profile" in done.stderr
    rows_only = tmp_path / "rows.json"
    rows_only.write_text(
        json.dumps({"operators": [{"name": "filter:8", "rows_in": 10, "rows_out": 5, "seconds": 0.1}]}),
        encoding="utf-8",
    )
    done = sparkpar("plan", JOB, "--profile", AT_200, "--profile", rows_only)
    assert done.returncode == 2 and "needs Spark's stage metrics" in done.stderr
    assert "Traceback" not in done.stderr
    bad_runs = tmp_path / "bad.json"
    data = json.loads(AT_200.read_text(encoding="utf-8"))
    data["wall_runs"] = [0.5, "fast"]
    bad_runs.write_text(json.dumps(data), encoding="utf-8")
    done = sparkpar("plan", JOB, "--profile", bad_runs)
    assert done.returncode == 2 and '"wall_runs" must be a list of numbers' in done.stderr


def test_a_gain_within_the_noise_band_keeps_sparks_defaults():
    profile = load_profile(AT_200)
    found = spark_prediction(profile, COSTS)
    gain = found["predicted_gain"]
    assert found["recommended"]["shuffle_partitions"] < 200 and gain > 0.1
    # The calibration's band above the gain: the defaults are kept, and said so.
    wide = spark_prediction(profile, replace(COSTS, noise_band=gain + 0.01))
    assert wide["within_noise"] is True
    assert wide["recommended"]["shuffle_partitions"] == 200
    assert wide["recommended"]["code"] == SPARK_DEFAULTS.code()
    assert wide["speedup"] == 1.0
    # The profiled runs' own spread (median absolute deviation / median) sets the band too.
    spread = replace(profile, wall_runs=(0.2, 0.642, 2.0))
    assert spark_prediction(spread, COSTS)["noise_band"] == pytest.approx(0.442 / 0.642, abs=1e-3)
    assert spark_prediction(spread, COSTS)["within_noise"] is (gain <= 0.442 / 0.642)
    assert predict(profile.stages, SPARK_DEFAULTS, COSTS).settings == SPARK_DEFAULTS


def test_a_stateful_query_whose_gain_is_noise_is_told_to_leave_the_setting_alone(tmp_path):
    # The real stream profile kept with the tests (a stateful count at 5 partitions), and a
    # calibration whose band covers any gain.
    from sparkpar_lint.plan.event_log import read_event_log
    from sparkpar_lint.plan.profile import Profile

    stream = tuple(s for s in read_event_log(DATA / "eventlog_groupby_and_stateful_stream.json").stages if s.query)
    profile = tmp_path / "stream.json"
    Profile((), "job", None, stream, 2, 60.0).write(profile)
    job = tmp_path / "job.py"
    job.write_text(
        "def job(spark, source):\n"
        '    events = spark.readStream.schema("id long, k long").parquet(source)\n'
        '    return events.groupBy("k").count()\n',
        encoding="utf-8",
    )
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"constants": {"cores": 2, "noise_band": 1000.0}}), encoding="utf-8")
    done = sparkpar("plan", job, "--profile", profile, "--calibration", calibration, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["spark"]["within_noise"] is True and report["shuffle_partitions"] == 200
    (setting,) = [a for a in report["advice"] if "spark.sql.shuffle.partitions" in a]
    assert setting.startswith("leave spark.sql.shuffle.partitions alone for this stateful streaming query: no setting")
    assert "spark.conf.set" not in setting
