"""`sparkpar profile --event-log` on a run made here: every stage lists its operators with the
rows and the times Spark's SQL metrics gave them, and a streaming run's wall time spans its query."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_sparkpar.session import QUICK_JIT

SPARKPAR = [sys.executable, "-c", "from sparkpar_lint.cli import main; main()"]

RUN = """
import sys
from pyspark.sql import SparkSession, functions as F

logs, data = sys.argv[1], sys.argv[2]
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.eventLog.enabled", "true")
    .config("spark.eventLog.dir", logs)
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "3")
    .getOrCreate()
)
spark.range(0, 20000, 1, 2).withColumn("k", F.col("id") % 7).write.parquet(data)
frame = spark.read.parquet(data).filter(F.col("id") % 2 == 0).groupBy("k").count()
frame.write.format("noop").mode("overwrite").save()
stream = spark.readStream.schema("id long, k long").parquet(data).groupBy("k").count()
query = (
    stream.writeStream.format("noop").outputMode("update")
    .option("checkpointLocation", data + "-checkpoint").trigger(availableNow=True).start()
)
query.awaitTermination()
spark.stop()
"""


@pytest.mark.spark
def test_operators_carry_sparks_own_times_on_a_real_run(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    script = tmp_path / "run.py"
    script.write_text(RUN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), logs.as_uri(), str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=600,
        # The JVM on the quick JIT tier, as the plugin's are: the test reads which operators Spark
        # timed, not how fast they ran, and the optimising compiler only adds CPU to a short run.
        env=dict(os.environ, JAVA_TOOL_OPTIONS=QUICK_JIT),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (log,) = logs.iterdir()
    out = tmp_path / "profile.json"
    done = subprocess.run(
        [*SPARKPAR, "profile", "--event-log", str(log), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    assert done.returncode == 0, done.stderr
    profile = json.loads(out.read_text(encoding="utf-8"))
    operators = [o for s in profile["stages"] for o in s.get("operators", [])]
    by_name: dict[str, list[dict]] = {}
    for o in operators:
        by_name.setdefault(o["operator"].split(" (")[0], []).append(o)
    # The aggregation's scan: its rows and Spark's scan time.
    scans = [o for o in by_name["Scan parquet"] if o.get("rows_out") == 20000]
    assert scans and all("scan time" in o["seconds"] for o in scans)
    assert any(o.get("rows_out") == 10000 for o in by_name["Filter"])
    # Partial and final aggregates: output rows and the build time Spark measured.
    aggregates = by_name["HashAggregate"]
    assert any(o.get("rows_out") == 7 for o in aggregates)
    assert all("time in aggregation build" in o["seconds"] for o in aggregates)
    assert all(o["seconds"]["duration"] >= 0 for o in by_name["WholeStageCodegen"])
    assert any("shuffle write time" in o["seconds"] for o in by_name["Exchange"])
    # The stateful stream's state store reports its own times too.
    state = [o for name, found in by_name.items() if name.startswith("StateStoreSave") for o in found]
    assert state and all(o["seconds"] for o in state)
    # The wall time covers the streaming query from its start, past its SQL executions.
    assert profile["wall_seconds"] > 0
    assert Path(log).exists()
