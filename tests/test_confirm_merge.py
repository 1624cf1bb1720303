"""How the controller folds pytest-xdist workers' verdicts into one (pytest_sparkpar.confirm.merge)."""

from __future__ import annotations

from pytest_sparkpar.confirm import merge


def _entry(verdict: str, tests: list[str], runs: int, **more) -> dict:
    return {"verdict": verdict, "rule": "SPX101", "path": "jobs/a.py", "line": 3, "message": "m", "tests": tests,
            "runs": runs, "perturbations": ["adaptive execution"], **more}  # fmt: skip


def test_the_strongest_verdict_wins_with_its_seed_and_every_test_is_kept():
    merged: dict = {}
    merge(merged, {"k": _entry("not-reproduced", ["t.py::b"], 4)})
    merge(merged, {"k": _entry("confirmed", ["t.py::a"], 2, seed=7, replay="pytest t.py::a --sparkpar-seed=7")})
    merge(merged, {"k": _entry("unreached", [], 0), "j": _entry("unreached", [], 0)})
    assert merged["k"]["verdict"] == "confirmed"
    assert merged["k"]["tests"] == ["t.py::a", "t.py::b"]
    assert merged["k"]["runs"] == 6
    assert (merged["k"]["seed"], merged["k"]["replay"]) == (7, "pytest t.py::a --sparkpar-seed=7")
    assert merged["j"] == _entry("unreached", [], 0)


def test_a_weaker_verdict_never_takes_the_seed_of_a_stronger_one():
    merged: dict = {}
    merge(merged, {"k": _entry("implicated", ["t.py::a"], 1, seed=7, replay="r")})
    merge(merged, {"k": _entry("not-reproduced", ["t.py::b"], 4)})
    assert (merged["k"]["verdict"], merged["k"]["seed"], merged["k"]["replay"]) == ("implicated", 7, "r")
