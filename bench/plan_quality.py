"""How good and how fast is `sparkpar plan`, and does its advice hold up on real Spark?

    /work/venv/bin/python bench/plan_quality.py            # everything (Spark part ~1-2 min)
    /work/venv/bin/python bench/plan_quality.py --no-spark # model figures only (seconds)

1. Quality: heuristic / exhaustive-search throughput over random chains of 1-8 operators drawn
   with the fission paper's Table 1 defaults (cost 200+-100, selectivity 0.8+-0.4, 40% stateless,
   40% stateful, 20% partitioned, delta 1, c_p 50, 1-12 cores). Target: median >= 0.98.
   Then the same over random small graphs (joins, unions, fan-out) against their exhaustive search.
2. Speed: heuristic solve time for chains of 10, 50 and 100 operators. Target: 100 in < 100 ms.
3. Reality: parse -> filter -> groupBy(user).agg over generated rows on local[2]. A profile is
   recorded (cumulative-prefix timing, see sparkpar_lint/plan/profile.py), the planner advises a
   configuration, and the job is timed with that advice and with Spark's defaults
   (spark.sql.shuffle.partitions=200, adaptive execution on, then off). The measured speed ratio
   is printed next to the model's predicted one.

Benchmarks print figures; nothing here asserts a wall-clock time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sparkpar_lint.plan.graph_plan import GraphModel, brute_force_graph, heuristic_graph  # noqa: E402
from sparkpar_lint.plan.heuristic import brute_force, pipelined_fission, plan_chain  # noqa: E402
from sparkpar_lint.plan.operators import Operator, PlanModel  # noqa: E402
from sparkpar_lint.plan.throughput import ChainModel, Configuration, RegionConfig  # noqa: E402


def random_model(rng: random.Random, n: int, cores: int | None = None) -> PlanModel:
    ops = []
    for i in range(n):
        kind = rng.choices(["stateless", "stateful", "partitioned"], [0.4, 0.4, 0.2])[0]
        key = tuple(sorted(rng.sample("abc", rng.randint(1, 2)))) if kind == "partitioned" else ()
        ops.append(Operator(f"o{i}", kind, key, max(1.0, rng.gauss(200, 100)), max(0.05, rng.gauss(0.8, 0.4))))
    return PlanModel(tuple(ops), cores=cores or rng.randint(1, 12), thread_switch_cost=1.0, replication_cost=50.0)


def quality(chains: int, seed: int) -> None:
    rng = random.Random(seed)
    ratios, brute_times = [], []
    for _ in range(chains):
        chain = ChainModel(random_model(rng, rng.randint(1, 8)))
        heuristic = chain.evaluate(pipelined_fission(chain)).throughput
        started = time.perf_counter()
        exact = chain.evaluate(brute_force(chain)).throughput
        brute_times.append(time.perf_counter() - started)
        ratios.append(heuristic / exact)
    ratios.sort()
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]  # noqa: E731
    print(f"== quality: heuristic / brute force, {chains} random chains of 1-8 operators (seed {seed})")
    print(
        f"   min {ratios[0]:.4f}  p5 {q(0.05):.4f}  p10 {q(0.10):.4f}  median "
        f"{statistics.median(ratios):.4f}  mean {statistics.fmean(ratios):.4f}  "
        f"max {ratios[-1]:.4f}"
    )
    buckets = [(0, 0.95), (0.95, 0.98), (0.98, 0.99), (0.99, 0.999), (0.999, 1.001), (1.001, 9)]
    print(
        "   distribution: " + "  ".join(f"[{lo:g},{hi:g}): {sum(lo <= r < hi for r in ratios)}" for lo, hi in buckets)
    )
    above = sum(r > 1 + 1e-9 for r in ratios)
    print(
        f"   max exactly {ratios[-1]:.9f}; chains where the heuristic beat the exhaustive search: "
        f"{above} (both search configurations of at most 2 x cores threads, so 0 is required)"
    )
    print(
        f"   brute force time per chain: median {statistics.median(brute_times) * 1e3:.2f} ms, "
        f"max {max(brute_times) * 1e3:.1f} ms"
    )


def random_graph(rng: random.Random) -> PlanModel:
    """2-7 operators, each reading 0-2 earlier ones: sources, joins/unions, fan-out."""
    ops, inputs = [], []
    for i in range(rng.randint(2, 7)):
        kind = rng.choices(["stateless", "stateful", "partitioned"], [0.5, 0.2, 0.3])[0]
        ops.append(
            Operator(
                f"o{i}",
                kind,
                ("k",) if kind == "partitioned" else (),
                max(1.0, rng.gauss(200, 100)),
                max(0.05, rng.gauss(0.8, 0.4)),
            )
        )
        earlier = [f"o{j}" for j in range(i)]
        inputs.append(tuple(rng.sample(earlier, min(i, rng.choice([0, 1, 1, 1, 2])))))
    return PlanModel(
        tuple(ops), cores=rng.randint(1, 4), thread_switch_cost=1.0, replication_cost=50.0, inputs=tuple(inputs)
    )


def graph_quality(graphs: int, seed: int) -> None:
    rng = random.Random(seed)
    ratios = []
    for _ in range(graphs):
        graph = GraphModel(random_graph(rng))
        heuristic = graph.evaluate(heuristic_graph(graph)).throughput
        ratios.append(heuristic / graph.evaluate(brute_force_graph(graph)).throughput)
    ratios.sort()
    print(
        f"== graph quality: heuristic / brute force, {graphs} random graphs of 2-7 operators "
        f"(joins, unions, fan-out; 1-4 cores; seed {seed})"
    )
    print(
        f"   min {ratios[0]:.4f}  p10 {ratios[len(ratios) // 10]:.4f}  median "
        f"{statistics.median(ratios):.4f}  max {ratios[-1]:.9f}; above 1: "
        f"{sum(r > 1 + 1e-9 for r in ratios)}"
    )


def speed(seed: int) -> None:
    rng = random.Random(seed)
    print("== speed: heuristic solve time (median of 5 chains; cores 16)")
    for n in (10, 50, 100):
        times = []
        for _ in range(5):
            model = random_model(rng, n, cores=16)
            started = time.perf_counter()
            pipelined_fission(ChainModel(model))
            times.append(time.perf_counter() - started)
        print(f"   {n:>3} operators: median {statistics.median(times) * 1e3:6.1f} ms, max {max(times) * 1e3:6.1f} ms")


# --- reality check ------------------------------------------------------------------------

ROWS = 400_000
USERS = 2_000


def _source(spark, partitions: int):
    from pyspark.sql import functions as F

    ids = spark.range(ROWS, numPartitions=partitions)
    return ids.select(
        F.concat_ws(
            ",",
            (F.col("id") % USERS).cast("string"),
            ((F.col("id") * 7919) % 1000).cast("string"),
            F.lit("payload-padding"),
        ).alias("line")
    )


def _parse(df):
    from pyspark.sql import functions as F

    parts = F.split("line", ",")
    return df.select(parts[0].alias("user"), parts[1].cast("double").alias("amount"))


def _filter(df):
    from pyspark.sql import functions as F

    return df.filter(F.col("amount") >= 250)


def _aggregate(df):
    from pyspark.sql import functions as F

    return df.groupBy("user").agg(F.sum("amount").alias("total"), F.count("*").alias("n"))


def _timed(spark, source_partitions: int, conf: dict, repeats: int = 3) -> float:
    for key, value in conf.items():
        spark.conf.set(key, value)
    best = float("inf")
    for _ in range(repeats):
        frame = _aggregate(_filter(_parse(_source(spark, source_partitions))))
        started = time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - started)
    return best


def reality() -> None:
    from pyspark.sql import SparkSession

    from sparkpar_lint.plan.profile import record_profile

    cores = 2
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("sparkpar-plan-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(
        f"== reality: parse -> filter -> groupBy(user).agg over {ROWS:,} rows, "
        f"{USERS:,} users, local[{cores}], Spark {spark.version}"
    )
    # The sequential semantics for the profile: one input partition, one shuffle partition.
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    _timed(spark, 1, {}, repeats=2)  # warm the JVM
    profile = record_profile(
        lambda: _source(spark, 1), [("parse", _parse), ("filter", _filter), ("aggregate", _aggregate)]
    )
    kinds = {"aggregate": ("partitioned", ("user",))}
    operators = tuple(
        Operator(
            row.name,
            *kinds.get(row.name, ("stateless", ())),
            cost=max(row.cost, 1e-12),
            selectivity=max(row.selectivity, 1e-9),
            forwarded=None,
        )
        for row in profile.rows
    )
    for row in profile.rows:
        print(
            f"   profile {row.name:<10} rows {row.rows_in:>8,} -> {row.rows_out:>8,}  "
            f"{row.seconds * 1e3:7.1f} ms  ({row.cost * 1e9:6.1f} ns/row)"
        )
    mean = sum(op.cost for op in operators) / len(operators)
    model = PlanModel(operators, cores, 0.05 * mean, 0.01 * mean)
    plan = plan_chain(model, pipelining=False)
    chain = ChainModel(model)
    keyed = [
        rc
        for rc in plan.config.regions
        if chain.can_replicate(rc.start, rc.end)
        and any(op.kind == "partitioned" for op in operators[rc.start : rc.end])
    ]
    advised = max((rc.replicas for rc in keyed), default=cores)
    default_config = Configuration(
        tuple(RegionConfig(rc.start, rc.end, (), 200 if rc in keyed else rc.replicas) for rc in plan.config.regions)
    )
    predicted_default = chain.evaluate(default_config).throughput
    predicted = plan.estimate.throughput / predicted_default
    print(
        f"   advice: {len(plan.config.regions)} region(s), replicas "
        f"{[rc.replicas for rc in plan.config.regions]}, "
        f"spark.sql.shuffle.partitions={advised}"
    )
    advised_time = _timed(
        spark, cores, {"spark.sql.shuffle.partitions": str(advised), "spark.sql.adaptive.enabled": "false"}
    )
    default_aqe = _timed(spark, cores, {"spark.sql.shuffle.partitions": "200", "spark.sql.adaptive.enabled": "true"})
    default_plain = _timed(spark, cores, {"spark.sql.shuffle.partitions": "200", "spark.sql.adaptive.enabled": "false"})
    print(
        f"   measured (best of 3): advised {advised_time * 1e3:.0f} ms, default with AQE "
        f"{default_aqe * 1e3:.0f} ms, default without AQE {default_plain * 1e3:.0f} ms"
    )
    print(
        f"   speed ratio advised/default: measured {default_aqe / advised_time:.2f}x (AQE on), "
        f"{default_plain / advised_time:.2f}x (AQE off); predicted {predicted:.2f}x"
    )
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-spark", action="store_true", help="skip the local-Spark check")
    args = parser.parse_args()
    quality(args.chains, args.seed)
    graph_quality(args.chains // 3, args.seed)
    speed(args.seed)
    if not args.no_spark:
        reality()


if __name__ == "__main__":
    main()
