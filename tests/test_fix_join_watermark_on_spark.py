"""The SPX204 fix for a stream-stream join run on Spark: the join's condition already bounds the two
event times (an `INTERVAL` range) but neither side has a watermark, so Spark buffers every row of
both for the life of the query. The fix adds a watermark with the configured delay on each side.
Fed the same files batch by batch, the fixed query evicts old buffered rows and drops only a payment
later than the delay; every on-time pair still matches, as the rule doc's Fix safety says.

The console sink prints from the JVM, so the test swaps it for a `foreachBatch` function that
receives exactly the rows the console would print."""

from __future__ import annotations

import json

import pytest

from sparkpar_lint.fixes.engine import fix_source

pytestmark = pytest.mark.spark

JOB = """\
from pyspark.sql import functions as F


def start(spark, orders_in, payments_in, show):
    orders = (
        spark.readStream.schema("order_id string, order_time timestamp")
        .json(orders_in)
    )
    payments = spark.readStream \\
        .schema("paid_for string, paid_time timestamp") \\
        .json(payments_in)
    # a payment counts for an order placed up to five minutes before it
    paid = orders.join(
        payments,
        F.expr("order_id = paid_for AND paid_time BETWEEN order_time AND order_time + INTERVAL 5 MINUTES"),
    )
    return paid.writeStream \\
        .outputMode("append") \\
        .format("console") \\
        .start()
"""

# One pair of files per micro-batch: (orders, payments), each row (id, HH:MM).
BATCHES = [
    ([("o1", "10:00"), ("o2", "10:01")], [("o1", "10:02")]),
    ([("o3", "10:30")], [("o3", "10:31")]),
    # After the second batch both watermarks are past 10:20: o2's payment, 29 minutes late, is
    # dropped; o4's, two minutes after its order, is on time.
    ([("o4", "10:28")], [("o2", "10:03"), ("o4", "10:30")]),
]


def _run(spark, code: str, tmp_path, name: str):
    namespace: dict = {}
    exec(compile(code.replace('.format("console")', ".foreachBatch(show)"), name, "exec"), namespace)
    orders_in, payments_in = tmp_path / f"{name}-orders", tmp_path / f"{name}-payments"
    orders_in.mkdir()
    payments_in.mkdir()
    matched: set[str] = set()

    def show(batch, batch_id):
        matched.update(row["order_id"] for row in batch.collect())

    query = namespace["start"](spark, str(orders_in), str(payments_in), show)
    try:
        for number, (orders, payments) in enumerate(BATCHES):
            for folder, key, time, rows in (
                (orders_in, "order_id", "order_time", orders),
                (payments_in, "paid_for", "paid_time", payments),
            ):
                lines = [json.dumps({key: k, time: f"2024-05-01 {t}:00"}) for k, t in rows]
                (folder / f"part-{number}.json").write_text("\n".join(lines) + "\n")
            query.processAllAvailable()
        state_rows = sum(op["numRowsTotal"] for op in query.lastProgress["stateOperators"])
    finally:
        query.stop()
    return matched, state_rows


def test_the_fixed_join_evicts_old_rows_and_drops_only_the_payment_past_the_delay(cluster_spark, tmp_path):
    fixed = fix_source("job.py", JOB, {"SPX204"}, unsafe=True).fixed
    assert 'orders.withWatermark("order_time", "10 minutes").join(' in fixed
    assert 'payments.withWatermark("paid_time", "10 minutes"),' in fixed
    assert "# a payment counts for an order placed up to five minutes before it" in fixed

    original, original_state = _run(cluster_spark, JOB, tmp_path, "original")
    answer, state = _run(cluster_spark, fixed, tmp_path, "fixed")

    # The original matches the late payment too, and keeps all four orders and four payments.
    assert original == {"o1", "o2", "o3", "o4"}
    assert original_state == 8
    # The fixed join loses only the payment later than the delay, and has let go of old rows.
    assert answer == {"o1", "o3", "o4"}
    assert state < original_state


# The same join with its range held in a name and written with columns of the unwatermarked
# frames: Spark must still resolve them once each side carries a watermark.
JOB_HELD = JOB.replace(
    """    paid = orders.join(
        payments,
        F.expr("order_id = paid_for AND paid_time BETWEEN order_time AND order_time + INTERVAL 5 MINUTES"),
    )
""",
    """    in_time = (orders.order_id == payments.paid_for) & payments.paid_time.between(
        orders.order_time, orders.order_time + F.expr("INTERVAL 5 MINUTES")
    )
    paid = orders.join(payments, in_time)
""",
)


def test_a_range_held_in_a_name_gets_the_same_watermarks_and_answer(cluster_spark, tmp_path):
    assert JOB_HELD != JOB
    fixed = fix_source("job.py", JOB_HELD, {"SPX204"}, unsafe=True).fixed
    assert (
        "    paid = (\n"
        '        orders.withWatermark("order_time", "10 minutes")\n'
        '        .join(payments.withWatermark("paid_time", "10 minutes"), in_time)\n'
        "    )\n"
    ) in fixed
    assert fix_source("job.py", fixed, {"SPX204"}, unsafe=True).fixed == fixed

    answer, state = _run(cluster_spark, fixed, tmp_path, "held")

    assert answer == {"o1", "o3", "o4"}
    assert state < 8
