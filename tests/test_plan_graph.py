"""`sparkpar plan --model` on graphs: joins, unions and fan-out via "inputs" per operator; regions
never span a fan-in; the exhaustive search covers small graphs and bounds the heuristic."""

import json
import random

import pytest
from click.testing import CliRunner

from sparkpar_lint.plan.command import plan
from sparkpar_lint.plan.graph_plan import GraphModel, brute_force_graph, heuristic_graph
from sparkpar_lint.plan.heuristic import plan_chain
from sparkpar_lint.plan.operators import Operator, PlanModel, model_from_dict
from sparkpar_lint.plan.throughput import Configuration, RegionConfig

JOIN = {
    "cores": 3,
    "thread_switch_cost": 1,
    "replication_cost": 5,
    "operators": [
        {"name": "orders", "cost": 10},
        {"name": "parse", "cost": 100, "inputs": ["orders"]},
        {"name": "users", "cost": 10},
        {"name": "join", "kind": "partitioned", "key": ["user"], "cost": 80, "inputs": ["parse", "users"]},
        {"name": "agg", "kind": "partitioned", "key": ["user"], "cost": 40, "selectivity": 0.5, "inputs": ["join"]},
        {"name": "to_table", "cost": 5, "inputs": ["agg"]},
        {"name": "to_log", "kind": "stateful", "cost": 5, "inputs": ["agg"]},
    ],
}
UNION = {
    "cores": 2,
    "thread_switch_cost": 1,
    "replication_cost": 5,
    "operators": [
        {"name": "eu", "cost": 20},
        {"name": "us", "cost": 20},
        {"name": "clean_us", "cost": 60, "selectivity": 0.5, "inputs": ["us"]},
        {"name": "union", "cost": 1, "inputs": ["eu", "clean_us"]},
        {"name": "enrich", "cost": 90, "inputs": ["union"]},
        {"name": "write", "kind": "stateful", "cost": 10, "inputs": ["enrich"]},
    ],
}


def _plan(tmp_path, model, *args):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    result = CliRunner().invoke(plan, ["--model", str(path), "--format", "json", *args])
    return result


@pytest.mark.parametrize("model", [JOIN, UNION], ids=["join", "union"])
def test_graph_models_are_planned_and_brute_force_checked(tmp_path, model):
    heuristic = _plan(tmp_path, model)
    exact = _plan(tmp_path, model, "--brute-force")
    assert heuristic.exit_code == 0 and exact.exit_code == 0, heuristic.output + exact.output
    h, b = json.loads(heuristic.output), json.loads(exact.output)
    planned = [name for row in h["regions"] for name in row["operators"]]
    assert sorted(planned) == sorted(op["name"] for op in model["operators"])
    assert h["throughput"] <= b["throughput"] * (1 + 1e-9)
    assert h["throughput"] >= 0.9 * b["throughput"]
    segments = len(GraphModel(model_from_dict(model)).segments)
    assert h["speedup"] > 1 and h["threads"] <= 2 * model["cores"] + segments - 1
    fan_in = {op["name"] for op in model["operators"] if len(op.get("inputs", [])) > 1}
    for row in h["regions"] + b["regions"]:
        assert not fan_in & set(row["operators"][1:])  # a fan-in only ever starts a region


def test_union_rates_add_and_fan_out_copies():
    graph = GraphModel(model_from_dict(UNION))
    union = next(s for s in graph.segments if graph.model.operators[s.operators[0]].name == "union")
    assert union.entry == pytest.approx(1.0 + 0.5)  # eu's rows plus half of us's
    joined = GraphModel(model_from_dict(JOIN))
    sinks = [s for s in joined.segments if s.sink]
    assert len(sinks) == 2 and all(s.entry == pytest.approx(0.5 * 2) for s in sinks)


