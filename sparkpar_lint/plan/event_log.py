"""Spark's own metrics of a run, per stage, read from its event log.

Any job can be profiled this way: run it with `spark.eventLog.enabled=true` and
`spark.eventLog.dir=<dir>`, then `sparkpar profile --event-log <dir>/<app>` (a rolling
`eventlog_v2_*` directory, or one event-log file; plain or zstd-compressed, Spark 4's default).
Each completed stage gives its task count, parents, executor run time and the rows it read from
its input, read from a shuffle and wrote to a shuffle; a stage whose metrics mention state rows
belongs to a stateful streaming operator. Per stage, the physical operators that ran in it come
from the SQL metrics: each plan node's "number of output rows" accumulator and its timing metrics
(the execution's plan, and the plans adaptive execution posts) are found among the stage's
accumulables, so a stage lists e.g. Scan parquet 400000 rows (scan time 1.4 s) > Filter 36000 >
HashAggregate 3600 (time in aggregation build 1.5 s) > WholeStageCodegen (1) (duration 1.9 s) >
Exchange (shuffle write time). The times are Spark's own, summed over the stage's tasks, as Spark
defines each: a whole-stage-codegen node's "duration" is its fused pipeline's time, and an
operator's time inside it (aggregation build, sort) may include pulling rows from the operators
below, so they overlap and are not to be added up. Operators fused with no metric of their own
(Filter, Project) have rows and no time. Jobs carry the streaming query and micro-batch they
ran for, so a query's stages can be told from a batch job's.

Pure standard library, plus `zstandard` for compressed logs (imported only for them).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import zstandard

_RUN_TIME = "internal.metrics.executorRunTime"  # ms, summed over the stage's tasks
_INPUT_ROWS = "internal.metrics.input.recordsRead"
_READ_ROWS = "internal.metrics.shuffle.read.recordsRead"
_READ_BYTES = ("internal.metrics.shuffle.read.remoteBytesRead", "internal.metrics.shuffle.read.localBytesRead")
_WRITE_ROWS = "internal.metrics.shuffle.write.recordsWritten"
_WRITE_BYTES = "internal.metrics.shuffle.write.bytesWritten"
_STATE_METRIC = "number of total state rows"  # every stateful streaming operator reports it


class EventLogError(ValueError):
    """An event log that cannot be read; the message names the path."""


class OperatorRun(NamedTuple):
    """A physical plan node as it ran in one stage: the rows it produced there (None: it has no
    output-rows metric) and its timing metrics, (metric name, seconds summed over tasks)."""

    name: str
    rows: int | None
    seconds: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict:
        data: dict = {"operator": self.name}
        if self.rows is not None:
            data["rows_out"] = self.rows
        if self.seconds:
            data["seconds"] = dict(self.seconds)
        return data

    @classmethod
    def from_dict(cls, raw: dict) -> OperatorRun:
        rows = raw.get("rows_out")
        seconds = raw.get("seconds", {})
        if not isinstance(seconds, dict):
            raise ValueError('an operator\'s "seconds" must be an object of metric: seconds')
        times = tuple((str(k), float(v)) for k, v in seconds.items())
        if any(not 0 <= v < math.inf for _, v in times):
            raise ValueError(f"an operator's seconds must be numbers >= 0, not {seconds!r}")
        return cls(str(raw["operator"]), None if rows is None else int(rows), times)


@dataclass(frozen=True)
class StageRun:
    """One completed stage attempt, as Spark measured it."""

    stage_id: int
    job_id: int
    tasks: int
    parents: tuple[int, ...]
    run_seconds: float  # executor run time summed over tasks (one core's worth)
    wall_seconds: float  # submission to completion
    input_rows: int = 0
    shuffle_read_rows: int = 0
    shuffle_read_bytes: int = 0
    shuffle_write_rows: int = 0
    shuffle_write_bytes: int = 0
    stateful: bool = False
    shuffle_partitions: int = 200  # spark.sql.shuffle.partitions of the query it ran for
    adaptive: bool = True  # adaptive execution (partition coalescing) on for that query
    query: str | None = None  # streaming query id
    batch: int | None = None  # micro-batch id
    submitted_ms: int = 0
    # The action it ran for (root SQL execution id): adaptive execution runs one action as a job
    # per shuffle, and an action's fixed cost is paid once. None: a job outside SQL (RDD API).
    execution: int | None = None
    # The physical operators that ran in the stage, leaf first, with the rows each produced
    # there and their timing metrics (Spark's SQL metrics of the plan node; see _operators).
    operators: tuple[OperatorRun, ...] = ()

    @property
    def reads_shuffle(self) -> bool:
        return self.shuffle_read_rows > 0 or self.shuffle_read_bytes > 0

    def to_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if v is not None}
        data["parents"] = list(self.parents)
        if self.operators:
            data["operators"] = [o.to_dict() for o in self.operators]
        else:
            data.pop("operators")
        return data

    @classmethod
    def from_dict(cls, raw: dict) -> StageRun:
        """A stage as a profile stores it; KeyError/TypeError/ValueError on a bad one."""
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        for name in ("stage_id", "tasks", "run_seconds"):
            if name not in raw:
                raise KeyError(name)
        known["parents"] = tuple(int(p) for p in raw.get("parents", ()))
        known["operators"] = tuple(OperatorRun.from_dict(o) for o in raw.get("operators", ()))
        stage = cls(**known)
        for name in (
            "stage_id",
            "job_id",
            "tasks",
            "shuffle_partitions",
            "input_rows",
            "shuffle_read_rows",
            "shuffle_read_bytes",
            "shuffle_write_rows",
            "shuffle_write_bytes",
            "submitted_ms",
        ):
            value = getattr(stage, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (-1 if name == "job_id" else 0):
                raise ValueError(f'"{name}" must be a whole number >= 0, not {value!r}')
        for name in ("run_seconds", "wall_seconds"):
            value = getattr(stage, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f'"{name}" must be a number >= 0, not {value!r}')
        return stage


@dataclass(frozen=True)
class JobRun:
    job_id: int
    submitted_ms: int
    completed_ms: int
    query: str | None = None
    batch: int | None = None

    @property
    def seconds(self) -> float:
        return max(self.completed_ms - self.submitted_ms, 0) / 1000


@dataclass
class RunMetrics:
    stages: list[StageRun] = field(default_factory=list)
    jobs: list[JobRun] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)  # Spark properties of the first job
    # SQL executions (start_ms, end_ms): they also cover the driver's planning around the jobs.
    executions: list[tuple[int, int]] = field(default_factory=list)
    # Streaming query runs (start_ms, end_ms): from the query's start to the end of its last
    # micro-batch (its progress: trigger start + triggerExecution), which covers the source
    # listing, offset and commit logs outside any SQL execution.
    queries: list[tuple[int, int]] = field(default_factory=list)

    def between(self, start_ms: int, end_ms: int) -> RunMetrics:
        """The jobs submitted in [start_ms, end_ms], their stages, the executions started then."""
        jobs = [j for j in self.jobs if start_ms <= j.submitted_ms <= end_ms]
        ids = {j.job_id for j in jobs}
        executions = [e for e in self.executions if start_ms <= e[0] <= end_ms]
        queries = [q for q in self.queries if start_ms <= q[0] <= end_ms]
        return RunMetrics([s for s in self.stages if s.job_id in ids], jobs, self.settings, executions, queries)

    def span(self) -> float:
        """Seconds from the first SQL execution or job start to the last one's end: the run's
        wall time as the log shows it (time spent before the first execution is not in it)."""
        starts = [j.submitted_ms for j in self.jobs] + [e[0] for e in self.executions + self.queries]
        ends = [j.completed_ms for j in self.jobs] + [e[1] for e in self.executions + self.queries]
        return max(max(ends) - min(starts), 0) / 1000 if starts and ends else 0.0


def read_event_log(path: str | Path) -> RunMetrics:
    path = Path(path)
    try:
        files = _event_files(path)
        events = [event for f in files for event in _events(f)]
    except EventLogError:
        raise
    except OSError as error:
        raise EventLogError(f"{path}: cannot read the event log: {error.strerror or error}") from None
    except Exception as error:  # zstandard.ZstdError: a damaged compressed log
        if type(error).__module__.startswith("zstandard"):
            raise EventLogError(f"{path}: cannot decompress the event log: {error}") from None
        raise
    return metrics_from_events(events, str(path))


def metrics_from_events(events, where: str = "event log") -> RunMetrics:
    metrics = RunMetrics()
    job_of_stage: dict[int, int] = {}
    open_jobs: dict[int, tuple[int, str | None, int | None]] = {}
    # Settings a query ran under: SQL executions list the configurations changed from the defaults.
    execution_conf: dict[str, dict] = {}
    job_conf: dict[int, dict] = {}
    job_execution: dict[int, int | None] = {}
    execution_start: dict[str, int] = {}
    # SQL metric accumulator id -> its plan node and metric, from every plan an
    # execution had (adaptive execution posts updated plans with new nodes and metrics).
    plan_metrics: dict[int, _Metric] = {}
    query_runs: dict[str, list] = {}  # streaming query runId -> [start_ms, end_ms]
    for event in events:
        kind = event.get("Event") if isinstance(event, dict) else None
        if isinstance(kind, str) and kind.endswith("SparkListenerSQLExecutionStart"):
            changed = event.get("modifiedConfigs")
            execution_conf[str(event.get("executionId"))] = changed if isinstance(changed, dict) else {}
            if isinstance(event.get("time"), int):
                execution_start[str(event.get("executionId"))] = event["time"]
            _plan_metrics(event.get("sparkPlanInfo"), plan_metrics)
        elif isinstance(kind, str) and kind.endswith("SparkListenerSQLAdaptiveExecutionUpdate"):
            _plan_metrics(event.get("sparkPlanInfo"), plan_metrics)
        elif isinstance(kind, str) and kind.endswith("SparkListenerSQLExecutionEnd"):
            began = execution_start.pop(str(event.get("executionId")), None)
            if began is not None and isinstance(event.get("time"), int):
                metrics.executions.append((began, max(event["time"], began)))
        elif isinstance(kind, str) and kind.endswith(("QueryStartedEvent", "QueryProgressEvent")):
            _query_time(event, kind.endswith("QueryStartedEvent"), query_runs)
        elif kind == "SparkListenerJobStart":
            props = event.get("Properties") or {}
            job_conf[int(event["Job ID"])] = {
                **{k: v for k, v in props.items() if k.startswith("spark.sql.")},
                **execution_conf.get(str(props.get("spark.sql.execution.id")), {}),
            }
            if not metrics.settings:
                metrics.settings = {k: v for k, v in props.items() if isinstance(v, str)}
            batch = props.get("streaming.sql.batchId")
            job = int(event["Job ID"])
            open_jobs[job] = (
                int(event.get("Submission Time", 0)),
                props.get("sql.streaming.queryId"),
                int(batch) if isinstance(batch, str) and batch.isdigit() else None,
            )
            root = props.get("spark.sql.execution.root.id", props.get("spark.sql.execution.id"))
            job_execution[job] = int(root) if isinstance(root, str) and root.isdigit() else None
            for stage in event.get("Stage IDs", []):
                job_of_stage[int(stage)] = job
        elif kind == "SparkListenerJobEnd":
            job = int(event["Job ID"])
            submitted, query, batch = open_jobs.pop(job, (0, None, None))
            metrics.jobs.append(JobRun(job, submitted, int(event.get("Completion Time", submitted)), query, batch))
        elif kind == "SparkListenerStageCompleted":
            info = event.get("Stage Info") or {}
            if info.get("Failure Reason"):
                continue  # a failed attempt: its retry is what ran
            stage = int(info["Stage ID"])
            job = job_of_stage.get(stage, -1)
            _, query, batch = open_jobs.get(job, (0, None, None))
            metrics.stages.append(
                replace(
                    _stage(info, job, query, batch, job_conf.get(job, {})),
                    execution=job_execution.get(job),
                    operators=_operators(info, plan_metrics),
                )
            )
    if not metrics.jobs and not metrics.stages:
        raise EventLogError(f"{where}: no Spark jobs in this event log")
    metrics.queries = [(start, max(start, end)) for start, end in query_runs.values() if start is not None]
    # A job still running when the log ends (a killed app): keep its stages, not its time.
    return metrics


def _stage(info: dict, job: int, query, batch, conf: dict) -> StageRun:
    acc: dict[str, float] = {}
    names = set()
    for item in info.get("Accumulables", []):
        name = item.get("Name")
        names.add(name)
        try:
            acc[name] = float(item.get("Value"))
        except (TypeError, ValueError):
            continue
    submitted = int(info.get("Submission Time") or 0)
    completed = int(info.get("Completion Time") or submitted)
    return StageRun(
        stage_id=int(info["Stage ID"]),
        job_id=job,
        tasks=int(info.get("Number of Tasks", 0)),
        parents=tuple(int(p) for p in info.get("Parent IDs", [])),
        run_seconds=acc.get(_RUN_TIME, 0.0) / 1000,
        wall_seconds=(completed - submitted) / 1000,
        input_rows=int(acc.get(_INPUT_ROWS, 0)),
        shuffle_read_rows=int(acc.get(_READ_ROWS, 0)),
        shuffle_read_bytes=int(sum(acc.get(k, 0) for k in _READ_BYTES)),
        shuffle_write_rows=int(acc.get(_WRITE_ROWS, 0)),
        shuffle_write_bytes=int(acc.get(_WRITE_BYTES, 0)),
        stateful=_STATE_METRIC in names,
        shuffle_partitions=_int(conf.get("spark.sql.shuffle.partitions"), 200),
        adaptive=str(conf.get("spark.sql.adaptive.enabled", "true")).lower() != "false",
        query=query,
        batch=batch,
        submitted_ms=submitted,
    )


_OUTPUT_ROWS = "number of output rows"
# SQL metric types of times, and their unit in seconds (SQLMetrics: "timing" ms, "nsTiming" ns).
_TIME_UNITS = {"timing": 1e-3, "nsTiming": 1e-9}


@dataclass(frozen=True)
class _Metric:
    node: str
    depth: int
    position: int  # preorder index of the node in its plan
    name: str  # the metric's name; _OUTPUT_ROWS for rows
    unit: float  # seconds per unit for a time, 0 for rows


def _plan_metrics(plan: object, found: dict[int, _Metric]) -> None:
    """Record each plan node's output-rows and timing accumulators with the node's depth and
    preorder position in this plan (the newest plan an execution posted wins: adaptive
    execution re-roots the tree)."""
    stack: list[tuple[object, int]] = [(plan, 0)]
    position = 0
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            continue
        name = str(node.get("nodeName", "?")).strip()
        for metric in node.get("metrics") or ():
            if not isinstance(metric, dict) or not isinstance(metric.get("accumulatorId"), int):
                continue
            unit = _TIME_UNITS.get(str(metric.get("metricType")))
            if metric.get("name") == _OUTPUT_ROWS or unit is not None:
                found[metric["accumulatorId"]] = _Metric(name, depth, position, str(metric.get("name")), unit or 0.0)
        position += 1
        stack.extend((child, depth + 1) for child in reversed(node.get("children") or ()))


def _operators(info: dict, plan_metrics: dict[int, _Metric]) -> tuple[OperatorRun, ...]:
    """The plan nodes whose output-rows or timing metrics this stage updated, deepest (the leaf)
    first, with the rows they produced and the seconds each timing metric summed in it."""
    nodes: dict[tuple[int, int, str], tuple[list[int], list[tuple[str, float]]]] = {}
    for item in info.get("Accumulables", []):
        metric = plan_metrics.get(item.get("ID"))
        if metric is None or item.get("Name") != metric.name:
            continue
        try:
            value = float(item.get("Value"))
        except (TypeError, ValueError):
            continue
        rows, times = nodes.setdefault((-metric.depth, metric.position, metric.node), ([], []))
        if metric.unit:
            times.append((metric.name, round(value * metric.unit, 6)))
        else:
            rows.append(int(value))
    return tuple(
        OperatorRun(name, rows[0] if rows else None, tuple(sorted(times)))
        for (_, _, name), (rows, times) in sorted(nodes.items())
    )


def _query_time(event: dict, started: bool, runs: dict[str, list]) -> None:
    """A streaming query run's start (QueryStartedEvent) or the end of a micro-batch (a
    QueryProgressEvent: its trigger's start time plus durationMs.triggerExecution)."""
    progress = event if started else event.get("progress")
    if not isinstance(progress, dict):
        return
    when = _iso_ms(progress.get("timestamp"))
    run = progress.get("runId")
    if when is None or not isinstance(run, str):
        return
    span = runs.setdefault(run, [None, when])
    if started:
        span[0] = when
        return
    duration = (progress.get("durationMs") or {}).get("triggerExecution", 0)
    span[1] = max(span[1], when + (duration if isinstance(duration, int) else 0))


