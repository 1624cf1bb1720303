"""A Spark cost model: the seconds a run's stages take at given settings, from a measured run.

Spark runs a job as stages separated by shuffles; a stage is a set of tasks, at most `cores` at a
time. For a stage of n tasks the model charges, in wall-clock seconds:

    stage_overhead + waves * task_overhead
    + (work + shuffled_rows * shuffle_row + fetched * shuffle_fetch
       + n * (task_run + blocks + state)) / min(n, cores)

with waves = ceil(n / cores); `blocks` = shuffle_block per shuffle partition a map task writes
(a map task writes one block per reduce partition); `fetched` the blocks a reducing stage fetches
(map tasks x partitions: adaptive coalescing packs 200 partitions into one task, which then
fetches 200 blocks per map task, one after another); `state` = state_task for a stateful
streaming task (it loads and commits its state store every micro-batch); `work` the stage's own
executor run time measured in a profile, less what the model charges inside tasks for the
measured task count (which is how a profile run at any setting predicts another). Each job adds
job_overhead per action of a batch query (adaptive execution splits an action into one job per
shuffle; the fixed cost is the action's), each streaming micro-batch batch_overhead. Stages are summed: a job's stages run one after another (independent scans of a
join overlap a little in reality).

How many tasks a stage runs at a setting: a stage that reads no shuffle keeps its measured count
(input splits); one that reads a shuffle runs spark.sql.shuffle.partitions tasks, or, with
adaptive execution (on by default for batch queries, never for streaming ones), as many as
Spark's partition coalescing leaves: partitions are packed up to max(min(bytes / default
parallelism, 64 MB), 1 MB) each.

The constants are this machine's: `sparkpar plan --calibrate` fits them from micro-jobs
(calibrate.py) and stores them in `.sparkpar/calibration.json` (CALIBRATION_FILE); without one
the built-in values below (a 2-core local-cluster) are used. Edit the file, or give another with
`--calibration`, to override any constant. Known gaps: skew, spills and memory are not modelled,
so the model never prefers more partitions than cores for a reason other than waves.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from sparkpar_lint.plan.event_log import StageRun
from sparkpar_lint.plan.operators import ModelError

CALIBRATION_FILE = Path(".sparkpar") / "calibration.json"
SPARK_DEFAULT_PARTITIONS = 200
_ADVISORY_BYTES = 64 * 1024 * 1024  # spark.sql.adaptive.advisoryPartitionSizeInBytes
_MIN_PARTITION_BYTES = 1024 * 1024  # spark.sql.adaptive.coalescePartitions.minPartitionSize


@dataclass(frozen=True)
class SparkCosts:
    """Seconds per unit of each overhead, and the executor cores the run gets."""

    cores: int = 2
    job_overhead: float = 0.15  # per action of a batch query (however many jobs adaptive execution makes of it)
    stage_overhead: float = 0.05  # per stage: task set scheduling, adaptive re-planning
    task_overhead: float = 0.02  # per wave of tasks, outside the tasks: launch, deserialization, result
    task_run: float = 0.01  # per task, inside its executor run time: setup, code generation, commit
    shuffle_row: float = 2e-7  # per row written to and read back from a shuffle
    shuffle_block: float = 2e-4  # per shuffle block a map task writes (one per reduce partition)
    shuffle_fetch: float = 2e-4  # per shuffle block a reduce task fetches (one per map task and partition)
    state_task: float = 0.05  # per stateful streaming task per micro-batch (state store load/commit)
    batch_overhead: float = 0.3  # per streaming micro-batch: offset and commit logs, planning
    # The smallest predicted gain (fraction) the planner acts on: a run-to-run spread under which
    # a measured difference is noise; below it Spark's defaults are kept.
    noise_band: float = 0.1
    source: str = "built-in defaults"

    def to_dict(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if k != "source"}


_COST_KEYS = {f.name for f in fields(SparkCosts)} - {"source"}


def load_costs(path: str | Path | None = None) -> SparkCosts:
    """The calibration at `path`, else CALIBRATION_FILE if present, else the built-in values."""
    if path is None:
        if not CALIBRATION_FILE.is_file():
            return SparkCosts()
        path = CALIBRATION_FILE
    path = Path(path)
    from sparkpar_lint.discovery import NotASourceFile, describe_read_error, read_source_bytes

    try:
        data = json.loads(read_source_bytes(str(path)).decode("utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{path}: no such calibration file") from None
    except (OSError, NotASourceFile) as error:
        raise ModelError(describe_read_error(str(path), error)) from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ModelError(f"{path}: not a calibration file: {error}") from None
    try:
        return costs_from_dict(data, str(path))
    except ModelError as error:
        raise ModelError(f"{path}: {error}") from None


def costs_from_dict(data: object, source: str) -> SparkCosts:
    if not isinstance(data, dict) or not isinstance(data.get("constants"), dict):
        raise ModelError('a calibration file is a JSON object with a "constants" object')
    constants = data["constants"]
    unknown = set(constants) - _COST_KEYS
    if unknown:
        raise ModelError(f"unknown constant(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_COST_KEYS))}")
    # Any: the keys are SparkCosts fields and each value is checked to be a number below.
    values: dict[str, Any] = {}
    for key, value in constants.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ModelError(f'"{key}" must be a number >= 0, not {value!r}')
        values[key] = value
    if "cores" in values:
        if int(values["cores"]) != values["cores"] or values["cores"] < 1:
            raise ModelError(f'"cores" must be a whole number >= 1, not {values["cores"]!r}')
        values["cores"] = int(values["cores"])
    return replace(SparkCosts(), **values, source=source)


def save_costs(costs: SparkCosts, path: str | Path, measurements: Sequence[dict[str, Any]] = ()) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "sparkpar_calibration": 1,
        "constants": costs.to_dict(),
        "units": "seconds; shuffle_row per row, shuffle_block per block, cores a count",
        "measurements": list(measurements),
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


# --- settings and predictions -------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    shuffle_partitions: int = SPARK_DEFAULT_PARTITIONS
    adaptive: bool = True  # spark.sql.adaptive.enabled (Spark's default)

    def code(self) -> str:
        return f'spark.conf.set("spark.sql.shuffle.partitions", "{self.shuffle_partitions}")'


SPARK_DEFAULTS = Settings()


def follows_setting(stage: StageRun) -> bool:
    """The stage's task count is the shuffle-partition setting (or what coalescing made of it),
    not an explicit `repartition(n)`, an RDD's numPartitions or the input splits."""
    if not stage.reads_shuffle:
        return False
    if stage.adaptive and stage.query is None:
        return stage.tasks <= stage.shuffle_partitions
    return stage.tasks == stage.shuffle_partitions


