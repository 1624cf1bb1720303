"""Sample jobs shared by the CLI-facing tests (test_cli, test_config, test_suppressions, test_robustness).

tests/ is deliberately not a package: pytest then puts tests/ itself on sys.path, never the checkout,
so the tests import the installed sparkpar (with its packaged rule data), not the source tree.
"""

# --- CLI-facing helpers (test_cli, test_config, test_suppressions, test_robustness) ---

# SPX101: the orderBy does not survive the shuffle, so F.first picks an arbitrary row per key.
BAD_JOB = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
df = spark.read.parquet("events")
latest = df.orderBy("ts").groupBy("k").agg(F.first("v"))
"""
BAD_LINE = 5
BAD_COLUMN = BAD_JOB.splitlines()[BAD_LINE - 1].index("F.first")  # 0-based, as Span stores it

GOOD_JOB = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
df = spark.read.parquet("events")
latest = df.groupBy("k").agg(F.max_by("v", "ts"))
"""
