"""SPX203's confidence for random ids minted per row: a producer that only sends them as Kafka
keys (an at-least-once sink, nothing matching on them) is reported at medium confidence, with the
assumption said; the same id reaching a retried batch sink, a join or a deduplication stays high.
Each finding is checked to its exact line and column."""

from __future__ import annotations

from textwrap import dedent

import pytest

from sparkpar_lint.analysis import analyze

HEAD = """\
import uuid
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf, col, to_json, struct
from pyspark.sql.types import StringType
spark = SparkSession.builder.getOrCreate()
event_id = udf(lambda: uuid.uuid4().hex, StringType())
events = spark.readStream.json("/landing/clicks").withColumn("event_id", event_id())
"""


def _findings(tail: str) -> list[tuple[int, int, str]]:
    found = analyze("producer.py", HEAD + dedent(tail))
    return [(f.span.line, f.span.column, f.confidence) for f in found if f.rule_id == "SPX203"]


def test_an_id_sent_only_as_a_kafka_key_is_medium_and_says_why():
    tail = """\
    (events.select(col("event_id").alias("key"), to_json(struct("page")).alias("value"))
        .writeStream.format("kafka").option("topic", "clicks").option("checkpointLocation", "/cp").start())
    """
    assert _findings(tail) == [(6, 23, "medium")]
    message = next(f.message for f in analyze("producer.py", HEAD + dedent(tail)) if f.rule_id == "SPX203")
    assert "at-least-once Kafka sink" in message


@pytest.mark.parametrize(
    "tail",
    [
        # The id keys a MERGE run per micro-batch: a replay mints new ids and inserts the rows again.
        pytest.param(
            """\
            def upsert(batch, batch_id):
                batch.createOrReplaceTempView("incoming")
                batch.sparkSession.sql("MERGE INTO clicks t USING incoming s ON t.event_id = s.event_id "
                                       "WHEN NOT MATCHED THEN INSERT *")
            events.writeStream.foreachBatch(upsert).start()
            """,
            id="merge-on-the-id",
        ),
        # Deduplicated on the id before going to Kafka: a retried task's new id is never a duplicate.
        pytest.param(
            """\
            (events.dropDuplicates(["event_id"]).select(col("event_id").alias("key"), to_json(struct("page")).alias("value"))
                .writeStream.format("kafka").option("topic", "clicks").start())
            """,
            id="dedup-before-kafka",
        ),
    ],
)
def test_an_id_that_something_matches_on_stays_high(tail):
    assert _findings(tail) == [(6, 23, "high")]