def coalesced(partitions: int, shuffle_bytes: int, cores: int) -> int:
    """Tasks left after adaptive execution packs `partitions` shuffle partitions."""
    target = max(min(math.ceil(shuffle_bytes / max(cores, 1)), _ADVISORY_BYTES), _MIN_PARTITION_BYTES)
    return max(1, min(partitions, math.ceil(shuffle_bytes / target)))


def stage_tasks(stage: StageRun, settings: Settings, costs: SparkCosts) -> int:
    if not follows_setting(stage) or settings == ran_under(stage):
        return stage.tasks  # at the setting it ran under, the count Spark chose is the truth
    if settings.adaptive and stage.query is None:  # streaming queries never coalesce
        return coalesced(settings.shuffle_partitions, stage.shuffle_read_bytes, costs.cores)
    return settings.shuffle_partitions


def ran_under(stage: StageRun) -> Settings:
    return Settings(stage.shuffle_partitions, stage.adaptive)


def profiled_settings(stages: Sequence[StageRun]) -> Settings:
    """The settings the profiled run ran under (its first stage that follows the setting; the
    first stage's when none does)."""
    following = [s for s in stages if follows_setting(s)] or list(stages)
    return ran_under(following[0]) if following else SPARK_DEFAULTS


def _writes_setting(stage: StageRun, stages: Sequence[StageRun]) -> bool:
    """The stage writes a shuffle read by a stage that follows the setting (blocks = setting)."""
    if not _writes(stage):
        return False
    writers = shuffle_writers(tuple(stages))
    readers = [s for s in stages if stage in writers.get(s.stage_id, ())]
    return not readers or any(follows_setting(s) for s in readers)


def blocks_read(
    stage: StageRun, stages: Sequence[StageRun], parent_tasks: Callable[[StageRun], int], partitions: int
) -> int:
    """Shuffle blocks the stage fetches, over all its tasks: one per map task of each parent that
    wrote a shuffle, per partition it reads. Adaptive coalescing packs those blocks into fewer
    tasks but fetches as many, so 200 partitions coalesced into 1 task fetch 200 per map task."""
    if not stage.reads_shuffle:
        return 0
    width = partitions if follows_setting(stage) else stage.tasks
    return sum(parent_tasks(w) for w in shuffle_writers(tuple(stages)).get(stage.stage_id, ())) * width


def _writes(stage: StageRun) -> bool:
    return stage.shuffle_write_rows > 0 or stage.shuffle_write_bytes > 0