def _iso_ms(value: object) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _int(value, default: int) -> int:
    return int(value) if isinstance(value, str) and value.isdigit() else default


def _event_files(path: Path) -> list[Path]:
    if path.is_dir():
        # Rolling event logs (Spark's default since 4.0): events_<n>_<app>[.codec], in order.
        files = sorted((p for p in path.iterdir() if p.name.startswith("events_")), key=lambda p: _roll_index(p.name))
        if not files:
            raise EventLogError(
                f"{path}: a directory with no events_* files; give a Spark event-log file or an eventlog_v2_* directory"
            )
        return files
    if not path.exists():
        raise EventLogError(f"{path}: no such event log")
    return [path]


def _roll_index(name: str) -> int:
    part = name.split("_")[1] if name.count("_") >= 2 else "0"
    return int(part) if part.isdigit() else 0


def _events(path: Path) -> Iterator[dict]:
    suffix = path.suffix.lower()
    if suffix in (".lz4", ".lzf", ".snappy"):
        raise EventLogError(
            f"{path}: {suffix[1:]}-compressed event logs are not supported; run "
            "with spark.eventLog.compression.codec=zstd (the default) or "
            "spark.eventLog.compress=false"
        )
    with path.open("rb") as raw:
        stream: IO[bytes] | zstandard.ZstdDecompressionReader
        if suffix in (".zstd", ".zst"):
            try:
                import zstandard
            except ImportError:
                raise EventLogError(
                    f"{path}: reading a zstd event log needs the zstandard package (pip install 'sparkpar[pytest]')"
                ) from None
            stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        else:
            stream = raw
        text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
        for number, line in enumerate(text, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                # The last line of a log cut off mid-write is expected; anything else is not a log.
                if number == 1:
                    raise EventLogError(f"{path}: not a Spark event log (line 1 is not JSON)") from None
                return
