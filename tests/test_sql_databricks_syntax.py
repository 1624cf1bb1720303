"""SQL that only Databricks reads: a notebook's `%sql` cell or a `spark.sql` string using Databricks
JSON paths (`info:vessel_name::STRING`), which Spark's grammar rejects. The text is read again as
Databricks SQL, so the windows and limits inside it are judged; a statement neither dialect reads
is left out alone."""

from __future__ import annotations

from sparkpar_lint.analysis import analyze
from sparkpar_lint.sql.parse import parse

PRELUDE = "from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n"

PICK = '''\
spark.sql("""
INSERT OVERWRITE TABLE gold.latest_trip
SELECT t.*, ROW_NUMBER() OVER (PARTITION BY vessel ORDER BY {order}) AS rn
FROM (SELECT trip_id, info:vessel_name::STRING AS vessel FROM raw.trips) t
""")
'''


def _spans(code: str, rule: str) -> list[tuple[int, int]]:
    return [(f.span.line, f.span.column) for f in analyze("job.py", PRELUDE + code) if f.rule_id == rule]


def test_a_window_beside_a_json_path_is_judged():
    # Ordered by its own partition key: every row of a vessel ties.
    assert _spans(PICK.format(order="vessel"), "SPX104") == [(5, 12)]


def test_the_same_window_with_a_unique_order_is_clean():
    assert _spans(PICK.format(order="trip_id"), "SPX104") == []


def test_json_paths_parse_and_keep_their_positions():
    text = "SELECT info:vessel_name::STRING AS vessel FROM raw.trips LIMIT 3"
    parsed = parse(text)
    assert parsed is not None and len(parsed.statements) == 1
    start, end = parsed.clause(parsed.statements[0], next(t.token_type for t in parsed.tokens if t.text == "LIMIT"))
    assert text[start:end] == "LIMIT"


def test_a_statement_neither_dialect_reads_leaves_the_others_judged():
    code = (
        'top = spark.sql("""SELECT FROM WHERE x;\n'
        'SELECT page, count(*) AS n FROM e GROUP BY page LIMIT 3""")\n'
        'top.write.saveAsTable("top_pages")\n'
    )
    assert _spans(code, "SPX106") == [(4, 48)]
