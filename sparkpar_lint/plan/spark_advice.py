"""The Spark cost model's part of a job's plan: shuffle partitions for a measured run.

Given a profile with Spark's stage metrics (`sparkpar profile --event-log`), the report gets the
predicted seconds at Spark's defaults (200 shuffle partitions, adaptive execution on) and at the
recommended setting, and the shuffle-partition advice becomes the model's choice. A stateful
streaming query keeps the number of state partitions recorded in its checkpoint, so for one the
setting is advised for a new query only (a new checkpointLocation, set before its first start).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from sparkpar_lint.plan.advice import PlanReport
from sparkpar_lint.plan.profile import Profile
from sparkpar_lint.plan.spark_cost import (
    SPARK_DEFAULTS,
    SparkCosts,
    actions,
    anchored,
    batches,
    in_task,
    predict,
    profiled_settings,
    recommend,
)
from sparkpar_lint.plan.stage_fit import FittedRun, fit_stages, recommend_fitted

_SETTING_ADVICE = '`spark.conf.set("spark.sql.shuffle.partitions"'
_LEAVE_ADVICE = "leave spark.sql.shuffle.partitions alone"


def spark_prediction(profile: Profile, costs: SparkCosts, second: Profile | None = None) -> dict:
    stages = profile.stages
    default = predict(stages, SPARK_DEFAULTS, costs)
    best = recommend(stages, costs)
    wall = profile.wall_seconds
    fitted, unmatched = _fitted(profile, second, costs)
    if fitted is not None:
        best = recommend_fitted(fitted, costs)
        at_default, at_best = fitted.predict(SPARK_DEFAULTS, costs), fitted.predict(best.settings, costs)
    else:
        at_default = anchored(stages, wall, SPARK_DEFAULTS, costs)
        at_best = anchored(stages, wall, best.settings, costs)
    band = noise_band(profile, costs)
    gain = at_default / at_best - 1 if at_best > 0 else 0.0
    within_noise = best.settings != SPARK_DEFAULTS and gain <= band
    if within_noise:  # a gain the runs cannot tell from noise: keep what is known to work
        best, at_best = predict(stages, SPARK_DEFAULTS, costs), at_default
    stateful = any(s.stateful for s in stages)
    streaming = any(s.query is not None for s in stages)
    return {
        "calibration": costs.source,
        "cores": costs.cores,
        "profiled": {
            "shuffle_partitions": profiled_settings(stages).shuffle_partitions,
            "wall_seconds": wall,
        },
        "default": {
            "shuffle_partitions": default.settings.shuffle_partitions,
            "seconds": round(at_default, 4),
            "model_seconds": round(default.seconds, 4),
        },
        "recommended": {
            "shuffle_partitions": best.settings.shuffle_partitions,
            "seconds": round(at_best, 4),
            "model_seconds": round(best.seconds, 4),
            "code": best.settings.code(),
        },
        "speedup": round(at_default / at_best, 4) if at_best > 0 else None,
        "noise_band": round(band, 4),
        "within_noise": within_noise,
        "predicted_gain": round(gain, 4),
        "two_profiles": fitted is not None,
        "second_profile_unused": unmatched,
        "stages": len(stages),
        "per_stage": [
            {
                "stage": stage.stage_id,
                "operators": [o.name for o in stage.operators if o.rows is not None],
                "rows_out": next((o.rows for o in reversed(stage.operators) if o.rows is not None), None),
                "operator_seconds": [{"operator": o.name, **dict(o.seconds)} for o in stage.operators if o.seconds],
                "tasks": {"default": at.tasks, "recommended": then.tasks},
                "model_seconds": {"default": round(at.seconds, 4), "recommended": round(then.seconds, 4)},
            }
            for stage, at, then in zip(stages, default.stages, best.stages)
        ],
        "fitted_stages": None
        if fitted is None
        else [
            {
                "stage": stage.stage_id,
                "scale": round(fit.scale, 4),
                "work_seconds": round(fit.work, 4),
                "seconds": {"default": round(at[1], 4), "recommended": round(then[1], 4)},
            }
            for stage, fit, at, then in zip(
                fitted.stages,
                fitted.fits,
                fitted.per_stage(SPARK_DEFAULTS, costs),
                fitted.per_stage(best.settings, costs),
            )
        ],
        "overcharged_stages": overcharged(stages, costs),
        "actions": actions(stages),
        "micro_batches": batches(stages),
        "streaming": streaming,
        "stateful": stateful,
    }


def _fitted(profile: Profile, second: Profile | None, costs: SparkCosts) -> tuple[FittedRun | None, str | None]:
    """The two-profile fit (stage_fit.py), or None and why not."""
    if second is None:
        return None, None
    if profile.wall_seconds is None or second.wall_seconds is None:
        return None, "a profile has no wall_seconds (record it with `sparkpar profile --event-log`)"
    try:
        return fit_stages(profile.stages, profile.wall_seconds, second.stages, second.wall_seconds, costs), None
    except ValueError as error:
        return None, str(error)


def noise_band(profile: Profile, costs: SparkCosts) -> float:
    """The smallest predicted gain worth a change: the calibration's `noise_band`, or the
    profiled runs' own spread (median absolute deviation / median of `wall_runs`) if larger."""
    runs = sorted(profile.wall_runs)
    if len(runs) < 2:
        return costs.noise_band
    median = statistics.median(runs)
    spread = statistics.median(abs(r - median) for r in runs) / median if median > 0 else 0.0
    return max(costs.noise_band, spread)


