"""`--sparkpar-master sc://...`: the plugin's checks through a real Spark Connect server started
from the installed PySpark (tests/spark_servers.py), batch and streaming.

Where the machine allows it (root: a new mount namespace), the server gets its own empty /tmp, so
nothing the client writes to its temporary directory is visible to the server: the streaming
checks then prove the permuted runs need no file system shared with the driver."""

from __future__ import annotations

import textwrap

import pytest
from spark_servers import Servers, private_tmp_prefix, start_connect
from test_plugin import CONFTEST, outcomes, run_pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CHECKS = """
from tests.plugin_jobs import (
    bad_first_after_orderby, bad_stream_dedup, fixed_first_after_orderby, fixed_stream_dedup,
)


def check(sparkpar, m):
    return sparkpar.check(m.job, m.INPUTS, output=getattr(m, "OUTPUT", None), streaming=getattr(m, "STREAMING", False),
                          output_mode=getattr(m, "OUTPUT_MODE", "append"))


def test_bad_batch(sparkpar):
    check(sparkpar, bad_first_after_orderby)


def test_fixed_batch(sparkpar):
    assert sorted(r.k for r in check(sparkpar, fixed_first_after_orderby)) == list(range(7))


def test_bad_streaming(sparkpar):
    check(sparkpar, bad_stream_dedup)


def test_fixed_streaming(sparkpar):
    assert len(check(sparkpar, fixed_stream_dedup)) == 6
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    servers = Servers(tmp_path_factory.mktemp("connect"))
    isolated = private_tmp_prefix()
    try:
        # The server's own driver on local-cluster: shuffle blocks cross executor JVMs.
        yield start_connect(servers, "local-cluster[2,1,1024]", isolated), bool(isolated)
    finally:
        servers.stop()


@pytest.fixture(scope="module")
def checked(server, tmp_path_factory):
    url, isolated = server
    project = tmp_path_factory.mktemp("connect_project")
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_checks.py").write_text(textwrap.dedent(CHECKS))
    result = run_pytest(
        project,
        "--sparkpar-determinism",
        f"--sparkpar-master={url}",
        "--sparkpar-seed=7",
        "--sparkpar-runs=5",
        "--sparkpar-shrink-seconds=0",
    )
    return url, isolated, result


def test_buggy_checks_fail_and_correct_ones_pass_through_connect(checked, record_property):
    url, isolated, result = checked
    record_property("server_has_private_tmp", isolated)
    print(f"Connect server with its own /tmp (no file system shared with the client): {isolated}")
    assert outcomes(result.stdout) == {
        "test_bad_batch": "FAILED",
        "test_fixed_batch": "PASSED",
        "test_bad_streaming": "FAILED",
        "test_fixed_streaming": "PASSED",
    }, result.stdout[-5000:] + result.stderr[-3000:]
    assert f"master: {url}" in result.stdout


def test_streaming_report_shows_the_servers_micro_batches(checked):
    _, _, result = checked
    report = result.stdout[result.stdout.index("_ test_bad_streaming _") :]
    assert "micro-batch outputs (batch id: rows): {0: " in report, report
