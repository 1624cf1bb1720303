"""Profiles of real runs: per-operator rows in, rows out and seconds, for `sparkpar plan --profile`.

Format (JSON, version 1)::

    {
      "sparkpar_profile": 1,
      "job": "jobs/daily.py",                      # optional, free text
      "spark": {"version": "4.1.0", "master": "local[1]"},   # optional
      "operators": [
        {"name": "filter:8", "stage_id": 2, "rows_in": 300000, "rows_out": 150000,
         "seconds": 0.21},
        ...
      ]
    }

A profile read from a Spark event log (`sparkpar profile --event-log LOG`, event_log.py) has
"stages" instead of, or beside, "operators": Spark's per-stage figures (tasks, parents, executor
run time, input and shuffle rows and bytes, stateful or not, the shuffle-partition setting it ran
under, and the physical operators that ran in the stage with the rows each produced, from the
SQL metrics), "jobs", the number of Spark jobs, and "wall_seconds", the run's wall time; the planner's Spark cost model (spark_cost.py)
predicts the run at other settings from them. Optional "wall_runs" lists the wall times of
repeated runs at the same setting: their spread is the noise band below which the planner keeps
Spark's defaults. A second such profile of the same job at another setting (`plan --profile A
--profile B`) separates each stage's work from its per-task costs (stage_fit.py).

Each row names its operator by `name` (the planner's operator name, `method:line` for operators
from a job file) and/or `stage_id` (the stage-graph node id); at least one is required. `seconds`
is the operator's own processing time for all `rows_in` rows on one core, so its cost per row is
seconds / rows_in and its selectivity rows_out / rows_in. `sparkpar profile JOBFILE`
(profile_command.py) records one for a fixture-style job, slicing `job` into the prefixes that
`profile_prefixes` below times; `record_profile` does the same for a chain given as callables.

How `record_profile` measures (Spark's per-operator metrics are not reachable from Python without
a JVM listener): it builds each cumulative prefix of the chain — source, source+step1, ... — and
times a `noop` write of it (best of `repeats`, after one untimed warm-up run that pays for
code generation), then counts its rows. An operator's seconds are
the difference between its prefix and the previous one (clamped at zero); its rows in and out are
the two prefixes' counts. Run it on `local[1]` with `spark.sql.shuffle.partitions=1`, the
sequential semantics, so the seconds are single-core time; fixed per-job overhead cancels out in
the differences.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sparkpar_lint.plan.event_log import StageRun
from sparkpar_lint.plan.operators import ModelError, Operator

PROFILE_VERSION = 1
_ROW_KEYS = {"name", "stage_id", "rows_in", "rows_out", "seconds"}
_TOP_KEYS = {"sparkpar_profile", "job", "spark", "operators", "stages", "jobs", "wall_seconds", "wall_runs"}


@dataclass(frozen=True)
class ProfileRow:
    name: str | None
    stage_id: int | None
    rows_in: int
    rows_out: int
    seconds: float

    @property
    def cost(self) -> float:
        return self.seconds / self.rows_in if self.rows_in else 0.0

    @property
    def selectivity(self) -> float:
        return self.rows_out / self.rows_in if self.rows_in else 1.0

    def to_dict(self) -> dict:
        found = {
            "name": self.name,
            "stage_id": self.stage_id,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "seconds": self.seconds,
        }
        return {k: v for k, v in found.items() if v is not None}


@dataclass(frozen=True)
class Profile:
    rows: tuple[ProfileRow, ...]
    job: str = ""
    spark: dict | None = None
    stages: tuple[StageRun, ...] = ()  # Spark's own per-stage metrics (from an event log)
    jobs: int = 0  # Spark jobs the stages ran in
    wall_seconds: float | None = None  # the profiled run's wall time (event log: first start to last end)
    wall_runs: tuple[float, ...] = ()  # wall times of repeated runs at the same setting (their spread is noise)

    def to_dict(self) -> dict:
        data = {"sparkpar_profile": PROFILE_VERSION, "job": self.job, "operators": [r.to_dict() for r in self.rows]}
        if self.spark:
            data["spark"] = self.spark
        if self.stages:
            data["stages"] = [s.to_dict() for s in self.stages]
            data["jobs"] = self.jobs
        if self.wall_seconds is not None:
            data["wall_seconds"] = self.wall_seconds
        if self.wall_runs:
            data["wall_runs"] = list(self.wall_runs)
        return data

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


def load_profile(path: str | Path) -> Profile:
    path = Path(path)
    from sparkpar_lint.discovery import NotASourceFile, describe_read_error, read_source_bytes

    try:
        data = json.loads(read_source_bytes(str(path)).decode("utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{path}: no such profile") from None
    except (OSError, NotASourceFile) as error:
        raise ModelError(describe_read_error(str(path), error)) from None
    except UnicodeDecodeError as error:
        raise ModelError(f"{path}: cannot read: {error}") from None
    except json.JSONDecodeError as error:
        raise ModelError(f"{path}: not valid JSON: {error.msg} at line {error.lineno}") from None
    except RecursionError:
        raise ModelError(f"{path}: nested too deeply to be a profile") from None
    try:
        return profile_from_dict(data)
    except ModelError as error:
        raise ModelError(f"{path}: {error}") from None


def profile_from_dict(data: object) -> Profile:
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("operators", []), list)
        or not ("operators" in data or "stages" in data)
    ):
        raise ModelError('a profile is a JSON object with an "operators" or "stages" list')
    if data.get("sparkpar_profile", PROFILE_VERSION) != PROFILE_VERSION:
        raise ModelError(
            f"unsupported profile version {data.get('sparkpar_profile')!r}; "
            f"this sparkpar reads version {PROFILE_VERSION}"
        )
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ModelError(f"unknown key(s) {', '.join(sorted(unknown))}")
    rows = tuple(_row(raw, index) for index, raw in enumerate(data.get("operators", [])))
    spark = data.get("spark")
    stages = _stages(data.get("stages", []))
    jobs = data.get("jobs", len({s.job_id for s in stages}))
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise ModelError(f'"jobs" must be a whole number >= 0, not {jobs!r}')
    wall = data.get("wall_seconds")
    if wall is not None and (isinstance(wall, bool) or not isinstance(wall, (int, float)) or not 0 <= wall < math.inf):
        raise ModelError(f'"wall_seconds" must be a number >= 0, not {wall!r}')
    runs = data.get("wall_runs", [])
    if not isinstance(runs, list) or any(
        isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r < math.inf for r in runs
    ):
        raise ModelError(f'"wall_runs" must be a list of numbers >= 0, not {runs!r}')
    spark = spark if isinstance(spark, dict) else None
    wall_seconds = None if wall is None else float(wall)
    return Profile(rows, str(data.get("job", "")), spark, stages, jobs, wall_seconds, tuple(float(r) for r in runs))


def _stages(raw: object) -> tuple[StageRun, ...]:
    if not isinstance(raw, list):
        raise ModelError('"stages" must be a list of stage objects')
    stages = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ModelError(f"stages[{index}] must be an object")
        try:
            stages.append(StageRun.from_dict(item))
        except KeyError as error:
            raise ModelError(f"stages[{index}]: needs {error}") from None
        except (TypeError, ValueError) as error:
            raise ModelError(f"stages[{index}]: {error}") from None
    return tuple(stages)


def _row(raw: object, index: int) -> ProfileRow:
    where = f"operators[{index}]"
    if not isinstance(raw, dict):
        raise ModelError(f"{where} must be an object")
    unknown = set(raw) - _ROW_KEYS
    if unknown:
        raise ModelError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name, stage_id = raw.get("name"), raw.get("stage_id")
    if name is None and stage_id is None:
        raise ModelError(f'{where}: needs a "name" or a "stage_id"')
    if name is not None and (not isinstance(name, str) or not name):
        raise ModelError(f'{where}: "name" must be a non-empty string')
    if stage_id is not None and (isinstance(stage_id, bool) or not isinstance(stage_id, int)):
        raise ModelError(f'{where}: "stage_id" must be an integer')
    counts = {}
    for key in ("rows_in", "rows_out"):
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ModelError(f'{where}: "{key}" must be a whole number >= 0, not {value!r}')
        counts[key] = value
    seconds = raw.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise ModelError(f'{where}: "seconds" must be a number >= 0, not {seconds!r}')
    return ProfileRow(name, stage_id, counts["rows_in"], counts["rows_out"], float(seconds))


def apply_profile(operators: Sequence[Operator], profile: Profile) -> tuple[tuple[Operator, ...], tuple[str, ...]]:
    """Operators with measured cost and selectivity; notes name what did not match."""
    by_name = {r.name: r for r in profile.rows if r.name}
    by_stage = {r.stage_id: r for r in profile.rows if r.stage_id is not None}
    used, result, missing = set(), [], []
    for op in operators:
        row = by_name.get(op.name)
        if row is None and op.origin.isdigit():
            row = by_stage.get(int(op.origin))
        if row is None:
            missing.append(op.name)
            result.append(op)
            continue
        used.add(id(row))
        selectivity = max(row.selectivity, 1e-9)
        # A measured selectivity refines the number, never the static class (Table 1 is about
        # what the operator may do, not what it did on this input).
        result.append(replace(op, cost=row.cost, selectivity=selectivity))
    notes = []
    if missing:
        notes.append(f"no profile row for {', '.join(missing)}: static defaults used")
    unused = [r.name or f"stage {r.stage_id}" for r in profile.rows if id(r) not in used]
    if unused:
        notes.append(f"profile rows matching no operator: {', '.join(unused)}")
    return tuple(result), tuple(notes)


def record_profile(
    source: Callable, steps: Sequence[tuple[str, Callable]], *, repeats: int = 3, job: str = ""
) -> Profile:
    """Time each cumulative prefix of `source() -> step1 -> step2 ...` on the active session.

    `source` is a no-argument callable returning a DataFrame (the source operator, named
    "source"); each step is (name, DataFrame -> DataFrame). See the module docstring for why
    prefixes and for the session to use.
    """
    prefixes = [("source", source)]
    for name, step in steps:
        previous = prefixes[-1][1]
        prefixes.append((name, (lambda prev, fn: lambda: fn(prev()))(previous, step)))
    return profile_prefixes(prefixes, repeats=repeats, job=job)


def profile_prefixes(
    prefixes: Sequence[tuple[str, Callable | None]],
    *,
    baseline: Callable | None = None,
    repeats: int = 3,
    job: str = "",
) -> Profile:
    """One row per (name, build) prefix, in chain order; see the module docstring.

    `build()` returns the DataFrame up to and including the named operator. A build of None is an
    operator whose prefix cannot be run on its own (GroupedData after groupBy): it is merged into
    the next measured operator, which carries its seconds, and gets a row of zero seconds that
    keeps its rows. `baseline` builds the first operator's input; without it the first
    operator's seconds are its whole prefix's, as for a source.
    """
    if not any(build is not None for _, build in prefixes):
        raise ValueError("no prefix to measure")
    previous_seconds, previous_rows = 0.0, None
    if baseline is not None:
        previous_seconds, previous_rows = _measure(baseline, repeats)
    rows: list[ProfileRow] = []
    merged: list[str] = []
    for name, build in prefixes:
        if build is None:
            merged.append(name)
            continue
        seconds, count = _measure(build, repeats)
        rows_in = count if previous_rows is None else previous_rows
        rows.extend(ProfileRow(m, None, rows_in, rows_in, 0.0) for m in merged)
        rows.append(ProfileRow(name, None, rows_in, count, max(seconds - previous_seconds, 0.0)))
        merged, previous_seconds, previous_rows = [], seconds, count
    assert previous_rows is not None  # some prefix has a build (checked above), so it was measured
    rows.extend(ProfileRow(m, None, previous_rows, previous_rows, 0.0) for m in merged)
    return Profile(tuple(rows), job, _spark_metadata(next(b for _, b in prefixes if b)))


def _measure(build: Callable, repeats: int) -> tuple[float, int]:
    """(best seconds of a `noop` write after one untimed warm-up, rows) of `build()`."""
    build().write.format("noop").mode("overwrite").save()  # warm-up: codegen, JIT
    best = math.inf
    for _ in range(max(repeats, 1)):
        frame = build()
        started = time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - started)
    return best, build().count()


def _spark_metadata(build: Callable) -> dict | None:
    try:
        session = build().sparkSession
        return {"version": session.version, "master": session.sparkContext.master}
    except Exception:  # best effort: the metadata is informative only
        return None
