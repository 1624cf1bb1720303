"""Runs a fixture job under its sequential semantics and under varied partitionings.

A fixture module defines `INPUTS` (rows per named input), optionally `SCHEMA` and `OUTPUT`
("bag" or "sequence"), and `job(spark, **inputs)` returning a DataFrame, an RDD or a list.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType

from pyspark.sql import DataFrame, Row, SparkSession


def load_job(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_runnable(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return "INPUTS" in text and "def job(" in text


def _plain(value):
    if isinstance(value, Row):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    return value


def _collect(result) -> list:
    if isinstance(result, DataFrame):
        rows = result.collect()
    elif hasattr(result, "collect"):
        rows = result.collect()
    else:
        rows = list(result)
    return [_plain(row) for row in rows]


def run(
    spark: SparkSession,
    module: ModuleType,
    seed: int | None,
    arrival: str | None = None,
    source_order: bool = False,
    arrival_columns: tuple[str, ...] = (),
) -> list:
    """One run: seed None is the sequential semantics; otherwise a seeded random interleaving.

    `arrival` ("ascending" or "descending", with seed None) runs the sequential semantics on the
    same rows arriving in another order: sorted by the whole row as Spark orders it
    (`to_json(struct("*"))`), an order the rows of an unordered table could come in; with
    `arrival_columns`, sorted by those columns first (in an input that has them all), as a table
    written sorted by them arrives.

    `source_order` (with a seed) keeps the order the source holds its rows in, as a file read in
    splits does: INPUTS' rows are cut into consecutive slices, one per input partition, and only
    the partition counts are drawn. What sequence-number fixes promise is the answer for rows in
    that order, under any partitioning.

    Each input is also a temporary view of its name, for jobs that read it as a table.

    An input is cut into its partitions where Spark reads it: a local table is scanned in
    `spark.sql.leafNodeDefaultParallelism` consecutive slices. A `repartition` after the scan would
    cut it too, at the cost of a shuffle stage per input and run (a sixth of the runs' CPU).
    """
    schema = getattr(module, "SCHEMA", {})
    rng = random.Random(seed)
    if seed is None:
        shuffle_partitions, input_partitions = 1, 1
    else:
        shuffle_partitions, input_partitions = rng.choice([3, 4, 5, 7]), rng.choice([2, 3, 4, 6])
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark.conf.set("spark.sql.leafNodeDefaultParallelism", str(input_partitions))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    frames = {}
    for name, rows in module.INPUTS.items():
        rows = list(rows)
        if seed is not None and not source_order:
            rng.shuffle(rows)
        frame = spark.createDataFrame(rows, schema.get(name))
        if arrival is not None:
            from pyspark.sql import functions as F

            from sparkpar_lint.rules.fixers.ordering import JSON_TIMESTAMPS

            # The fixes' whole-row tie-breaker; a sort takes no `*`.
            whole_row = F.to_json(F.struct(*frame.columns), JSON_TIMESTAMPS)
            keys = [*(arrival_columns if set(arrival_columns) <= set(frame.columns) else ()), whole_row]
            keys = [F.col(k) if isinstance(k, str) else k for k in keys]
            frame = frame.orderBy(*(k.desc() if arrival == "descending" else k for k in keys))
        frames[name] = frame.coalesce(1) if seed is None else frame
        frames[name].createOrReplaceTempView(name)
    output = _collect(module.job(spark, **frames))
    if getattr(module, "OUTPUT", "bag") == "bag":
        output.sort(key=repr)
    return output


def outputs_differ(spark: SparkSession, module: ModuleType, runs: int) -> tuple[list, list[list]]:
    """The sequential output and the outputs of `runs` seeded interleavings."""
    sequential = run(spark, module, None)
    return sequential, [run(spark, module, seed) for seed in range(runs)]


def feed_json_batches(query, source: Path, batches: list[list[dict]], pauses: list[float] | None = None) -> int:
    """Feeds a file-source stream one micro-batch at a time: each batch is written to `source` as
    one JSON-lines file (after its pause, if any, so an arrival time can move on) and processed in
    full before the next. Returns the rows the query's first stateful operator holds at the end;
    the query is stopped either way."""
    import json
    import time

    try:
        for number, rows in enumerate(batches):
            time.sleep(pauses[number] if pauses else 0)
            (source / f"part-{number}.json").write_text("".join(json.dumps(row) + "\n" for row in rows))
            query.processAllAvailable()
        return query.lastProgress["stateOperators"][0]["numRowsTotal"]
    finally:
        query.stop()