@functools.lru_cache(maxsize=64)
def shuffle_writers(stages: tuple[StageRun, ...]) -> dict[int, tuple[StageRun, ...]]:
    """Per stage that reads a shuffle, the completed stages that wrote it.

    A direct parent that ran is the writer. Adaptive execution runs every shuffle's map stage as
    a job of its own, and the next job lists that map stage again under a new id, skipped (it is
    never completed); such a reader's writers are the earlier unclaimed map stages of the same
    action whose rows written add up to its rows read (the latest ones when none add up)."""
    ids = {s.stage_id for s in stages}
    claimed = {p for s in stages for p in s.parents if p in ids}
    found: dict[int, tuple[StageRun, ...]] = {}
    for reader in sorted(stages, key=lambda s: (s.submitted_ms, s.stage_id)):
        if not reader.reads_shuffle:
            continue
        direct = tuple(s for s in stages if s.stage_id in reader.parents and _writes(s))
        if direct:
            found[reader.stage_id] = direct
            continue
        candidates = [
            s
            for s in stages
            if _writes(s)
            and s.stage_id not in claimed
            and (s.execution, s.query, s.batch) == (reader.execution, reader.query, reader.batch)
            and (s.submitted_ms, s.stage_id) < (reader.submitted_ms, reader.stage_id)
        ]
        chosen, rows = [], 0
        for candidate in reversed(candidates):
            chosen.append(candidate)
            rows += candidate.shuffle_write_rows
            if rows >= reader.shuffle_read_rows:
                break
        if rows != reader.shuffle_read_rows and candidates:
            chosen = [candidates[-1]]
        claimed.update(s.stage_id for s in chosen)
        found[reader.stage_id] = tuple(chosen)
    return found


def in_task(stage: StageRun, stages: Sequence[StageRun], costs: SparkCosts, settings: Settings | None = None) -> float:
    """Executor seconds the model charges inside the stage's tasks at `settings` (None: as it
    ran), besides its work: per task, per block written and fetched, per shuffled row."""
    if settings is None:
        tasks, partitions = stage.tasks, stage.shuffle_partitions
        parent_tasks: Callable[[StageRun], int] = lambda parent: parent.tasks  # noqa: E731
    else:
        tasks, partitions = stage_tasks(stage, settings, costs), settings.shuffle_partitions
        parent_tasks = lambda parent: stage_tasks(parent, settings, costs)  # noqa: E731
    per_task = costs.task_run + (costs.state_task if stage.stateful else 0.0)
    if _writes_setting(stage, stages):
        per_task += costs.shuffle_block * partitions
    rows = stage.shuffle_write_rows + stage.shuffle_read_rows
    fetched = blocks_read(stage, stages, parent_tasks, partitions)
    return tasks * per_task + costs.shuffle_row * rows + costs.shuffle_fetch * fetched


def stage_work(stage: StageRun, stages: Sequence[StageRun], costs: SparkCosts) -> float:
    """The stage's own executor seconds: measured run time less the model's in-task charges."""
    return max(stage.run_seconds - in_task(stage, stages, costs), 0.0)


@dataclass(frozen=True)
class StagePrediction:
    stage_id: int
    tasks: int
    seconds: float


@dataclass(frozen=True)
class Prediction:
    settings: Settings
    seconds: float
    stages: tuple[StagePrediction, ...]


def actions(stages: Sequence[StageRun]) -> int:
    """Actions of batch queries among the stages: root SQL executions, or jobs outside SQL."""
    return len({s.execution if s.execution is not None else ("job", s.job_id) for s in stages if s.query is None})


def batches(stages: Sequence[StageRun]) -> int:
    return len({(s.query, s.batch) for s in stages if s.query is not None})


def predict(stages: Sequence[StageRun], settings: Settings, costs: SparkCosts) -> Prediction:
    """Wall-clock seconds of the measured run's stages under `settings`."""
    out = []
    total = costs.job_overhead * actions(stages) + costs.batch_overhead * batches(stages)
    for stage in stages:
        n = stage_tasks(stage, settings, costs)
        waves = math.ceil(n / costs.cores)
        executor = stage_work(stage, stages, costs) + in_task(stage, stages, costs, settings)
        seconds = costs.stage_overhead + waves * costs.task_overhead + executor / min(n, costs.cores)
        out.append(StagePrediction(stage.stage_id, n, seconds))
        total += seconds
    return Prediction(settings, total, tuple(out))


def anchored(stages: Sequence[StageRun], wall: float | None, settings: Settings, costs: SparkCosts) -> float:
    """Seconds at `settings`, anchored to the profiled run's measured wall time.

    When the model predicts the profiled run at no more than its wall time, the time it does
    not explain (planning, listing, the driver) is measured, fixed, and added: the wall plus
    the model's difference between the settings. When the model predicts more than was
    measured, its constants are too large for this run (calibrated at another load, or
    elsewhere): every charge is scaled by the same factor, wall / model, which keeps the model's
    ratio between the settings. Both agree where the model matches the run. Without a wall
    time, the model's own total."""
    predicted = predict(stages, settings, costs).seconds
    if not wall:
        return predicted
    at_profile = predict(stages, profiled_settings(stages), costs).seconds
    if at_profile > wall:
        return predicted * wall / at_profile
    return wall + predicted - at_profile


def recommend(
    stages: Sequence[StageRun], costs: SparkCosts, *, adaptive: bool = True, limit: int = SPARK_DEFAULT_PARTITIONS
) -> Prediction:
    """The fewest shuffle partitions whose predicted time is within 1% of the best."""
    candidates = [predict(stages, Settings(p, adaptive), costs) for p in range(1, limit + 1)]
    best = min(c.seconds for c in candidates)
    return next(c for c in candidates if c.seconds <= best * 1.01)
