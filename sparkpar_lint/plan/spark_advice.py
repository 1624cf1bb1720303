"""The Spark cost model's part of a job's plan: shuffle partitions for a measured run.

Given a profile with Spark's stage metrics (`sparkpar profile --event-log`), the report gets the
predicted seconds at Spark's defaults (200 shuffle partitions, adaptive execution on) and at the
recommended setting, and the shuffle-partition advice becomes the model's choice. A stateful
streaming query keeps the number of state partitions recorded in its checkpoint, so for one the
setting is advised for a new query only (a new checkpointLocation, set before its first start).
"""

from __future__ import annotations

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

_SETTING_ADVICE = '`spark.conf.set("spark.sql.shuffle.partitions"'
_LEAVE_ADVICE = "leave spark.sql.shuffle.partitions alone"


def spark_prediction(profile: Profile, costs: SparkCosts) -> dict:
    stages = profile.stages
    default = predict(stages, SPARK_DEFAULTS, costs)
    best = recommend(stages, costs)
    wall = profile.wall_seconds
    at_default = anchored(stages, wall, SPARK_DEFAULTS, costs)
    at_best = anchored(stages, wall, best.settings, costs)
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
        "stages": len(stages),
        "per_stage": [
            {
                "stage": stage.stage_id,
                "operators": [name for name, _ in stage.operators],
                "rows_out": stage.operators[-1][1] if stage.operators else None,
                "tasks": {"default": at.tasks, "recommended": then.tasks},
                "model_seconds": {"default": round(at.seconds, 4), "recommended": round(then.seconds, 4)},
            }
            for stage, at, then in zip(stages, default.stages, best.stages)
        ],
        "overcharged_stages": overcharged(stages, costs),
        "actions": actions(stages),
        "micro_batches": batches(stages),
        "streaming": streaming,
        "stateful": stateful,
    }


def with_spark_prediction(
    report: PlanReport, profile: Profile, costs: SparkCosts, cores: int | None = None
) -> PlanReport:
    if cores:
        costs = replace(costs, cores=cores)
    found = spark_prediction(profile, costs)
    best = found["recommended"]
    partitions = best["shuffle_partitions"]
    summary = (
        f"Spark cost model ({found['calibration']}, {costs.cores} cores): "
        f"{found['default']['seconds']:.3g} s at Spark's defaults (200 shuffle partitions, "
        f"adaptive execution), {best['seconds']:.3g} s at {partitions}: predicted "
        f"{found['speedup']:.2f}x"
    )
    if found["stateful"]:
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
    if found["overcharged_stages"]:
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
