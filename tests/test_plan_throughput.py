"""The pipelined-fission cost model (§3.2), its worked examples, and the searches (§4)."""

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from samples import random_plan_model
from sparkpar_lint.plan.heuristic import best_by_enumeration, brute_force, pipelined_fission
from sparkpar_lint.plan.operators import ModelError, PlanModel, load_model, model_from_dict
from sparkpar_lint.plan.regions import region_state
from sparkpar_lint.plan.throughput import ChainModel, Configuration, RegionConfig

DATA = Path(__file__).parent / "data" / "plan"


def _chain(name):
    data = json.loads((DATA / name).read_text())
    extra = {k: data.pop(k) for k in ("_comment", "replicas", "regions", "expected") if k in data}
    return ChainModel(model_from_dict(data)), extra


def test_bounded_throughput_worked_example():
    # "if the unbounded throughput is 3 units, but results in a utilization value of 6 and the
    # system has only 4 cores, then the bounded throughput is given by 3 * (4/6) = 2 units."
    chain, extra = _chain("bounded_example.json")
    estimate = chain.evaluate(Configuration((RegionConfig(0, 1, (), extra["replicas"]),)))
    assert estimate.unbounded == pytest.approx(extra["expected"]["unbounded"])
    assert estimate.utilization == pytest.approx(extra["expected"]["utilization"])
    assert estimate.throughput == pytest.approx(extra["expected"]["throughput"])


def test_figure_3_threads_replicas_and_region_kinds():
    chain, extra = _chain("figure3.json")
    config = Configuration(tuple(RegionConfig(s, e, tuple(c), r) for s, e, c, r in extra["regions"]))
    chain.validate(config)
    assert config.threads == extra["expected"]["threads"]
    assert config.operator_replicas == extra["expected"]["operator_replicas"]
    kinds = [region_state(chain.ops[rc.start : rc.end]) for rc in config.regions]
    assert kinds == extra["expected"]["kinds"]


def test_stateful_region_cannot_be_replicated():
    chain, extra = _chain("figure3.json")
    with pytest.raises(ValueError, match="cannot be replicated"):
        chain.validate(Configuration((RegionConfig(0, 3, (), 2), RegionConfig(3, 7))))


def _paper_throughput(model: PlanModel, config: Configuration) -> tuple[float, float]:
    """Eqs. 2-14 transcribed literally, recursion and all: the check on the closed form."""
    ops, delta, cp = model.operators, model.thread_switch_cost, model.replication_cost
    regions = []
    for rc in config.regions:
        pipes = [list(ops[a:b]) for a, b in rc.pipelines]
        regions.append((pipes, rc.replicas, list(ops[rc.start : rc.end])))

    def sel(seq):
        return math.prod(o.selectivity for o in seq)

    def cost(pipe):  # Eq. 2
        return sum(sel(pipe[:k]) * o.cost for k, o in enumerate(pipe))

    def h(j, n, s):  # Eqs. 5 and 10 (0-based j)
        return delta * ((j > 0) + (j < n - 1) * s)

    region_plus, region_sel, utilization_terms = [], [], []
    for i, (pipes, r, members) in enumerate(regions):
        rj = math.inf  # Eq. 3
        for j, pipe in enumerate(pipes):
            rp = 1.0 / (cost(pipe) + h(j, len(pipes), sel(pipe)))  # Eq. 4
            rj = sel(pipe) * (rj if rj < rp else rp)
        s_region = math.prod(sel(p) for p in pipes)
        r_region = rj / s_region  # Eq. 6
        f = min(o.scalability(r) for o in members)  # Eq. 7
        r_star = 1.0 / (cp * math.log2(r) + 1.0 / (r_region * f))  # Eq. 8
        hi = h(i, len(regions), s_region)
        region_plus.append(1.0 / (hi + 1.0 / r_star))  # Eq. 9
        region_sel.append(s_region)
        inner = sum(
            math.prod(sel(p) for p in pipes[:j]) * (h(j, len(pipes), sel(pipe)) + cost(pipe))
            for j, pipe in enumerate(pipes)
        )
        utilization_terms.append(cp * math.log2(r) + hi + inner)
    ri = math.inf  # Eq. 11
    for rp, s in zip(region_plus, region_sel):
        ri = s * (ri if ri < rp else rp)
    unbounded = ri / math.prod(region_sel)  # Eq. 12
    utilization = unbounded * sum(
        math.prod(region_sel[:i]) * term for i, term in enumerate(utilization_terms)
    )  # Eq. 14
    return unbounded, utilization