def test_a_chain_written_with_inputs_plans_as_the_chain():
    ops = [{"name": f"o{i}", "cost": 10.0 * (i + 1), "kind": "stateless"} for i in range(4)]
    chain = model_from_dict({"cores": 4, "thread_switch_cost": 1, "operators": ops})
    linked = model_from_dict(
        {
            "cores": 4,
            "thread_switch_cost": 1,
            "operators": [{**op, "inputs": [ops[i - 1]["name"]]} if i else op for i, op in enumerate(ops)],
        }
    )
    graph = GraphModel(linked)
    assert len(graph.segments) == 1 and graph.budget == chain.thread_budget
    exact_chain = plan_chain(chain, brute=True).estimate.throughput
    assert graph.evaluate(brute_force_graph(graph)).throughput == pytest.approx(exact_chain)


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ({"b": ["nope"]}, "unknown operator 'nope'"),
        ({"a": ["b"], "b": ["a"]}, "form a cycle"),
        ({"b": ["a", "a"]}, "twice"),
        ({"b": [3]}, "list of operator names"),
        ({"b": "a"}, "list of operator names"),
    ],
)
def test_bad_inputs_are_one_clear_error(tmp_path, inputs, problem):
    model = {"operators": [{"name": n, **({"inputs": inputs[n]} if n in inputs else {})} for n in ("a", "b")]}
    result = _plan(tmp_path, model)
    assert result.exit_code == 2 and problem in result.output and "Traceback" not in result.output


def _random_graph(rng: random.Random) -> PlanModel:
    ops, inputs = [], []
    for i in range(rng.randint(2, 6)):
        kind = rng.choice(["stateless", "stateless", "partitioned", "stateful"])
        ops.append(
            Operator(
                f"o{i}",
                kind,
                ("k",) if kind == "partitioned" else (),
                rng.uniform(1, 200),
                rng.choice([1.0, rng.uniform(0.1, 1.0)]),
            )
        )
        earlier = [f"o{j}" for j in range(i)]
        inputs.append(tuple(rng.sample(earlier, min(len(earlier), rng.choice([0, 1, 1, 2])))) if earlier else ())
    return PlanModel(
        tuple(ops),
        cores=rng.randint(1, 3),
        thread_switch_cost=rng.choice([0.0, 1.0]),
        replication_cost=rng.choice([0.0, 10.0]),
        inputs=tuple(inputs),
    )


def test_brute_force_bounds_the_heuristic_on_random_small_graphs():
    rng = random.Random(23)
    for _ in range(60):
        graph = GraphModel(_random_graph(rng))
        heuristic, exact = heuristic_graph(graph), brute_force_graph(graph)
        for configs in (heuristic, exact):
            assert sum(c.threads for c in configs) <= graph.budget
            for chain, config in zip(graph.chains, configs):
                chain.validate(config)
        bound = graph.evaluate(exact).throughput
        assert graph.evaluate(heuristic).throughput <= bound * (1 + 1e-9)
        # and no other configuration within the budget beats it: one region per segment
        for replicas in range(1, graph.budget + 1):
            configs = [
                Configuration((RegionConfig(0, len(chain), (), replicas if chain.can_replicate(0, len(chain)) else 1),))
                for chain in graph.chains
            ]
            if sum(c.threads for c in configs) <= graph.budget:
                assert graph.evaluate(configs).throughput <= bound * (1 + 1e-9)


def test_a_job_with_a_join_and_two_sinks_is_planned_whole(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        "from pyspark.sql import SparkSession, functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "orders = spark.read.parquet('/data/orders').filter(F.col('amount') > 0)\n"
        "users = spark.read.parquet('/data/users')\n"
        "joined = orders.join(users, 'user_id')\n"
        "joined.groupBy('country').count().write.parquet('/out/by_country')\n"
        "joined.write.parquet('/out/joined')\n"
    )
    result = CliRunner().invoke(plan, [str(job), "--format", "json", "--cores", "4"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    planned = [name for row in report["regions"] for name in row["operators"]]
    assert any(n.startswith("join:") for n in planned) and "parquet:4" in planned
    assert sum(n.startswith(("write:", "parquet:")) for n in planned) >= 4
    assert not any("main chain only" in n for n in report["notes"])


def test_keyed_advice_for_a_join_names_each_of_its_inputs(tmp_path):
    report = json.loads(_plan(tmp_path, {**JOIN, "cores": 8}).output)
    keyed = [a for a in report["advice"] if ".repartition(" in a and "'user'" in a]
    assert any(a.startswith("on each input of `join` (parse, users)") for a in keyed), keyed
