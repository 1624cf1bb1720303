"""`--sparkpar-master spark://...`: the plugin's checks on a real standalone cluster (a master and
two workers started from the installed PySpark's own launcher, see tests/spark_servers.py)."""

from __future__ import annotations

import re

import pytest
from spark_servers import Servers, quick_jit_client, run_checks, start_standalone
from test_plugin import outcomes

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# The bad job keeps whichever row of a key arrives first, so the seeded arrival orders change its
# answer in every run. A `first` after an `orderBy` changed it only when the cluster's scheduler
# fetched another sort range's partial first, which it did not in all six runs of one CI run.
CHECKS = """
from tests.plugin_jobs import bad_drop_duplicates, fixed_drop_duplicates


def test_bad_batch(sparkpar):
    m = bad_drop_duplicates
    sparkpar.check(m.job, m.INPUTS)


def test_fixed_batch(sparkpar):
    m = fixed_drop_duplicates
    assert sorted(r.k for r in sparkpar.check(m.job, m.INPUTS)) == list(range(7))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    servers = Servers(tmp_path_factory.mktemp("standalone"))
    try:
        yield servers, start_standalone(servers)
    finally:
        servers.stop()


@pytest.fixture(scope="module")
def checked(cluster, tmp_path_factory):
    servers, url = cluster
    project = tmp_path_factory.mktemp("standalone_project")
    result = run_checks(
        project / "project",
        CHECKS,
        "--sparkpar-determinism",
        f"--sparkpar-master={url}",
        "--sparkpar-seed=7",
        "--sparkpar-runs=6",
        "--sparkpar-shrink-seconds=0",
        env=quick_jit_client(project / "conf"),
    )
    return servers, url, result


def test_buggy_check_fails_and_correct_one_passes_on_the_cluster(checked):
    _, url, result = checked
    assert outcomes(result.stdout) == {"test_bad_batch": "FAILED", "test_fixed_batch": "PASSED"}, (
        result.stdout[-5000:] + result.stderr[-3000:]
    )
    assert f"master {url}" in result.stdout  # the header
    assert f"master: {url}" in result.stdout  # the failure report


def test_the_jobs_ran_on_both_workers(checked):
    servers, _, _ = checked
    launched = [
        len(re.findall(r"Asked to launch executor app-", (servers.directory / f"worker{i}.log").read_text()))
        for i in (1, 2)
    ]
    assert all(launched), launched
