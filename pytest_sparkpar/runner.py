"""Running a job under one interleaving, on real Spark, with the rows exactly where it says.

Batch inputs: each partition's rows, in their order, are pickled as one block and parallelized
with one slice per block, so the job's first stage reads exactly that placement with no shuffle
of its own (what `createDataFrame` does, minus its even split). Spark Connect has no RDDs: there
every row is tagged with its target partition and position, and
`repartitionById(n, part).sortWithinPartitions(pos)` (Spark 4.1+) places them.

Streaming inputs: the file source. Each micro-batch is written as one Parquet file per input
partition, modification times strictly increasing, and read with `maxFilesPerTrigger` = partitions
and `trigger(availableNow=True)`, so micro-batch b is exactly the files of batch b; a huge
`spark.sql.files.openCostInBytes` keeps every file in its own partition. `foreachBatch` captures
each batch's output by batch id. Every run gets a fresh checkpoint directory, and queries are
stopped and directories removed even when the job raises.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pytest_sparkpar import compat
from pytest_sparkpar.frames import PART, POS, _as_read, _file_schema, call_job, to_rows
from pytest_sparkpar.interleaving import Interleaving


@dataclass
class Dataset:
    """One input after normalisation: plain tuples plus the Spark schema they were built with."""

    rows: list[tuple]
    schema: Any  # pyspark StructType
    _internal: list[tuple] | None = field(default=None, repr=False, compare=False)

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def internal(self) -> list[tuple]:
        """The rows verified and converted to Spark's internal form once, as `createDataFrame`
        does for every call (datetimes to microseconds, and so on)."""
        if self._internal is None:
            from pyspark.sql.types import _make_type_verifier

            verify, convert = _make_type_verifier(self.schema), compat.row_converter(self.schema)
            for row in self.rows:
                verify(row)
            self._internal = [self.schema.toInternal(convert(row)) for row in self.rows]
        return self._internal


@dataclass
class Output:
    rows: list[tuple]
    columns: list[str]
    batches: dict[int, int] | None = None  # streaming: batch id -> rows emitted


class SessionPool:
    """Gives each variant a session with its own SQL conf over the one shared SparkContext.

    `newSession()` shares the SparkContext (and its executors) but not SQL confs, so threads can
    run differently configured variants at once. Spark Connect sessions run serially instead.
    """

    def __init__(self, spark):
        self.spark = spark
        self.lock = threading.Lock()
        self.shared = _is_connect(spark)
        # A new session starts from the SparkContext's confs, not the ones the test set at run
        # time (the session time zone above all): carry those over so the job sees what it would.
        self.inherited = {} if self.shared else _runtime_sql_confs(spark)
        self.local = threading.local()  # per thread: its session

    def session(self, confs: dict[str, str]):
        """A session with `confs` set. Each thread keeps one and sets the variant's confs on it
        before every run: a session per conf meant a new session for most runs, and 318 against
        291 CPU-ms per run (bench/plugin_speed.py's job). Threads never share one, as a job's temp
        views (SQL jobs name their inputs) would collide."""
        if self.shared:
            for key, value in confs.items():
                self.spark.conf.set(key, value)
            return self.spark
        session = getattr(self.local, "session", None)
        if session is None:
            session = self.local.session = self.spark.newSession()
            for name, value in self.inherited.items():
                session.conf.set(name, value)
        for name, value in confs.items():
            session.conf.set(name, value)
        return session


def _runtime_sql_confs(spark) -> dict[str, str]:
    """The SQL confs of `spark` that differ from a fresh session's and may be set at run time."""
    fresh = compat.sql_confs(spark.newSession())
    return {
        key: value
        for key, value in compat.sql_confs(spark).items()
        if key.startswith("spark.sql.") and fresh.get(key) != value and spark.conf.isModifiable(key)
    }


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _placed_frame(session, data: Dataset, placement):
    if _is_connect(session):
        return _shuffled_into_place(session, data, placement)
    from pyspark.serializers import CPickleSerializer

    context, internal = session.sparkContext, data.internal()
    jvm, parts = context._jvm, placement.partitions
    blocks: list[list[tuple]] = [[] for _ in range(parts)]
    for j, i in enumerate(placement.order):
        blocks[placement.partition_of[j]].append(internal[i])
    # One pickled block per slice: the JVM flattens each block back into rows (batched pickles).
    pickled = context._serialize_to_jvm(
        blocks,
        CPickleSerializer(),
        lambda path: jvm.PythonRDD.readRDDFromFile(context._jsc, path, parts),
        lambda: jvm.PythonParallelizeServer(context._jsc.sc(), parts),
    )
    rows = jvm.SerDeUtil.toJavaArray(jvm.SerDeUtil.pythonToJava(pickled, True))
    return compat.classic_dataframe(
        session._jsparkSession.applySchemaToPythonRDD(rows.rdd(), data.schema.json()), session
    )


def _shuffled_into_place(session, data: Dataset, placement):
    from pyspark.sql.types import IntegerType, StructField, StructType

    tagged_schema = StructType(
        list(data.schema.fields) + [StructField(PART, IntegerType(), False), StructField(POS, IntegerType(), False)]
    )
    tagged = [data.rows[i] + (placement.partition_of[j], j) for j, i in enumerate(placement.order)]
    frame = session.createDataFrame(tagged, tagged_schema)
    return compat.placed_by_id(frame, placement.partitions, PART, POS).drop(PART, POS)


def run_batch(pool: SessionPool, job, inputs: dict[str, Dataset], variant: Interleaving) -> Output:
    __tracebackhide__ = True
    with pool.lock if pool.shared else _nullcontext():
        session = pool.session(variant.confs())
        frames = {n: _placed_frame(session, d, variant.placements[n]) for n, d in inputs.items()}
        result = call_job(job, frames)
        return Output(to_rows(result), list(result.columns))


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _arrow_value(value, data_type):
    """A Python value as Arrow must receive it. Spark reads a naive `datetime` for a TIMESTAMP in
    the driver's local time zone (as `createDataFrame` does), so it becomes that instant in UTC."""
    import datetime

    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

    if value is None:
        return None
    if isinstance(data_type, TimestampType) and isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC)
    if isinstance(data_type, ArrayType):
        return [_arrow_value(v, data_type.elementType) for v in value]
    if isinstance(data_type, MapType):
        return [(_arrow_value(k, data_type.keyType), _arrow_value(v, data_type.valueType)) for k, v in value.items()]
    if isinstance(data_type, StructType):
        items = value.values() if isinstance(value, dict) else value
        return {f.name: _arrow_value(v, f.dataType) for f, v in zip(data_type.fields, items)}
    return value


