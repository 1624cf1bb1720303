"""Two profiles of one job at different shuffle-partition settings: each stage's own work and
the size of its per-task costs, measured instead of taken from the calibration.

From one profile the model cannot tell a stage's work from its per-task cost: a stateful
streaming stage at 200 partitions measures 200 state-store loads and commits with the work
hidden under them, and when the calibration's per-task charge exceeds what the stage measured
per task, the work comes out as nothing. Two runs at different settings separate them. For each
stage the model's setting-dependent seconds (spark_cost: stage and wave overheads, and its
in-task charges spread over min(tasks, cores): per task, block, fetch and state store) are the
feature D, and the stage's measured wall time m is fitted as

    m = k * D(setting) + W / min(tasks, cores)

k scales the calibrated costs to this stage on this run (state stores of one key per partition
cost less than the calibration's; a loaded machine more), W is the stage's own work. Two runs
give two equations; a stage whose D and task spread are the same at both (a scan) keeps its
mean, and a fit that comes out negative (noise larger than the difference) keeps the other
term only. What no stage explains (driver, planning, overlapping scans) is the runs' mean
remainder (measured wall less its measured stages), added to every prediction. So each stage
of both profiled runs is predicted as measured where its fit is exact, each run within half the
difference of the two remainders, and a third setting is interpolated or extrapolated along the
calibrated structure.

The stages of the two runs are matched in submission order; the runs must have the same stages
(the same count, and the same kind at each position: shuffle read/write, stateful, streaming),
else `fit_stages` says why and the caller plans from the first profile alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sparkpar_lint.plan.event_log import StageRun
from sparkpar_lint.plan.spark_cost import (
    SPARK_DEFAULT_PARTITIONS,
    Prediction,
    Settings,
    SparkCosts,
    in_task,
    predict,
    profiled_settings,
    stage_tasks,
)


@dataclass(frozen=True)
class StageFit:
    scale: float  # k: the calibrated per-task, block, fetch and state costs, times this
    work: float  # W: the stage's own executor seconds (one core's worth)


@dataclass(frozen=True)
class FittedRun:
    """The first profile's stages with a fit per stage and the unexplained remainder."""

    stages: tuple[StageRun, ...]
    fits: tuple[StageFit, ...]
    remainder: float
    settings: tuple[Settings, Settings]  # the two profiled settings

    def predict(self, settings: Settings, costs: SparkCosts) -> float:
        return self.remainder + sum(
            _stage_seconds(s, self.stages, f, settings, costs) for s, f in zip(self.stages, self.fits)
        )

    def per_stage(self, settings: Settings, costs: SparkCosts) -> list[tuple[int, float]]:
        return [
            (stage_tasks(s, settings, costs), _stage_seconds(s, self.stages, f, settings, costs))
            for s, f in zip(self.stages, self.fits)
        ]


def overheads(stage: StageRun, stages: Sequence[StageRun], costs: SparkCosts, settings: Settings | None) -> float:
    """D: the model's setting-dependent wall seconds of the stage, work excluded (None: as it ran)."""
    n = stage.tasks if settings is None else stage_tasks(stage, settings, costs)
    return (
        costs.stage_overhead
        + math.ceil(n / costs.cores) * costs.task_overhead
        + in_task(stage, stages, costs, settings) / min(max(n, 1), costs.cores)
    )


def _spread(tasks: int, costs: SparkCosts) -> float:
    return 1.0 / min(max(tasks, 1), costs.cores)


def _stage_seconds(stage: StageRun, stages, fit: StageFit, settings: Settings, costs: SparkCosts) -> float:
    n = stage_tasks(stage, settings, costs)
    return fit.scale * overheads(stage, stages, costs, settings) + fit.work * _spread(n, costs)


def _kind(stage: StageRun) -> tuple:
    return (stage.reads_shuffle, stage.shuffle_write_rows > 0, stage.stateful, stage.query is not None)


def mismatch(first: Sequence[StageRun], second: Sequence[StageRun]) -> str | None:
    """Why the two runs' stages cannot be matched, or None."""
    if len(first) != len(second):
        return f"the profiles ran {len(first)} and {len(second)} stages"
    for a, b in zip(_ordered(first), _ordered(second)):
        if _kind(a) != _kind(b):
            return f"stage {a.stage_id} of the first profile and stage {b.stage_id} of the second differ in kind"
    if profiled_settings(first) == profiled_settings(second):
        return "both profiles ran at the same setting"
    return None


def _ordered(stages: Sequence[StageRun]) -> list[StageRun]:
    return sorted(stages, key=lambda s: (s.submitted_ms, s.stage_id))


def fit_stage(d: Sequence[float], spread: Sequence[float], measured: Sequence[float]) -> StageFit:
    """k and W from two runs: m_i = k * d_i + W * spread_i, both >= 0."""
    (d1, d2), (s1, s2), (m1, m2) = d, spread, measured
    det = d1 * s2 - d2 * s1
    if abs(det) > 1e-9 * max(abs(d1 * s2), abs(d2 * s1), 1e-12):
        k = (m1 * s2 - m2 * s1) / det
        w = (d1 * m2 - d2 * m1) / det
        if k >= 0 and w >= 0:
            return StageFit(k, w)
        if k < 0:  # the per-task costs did not show above the noise: the work alone
            return StageFit(0.0, sum(m / s for m, s in zip(measured, spread)) / 2)
        # No work left over: the per-task costs alone, least squares through the origin.
        return StageFit((d1 * m1 + d2 * m2) / (d1 * d1 + d2 * d2), 0.0)
    # Nothing that changes between the runs: the stage costs what it measured, on average.
    return StageFit(0.0, sum(m / s for m, s in zip(measured, spread)) / 2)


def fit_stages(
    first: Sequence[StageRun], first_wall: float, second: Sequence[StageRun], second_wall: float, costs: SparkCosts
) -> FittedRun:
    """The fit of every stage from two runs (see the module docstring); ValueError if they
    cannot be matched."""
    why = mismatch(first, second)
    if why:
        raise ValueError(why)
    a, b = tuple(_ordered(first)), tuple(_ordered(second))
    fits = []
    for x, y in zip(a, b):
        fits.append(
            fit_stage(
                (overheads(x, a, costs, None), overheads(y, b, costs, None)),
                (_spread(x.tasks, costs), _spread(y.tasks, costs)),
                (x.wall_seconds, y.wall_seconds),
            )
        )
    # The remainder is the time the measured stages do not cover, the same at both settings.
    # It comes from the measurements, not the fits: a stage a fit cannot reproduce (clamped at
    # zero work or scale) keeps its own error rather than moving it into every prediction.
    remainder = (first_wall - sum(s.wall_seconds for s in a) + second_wall - sum(s.wall_seconds for s in b)) / 2
    return FittedRun(a, tuple(fits), remainder, (profiled_settings(a), profiled_settings(b)))


def recommend_fitted(run: FittedRun, costs: SparkCosts, *, adaptive: bool = True) -> Prediction:
    """The fewest shuffle partitions whose fitted time is within 1% of the best (the model's
    per-stage figures in the Prediction are the calibrated ones, for the report)."""
    seconds = {p: run.predict(Settings(p, adaptive), costs) for p in range(1, SPARK_DEFAULT_PARTITIONS + 1)}
    best = min(seconds.values())
    chosen = next(p for p, s in seconds.items() if s <= best * 1.01)
    return predict(run.stages, Settings(chosen, adaptive), costs)
