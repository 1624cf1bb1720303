"""The tie-breaker an order fix adds costs what the file lets it cost: nothing when the rows are
unique on the order, a struct of the columns when a DDL schema in the file types them all as
orderable, and the whole row as JSON only otherwise (a map column, no schema)."""

from __future__ import annotations

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

HEADER = (
    "from pyspark.sql import SparkSession\n"
    "from pyspark.sql import functions as F\n"
    "\n"
    "spark = SparkSession.builder.getOrCreate()\n"
)


def _fixed(code: str, rule: str) -> str:
    fixed = fix_source("job.py", code, {rule}, unsafe=True).fixed
    compile(fixed, "job.py", "exec")
    assert [f for f in analyze("job.py", fixed) if f.rule_id == rule] == []
    # No new finding of another rule (SPX107's discarded sort may go with the fix).
    assert {f.rule_id for f in analyze("job.py", fixed)} <= {f.rule_id for f in analyze("job.py", code)} - {rule}
    assert fix_source("job.py", fixed, {rule}, unsafe=True).fixed == fixed
    return fixed


def test_a_typed_schema_gives_a_struct_of_the_other_columns():
    code = HEADER + (
        "heartbeats = spark.read.schema(\n"
        '    "device string, ts timestamp, status string, battery decimal(5, 2)"  # from the vendor spec\n'
        ').parquet("landing/heartbeats")\n'
        "latest = (\n"
        '    heartbeats.orderBy(F.col("ts").desc())  # newest first\n'
        '    .dropDuplicates(["device"])\n'
        ")\n"
        'latest.write.parquet("silver/latest")\n'
    )
    fixed = _fixed(code, "SPX102")
    assert 'Window.partitionBy("device").orderBy(F.col("ts").desc(), F.struct("status", "battery"))' in fixed
    assert "heartbeats  # newest first\n" in fixed  # the sort the window replaces is gone
    assert "to_json" not in fixed and "# from the vendor spec" in fixed and "# newest first" in fixed


def test_a_map_column_keeps_the_json_tie_breaker():
    # Spark cannot order a struct holding a map; JSON can.
    code = HEADER + (
        'heartbeats = spark.read.schema("device string, ts timestamp, tags map<string, string>").json("hb")\n'
        'latest = heartbeats.orderBy("ts").dropDuplicates(["device"])\n'
        'latest.write.parquet("silver/latest")\n'
    )
    fixed = _fixed(code, "SPX102")
    assert 'orderBy(\n                "ts",\n                F.to_json(\n                    F.struct("*"),\n' in fixed


def test_columns_selected_from_a_typed_frame_are_the_struct():
    code = HEADER + (
        # Read, not literal rows: a literal frame smaller than the limit is not a finding.
        'raw = spark.read.schema("user string, ts long, amount double, extra map<string, string>").json("in")\n'
        'payments = raw.select("user", "ts", "amount").orderBy("ts").repartition(8)\n'
        "first_five = payments.limit(5)\n"
        'first_five.write.parquet("out")\n'
    )
    fixed = _fixed(code, "SPX106")
    assert 'payments.orderBy("ts", F.struct("user", "amount")).limit(5)' in fixed
    assert "_sparkpar_tie" not in fixed


def test_rows_unique_on_the_order_need_no_tie_breaker():
    code = HEADER + (
        'accounts = spark.read.parquet("accounts").dropDuplicates(["account_id"])\n'
        'spread = accounts.orderBy("account_id").repartition(16)\n'
        "sample = spread.limit(100)\n"
        'sample.write.parquet("out")\n'
    )
    fixed = _fixed(code, "SPX106")
    assert 'spread.orderBy("account_id").limit(100)' in fixed


def test_no_schema_in_the_file_keeps_the_json_tie_breaker():
    code = HEADER + (
        'events = spark.read.parquet("events")\n'
        'spread = events.orderBy("ts").repartition(16)\n'
        "sample = spread.limit(100)\n"
        'sample.write.parquet("out")\n'
    )
    fixed = _fixed(code, "SPX106")
    assert '"_sparkpar_tie",\n        F.to_json(\n            F.struct("*"),\n' in fixed


STRUCT_SCHEMA = (
    "from pyspark.sql import types as T\n"
    "\n"
    "HEARTBEAT = T.StructType(\n"
    "    [\n"
    '        T.StructField("device", T.StringType()),\n'
    '        T.StructField("ts", T.TimestampType(), nullable=False),\n'
    '        T.StructField("status", T.StringType()),\n'
    '        T.StructField("battery", T.DecimalType(5, 2)),\n'
    "    ]\n"
    ")\n"
)
NEWEST_PER_DEVICE = (
    'latest = heartbeats.orderBy(F.col("ts").desc()).dropDuplicates(["device"])\n'
    'latest.write.parquet("silver/latest")\n'
)


def test_a_struct_type_schema_bound_once_gives_a_struct_of_the_other_columns():
    code = HEADER + STRUCT_SCHEMA + 'heartbeats = spark.read.schema(HEARTBEAT).parquet("hb")\n' + NEWEST_PER_DEVICE
    fixed = _fixed(code, "SPX102")
    assert 'orderBy(F.col("ts").desc(), F.struct("status", "battery"))' in fixed
    assert "to_json" not in fixed


def test_a_struct_type_schema_in_place_with_names_imported_gives_the_struct():
    code = HEADER + (
        "from pyspark.sql.types import StructField, StructType, StringType, LongType\n"
        'raw = spark.read.schema(StructType([StructField("user", StringType()), StructField("ts", LongType()),'
        ' StructField("amount", LongType())])).json("in")\n'
        'payments = raw.orderBy("ts").repartition(8)\n'
        'payments.limit(5).write.parquet("out")\n'
    )
    fixed = _fixed(code, "SPX106")
    assert 'payments.orderBy("ts", F.struct("user", "amount")).limit(5)' in fixed
    assert "to_json" not in fixed


def test_a_struct_type_schema_bound_twice_or_holding_a_map_keeps_the_json_tie_breaker():
    rebound = STRUCT_SCHEMA + "if spark.conf.get('legacy', '') == '1':\n    HEARTBEAT = T.StructType([])\n"
    code = HEADER + rebound + 'heartbeats = spark.read.schema(HEARTBEAT).parquet("hb")\n' + NEWEST_PER_DEVICE
    assert "F.to_json(" in _fixed(code, "SPX102")
    with_map = STRUCT_SCHEMA.replace("T.DecimalType(5, 2)", "T.MapType(T.StringType(), T.StringType())")
    code = HEADER + with_map + 'heartbeats = spark.read.schema(HEARTBEAT).parquet("hb")\n' + NEWEST_PER_DEVICE
    assert "F.to_json(" in _fixed(code, "SPX102")


def test_a_struct_type_schema_types_the_event_time_a_stream_dedup_watermarks():
    # The same schema reader gives SPX204's fix its timestamp column.
    code = HEADER + (
        "from pyspark.sql.types import StructType, StructField, StringType, TimestampType\n"
        'schema = StructType([StructField("event_id", StringType()), StructField("event_time", TimestampType())])\n'
        'events = spark.readStream.schema(schema).json("in")\n'
        'events.dropDuplicates(["event_id"]).writeStream.format("parquet").start("out")\n'
    )
    fixed = fix_source("job.py", code, {"SPX204"}, unsafe=True).fixed
    assert 'events.withWatermark("event_time", "10 minutes")' in fixed
    assert '.dropDuplicatesWithinWatermark(["event_id"])' in fixed