def _random_config(rng, chain):
    n, regions, start = len(chain), [], 0
    while start < n:
        end = rng.randint(start + 1, n)
        cuts = tuple(sorted(rng.sample(range(start + 1, end), rng.randint(0, end - start - 1))))
        replicas = rng.randint(1, 6) if chain.can_replicate(start, end) else 1
        regions.append(RegionConfig(start, end, cuts, replicas))
        start = end
    return Configuration(tuple(regions))


def test_closed_form_matches_the_papers_recursion():
    rng = random.Random(7)
    for _ in range(300):
        model = random_plan_model(rng, rng.randint(1, 8))
        chain = ChainModel(model)
        config = _random_config(rng, chain)
        estimate = chain.evaluate(config)
        unbounded, utilization = _paper_throughput(model, config)
        assert estimate.unbounded == pytest.approx(unbounded, rel=1e-9)
        assert estimate.utilization == pytest.approx(utilization, rel=1e-9)
        assert estimate.throughput == pytest.approx(unbounded * min(1, model.cores / utilization))


def test_brute_force_is_exhaustive_on_small_chains():
    rng = random.Random(11)
    for _ in range(25):
        model = random_plan_model(rng, rng.randint(1, 4), cores=rng.randint(1, 4))
        chain = ChainModel(model)
        _, best = best_by_enumeration(chain, model.thread_budget)
        assert chain.evaluate(brute_force(chain)).throughput == pytest.approx(best, rel=1e-12)


def test_heuristic_within_5_percent_of_brute_force(capsys):
    rng = random.Random(2026)
    ratios = []
    for _ in range(150):
        model = random_plan_model(rng, rng.randint(1, 8))
        chain = ChainModel(model)
        heuristic = chain.evaluate(pipelined_fission(chain)).throughput
        exact = chain.evaluate(brute_force(chain)).throughput
        ratios.append(heuristic / exact)
    ratios.sort()
    with capsys.disabled():
        print(
            f"\nheuristic/brute-force over {len(ratios)} random chains: min {ratios[0]:.4f} "
            f"p10 {ratios[len(ratios) // 10]:.4f} median {statistics.median(ratios):.4f} "
            f"max {ratios[-1]:.4f}"
        )
    assert ratios[0] >= 0.95
    assert statistics.median(ratios) >= 0.98


def test_heuristic_configuration_is_valid_and_replicates_only_safe_regions():
    rng = random.Random(5)
    for _ in range(50):
        chain = ChainModel(random_plan_model(rng, rng.randint(1, 30), cores=rng.randint(1, 32)))
        chain.validate(pipelined_fission(chain))


def test_more_cores_never_hurt_the_heuristic_much():
    rng = random.Random(9)
    model = random_plan_model(rng, 8, cores=1)
    values = []
    for cores in (1, 2, 4, 8):
        chain = ChainModel(PlanModel(model.operators, cores, 1.0, 50.0))
        values.append(chain.evaluate(pipelined_fission(chain)).throughput)
    assert all(b >= a * 0.95 for a, b in zip(values, values[1:]))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"operators": []}', "non-empty list"),
        ('{"operators": [{"name": "a", "kind": "weird"}]}', '"kind" must be one of'),
        ('{"operators": [{"name": "a", "kind": "partitioned"}]}', 'needs a non-empty "key"'),
        ('{"operators": [{"name": "a", "cost": "x"}]}', "must be a number"),
        ('{"operators": [{"name": "a", "selectivity": 0}]}', "must be > 0"),
        ('{"cores": 0, "operators": [{"name": "a"}]}', '"cores" must be >= 1'),
        ('{"operators": [{"name": "a"}, {"name": "a"}]}', "unique"),
        ('{"operators": [{"name": "a"}], "coers": 3}', "unknown key"),
    ],
)
def test_bad_models_name_the_file_and_the_problem(tmp_path, text, problem):
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        load_model(path)
    assert str(info.value).startswith(str(path)) and problem in str(info.value)


def test_fission_only_never_cuts_pipelines():
    rng = random.Random(13)
    for _ in range(30):
        chain = ChainModel(random_plan_model(rng, rng.randint(1, 10), cores=rng.randint(1, 16)))
        for config in (
            pipelined_fission(chain, pipelining=False),
            brute_force(chain, pipelining=False) if len(chain) <= 6 else None,
        ):
            if config is not None:
                assert all(rc.cuts == () for rc in config.regions)
