"""`sparkpar plan --calibrate`: fit spark_cost.SparkCosts to this machine from micro-jobs.

The micro-jobs run on a small local-cluster with an event log, so each run's stages, task counts
and executor run times are Spark's own figures (event_log.py). Two least-squares fits
(non-negative: a constant that comes out negative is dropped and the rest refitted):

* inside tasks, per stage: run_seconds ~ task_run * tasks + shuffle_row * shuffled rows
  + shuffle_block * tasks * partitions written + shuffle_fetch * blocks fetched + state_task * stateful tasks + rows generated
  (a nuisance term for the micro-jobs' own `spark.range` work);
* outside tasks, per run: wall - sum(stage run_seconds / min(tasks, cores)) ~ job_overhead * jobs
  + batch_overhead * micro-batches (job_overhead is per action of a batch query) + stage_overhead * stages + task_overhead * waves.

The runs: empty jobs over 2..64 input splits (waves), a small repartition to 2..200 partitions
without adaptive execution (blocks written), a small aggregate at 2..200 partitions that adaptive
execution packs into one task (blocks fetched), 0.2-2 million rows with and without a shuffle (rows), and a
stateful streaming count at 2, 12 and 48 shuffle partitions over two micro-batches (state stores).
pyspark and numpy are imported only here.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sparkpar_lint.plan.event_log import RunMetrics, StageRun, read_event_log
from sparkpar_lint.plan.spark_cost import SparkCosts, _writes_setting, actions, batches, blocks_read

DEFAULT_MASTER = "local-cluster[2,1,1024]"


def calibrate(
    master: str = DEFAULT_MASTER, *, log: Callable[[str], None] = lambda _: None
) -> tuple[SparkCosts, list[dict]]:
    """Run the micro-jobs and fit the constants."""
    from pyspark.sql import SparkSession

    work = Path(tempfile.mkdtemp(prefix="sparkpar-calibrate-"))
    logs = work / "events"
    logs.mkdir()
    spark = (
        SparkSession.builder.master(master)
        .appName("sparkpar-calibrate")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", logs.as_uri())
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    runs: list[dict] = []
    try:
        cores = spark.sparkContext.defaultParallelism
        _micro_jobs(spark, work, runs, log)
    finally:
        spark.stop()
    directory = next(logs.iterdir())
    metrics = read_event_log(directory)
    shutil.rmtree(work, ignore_errors=True)
    return fit(metrics, runs, cores), runs


def _micro_jobs(spark, work: Path, runs: list[dict], log) -> None:
    # Callable[..., None]: the actions bind loop values as lambda defaults, which mypy cannot
    # match to Callable[[], None]; each is called with no arguments.
    def timed(name: str, action: Callable[..., None], generated: int = 0, **settings) -> None:
        for key, value in settings.items():
            spark.conf.set(key, str(value))
        start = time.time()
        action()
        end = time.time()
        runs.append(
            {
                "name": name,
                "start_ms": int(start * 1000),
                "end_ms": int(end * 1000) + 1,
                "wall_seconds": end - start,
                "generated_rows": generated,
            }
        )
        log(f"{name}: {end - start:.2f} s")

    def noop(frame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    from pyspark.sql.functions import col as spark_col

    off = {"spark.sql.adaptive.enabled": "false"}
    small = 2000
    noop(spark.range(0, small, 1, 2))  # warm-up: executors registered, code generated
    noop(spark.range(0, small, 1, 2).repartition(4))
    for splits in (2, 8, 32, 64):
        timed(f"splits={splits}", lambda s=splits: noop(spark.range(0, small, 1, s)), small, **off)
    for partitions in (2, 50, 200):
        timed(
            f"repartition={partitions}",
            lambda p=partitions: noop(spark.range(0, small, 1, 2).repartition(p)),
            small,
            **off,
            **{"spark.sql.shuffle.partitions": partitions},
        )

    # Adaptive execution packs the partitions of a small aggregate into one task, which fetches
    # 2 x partitions blocks: the fetch cost apart from the per-task cost.
    def aggregate() -> None:
        noop(spark.range(0, small, 1, 2).groupBy((spark_col("id") % 100).alias("k")).count())

    spark.conf.set("spark.sql.adaptive.enabled", "true")
    aggregate()  # untimed: the first aggregate pays for generating and compiling its code
    for partitions in (2, 50, 200):
        timed(
            f"coalesced aggregate partitions={partitions}",
            aggregate,
            small,
            **{"spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": partitions},
        )
    for rows in (200_000, 2_000_000):
        timed(f"rows={rows}", lambda r=rows: noop(spark.range(0, r, 1, 2)), rows, **off)
        timed(
            f"rows={rows} shuffled",
            lambda r=rows: noop(spark.range(0, r, 1, 2).repartition(2)),
            rows,
            **off,
            **{"spark.sql.shuffle.partitions": 2},
        )
    source = work / "stream-source"
    spark.range(0, small, 1, 2).selectExpr("id", "id % 50 AS k").write.parquet(str(source))
    for partitions in (0, 2, 12, 48):  # 0: an untimed warm-up query, which pays for loading classes
        checkpoint = work / f"checkpoint-{partitions}"

        def stream(c=checkpoint):
            frame = spark.readStream.schema("id long, k long").option("maxFilesPerTrigger", 1).parquet(str(source))
            query = (
                frame.groupBy("k")
                .count()
                .writeStream.format("noop")
                .outputMode("update")
                .option("checkpointLocation", str(c))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()

        if partitions == 0:
            spark.conf.set("spark.sql.shuffle.partitions", "2")
            stream()
            continue
        timed(f"stateful stream partitions={partitions}", stream, small, **{"spark.sql.shuffle.partitions": partitions})


def fit(metrics: RunMetrics, runs: list[dict], cores: int) -> SparkCosts:
    import numpy as np

    inside_rows, inside_target = [], []
    outside_rows, outside_target = [], []
    for run in runs:
        part = metrics.between(run["start_ms"], run["end_ms"])
        stages = part.stages
        if not stages:
            continue
        for stage in stages:
            generated = run["generated_rows"] if not stage.parents and not stage.reads_shuffle else 0
            inside_rows.append(_inside_features(stage, stages) + [generated])
            inside_target.append(stage.run_seconds)
        waves = sum(math.ceil(s.tasks / cores) for s in stages)
        spread = sum(s.run_seconds / min(max(s.tasks, 1), cores) for s in stages)
        outside_rows.append([actions(stages), batches(stages), len(stages), waves])
        outside_target.append(run["wall_seconds"] - spread)
        run.update(
            jobs=len(part.jobs),
            actions=actions(stages),
            batches=batches(stages),
            stages=len(stages),
            waves=waves,
            tasks=[s.tasks for s in stages],
        )
    task_run, shuffle_row, shuffle_block, shuffle_fetch, state_task, _ = _nonnegative(np, inside_rows, inside_target)
    job, batch, per_stage, task = _nonnegative(np, outside_rows, outside_target)
    return SparkCosts(
        cores=cores,
        job_overhead=job,
        stage_overhead=per_stage,
        task_overhead=task,
        task_run=task_run,
        shuffle_row=shuffle_row,
        shuffle_block=shuffle_block,
        shuffle_fetch=shuffle_fetch,
        state_task=state_task,
        batch_overhead=batch,
        source="calibration",
    )


def _inside_features(stage: StageRun, stages) -> list[float]:
    writes = stage.tasks * stage.shuffle_partitions if _writes_setting(stage, stages) else 0
    return [
        stage.tasks,
        stage.shuffle_write_rows + stage.shuffle_read_rows,
        writes,
        blocks_read(stage, stages, lambda parent: parent.tasks, stage.shuffle_partitions),
        stage.tasks if stage.stateful else 0,
    ]


def _nonnegative(np, rows, target) -> list[float]:
    """Least squares with every coefficient >= 0: drop the negative ones and refit."""
    a, b = np.asarray(rows, dtype=float), np.asarray(target, dtype=float)
    active = list(range(a.shape[1]))
    coefficients = np.zeros(a.shape[1])
    while active:
        solution, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        if (solution >= 0).all():
            coefficients[active] = solution
            break
        active = [c for c, value in zip(active, solution) if value >= 0]
    return [float(c) for c in coefficients]
