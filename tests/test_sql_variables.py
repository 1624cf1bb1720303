"""A random value assigned to a SQL variable (`SET v_id = CONCAT('TX_', uuid())`, in a script or a
procedure) is drawn once per run of the statement, with no table and so no rows to split: the
variable holds one value, and a new id per call is what the statement asks for. SPX105 does not
report it. The near miss draws the same `uuid()` per row of a table, and a join keys on it: every
recomputation of the rows gives them other ids, so it is still reported at the same place."""

from __future__ import annotations

import json
import textwrap

PROCEDURE = textwrap.dedent(
    """\
    CREATE OR REPLACE PROCEDURE open_withdrawal(p_wallet STRING, p_amount DECIMAL(18, 2))
    LANGUAGE SQL
    AS BEGIN
        DECLARE v_request STRING;
        SET v_request = CONCAT('WD-', uuid());
        INSERT INTO custody.requests (request_id, wallet_id, amount, state)
        VALUES (v_request, p_wallet, p_amount, 'PENDING');
    END;
    """
)
JOB = textwrap.dedent(
    '''\
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    spark.sql("SET VAR run_tag = uuid()")
    spark.sql("""
    SELECT * FROM (SELECT *, CONCAT('WD-', uuid()) AS request_id FROM custody.staged) s
    JOIN custody.audit a ON s.request_id = a.request_id
    """).write.saveAsTable("custody.requests")
    '''
)


def _found(sparkpar_cli, tmp_path, path: str, source: str) -> list[tuple[int, int]]:
    (tmp_path / path).write_text(source)
    result = sparkpar_cli(
        "lint", path, "--format", "json", "--select", "SPX105", "--min-confidence", "low", "--no-cache"
    )
    return [(f["line"], f["column"]) for f in json.loads(result.stdout)]


def test_an_id_drawn_once_into_a_sql_variable_is_not_reported(sparkpar_cli, tmp_path):
    assert _found(sparkpar_cli, tmp_path, "withdrawals.sql", PROCEDURE) == []


def test_an_id_drawn_per_row_and_joined_on_is_still_reported(sparkpar_cli, tmp_path):
    assert _found(sparkpar_cli, tmp_path, "job.py", JOB) == [(5, 39)]
