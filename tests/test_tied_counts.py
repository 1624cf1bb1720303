"""SPX106 on top-n picks over counts that tie: a column named as a count sorted alone before a
limit (read from a table, through a select), a SQL `ORDER BY <position>`, and a pipeline's
materialized view, which stores its rows as a table does. Each INVALID is checked to its exact
line and column, in Python and in SQL files."""

from __future__ import annotations

from textwrap import dedent

import pytest

from sparkpar_lint.runner import check_source


def _spans(path: str, code: str) -> list[tuple[int, int]]:
    result, _ = check_source(path, dedent(code).encode(), frozenset({"SPX106"}))
    assert result.error is None
    return [(f.span.line, f.span.column) for f in result.findings]


INVALID = [
    # A count read from a cleaned table, sorted alone, kept through a select, cut at ten.
    pytest.param(
        "top.py",
        """\
        from pyspark.sql import functions as F
        def top_referrers(spark):
            return (spark.table("clicks_clean").filter("page = 'Home'")
                .orderBy(F.desc("visit_count")).select("referrer", "visit_count").limit(10))
        """,
        (4, 74),
        id="count-column-through-select",
    ),
    # The SQL twin of a grouped top-n, ordered by the position of its total.
    pytest.param(
        "top.sql",
        """\
        CREATE TABLE top_pages AS
        SELECT page, SUM(visit_count) AS visits
        FROM clicks_clean
        GROUP BY page
        ORDER BY 2 DESC
        LIMIT 50;
        """,
        (6, 0),
        id="order-by-position",
    ),
    # A materialized view stores the fifty rows it picks.
    pytest.param(
        "top.sql",
        """\
        CREATE OR REFRESH MATERIALIZED VIEW top_referrers AS
        SELECT referrer, visit_count
        FROM clicks_clean
        ORDER BY visit_count DESC
        LIMIT 50;
        """,
        (5, 0),
        id="materialized-view",
    ),
]

VALID = [
    # Near miss of the count column: a unique referrer id breaks the ties.
    pytest.param(
        "top.py",
        """\
        from pyspark.sql import functions as F
        def top_referrers(spark):
            return (spark.table("clicks_clean").filter("page = 'Home'")
                .orderBy(F.desc("visit_count"), "referrer_id").select("referrer_id", "visit_count").limit(10))
        """,
        id="count-column-with-tie-breaker",
    ),
    # Near miss of the count column: a price read from a table says nothing of how often it repeats.
    pytest.param(
        "top.py",
        """\
        from pyspark.sql import functions as F
        def priciest(spark):
            return spark.table("products").orderBy(F.desc("price")).select("name", "price").limit(10)
        """,
        id="not-a-count",
    ),
    # Near miss of the position: the second position is the group key, one row per page.
    pytest.param(
        "top.sql",
        """\
        CREATE TABLE top_pages AS
        SELECT SUM(visit_count) AS visits, page
        FROM clicks_clean
        GROUP BY page
        ORDER BY 2
        LIMIT 50;
        """,
        id="order-by-position-of-key",
    ),
    # Near miss of the materialized view: a plain view stores nothing.
    pytest.param(
        "top.sql",
        """\
        CREATE VIEW top_referrers AS
        SELECT referrer, visit_count
        FROM clicks_clean
        ORDER BY visit_count DESC
        LIMIT 50;
        """,
        id="plain-view",
    ),
]


@pytest.mark.parametrize(("path", "code", "span"), INVALID)
def test_top_n_over_tied_counts_is_flagged_at_its_span(path, code, span):
    assert _spans(path, code) == [span]


@pytest.mark.parametrize(("path", "code"), VALID)
def test_top_n_with_a_total_order_is_clean(path, code):
    assert _spans(path, code) == []


def test_a_materialized_view_is_as_kept_as_a_table():
    # Its rows are stored: the confidence's "reaches a result" link holds as for CREATE TABLE AS.
    body = "SELECT referrer, visit_count FROM clicks_clean ORDER BY visit_count DESC LIMIT 50;\n"
    levels = []
    for head in ("CREATE OR REFRESH MATERIALIZED VIEW top AS", "CREATE TABLE top AS"):
        result, _ = check_source("top.sql", f"{head}\n{body}".encode(), frozenset({"SPX106"}))
        levels.append([f.confidence for f in result.findings])
    assert levels[0] == levels[1] and len(levels[0]) == 1
