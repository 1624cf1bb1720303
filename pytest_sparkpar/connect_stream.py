"""A streaming interleaving over Spark Connect, where the driver's file system is not the server's.

The local runner writes input files next to the test and captures batches with a Python
`foreachBatch`; over Connect neither works (the server cannot read the client's files, and a
`foreachBatch` function runs in a Python process on the server). So everything stays on the server:

* each input is a managed Parquet table to which one file per (micro-batch, input partition) is
  appended, batch after batch. The file source orders files by modification time and takes
  `maxFilesPerTrigger` = partitions of them per micro-batch, so micro-batch b is exactly the files
  of batch b;
* the output goes to a memory sink; batch ids and sizes come from the query's progress;
* the tables, the sink's view and the query's temporary checkpoint are removed afterwards.
"""

from __future__ import annotations

import uuid

from pytest_sparkpar import compat
from pytest_sparkpar.frames import PART, POS, _as_read, _file_schema, call_job, to_rows


def _table_location(session, table: str) -> str:
    rows = session.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return next(row[1] for row in rows if row[0] == "Location")


def _write_input(session, table: str, data, placement, file_schema) -> str:
    """One append job per micro-batch writes its input partitions as one file each, rows in
    emission order (jobs run one after another, so a batch's files are newer than the last
    batch's); a partition that gets no rows in a batch is an extra append of an empty file."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    tagged_schema = StructType(
        list(file_schema.fields) + [StructField(PART, IntegerType(), False), StructField(POS, IntegerType(), False)]
    )
    for batch in range(placement.batches):
        tagged = [
            data.rows[i] + (placement.partition_of[j], j)
            for j, i in enumerate(placement.order)
            if placement.batch_of[j] == batch
        ]
        filled = {part for *_, part, _ in tagged}
        if tagged:
            frame = session.createDataFrame(tagged, tagged_schema)
            placed = compat.placed_by_id(frame, placement.partitions, PART, POS)
            placed.drop(PART, POS).write.mode("append").format("parquet").saveAsTable(table)
        for _ in range(placement.partitions - len(filled)):
            session.createDataFrame([], file_schema).coalesce(1).write.mode("append").format("parquet").saveAsTable(
                table
            )
    return _table_location(session, table)


def run(session, job, inputs, variant, output_mode):
    """Rows and per-batch sizes of `job` over `inputs` laid out as `variant` says, on the server."""
    tag = uuid.uuid4().hex[:12]
    tables: list[str] = []
    sink = f"sparkpar_out_{tag}"
    query = None
    session.conf.set("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    try:
        frames = {}
        for index, (name, data) in enumerate(inputs.items()):
            table = f"sparkpar_in_{tag}_{index}"
            tables.append(table)
            schema = _file_schema(data.schema)
            location = _write_input(session, table, data, variant.placements[name], schema)
            stream = (
                session.readStream.schema(schema)
                .option("maxFilesPerTrigger", variant.placements[name].partitions)
                .parquet(location)
            )
            frames[name] = _as_read(stream, data.schema)
        result = call_job(job, frames)
        query = (
            result.writeStream.format("memory")
            .queryName(sink)
            .outputMode(output_mode)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        batches = {p["batchId"]: int(p["sink"].get("numOutputRows") or 0) for p in query.recentProgress}
        return to_rows(session.table(sink)), list(result.columns), batches
    finally:
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - the job's own error is the one worth showing
                pass
        for table in tables:
            session.sql(f"DROP TABLE IF EXISTS {table}")
        session.catalog.dropTempView(sink)
