"""SPX205 on writes a foreachBatch function reaches through its helpers: module functions and
methods it calls, a write mode given as a parameter's default, and writes of frames other than the
batch (a monitoring row). Each INVALID is checked to its exact line and column."""

from __future__ import annotations

from textwrap import dedent

import pytest

from sparkpar_lint.analysis import analyze


def _spans(code: str) -> list[tuple[int, int]]:
    return [(f.span.line, f.span.column) for f in analyze("job.py", dedent(code)) if f.rule_id == "SPX205"]


INVALID = [
    # The mode is a parameter whose default appends, and no caller passes another.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        scores = spark.readStream.format("kafka").load()
        def to_postgres(frame, url, mode="append"):
            frame.write.mode(mode).jdbc(url, "scores")
        scores.writeStream.foreachBatch(lambda frame, batch_id: to_postgres(frame, "jdbc:x")).start()
        """,
        (5, 27),
        id="default-mode",
    ),
    # The id goes down three methods and reaches only a logger; the append at the bottom is unkeyed.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        class Loader:
            def start(self):
                rides = spark.readStream.format("kafka").load()
                rides.writeStream.foreachBatch(lambda frame, epoch: self.each(frame, epoch)).start()
            def each(self, frame, epoch):
                self._each(frame, epoch)
            def _each(self, frame, epoch):
                self.store(frame.filter("fare > 0"), epoch)
            def store(self, rows, epoch):
                self.logger.write_log("info", "storing", epoch)
                rows.write.mode("append").parquet("/lake/rides")
        """,
        (13, 34),
        id="method-chain",
    ),
    # A monitoring row built from the table's history, appended by a method the batch function calls.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        from delta.tables import DeltaTable
        spark = SparkSession.builder.getOrCreate()
        class Ingest:
            def save(self, frame, batch_id):
                target = DeltaTable.forPath(spark, "/lake/t")
                target.alias("t").merge(frame.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
                self._audit("/lake/t")
            def _audit(self, path):
                DeltaTable.forPath(spark, path).history(1).select("operationMetrics").write.mode("append").parquet("/lake/audit")
            def run(self):
                spark.readStream.format("kafka").load().writeStream.foreachBatch(self.save).start()
        """,
        (10, 99),
        id="audit-row-in-helper",
    ),
]

VALID = [
    # Near miss of the default mode: the caller passes "overwrite" into a per-batch location.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        scores = spark.readStream.format("kafka").load()
        def to_files(frame, path, mode="append"):
            frame.write.mode(mode).parquet(path)
        scores.writeStream.foreachBatch(lambda frame, batch_id: to_files(frame, f"/out/b={batch_id}", "overwrite")).start()
        """,
        id="default-overridden",
    ),
    # Near miss of the method chain: the last method keys its overwrite on the id it is handed.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        class Loader:
            def start(self):
                rides = spark.readStream.format("kafka").load()
                rides.writeStream.foreachBatch(lambda frame, epoch: self.each(frame, epoch)).start()
            def each(self, frame, epoch):
                self.store(frame, epoch)
            def store(self, rows, epoch):
                rows.write.mode("overwrite").parquet(f"/lake/rides/epoch={epoch}")
        """,
        id="method-chain-keyed",
    ),
    # Near miss of the audit row: the helper overwrites the audit location of this batch.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        class Ingest:
            def save(self, frame, batch_id):
                self._audit(frame, batch_id)
            def _audit(self, frame, batch_id):
                frame.groupBy("kind").count().write.mode("overwrite").parquet(f"/lake/audit/b={batch_id}")
            def run(self):
                spark.readStream.format("kafka").load().writeStream.foreachBatch(self.save).start()
        """,
        id="audit-keyed",
    ),
]


@pytest.mark.parametrize(("code", "span"), INVALID)
def test_write_reached_through_helpers_is_flagged_at_its_span(code, span):
    assert _spans(code) == [span]


@pytest.mark.parametrize("code", VALID)
def test_keyed_write_through_helpers_is_clean(code):
    assert _spans(code) == []
