"""Safe region formation and ordering strategies (auto-parallelizing paper §3.3, §3.4, Table 1)."""

import json
from pathlib import Path

import pytest

from sparkpar_lint.plan.operators import Operator, OperatorGraph, graph_from_dict
from sparkpar_lint.plan.regions import form_regions, ordering_strategy, replicable

DATA = Path(__file__).parent / "data" / "plan"


def _load(name):
    return json.loads((DATA / name).read_text())


TABLE_1 = _load("table1.json")["cells"]


@pytest.mark.parametrize(("state", "selectivity", "strategy"), TABLE_1, ids=[f"{s}-{c}" for s, c, _ in TABLE_1])
def test_table_1_ordering_strategy(state, selectivity, strategy):
    assert ordering_strategy(state, selectivity) == strategy


@pytest.mark.parametrize(("state", "selectivity", "strategy"), TABLE_1, ids=[f"{s}-{c}" for s, c, _ in TABLE_1])
def test_table_1_through_region_formation(state, selectivity, strategy):
    value = {"exactly-one": 1.0, "at-most-one": 0.5, "any": 3.0}[selectivity]
    op = Operator("op", state, ("k",) if state == "partitioned" else (), 1.0, value)
    formation = form_regions(OperatorGraph.chain([op]))
    if strategy == "not parallel":
        assert formation.regions == () and [s.name for s in formation.serial] == ["op"]
    else:
        assert [r.strategy for r in formation.regions] == [strategy]


def test_figure_5_regions():
    data = _load("figure5.json")
    formation = form_regions(graph_from_dict(data))
    got = [
        {
            "operators": list(r.operators),
            "state": r.state,
            "key": list(r.key),
            "strategy": r.strategy,
            "first_joint": r.first_joint,
            "last_joint": r.last_joint,
        }
        for r in formation.regions
    ]
    assert got == data["expected"]["regions"]
    assert sorted(s.name for s in formation.serial) == sorted(data["expected"]["serial"])


def test_figure_5_reasons_follow_the_prose():
    formation = form_regions(graph_from_dict(_load("figure5.json")))
    reasons = {s.name: s.reason for s in formation.serial}
    assert "fan-in" in reasons["o8"] and "fan-in" in reasons["o13"]
    assert "fusion" in reasons["o12"]
    assert formation.region_of("o1").ended_because.startswith("fan-in")  # o8
    # o9+o10 end before o11: adding it would leave an empty region key.
    assert "incompatible" in formation.region_of("o9").ended_because


def test_unforwarded_key_ends_the_region():
    ops = [Operator("src"), Operator("rekey", forwarded=frozenset({"v"})), Operator("agg", "partitioned", ("k",))]
    formation = form_regions(OperatorGraph.chain(ops))
    assert [r.operators for r in formation.regions] == [("src", "rekey"), ("agg",)]
    assert "does not forward" in formation.regions[0].ended_because
    assert formation.regions[0].last_joint == "shuffle" == formation.regions[1].first_joint
    assert not replicable(ops)
    assert replicable(ops[:2]) and replicable(ops[2:])


def test_compatible_keys_narrow_to_their_intersection():
    ops = [
        Operator("a", "partitioned", ("k", "l")),
        Operator("b", "partitioned", ("k",)),
        Operator("c", "stateless", (), 1.0, 0.3),
    ]
    (region,) = form_regions(OperatorGraph.chain(ops)).regions
    assert region.key == ("k",) and region.strategy == "seqno+pulses"
