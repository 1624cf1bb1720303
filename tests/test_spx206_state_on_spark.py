"""SPX206's fixtures run on Spark: state keyed by no event time keeps growing whatever the
watermark says, and the clean twins, with an event time in the key or the join's condition, let
the watermark drop it. The runs feed the same files batch by batch and read the state operators'
row counts from the query's progress."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "spx206"


def _state_rows(query) -> int:
    return sum(op["numRowsTotal"] for op in query.lastProgress["stateOperators"])


def _write(folder: Path, number: int, rows: list[dict]) -> None:
    (folder / f"part-{number}.json").write_text("".join(json.dumps(row) + "\n" for row in rows))


def _state_after_each_day(query, feed) -> list[int]:
    """The state operators' rows after each of four days fed (`feed(day)` writes its files)."""
    counts = []
    try:
        for day in range(1, 5):
            feed(day)
            query.processAllAvailable()
            counts.append(_state_rows(query))
    finally:
        query.stop()
    return counts


def _settled_state(spark, fixture: str, tmp_path: Path) -> list[int]:
    """Three orders a day, each paid an hour later."""
    settled = runpy.run_path(str(FIXTURES / fixture))["settled"]
    orders_in, payments_in = tmp_path / f"{fixture}-orders", tmp_path / f"{fixture}-payments"
    orders_in.mkdir()
    payments_in.mkdir()

    def feed(day: int) -> None:
        _write(
            orders_in, day, [{"order_id": f"o{day}-{n}", "placed_at": f"2024-05-0{day} 0{n}:00:00"} for n in range(3)]
        )
        _write(
            payments_in,
            day,
            [{"paid_order_id": f"o{day}-{n}", "paid_at": f"2024-05-0{day} 0{n + 1}:00:00"} for n in range(3)],
        )

    query = settled(spark, str(orders_in), str(payments_in)).writeStream.format("noop").start()
    return _state_after_each_day(query, feed)


def test_an_equality_join_keeps_every_row_of_both_sides_and_the_range_lets_them_go(cluster_spark, tmp_path):
    bad = _settled_state(cluster_spark, "bad_settled_orders.py", tmp_path)
    fixed = _settled_state(cluster_spark, "fixed_settled_orders.py", tmp_path)
    # Watermarks on both sides, and still all 6 rows of every day are kept: 6, 12, 18, 24.
    assert bad == [6, 12, 18, 24]
    # With a range of a day, rows older than the watermark minus a day are let go.
    assert fixed[-1] < bad[-1]


def _card_state(spark, fixture: str, tmp_path: Path) -> list[int]:
    """Three new cards a day, each paying once."""
    card_totals = runpy.run_path(str(FIXTURES / fixture))["card_totals"]
    payments_in = tmp_path / f"{fixture}-payments"
    payments_in.mkdir()

    def feed(day: int) -> None:
        rows = [{"card_id": f"c{day}-{n}", "amount": 10.0, "paid_at": f"2024-05-0{day} 1{n}:00:00"} for n in range(3)]
        _write(payments_in, day, rows)

    query = card_totals(spark, str(payments_in)).writeStream.outputMode("update").format("noop").start()
    return _state_after_each_day(query, feed)


def test_a_total_per_card_keeps_every_card_and_a_daily_window_lets_old_days_go(cluster_spark, tmp_path):
    bad = _card_state(cluster_spark, "bad_card_totals.py", tmp_path)
    fixed = _card_state(cluster_spark, "fixed_card_totals.py", tmp_path)
    # The watermark upstream drops nothing: three new cards a day, all kept.
    assert bad == [3, 6, 9, 12]
    # Per card and day: once the watermark passes a day, its totals leave the state.
    assert fixed[-1] < bad[-1]
