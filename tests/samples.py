"""Sample jobs shared by the CLI-facing tests (test_cli, test_config, test_suppressions, test_robustness).

tests/ is deliberately not a package: pytest then puts tests/ itself on sys.path, never the checkout,
so the tests import the installed sparkpar (with its packaged rule data), not the source tree.
"""

from sparkpar_lint.plan.operators import Operator, PlanModel

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


# --- Planner helpers (test_plan_throughput, test_plan_bound) ---


def random_plan_model(rng, n, cores=None):
    """The fission paper's Table 1 defaults: cost 200 +- 100, selectivity 0.8 +- 0.4,
    40% stateless, 40% stateful, 20% partitioned, delta 1, c_p 50."""
    ops = []
    for i in range(n):
        kind = rng.choices(["stateless", "stateful", "partitioned"], [0.4, 0.4, 0.2])[0]
        key = tuple(sorted(rng.sample("abc", rng.randint(1, 2)))) if kind == "partitioned" else ()
        ops.append(Operator(f"o{i}", kind, key, max(1.0, rng.gauss(200, 100)), max(0.05, rng.gauss(0.8, 0.4))))
    return PlanModel(tuple(ops), cores=cores or rng.randint(1, 12), thread_switch_cost=1.0, replication_cost=50.0)