def with_spark_prediction(
    report: PlanReport, profile: Profile, costs: SparkCosts, cores: int | None = None, second: Profile | None = None
) -> PlanReport:
    if cores:
        costs = replace(costs, cores=cores)
    found = spark_prediction(profile, costs, second)
    best = found["recommended"]
    partitions = best["shuffle_partitions"]
    summary = (
        f"Spark cost model ({found['calibration']}, {costs.cores} cores): "
        f"{found['default']['seconds']:.3g} s at Spark's defaults (200 shuffle partitions, "
        f"adaptive execution), {best['seconds']:.3g} s at {partitions}: predicted "
        f"{found['speedup']:.2f}x"
    )
    if found["stateful"] and found["within_noise"]:
        setting = (
            f"leave spark.sql.shuffle.partitions alone for this stateful streaming query: no "
            f"setting is predicted to gain more than the noise band, and an existing checkpoint "
            f"keeps its number of state partitions anyway; {summary}."
        )
    elif found["stateful"]:
        setting = (
            f"leave spark.sql.shuffle.partitions alone for this stateful streaming query's "
            f"existing checkpoint (Spark restores the number of state partitions recorded "
            f"there on every restart); for a new run with a new checkpointLocation, "
            f"`{best['code']}` before its first start; {summary}."
        )
    else:
        setting = f"`{best['code']}` — {summary}."
    # The model's setting replaces the replica-count setting advice (and, for a stateful query,
    # the unmeasured "leave it alone" advice, whose task count it supersedes).
    advice = tuple(a for a in report.advice if not a.startswith((_SETTING_ADVICE, _LEAVE_ADVICE))) + (setting,)
    notes = report.notes
    if found["within_noise"]:
        notes += (
            f"the model's best setting gains {found['predicted_gain']:.0%}, within the noise band of "
            f"{found['noise_band']:.0%} (the calibration's noise_band, or the profiled runs' spread): "
            f"Spark's defaults are kept",
        )
    if found["second_profile_unused"]:
        notes += (f"the second profile was not used: {found['second_profile_unused']}",)
    if found["overcharged_stages"] and not found["two_profiles"]:
        notes += (
            f"the calibration's per-task, block and state costs add up to more than stage(s) "
            f"{', '.join(map(str, found['overcharged_stages']))} measured in this run: the constants are "
            f"too large for it (calibrated under another load, or on another machine); the prediction is "
            f"scaled to the run, as if every cost were off by the same factor; `sparkpar plan --calibrate` "
            f"where and when the job runs",
        )
    return replace(report, advice=advice, shuffle_partitions=partitions, spark=found, notes=notes)


def overcharged(stages, costs: SparkCosts) -> list[int]:
    """Stages whose model charges at the setting they ran under exceed their measured executor
    time by more than a fifth: the measurement contradicts the constants."""
    return [s.stage_id for s in stages if in_task(s, stages, costs) > 1.2 * s.run_seconds + 0.05]