def _write_batches(directory: str, data: Dataset, placement) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    file_schema = _file_schema(data.schema)
    schema = compat.arrow_schema_utc(file_schema)
    names = data.columns
    types = [f.dataType for f in file_schema.fields]
    stamp = time.time() - 3600 * 24  # in the past, 1 s apart: the source orders files by mtime
    for batch in range(placement.batches):
        for part in range(placement.partitions):
            rows = [
                {n: _arrow_value(v, t) for n, v, t in zip(names, data.rows[i], types)}
                for j, i in enumerate(placement.order)
                if placement.batch_of[j] == batch and placement.partition_of[j] == part
            ]
            path = os.path.join(directory, f"b{batch:04d}-p{part:04d}.parquet")
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
            stamp += 1
            os.utime(path, (stamp, stamp))


def run_streaming(
    pool: SessionPool, job, inputs: dict[str, Dataset], variant: Interleaving, output_mode: str
) -> Output:
    __tracebackhide__ = True
    if pool.shared:  # Spark Connect: inputs and outputs must live on the server
        from pytest_sparkpar import connect_stream

        with pool.lock:
            session = pool.session(variant.confs())
            rows, columns, batches = connect_stream.run(session, job, inputs, variant, output_mode)
        return Output(rows, columns, batches)
    root = tempfile.mkdtemp(prefix="sparkpar-stream-")
    query = None
    try:
        confs = dict(variant.confs(), **{"spark.sql.files.openCostInBytes": str(1 << 40)})
        with pool.lock if pool.shared else _nullcontext():
            session = pool.session(confs)
            frames = {}
            for name, data in inputs.items():
                placement = variant.placements[name]
                directory = os.path.join(root, "in-" + name)
                os.makedirs(directory)
                _write_batches(directory, data, placement)
                frames[name] = _as_read(
                    session.readStream.schema(_file_schema(data.schema))
                    .option("maxFilesPerTrigger", placement.partitions)
                    .parquet(directory),
                    data.schema,
                )
            result = call_job(job, frames)
            captured: dict[int, list[tuple]] = {}

            def capture(frame, batch_id):
                captured[batch_id] = to_rows(frame)

            query = (
                result.writeStream.outputMode(output_mode)
                .foreachBatch(capture)
                .option("checkpointLocation", os.path.join(root, "checkpoint"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
        batches = sorted(captured)
        if output_mode == "complete":
            rows = captured[batches[-1]] if batches else []
        else:
            rows = [r for b in batches for r in captured[b]]
        return Output(rows, list(result.columns), {b: len(captured[b]) for b in batches})
    finally:
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - the job's own error is the one worth showing
                pass
        shutil.rmtree(root, ignore_errors=True)
