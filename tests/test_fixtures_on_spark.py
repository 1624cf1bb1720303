"""Every bad fixture job gives a wrong answer on real Spark; its fixed twin never does.

Runs on one shared local-cluster session (see conftest.py): the sequential semantics (original
order, one partition, one shuffle partition) against seeded permuted interleavings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RUNS = 6

pyspark = pytest.importorskip("pyspark")

from spark_harness import is_runnable, load_job, outputs_differ, run  # noqa: E402

BAD = sorted(p for p in FIXTURES.rglob("bad_*.py") if is_runnable(p))
FIXED = sorted(p for p in FIXTURES.rglob("fixed_*.py") if is_runnable(p))


def _id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


@pytest.mark.spark
@pytest.mark.parametrize("path", BAD, ids=[_id(p) for p in BAD])
def test_bad_fixture_changes_its_answer_with_partitioning(cluster_spark, path: Path):
    job = load_job(path)
    sequential = run(cluster_spark, job, None)
    # The first interleaving that differs proves it: the same seeds in the same order as the fixed
    # twins get, stopping there instead of running the rest.
    assert any(run(cluster_spark, job, seed) != sequential for seed in range(RUNS)), (
        f"{_id(path)} gave the sequential answer in all {RUNS} interleavings"
    )


@pytest.mark.spark
@pytest.mark.parametrize("path", FIXED, ids=[_id(p) for p in FIXED])
def test_fixed_fixture_gives_the_sequential_answer(cluster_spark, path: Path):
    sequential, permuted = outputs_differ(cluster_spark, load_job(path), RUNS)
    assert all(output == sequential for output in permuted)
