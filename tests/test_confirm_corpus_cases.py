"""bench/confirm_corpus.py's case list: every case models a judged finding of the corpus manifest
(the rule it names is the one judged there), true and false ones in about equal numbers, and
every job is Python that parses and defines the `data` and `job` its test calls."""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap
from collections import Counter
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "confirm_corpus.py"


def _bench():
    spec = importlib.util.spec_from_file_location("confirm_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["confirm_corpus"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_case_is_a_judged_finding_of_the_manifest():
    bench = _bench()
    judged = bench.manifest()
    assert len(bench.CASES) >= 20
    missing = [case.case for case in bench.CASES if case.case not in judged]
    assert missing == []
    assert [case.name for case in bench.CASES if judged[case.case]["rule"] != case.rule] == []
    verdicts = Counter(judged[case.case]["verdict"] for case in bench.CASES)
    assert set(verdicts) == {"TP", "FP"} and abs(verdicts["TP"] - verdicts["FP"]) <= 2, verdicts


def test_every_job_defines_its_input_and_its_job():
    bench = _bench()
    assert len({case.name for case in bench.CASES}) == len(bench.CASES)
    for case in bench.CASES:
        tree = ast.parse(textwrap.dedent(case.job))
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert {"data", "job"} <= defined, case.name
