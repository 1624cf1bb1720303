"""A Spark cost model: the seconds a run's stages take at given settings, from a measured run.

Spark runs a job as stages separated by shuffles; a stage is a set of tasks, at most `cores` at a
time. For a stage of n tasks the model charges, in wall-clock seconds:

    stage_overhead + waves * task_overhead
    + (work + shuffled_rows * shuffle_row + n * (task_run + blocks + state)) / min(n, cores)

with waves = ceil(n / cores); `blocks` = shuffle_block per shuffle partition a map task writes
(a map task writes one block per reduce partition); `state` = state_task for a stateful
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

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

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
    state_task: float = 0.05  # per stateful streaming task per micro-batch (state store load/commit)
    batch_overhead: float = 0.3  # per streaming micro-batch: offset and commit logs, planning
    source: str = "built-in defaults"

    def to_dict(self) -> dict:
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
    values = {}
    for key, value in constants.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ModelError(f'"{key}" must be a number >= 0, not {value!r}')
        values[key] = value
    if "cores" in values:
        if int(values["cores"]) != values["cores"] or values["cores"] < 1:
            raise ModelError(f'"cores" must be a whole number >= 1, not {values["cores"]!r}')
        values["cores"] = int(values["cores"])
    return replace(SparkCosts(), **values, source=source)


def save_costs(costs: SparkCosts, path: str | Path, measurements: Sequence[dict] = ()) -> None:
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
    if not follows_setting(stage):
        return stage.tasks
    if settings.adaptive and stage.query is None:  # streaming queries never coalesce
        return coalesced(settings.shuffle_partitions, stage.shuffle_read_bytes, costs.cores)
    return settings.shuffle_partitions


def _writes_setting(stage: StageRun, stages: Sequence[StageRun]) -> bool:
    """The stage writes a shuffle read by a stage that follows the setting (blocks = setting)."""
    if stage.shuffle_write_rows == 0 and stage.shuffle_write_bytes == 0:
        return False
    readers = [s for s in stages if stage.stage_id in s.parents]
    return not readers or any(follows_setting(s) for s in readers)


def in_task(stage: StageRun, stages: Sequence[StageRun], costs: SparkCosts, tasks: int, partitions: int) -> float:
    """Executor seconds the model charges inside `tasks` tasks of the stage, besides its work."""
    per_task = costs.task_run + (costs.state_task if stage.stateful else 0.0)
    if _writes_setting(stage, stages):
        per_task += costs.shuffle_block * partitions
    rows = stage.shuffle_write_rows + stage.shuffle_read_rows
    return tasks * per_task + costs.shuffle_row * rows


def stage_work(stage: StageRun, stages: Sequence[StageRun], costs: SparkCosts) -> float:
    """The stage's own executor seconds: measured run time less the model's in-task charges."""
    charged = in_task(stage, stages, costs, stage.tasks, stage.shuffle_partitions)
    return max(stage.run_seconds - charged, 0.0)


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
        executor = stage_work(stage, stages, costs) + in_task(stage, stages, costs, n, settings.shuffle_partitions)
        seconds = costs.stage_overhead + waves * costs.task_overhead + executor / min(n, costs.cores)
        out.append(StagePrediction(stage.stage_id, n, seconds))
        total += seconds
    return Prediction(settings, total, tuple(out))


def recommend(
    stages: Sequence[StageRun], costs: SparkCosts, *, adaptive: bool = True, limit: int = SPARK_DEFAULT_PARTITIONS
) -> Prediction:
    """The fewest shuffle partitions whose predicted time is within 1% of the best."""
    candidates = [predict(stages, Settings(p, adaptive), costs) for p in range(1, limit + 1)]
    best = min(c.seconds for c in candidates)
    return next(c for c in candidates if c.seconds <= best * 1.01)
