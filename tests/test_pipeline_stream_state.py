"""SPX204 on streams read by a declarative pipeline (`dlt.read_stream`), and on a streaming
`dropDuplicates` whose key leaves out the watermarked column. Each INVALID is checked to its exact
line and column."""

from __future__ import annotations

from textwrap import dedent

import pytest

from sparkpar_lint.analysis import analyze


def _spans(code: str) -> list[tuple[int, int]]:
    return [(f.span.line, f.span.column) for f in analyze("pipeline.py", dedent(code)) if f.rule_id == "SPX204"]


INVALID = [
    # A pipeline table aggregating a dataset read as a stream, keyed by a day, with no watermark.
    pytest.param(
        """\
        import dlt
        from pyspark.sql import functions as F
        @dlt.table
        def daily_spend():
            visits = dlt.read_stream("visits_clean")
            return visits.groupBy("visit_day", "store_id").agg(F.sum("spend").alias("spend"))
        """,
        (6, 51),
        id="dlt-read-stream-aggregation",
    ),
    # The watermark is on `arrived_at`, the key is made of other columns: no state is ever dropped.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        pings = spark.readStream.format("kafka").load()
        (pings.withWatermark("arrived_at", "10 minutes")
            .dropDuplicates(["device", "reading"])
            .writeStream.format("console").start())
        """,
        (5, 5),
        id="dedup-key-without-watermark",
    ),
]

VALID = [
    # Near miss of the pipeline table: the dataset is read as a batch (`dlt.read`), no state.
    pytest.param(
        """\
        import dlt
        from pyspark.sql import functions as F
        @dlt.table
        def daily_spend():
            visits = dlt.read("visits_clean")
            return visits.groupBy("visit_day", "store_id").agg(F.sum("spend").alias("spend"))
        """,
        id="dlt-read-batch",
    ),
    # Near miss of the pipeline table: a watermark on the event time and a window over it.
    pytest.param(
        """\
        import dlt
        from pyspark.sql import functions as F
        @dlt.table
        def daily_spend():
            visits = dlt.read_stream("visits_clean").withWatermark("visited_at", "1 day")
            return visits.groupBy(F.window("visited_at", "1 day"), "store_id").agg(F.sum("spend"))
        """,
        id="dlt-read-stream-windowed",
    ),
    # Near miss of the deduplication: the watermarked column is part of the key.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        pings = spark.readStream.format("kafka").load()
        (pings.withWatermark("arrived_at", "10 minutes")
            .dropDuplicates(["device", "arrived_at"])
            .writeStream.format("console").start())
        """,
        id="dedup-key-with-watermark",
    ),
    # Or deduplicated within the watermark, which drops state whatever the key.
    pytest.param(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        pings = spark.readStream.format("kafka").load()
        (pings.withWatermark("arrived_at", "10 minutes")
            .dropDuplicatesWithinWatermark(["device", "reading"])
            .writeStream.format("console").start())
        """,
        id="dedup-within-watermark",
    ),
]


@pytest.mark.parametrize(("code", "span"), INVALID)
def test_unbounded_pipeline_state_is_flagged_at_its_span(code, span):
    assert _spans(code) == [span]


@pytest.mark.parametrize("code", VALID)
def test_bounded_pipeline_state_is_clean(code):
    assert _spans(code) == []
